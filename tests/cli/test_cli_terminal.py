"""The terminal side of the ``ragmetrics`` command (issue 23): pipes, messages, the bundled example."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragmetrics.cli.app import EXIT_PIPE

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env.pop("PYTHONUNBUFFERED", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


@pytest.mark.parametrize("unbuffered", ["", "1"])
@pytest.mark.parametrize("extra", [["--json"], []])
def test_a_reader_that_goes_away_stops_the_command_quietly(
    tmp_path: Path, unbuffered: str, extra: list[str]
) -> None:
    # `ragmetrics eval --example --json | head -1`: the reader closes the pipe before the summary is printed
    env = _env(**({"PYTHONUNBUFFERED": unbuffered} if unbuffered else {}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragmetrics.cli", "eval", "--example", "--judge", "offline", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == EXIT_PIPE == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("anthropic:claude-3-5-haiku-latest", "ANTHROPIC_API_KEY"),
        ("gemini:gemini-2.0-flash", "GEMINI_API_KEY"),
    ],
)
def test_the_missing_key_message_names_the_variable_and_flags_not_a_python_argument(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], spec: str, variable: str
) -> None:
    from ragmetrics.cli.app import main

    monkeypatch.delenv(variable, raising=False)
    assert main(["eval", "--example", "--judge", spec]) == 2
    err = capsys.readouterr().err
    assert f"set the {variable} environment variable" in err and f"export {variable}=" in err
    assert "--judge offline" in err
    assert "api_key=" not in err and "llm=" not in err
    assert len(err.strip().splitlines()) == 1


def test_the_python_missing_key_message_still_names_the_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmetrics.errors import ConfigError
    from ragmetrics.settings import api_key_for, parse_judge_spec

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"OPENAI_API_KEY environment variable or pass api_key=") as info:
        api_key_for(parse_judge_spec("openai:gpt-4o-mini"))
    assert "--judge" not in str(info.value)


SEVEN = (
    "faithfulness",
    "relevancy",
    "groundedness",
    "context_recall",
    "context_precision",
    "context_relevancy",
    "answer_correctness",
)


def test_the_bundled_example_has_references_so_all_seven_metrics_score_every_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json
    from importlib import resources

    from ragmetrics.cli.app import main

    rows = [
        json.loads(line)
        for line in (resources.files("ragmetrics") / "data" / "example.jsonl").read_text("utf-8").splitlines()
    ]
    assert len(rows) == 12
    assert all(isinstance(r.get("reference"), str) and r["reference"].strip() for r in rows)
    assert main(["eval", "--example", "--judge", "offline", "--json", "--metrics", ",".join(SEVEN)]) == 0
    captured = capsys.readouterr()
    aggregates = json.loads(captured.out)["aggregates"]
    assert list(aggregates) == list(SEVEN)
    for name, agg in aggregates.items():
        assert agg["count"] == agg["total"] == 12, (name, agg["statuses"])
    assert "ragmetrics eval:" not in captured.err  # no gate line
