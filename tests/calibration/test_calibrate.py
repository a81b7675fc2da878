"""``ragmetrics calibrate`` end to end: the bundled labels, the offline judge and judges over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics.calibration import calibrate_sync
from ragmetrics.cli import main
from ragmetrics.testing import FakeLLMServer, FakeReply


@pytest.fixture(scope="module")
def schema_server():
    with FakeLLMServer(answer="schema") as srv:
        yield srv


def test_the_example_shows_a_schema_only_judge_at_chance_and_the_offline_judge_above_it(
    schema_server: FakeLLMServer, dummy_keys: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    schema_judge = f"openai:gpt-4o-mini@{schema_server.openai_base_url}"
    page = tmp_path / "calibration.html"
    argv = ["calibrate", "--example", "--judge", "offline", "--judge", schema_judge]
    code = main([*argv, "--metrics", "faithfulness", "--json", "--html", str(page), "--bootstrap", "300"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    offline, schema = (j["metrics"]["faithfulness"] for j in report["judges"])
    assert offline["labelled"] == schema["labelled"] == 40 and offline["scored"] == schema["scored"] == 40
    # the offline judge ranks good answers above bad ones beyond chance; the filler judge cannot
    assert offline["auroc"] > 0.65 and offline["auroc_ci"][0] > 0.5
    assert schema["auroc_ci"][0] <= 0.5 <= schema["auroc_ci"][1]
    assert abs(schema["kappa"]) < 0.2 and abs(schema["balanced_accuracy"] - 0.5) < 0.15
    assert report["judges"][0]["calls"] == 0 and report["judges"][1]["calls"] > 0
    # its spans and quotes are found nowhere: every row is judge_output_invalid, counted as a fail
    assert schema["statuses"] == {"judge_output_invalid": 40}
    assert report["judges"][1]["calls_per_label"] == report["judges"][1]["calls"] / 40
    assert sum(schema["confusion"].values()) == 40
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html and "Judge calibration" in html and "class='chance'" in html
    # the text form: the judges side by side under each metric
    assert main([*argv, "--metrics", "faithfulness", "--bootstrap", "50"]) == 0
    text = capsys.readouterr().out
    table = text.split("faithfulness (pass mark")[1]
    assert table.index("offline") < table.index(schema_judge) and "AUROC [95% CI]" in table


def test_a_rerun_is_served_from_the_cache(
    fake_llm_server: FakeLLMServer, dummy_keys: None, tmp_path: Path
) -> None:
    rows = [
        {
            "question": "Where is Paris?",
            "answer": "Paris is in France.",
            "contexts": ["Paris is in France."],
            "label": True,
        },
        {
            "question": "Where is Paris?",
            "answer": "Bananas grow on the moon.",
            "contexts": ["Paris is in France."],
            "label": False,
        },
    ]
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    first = calibrate_sync(rows, metrics=["faithfulness"], judges=[judge], bootstrap=0)
    made = len(fake_llm_server.requests)
    again = calibrate_sync(rows, metrics=["faithfulness"], judges=[judge], bootstrap=0)
    assert made > 0 and len(fake_llm_server.requests) == made
    assert first.judges[0].calls == made and again.judges[0].calls == 0
    faith = first.judges[0].metrics["faithfulness"]
    assert faith.auroc == 1.0 and faith.auroc_ci is None


def test_a_judge_that_scores_nothing_exits_1_naming_it(
    fake_llm_server: FakeLLMServer, dummy_keys: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fake_llm_server.on(lambda request: True, FakeReply(status=400, message="no such model"))
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"question": "q?", "answer": "It is blue.", "contexts": ["It is blue."], "label": True})
        + "\n",
        encoding="utf-8",
    )
    judge = f"openai:nosuch@{fake_llm_server.openai_base_url}"
    code = main(["calibrate", str(labels), "--judge", judge, "--no-cache"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{judge} scored no labelled row of faithfulness (provider_error 1)" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["calibrate"], "give a LABELS file or --example"),
        (["calibrate", "--example", "--judge", "openai:gpt-4o-mini"], "OPENAI_API_KEY"),
        (["calibrate", "--example", "--metrics", "nosuch", "--judge", "offline"], "nosuch"),
        (["calibrate", "missing.jsonl", "--judge", "offline"], "cannot read the labels file"),
        (["calibrate", "--example", "--judge", "offline", "--html", "x.txt"], "--html"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1
