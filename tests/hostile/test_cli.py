"""Hostile input at the command line (issue 17 items 8, 9 and 10): the real CLI in a subprocess.

The judge is the loopback fake server, so "no LLM call was made" is its call counter staying at 0.
"""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from ragmetrics import FaithfulnessMetric, RelevancyMetric
from ragmetrics.errors import ConfigError
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.settings import JudgeSettings
from ragmetrics.testing import FakeReply

CLI = [sys.executable, "-m", "ragmetrics.cli"]
KEY = "sk-hostile-test-key-0123456789abcdef"
RAW = "\x1b]0;pwned\x07\x1b[2J\x1b[1A\x1b[2K\x9b31m\x7f\u202e"
"""Window title, screen clear, cursor up + erase line, an 8-bit CSI, DEL and a bidi override."""
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[1A\\x1b[2K\\x9b31m\\x7f\\u202e"
UNSAFE = ("\x1b", "\x07", "\x9b", "\x7f", "\u202e")


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    base["RAGMETRICS_CACHE_DIR"] = str(cwd / "cache")
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        env={**base, "PYTHONIOENCODING": "utf-8", **(env or {})},
        cwd=cwd,
        timeout=120,
    )


def rows_file(folder: Path, rows: list[dict[str, object]], name: str = "rows.jsonl") -> Path:
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [
    {"id": f"r{i}", "question": "Capital?", "answer": f"Paris {i}.", "contexts": ["Paris."]} for i in range(3)
]


@pytest.fixture
def judge(fake_llm_server):
    """CLI arguments and environment for a judge on the fake server."""
    return ["--judge", f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"], {"OPENAI_API_KEY": KEY}


# -- item 8: output paths are checked before the first call -------------------------------------------
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--out", "/nonexistent_dir/x.jsonl"],
            "--out: folder /nonexistent_dir does not exist; create it first",
        ),
        (["--out", "results.txt"], "--out: use a .jsonl, .ndjson or .csv file name, got results.txt"),
        (["--report", "report.txt"], "--report: use a .html or .htm file name, got report.txt"),
        (["--out", "rows.jsonl/x.csv"], "--out: rows.jsonl is not a folder"),
        (["--out", "sub.jsonl"], "--out: sub.jsonl is a folder; give a file name"),
        (["--out", "rows.jsonl"], "--out: rows.jsonl is the input file; write the results elsewhere"),
        (["--report", "missing/r.html"], "--report: folder missing does not exist; create it first"),
    ],
)
def test_eval_refuses_an_unwritable_output_path_before_any_llm_call(
    tmp_path, fake_llm_server, judge, flags, message
):
    rows_file(tmp_path, ROWS)
    (tmp_path / "sub.jsonl").mkdir()
    proc = run("eval", "rows.jsonl", *judge[0], *flags, cwd=tmp_path, env=judge[1])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"ragmetrics eval: error: {message}"
    assert fake_llm_server.calls.total() == 0
    assert not (tmp_path / "missing").exists()


def test_eval_writes_the_outputs_when_the_paths_are_good(tmp_path, fake_llm_server, judge):
    rows_file(tmp_path, ROWS)
    proc = run(
        "eval",
        "rows.jsonl",
        *judge[0],
        "--out",
        "r.csv",
        "--report",
        "r.htm",
        "--quiet",
        cwd=tmp_path,
        env=judge[1],
    )
    assert proc.returncode == 0, proc.stderr
    assert fake_llm_server.calls.total() > 0
    assert (tmp_path / "r.csv").read_text().count("\n") == 4 and (tmp_path / "r.htm").stat().st_size > 0


CASE_WITH_MARKER = """
import pathlib
from ragmetrics.regression.cases import eval_case

@eval_case
def eval_marks():
    pathlib.Path("ran.marker").write_text("ran")
    return {"score": 1.0}
"""


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--junit-xml", "junit.txt"], "--junit-xml: use a .xml file name, got junit.txt"),
        (["--json", "evals.py/run.json"], "--json: evals.py is not a folder"),
        (
            ["--save", "main", "--snapshot-dir", "evals.py"],
            "--snapshot-dir: evals.py exists and is not a folder",
        ),
    ],
)
def test_test_command_refuses_an_unwritable_output_path_before_running_cases(tmp_path, flags, message):
    (tmp_path / "evals.py").write_text(CASE_WITH_MARKER)
    proc = run("test", "evals.py", *flags, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"ragmetrics test: error: {message}"
    assert not (tmp_path / "ran.marker").exists(), "a case ran before the output path was checked"


def test_test_command_still_creates_missing_report_folders(tmp_path):
    (tmp_path / "evals.py").write_text(CASE_WITH_MARKER)
    proc = run("test", "evals.py", "--junit-xml", "reports/junit.xml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ET.parse(tmp_path / "reports" / "junit.xml").getroot().tag == "testsuites"


# -- item 9: control characters never reach the terminal raw -------------------------------------------
def test_printable_escapes_every_control_and_bidi_character_once():
    from ragmetrics.errors import printable

    assert printable(RAW) == SHOWN
    assert printable(printable(RAW)) == SHOWN  # idempotent
    assert printable("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert printable("a\nb\tc\rd", multiline=True) == "a\nb\tc\\rd"
    assert printable("lone \ud800 surrogate") == "lone \\ud800 surrogate"
    assert printable("Ünïcödé, 中文, emoji \U0001f600") == "Ünïcödé, 中文, emoji \U0001f600"
    text = json.dumps({"k": RAW}, ensure_ascii=False)
    assert json.loads(printable(text, json=True)) == {"k": RAW}
    assert not any(c in printable(text, json=True) for c in UNSAFE)


def test_worst_samples_show_escapes_not_terminal_sequences(tmp_path, fake_llm_server, judge):
    context = f"The tower is blue.{RAW}"
    fake_llm_server.on(
        "claims.extract",
        FakeReply(
            json={
                "claims": [{"text": f"The tower is red.{RAW}", "span": "red", "relevance": "direct"}],
                "addresses_question": "yes",
            }
        ),
    )
    fake_llm_server.on(
        "claims.verify",
        FakeReply(
            json={
                "verdicts": [
                    {"claim": 0, "verdict": "contradicted", "context": 0, "evidence": context, "reason": RAW}
                ]
            }
        ),
    )
    row = {
        "id": f"id{RAW}",
        "question": f"Colour?{RAW}",
        "answer": "The tower is red.",
        "contexts": [context],
    }
    rows_file(tmp_path, [row])
    proc = run(
        "eval",
        "--no-canaries",
        "rows.jsonl",
        *judge[0],
        "--metrics",
        "faithfulness",
        "--worst",
        "1",
        cwd=tmp_path,
        env=judge[1],
    )
    assert proc.returncode == 0, proc.stderr
    for stream in (proc.stdout, proc.stderr):
        assert not any(c in stream for c in UNSAFE), repr(stream)
    lines = proc.stdout.splitlines()
    start = lines.index("Worst samples:")
    assert lines[start + 1] == f"#0 id{SHOWN}  mean 0.000  faithfulness 0.000"
    assert lines[start + 2] == f"    Q: Colour?{SHOWN}"
    assert lines[start + 3] == f"    CONTRADICTED: The tower is red.{SHOWN}"
    assert lines[start + 4] == f'      context 0: "The tower is blue.{SHOWN}"'

    as_json = run(
        "eval",
        "--no-canaries",
        "rows.jsonl",
        *judge[0],
        "--metrics",
        "faithfulness",
        "--json",
        cwd=tmp_path,
        env=judge[1],
    )
    assert as_json.returncode == 0, as_json.stderr
    assert not any(c in as_json.stdout for c in UNSAFE)
    assert json.loads(as_json.stdout)["aggregates"]["faithfulness"]["total"] == 1  # still JSON


def test_error_messages_on_stderr_are_escaped(tmp_path):
    proc = run("eval", f"missing{RAW}.jsonl", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"ragmetrics eval: error: no such file: missing{SHOWN}.jsonl"


RAISING_CASE = f"""
from ragmetrics.regression.cases import eval_case

@eval_case
def eval_raises():
    raise ValueError({RAW!r})
"""


def test_test_command_table_and_junit_escape_a_hostile_error(tmp_path):
    (tmp_path / "evals.py").write_text(RAISING_CASE, encoding="utf-8")
    proc = run("test", "evals.py", "--junit-xml", "junit.xml", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert not any(c in proc.stdout + proc.stderr for c in UNSAFE), repr(proc.stdout)
    assert f"ValueError: {SHOWN}" in proc.stdout
    failure = ET.parse(tmp_path / "junit.xml").find(".//error")  # well-formed XML: raw ESC is not allowed
    assert failure is not None and SHOWN in failure.get("message", "")


# -- item 10 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_provider_error_echoing_the_api_key_is_redacted_everywhere(tmp_path, fake_llm_server, provider):
    base = fake_llm_server.openai_base_url if provider == "openai" else fake_llm_server.anthropic_base_url
    spec = f"{provider}:fake-model@{base}"
    env = {f"{provider.upper()}_API_KEY": KEY}
    fake_llm_server.on(
        "claims.extract", FakeReply(status=401, message=f"Invalid API key: {KEY} (Bearer {KEY})")
    )
    rows_file(tmp_path, ROWS)
    common = [
        "eval",
        "--no-canaries",
        "rows.jsonl",
        "--judge",
        spec,
        "--metrics",
        "faithfulness",
        "--no-cache",
        "--worst",
        "3",
    ]
    first = run(*common, "--out", "r.jsonl", "--report", "r.html", cwd=tmp_path, env=env)
    second = run(*common, "--out", "r.csv", cwd=tmp_path, env=env)
    # nothing scored: exit 1, the gate's line on stderr quoting the (redacted) provider message
    assert first.returncode == 1 and second.returncode == 1, first.stderr + second.stderr
    assert "0 of 3 samples scored" in first.stderr and "[redacted]" in first.stderr
    assert fake_llm_server.calls.total() == 6  # 401 is not retried: one call per row per run
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    messages = [e["message"] for r in records for e in r["errors"]]
    assert len(messages) == 3 and all(
        "Invalid API key: [redacted] (Bearer [redacted])" in m for m in messages
    )
    for text in (
        (tmp_path / "r.jsonl").read_text(),
        (tmp_path / "r.csv").read_text(),
        (tmp_path / "r.html").read_text(encoding="utf-8"),
        first.stdout + first.stderr + second.stdout + second.stderr,
    ):
        assert KEY not in text
    assert "[redacted]" in (tmp_path / "r.csv").read_text()


async def test_an_embeddings_error_echoing_the_api_key_is_redacted(fake_llm_server):
    from ragmetrics.metrics.evaluators.factory import EmbeddingDistanceEvaluator, OpenAIEmbeddings

    fake_llm_server.on("embeddings", FakeReply(status=401, message=f"Invalid API key: {KEY}"))
    embedder = OpenAIEmbeddings("fake-embedding", base_url=fake_llm_server.openai_base_url, api_key=KEY)
    evaluator = EmbeddingDistanceEvaluator(embedder, cache=False)
    try:
        result = await evaluator.evaluate("Paris", "Paris is the capital")
    finally:
        await evaluator.aclose()
    assert fake_llm_server.calls.total() == 1 and result.score is None and result.status == "provider_error"
    assert "Invalid API key: [redacted]" in (result.message or "") and KEY not in result.model_dump_json()


def test_repeated_sample_ids_warn_once_naming_them(tmp_path):
    rows = [
        {"id": i, "question": "Capital?", "answer": "Paris.", "contexts": ["Paris."]}
        for i in ("a", "dup", "b", "dup", f"x{RAW}", f"x{RAW}", "dup")
    ]
    rows_file(tmp_path, rows)
    proc = run("eval", "rows.jsonl", "--judge", "offline", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "sample id(s) repeat" in line]
    assert warnings == [
        f"ragmetrics: 2 sample id(s) repeat: 'dup' x3, 'x{SHOWN}' x2; every row was scored, but records, "
        "reports and snapshot comparisons key on the id, so give each row a unique id"
    ]


def test_repeated_ids_are_logged_once_through_the_python_api(caplog):
    rows = [{"id": "same", "answer": "Paris.", "question": "Capital?", "contexts": ["Paris."]}] * 3
    pipeline = EvaluationPipeline(metrics=[FaithfulnessMetric(llm="offline", cache=False)], progress=False)
    with caplog.at_level(logging.WARNING, logger="ragmetrics.pipeline"):
        results = pipeline.run(rows)
        unique = pipeline.run([{**r, "id": str(i)} for i, r in enumerate(rows)])
    assert len(results) == 3 and len(unique) == 3
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        "ragmetrics: 1 sample id(s) repeat: 'same' x3"
    ]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--fail-under", "nan"], "argument --fail-under: expected a number in [0, 1], got nan"),
        (["--fail-under", "1.5"], "argument --fail-under: expected a number in [0, 1], got 1.5"),
        (["--worst", "-5"], "argument --worst: expected a whole number >= 0, got -5"),
        (["--max-cost", "nan"], "argument --max-cost: expected a finite number >= 0, got nan"),
        (["--threshold", "nan"], "argument --threshold: expected a number in [0, 1], got nan"),
        (["--judge-concurrency", "0"], "argument --judge-concurrency: expected a whole number >= 1, got 0"),
    ],
)
def test_nonsense_numbers_are_usage_errors_before_any_call(tmp_path, fake_llm_server, judge, flags, message):
    rows_file(tmp_path, ROWS)
    proc = run("eval", "rows.jsonl", *judge[0], *flags, cwd=tmp_path, env=judge[1])
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == f"ragmetrics eval: error: {message}"
    assert fake_llm_server.calls.total() == 0


def test_fail_under_still_fails_a_low_mean(tmp_path):
    rows_file(
        tmp_path,
        [{"question": "Capital?", "answer": "Berlin is big.", "contexts": ["Paris is the capital."]}],
    )
    assert (
        run(
            "eval", "rows.jsonl", "--judge", "offline", "--quiet", "--fail-under", "1", cwd=tmp_path
        ).returncode
        == 1
    )
    assert run("eval", "rows.jsonl", "--judge", "offline", "--worst", "0", cwd=tmp_path).returncode == 0


def test_an_unknown_judge_option_is_a_config_error_listing_the_valid_ones():
    with pytest.raises(ConfigError) as err:
        FaithfulnessMetric(llm="openai:x", foo=1)
    assert str(err.value).startswith("FaithfulnessMetric: unknown judge option(s) 'foo'; valid options: ")
    assert (
        "max_concurrency" in str(err.value) and "timeout_s" in str(err.value) and "prices" in str(err.value)
    )
    with pytest.raises(ConfigError, match="RelevancyMetric: unknown judge option"):
        RelevancyMetric(max_concurency=4)  # the default judge too


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("max_concurrency", 2.5, "max_concurrency must be a whole number, got 2.5"),
        ("max_concurrency", True, "max_concurrency must be a whole number, got True"),
        ("max_tokens", "2048", "max_tokens must be a whole number, got '2048'"),
        ("reasks", 1.0, "reasks must be a whole number, got 1.0"),
        ("seed", 0.5, "seed must be a whole number, got 0.5"),
        ("timeout_s", math.inf, "timeout_s must be a finite number, got inf"),
        ("timeout_s", math.nan, "timeout_s must be a finite number, got nan"),
        ("temperature", False, "temperature must be a finite number, got False"),
        ("backoff_max_s", math.inf, "backoff_max_s must be a finite number, got inf"),
        ("requests_per_minute", math.nan, "requests_per_minute must be a finite number, got nan"),
    ],
)
def test_judge_settings_refuse_non_integers_and_non_finite_numbers(option, value, message):
    with pytest.raises(ConfigError) as err:
        JudgeSettings(provider="openai", model="m", **{option: value})
    assert str(err.value) == f"judge settings for 'openai:m': {message}"
    with pytest.raises(ConfigError, match=message.split(",")[0]):
        FaithfulnessMetric(llm="offline", **{option: value})


def test_judge_settings_still_take_ints_for_floats_and_none_for_optionals():
    settings = JudgeSettings(provider="openai", model="m", timeout_s=5, temperature=0, seed=None)
    assert settings.timeout_s == 5 and settings.seed is None


def _max_in_window(stamps: list[float], window: float) -> int:
    stamps = sorted(stamps)
    return max(sum(1 for t in stamps[i:] if t - start < window) for i, start in enumerate(stamps))


def _arrivals(fake_llm_server, delay: float) -> list[float]:
    stamps: list[float] = []

    def reply(_request):
        stamps.append(time.monotonic())
        return FakeReply(delay=delay)  # the default (offline) answer, late

    fake_llm_server.on(lambda r: r.endpoint == "chat", reply)
    return stamps


def test_concurrency_raises_the_judges_own_limit(tmp_path, fake_llm_server, judge):
    stamps = _arrivals(fake_llm_server, 1.0)
    rows_file(tmp_path, [{**ROWS[0], "id": str(i), "answer": f"Paris {i}."} for i in range(40)])
    proc = run(
        "eval",
        "rows.jsonl",
        *judge[0],
        "--metrics",
        "faithfulness",
        "--concurrency",
        "40",
        "--quiet",
        cwd=tmp_path,
        env=judge[1],
    )
    assert proc.returncode == 0, proc.stderr
    # each request holds its slot for 1 s, so more than 16 arrivals within 0.9 s means more than 16 in flight
    assert _max_in_window(stamps, 0.9) > 16, sorted(t - min(stamps) for t in stamps)


def test_judge_concurrency_sets_the_judges_limit(tmp_path, fake_llm_server, judge):
    stamps = _arrivals(fake_llm_server, 0.3)
    rows_file(tmp_path, [{**ROWS[0], "id": str(i), "answer": f"Paris {i}."} for i in range(6)])
    proc = run(
        "eval", "--no-canaries", "rows.jsonl", *judge[0], "--metrics", "faithfulness", "--concurrency", "6",
        "--judge-concurrency", "2", "--quiet", cwd=tmp_path, env=judge[1],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(stamps) == 12 and _max_in_window(stamps, 0.25) <= 2
