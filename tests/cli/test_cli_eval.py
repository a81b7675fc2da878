"""`ragmetrics eval` and `ragmetrics estimate`, run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "ragmetrics.cli"]


def run(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RAGMETRICS_JUDGE")
    }
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env={**base, **(env or {})}, cwd=cwd, timeout=120
    )


def test_example_runs_on_the_offline_judge_and_says_so_first(tmp_path):
    proc = run("eval", "--example", "--out", str(tmp_path / "r.jsonl"), "--worst", "2")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "offline heuristic judge" in lines[0]
    assert any(line.startswith("faithfulness") for line in lines)
    assert "95% CI" in proc.stdout and "Worst samples" in proc.stdout
    (totals,) = [line for line in lines if line.startswith("12 samples, ")]
    assert "0 LLM calls" in totals and "cache" not in totals  # no cache to speak of without calls
    records = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(records) == 12 and all("faithfulness" in r["scores"] for r in records)


def test_json_output_and_fail_under(tmp_path):
    proc = run("eval", "--example", "--json", "--fail-under", "0.99")
    assert proc.returncode == 1
    summary = json.loads(proc.stdout)
    assert set(summary["aggregates"]) == {"faithfulness", "relevancy", "groundedness"}
    assert "offline" in proc.stderr and "below --fail-under" in proc.stderr
    assert run("eval", "--example", "--quiet", "--fail-under", "0.0").returncode == 0


def test_csv_input_with_renamed_columns_and_limit(tmp_path):
    data = tmp_path / "rows.csv"
    data.write_text(
        'query,response,docs\n"What is Python?","Python is a language.","[""Python is a language.""]"\n'
        '"Capital of France?","Paris.","[""Paris is the capital of France.""]"\n'
    )
    proc = run(
        "eval",
        str(data),
        "--columns",
        "question=query,answer=response,contexts=docs",
        "--limit",
        "1",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["aggregates"]["faithfulness"]["total"] == 1
    assert summary["aggregates"]["faithfulness"]["mean"] > 0.9, "a copied answer is faithful"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("eval", "missing.jsonl"), "no such file: missing.jsonl"),
        (("eval",), "give a DATA file"),
        (("eval", "--example", "--metrics", "faithfulness,bogus"), "unknown metric 'bogus'"),
        (("eval", "--example", "--judge", "gpt4"), "unknown judge spec 'gpt4'"),
        (
            ("eval", "--example", "--judge", "openai:gpt-4o-mini"),
            "set the OPENAI_API_KEY environment variable",
        ),
        (("eval", "--example", "--judge", "anthropic:claude-haiku-4-5"), "ANTHROPIC_API_KEY"),
        (("estimate", "--example", "--judge", "gpt4"), "unknown judge spec 'gpt4'"),  # needs no key, a spec
    ],
)
def test_errors_are_one_line_and_exit_2(args, message, tmp_path):
    proc = run(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bad_column_is_a_usage_error(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"question": "q", "answer": "a", "contexts": []}) + "\n")
    proc = run("eval", str(data), "--columns", "answer=response")
    assert proc.returncode == 2 and "'response'" in proc.stderr and "Traceback" not in proc.stderr


def test_estimate_counts_calls_without_calling():
    proc = run("estimate", "--example", "--json")
    assert proc.returncode == 0, proc.stderr
    estimate = json.loads(proc.stdout)
    assert estimate["samples"] == 12 and estimate["calls"] == 24 + 2  # and the canaries' 2
    assert estimate["canary_calls"] == 2


def test_estimate_against_openai_prices_without_a_server(monkeypatch):
    proc = run(
        "estimate", "--example", "--judge", "openai:gpt-4o-mini", "--json", env={"OPENAI_API_KEY": "sk-test"}
    )
    assert proc.returncode == 0, proc.stderr
    estimate = json.loads(proc.stdout)
    assert estimate["cost_usd"] > 0 and estimate["prompt_tokens"] > 0


def test_help_is_fast_and_imports_no_provider_sdk():
    code = (
        "import sys, runpy; sys.argv=['ragmetrics', '--help'];\n"
        "try:\n runpy.run_module('ragmetrics.cli.app', run_name='__main__')\nexcept SystemExit: pass\n"
        "print([m for m in ('openai', 'anthropic', 'instructor', 'pydantic') if m in sys.modules])"
    )
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert time.perf_counter() - started < 2.0
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert "eval" in proc.stdout and "estimate" in proc.stdout and "test" in proc.stdout


def test_json_input_metric_subset_no_cache_concurrency_report_and_csv_out(tmp_path):
    data = tmp_path / "rows.json"
    rows = [("What is Python?", "Python is a language."), ("Capital?", "Paris is the capital.")]
    data.write_text(json.dumps([{"question": q, "answer": a, "contexts": [a]} for q, a in rows]))
    cache = tmp_path / "cache"
    proc = run(
        "eval", str(data), "--metrics", "faithfulness", "--no-cache", "--concurrency", "2",
        "--report", str(tmp_path / "r.html"), "--out", str(tmp_path / "r.csv"), "--json",
        env={"RAGMETRICS_CACHE_DIR": str(cache)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)["aggregates"]) == {"faithfulness"}
    assert not cache.exists() or not any(cache.rglob("*")), "--no-cache wrote the cache"
    assert "<html" in (tmp_path / "r.html").read_text(encoding="utf-8").lower()
    assert (tmp_path / "r.csv").read_text().splitlines()[0].count("faithfulness") >= 1
    assert run("eval", "--example", "--concurrency", "0").returncode == 2


def test_max_cost_stops_launching_samples_against_a_priced_judge(fake_llm_server, tmp_path):
    spec = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    proc = run(
        "eval", "--example", "--judge", spec, "--max-cost", "0.0006", "--json", "--concurrency", "1",
        "--max-unscored", "100%",  # skipped for the budget is unscored: allowed here, exit 1 otherwise
        env={"RAGMETRICS_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    statuses = summary["aggregates"]["faithfulness"]["statuses"]
    assert statuses.get("skipped", 0) > 0, statuses  # the budget stopped some rows
    run_stats = summary["run"]
    assert run_stats["skipped"] > 0 and run_stats["budget_exhausted"] is True
    assert 0 < run_stats["usage"]["cost_usd"] <= 0.0006 * 1.5  # reserve-then-settle may overshoot a little
    (canary,) = summary["canaries"]  # their cost is spent from the budget first
    assert 0 < canary["usage"]["cost_usd"] < run_stats["usage"]["cost_usd"]
    assert fake_llm_server.calls.total() < 24 + 2  # fewer than 2 calls x 12 rows + the canaries' 2
