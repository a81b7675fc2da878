"""The judge gate: a run whose judge is plainly not reading its inputs fails (exit 5), naming the judge.

It must fail ``FakeLLMServer(answer="schema")`` and a generic schema-filling server
(``FakeLLMServer(answer="placeholder")``: placeholder values, the way mock API servers fill a schema), and
never the offline judge or the fake server's default mode, whose scores stay unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ragmetrics.testing import FakeLLMServer

EXIT_JUDGE = 5


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OPENAI_API_KEY": "test", **env},
        timeout=300,
    )


ARGS = (
    "eval",
    "--example",
    "--metrics",
    "faithfulness,relevancy",
    "--fail-under",
    "0",
    "--json",
    "--no-cache",
)


@pytest.mark.parametrize("filler", ["schema", "generic"])
def test_a_judge_that_only_fills_the_schema_fails_the_gate(filler, tmp_path):
    with FakeLLMServer(answer="schema" if filler == "schema" else "placeholder") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        report = tmp_path / "r.html"
        proc = run(
            *ARGS, "--judge", spec, "--report", str(report), env={"RAGMETRICS_CACHE_DIR": str(tmp_path)}
        )
        assert proc.returncode == EXIT_JUDGE, proc.stderr
        assert 'id="judge-health-banner"' in report.read_text(encoding="utf-8")
        assert f"the judge {spec} is not reading its inputs" in proc.stderr
        assert "spans found 0/" in proc.stderr and "Check the model name and base URL" in proc.stderr
        health = json.loads(proc.stdout)["judge_health"][spec]
        assert health["reading_rate"] is not None and health["reading_rate"] < 0.5
        off = run(*ARGS, "--judge", spec, "--no-judge-gate", env={"RAGMETRICS_CACHE_DIR": str(tmp_path)})
        assert off.returncode != EXIT_JUDGE and "is not reading its inputs" not in off.stderr


@pytest.mark.parametrize("judge", ["offline", "fake"])
def test_a_reading_judge_passes_the_gate_with_full_health(judge, tmp_path):
    with FakeLLMServer() as srv:
        spec = "offline" if judge == "offline" else f"openai:gpt-4o-mini@{srv.openai_base_url}"
        report = tmp_path / "r.html"
        proc = run(
            *ARGS, "--judge", spec, "--report", str(report), env={"RAGMETRICS_CACHE_DIR": str(tmp_path)}
        )
        assert proc.returncode == 0, proc.stderr
        html = report.read_text(encoding="utf-8")
        assert "Judge health" in html and 'id="judge-health-banner"' not in html
        summary = json.loads(proc.stdout)
        health = summary["judge_health"][spec]
        assert health["span_rate"] == 1.0 and health["quote_rate"] == 1.0 and health["reasks"] == 0
        assert health["samples"] == 12
        assert summary["aggregates"]["faithfulness"]["mean"] == pytest.approx(7.5 / 12)  # as on main
        canaries = 0 if judge == "offline" else 2  # the known-answer probes, once per run: none per sample
        assert srv.calls.total() == (0 if judge == "offline" else 23) + canaries


@pytest.mark.parametrize(("minimum", "banner"), [(0.5, True), (0.0, False), (None, True)])
def test_the_report_banner_follows_the_runs_own_judge_health_min(minimum, banner):
    from ragmetrics import EvaluationPipeline, FaithfulnessMetric
    from ragmetrics.report.html import render_html

    rows = [{"question": "Where is it?", "answer": "The bridge is in Lyon.", "contexts": ["It is in Lyon."]}]
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        pipeline = EvaluationPipeline(
            [FaithfulnessMetric(llm=spec, cache=False)],
            judge_health_min=minimum,
            canaries=False,
            progress=False,
        )
        results = pipeline.run(rows)
    report = results.summary()
    assert report.judge_health[spec].reading_rate == 0.0
    html = render_html(report)
    # the gate's threshold is the user's (0 turns the banner off); without a gate it still warns
    assert ('id="judge-health-banner"' in html) is banner
    assert ('class="banner alert"' in html) is banner
