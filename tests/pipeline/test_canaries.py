"""Canaries: known-answer probes put to every judge of a run, beside its first rows (first on a local judge).

A judge that only fills the schema fails them (exit 5, reported first); the fake server's default mode
and the offline judge pass them; they cost at most 4 calls per run and judge, 0 on a re-run (cached),
0 with ``--no-canaries`` or ``canaries=False`` (the opt-out), and never enter the scores or records.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ragmetrics
from ragmetrics.pipeline.canaries import CANARY_CALLS_MAX
from ragmetrics.testing import FakeLLMServer

EXIT_JUDGE = 5
ARGS = ("eval", "--example", "--metrics", "faithfulness,relevancy", "--fail-under", "0")  # canaries: default


def run(*args: str, cache: os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OPENAI_API_KEY": "test", "RAGMETRICS_CACHE_DIR": str(cache)},
        timeout=300,
    )


def test_a_schema_only_judge_fails_its_canaries_first_and_exits_5(tmp_path):
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        # the health gate off: the canaries alone fail the run
        proc = run(*ARGS, "--judge", spec, "--judge-health-min", "0", "--no-cache", cache=tmp_path)
        assert proc.returncode == EXIT_JUDGE, proc.stderr
        first = proc.stderr.splitlines()
        gate = [line for line in first if line.startswith("ragmetrics eval:")]
        assert gate[0].startswith(f"ragmetrics eval: the judge {spec} failed its canaries"), proc.stderr
        assert "supported -> not extracted" in gate[0]
        text = proc.stdout.splitlines()
        line = next(i for i, t in enumerate(text) if t.startswith(f"canaries, {spec}: FAILED 0/3"))
        assert line < next(i for i, t in enumerate(text) if t.startswith("metric")), proc.stdout  # first
        off = run(
            *ARGS, "--judge", spec, "--judge-health-min", "0", "--no-judge-gate", "--no-cache", cache=tmp_path
        )
        assert off.returncode != EXIT_JUDGE and "failed its canaries" not in off.stderr


@pytest.mark.parametrize("judge", ["offline", "fake"])
def test_a_reading_judge_passes_them_and_a_rerun_pays_nothing(judge, tmp_path):
    with FakeLLMServer() as srv:
        spec = "offline" if judge == "offline" else f"openai:gpt-4o-mini@{srv.openai_base_url}"
        proc = run(*ARGS, "--judge", spec, "--json", cache=tmp_path)
        assert proc.returncode == 0, proc.stderr
        summary = json.loads(proc.stdout)
        (canary,) = summary["canaries"]
        assert canary["judge"] == spec and canary["passed"] is True
        assert {p["kind"]: p["got"] for p in canary["probes"]} == {
            "supported": "supported",
            "contradicted": "contradicted",
            "unrelated": "not_found",
        }
        assert canary["source"] == "drawn from the run's rows"  # not the bundled one a proxy may know
        calls = 0 if judge == "offline" else 2
        assert canary["usage"]["calls"] == calls <= CANARY_CALLS_MAX
        assert srv.calls.total() == (0 if judge == "offline" else 23 + 2)
        assert summary["run"]["usage"]["calls"] == (0 if judge == "offline" else 25)  # in the run's usage
        assert summary["aggregates"]["faithfulness"]["mean"] == pytest.approx(7.5 / 12)  # not in the scores
        assert summary["run"]["samples"] == 12  # nor in the records
        again = run(*ARGS, "--judge", spec, "--json", cache=tmp_path)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["canaries"][0]["usage"]["calls"] == 0  # cached
        assert srv.calls.total() == (0 if judge == "offline" else 25)  # a re-run calls nothing


def test_no_canaries_opts_out_and_the_estimate_counts_them_by_default(tmp_path):
    with FakeLLMServer() as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        proc = run(*ARGS, "--judge", spec, "--json", "--no-cache", "--no-canaries", cache=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["canaries"] == []
        assert srv.calls.total() == 23  # the dataset's own calls only
        alias = run(*ARGS, "--judge", spec, "--json", "--no-cache", "--canaries", cache=tmp_path)
        assert alias.returncode == 0, alias.stderr  # the old opt-in flag is accepted: the default
        assert json.loads(alias.stdout)["canaries"][0]["usage"]["calls"] == 2
        assert srv.calls.total() == 23 + 23 + 2
        est = [
            run(
                "estimate",
                "--example",
                "--metrics",
                "faithfulness,relevancy",
                "--judge",
                spec,
                "--json",
                *flag,
                cache=tmp_path,
            )
            for flag in ((), ("--no-canaries",))
        ]
        with_, without = (json.loads(p.stdout) for p in est)
        assert with_["canary_calls"] == 2 and without["canary_calls"] == 0
        assert with_["calls"] == without["calls"] + 2


def test_python_evaluate_runs_them_by_default_and_false_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    rows = [
        {
            "question": "q?",
            "answer": "The Eiffel Tower is in Paris.",
            "contexts": ["The Eiffel Tower is in Paris."],
        }
    ]
    with FakeLLMServer() as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        results = ragmetrics.evaluate_sync(rows, ["faithfulness"], llm=spec, progress=False)
        summary = results.summary()
        (canary,) = summary.canaries
        assert canary.passed and canary.usage.calls == 2
        assert summary.run.usage.calls == srv.calls.total() == 2 + 2
        assert "canaries, " in str(summary)
        assert all(r.usage.calls == 2 for r in results)  # the record holds its own calls only
        before = srv.calls.total()
        monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "fresh"))
        off = ragmetrics.evaluate_sync(rows, ["faithfulness"], llm=spec, progress=False, canaries=False)
        assert off.summary().canaries == []
        assert srv.calls.total() - before == 2


def test_the_pipeline_runs_them_by_default_and_its_estimate_counts_them(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    from ragmetrics.metrics.claims.faithfulness import FaithfulnessMetric
    from ragmetrics.pipeline import EvaluationPipeline

    rows = [{"question": "q?", "answer": "Paris is in France.", "contexts": ["Paris is in France."]}]
    with FakeLLMServer() as srv:
        metric = FaithfulnessMetric(llm=f"openai:gpt-4o-mini@{srv.openai_base_url}", api_key="test")
        pipeline = EvaluationPipeline([metric], progress=False)
        estimate = pipeline.estimate(rows)
        assert estimate.canary_calls == 2 and estimate.calls == 2 + 2
        results = pipeline.run(rows)
        (canary,) = results.summary().canaries
        assert canary.passed and canary.usage.calls == 2 <= CANARY_CALLS_MAX
        assert srv.calls.total() == estimate.calls == 4
        off = EvaluationPipeline([metric], progress=False, canaries=False)
        assert off.estimate(rows).canary_calls == 0


def test_a_dataset_with_no_valid_row_puts_no_canaries_and_costs_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    from ragmetrics.metrics.claims.faithfulness import FaithfulnessMetric
    from ragmetrics.pipeline import EvaluationPipeline

    bad = [{"question": "q?", "answer": None, "contexts": ["c"]}, {"question": "q?", "contexts": ["c"]}]
    good = {"question": "q?", "answer": "Paris is in France.", "contexts": ["Paris is in France."]}
    with FakeLLMServer() as srv:
        metric = FaithfulnessMetric(llm=f"openai:gpt-4o-mini@{srv.openai_base_url}", api_key="test")
        pipeline = EvaluationPipeline([metric], progress=False)
        assert pipeline.estimate(bad).calls == 0 and pipeline.estimate(bad).canary_calls == 0
        results = pipeline.run(bad)
        assert [r.status_of("faithfulness") for r in results] == ["invalid_input", "invalid_input"]
        assert results.summary().canaries == [] and srv.calls.total() == 0  # nothing valid, nothing paid
        # one valid row among them: the probes go first, once
        mixed = pipeline.run([*bad, good])
        (canary,) = mixed.summary().canaries
        assert canary.passed and srv.calls.total() == 2 + 2
        assert mixed.summary().run.usage.calls == 4


def test_a_hosted_judges_canaries_run_beside_the_first_rows_and_still_mark_every_record():
    rows = [
        {
            "id": f"r{i}",
            "question": f"Where is town {i}?",
            "answer": f"The town numbered {i} sits beside river {i}.",
            "contexts": [f"Town {i} lies on river {i}.", f"River {i} is long."],
        }
        for i in range(6)
    ]
    answers = {r["answer"] for r in rows}
    with FakeLLMServer() as srv:  # a hosted-like server at a custom URL: its kind is asked, not local
        srv.latency = 0.2
        result = ragmetrics.evaluate_sync(
            rows,
            metrics=["faithfulness"],
            llm=f"openai:gpt-4o-mini@{srv.openai_base_url}",
            progress=False,
            cache=False,
        )
        chats = [r for r in srv.requests if r.endpoint == "chat"]
    (canary,) = result.summary().canaries
    assert canary.passed and canary.usage.calls == 2
    is_row = [any(a in (r.prompt or "") for a in answers) for r in chats]
    canary_calls = [i for i, row in enumerate(is_row) if not row]
    assert len(canary_calls) == 2 and len(chats) == 2 + 2 * len(rows)
    # before: both canary calls (extract, then verify 0.2 s later) went out before any row's
    assert any(is_row[: canary_calls[1]]), "rows started while the canaries ran"
    assert [r.status for rec in result for r in rec.results.values()] == ["ok"] * len(rows)
