"""The judge gate from Python: ``judge_health_min=`` on the pipeline and ``evaluate()``, the outcome on
the summary (``summary().judge_gate``: the judges plainly not reading; empty when passed or off)."""

from __future__ import annotations

from importlib import resources

import pytest

import ragmetrics
from ragmetrics.errors import ConfigError
from ragmetrics.pipeline import EvaluationPipeline, Report
from ragmetrics.testing import FakeLLMServer

EXAMPLE = str(resources.files("ragmetrics") / "data" / "example.jsonl")
METRICS = ["faithfulness", "relevancy"]


def run(spec: str, **options) -> ragmetrics.pipeline.EvaluationResults:
    return ragmetrics.evaluate_sync(EXAMPLE, METRICS, llm=spec, progress=False, **options)


def test_the_schema_only_judge_fails_the_python_gate_and_none_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        summary = run(spec).summary()
        assert [h.judge for h in summary.judge_gate] == [spec]
        assert summary.judge_health_min == 0.5
        text = str(summary)
        assert text.startswith(f"JUDGE GATE FAILED: the judge {spec} is not reading its inputs")
        assert "judge_health_min=None turns it off" in text
        again = Report.from_json(summary.to_json())  # the outcome survives a save
        assert [h.judge for h in again.judge_gate] == [spec]
        calls = srv.calls.total()
        off = run(spec, judge_health_min=None).summary()
        assert off.judge_gate == [] and off.judge_health_min is None
        assert off.judge_health[spec].reading_rate == summary.judge_health[spec].reading_rate
        assert "JUDGE GATE" not in str(off)
        assert srv.calls.total() == calls  # the same run, from the cache
        strict = run(spec, judge_health_min=0.0).summary()  # nothing is below 0
        assert strict.judge_gate == []


@pytest.mark.parametrize("judge", ["offline", "fake"])
def test_a_reading_judge_passes_the_python_gate_even_at_1(judge, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with FakeLLMServer() as srv:
        spec = "offline" if judge == "offline" else f"openai:gpt-4o-mini@{srv.openai_base_url}"
        summary = run(spec, judge_health_min=1.0).summary()
        assert summary.judge_gate == [] and summary.judge_health[spec].reading_rate == 1.0
        assert "JUDGE GATE" not in str(summary)


@pytest.mark.parametrize("bad", [1.5, -0.1, "0.5", True])
def test_judge_health_min_is_checked(bad):
    with pytest.raises(ConfigError, match="judge_health_min"):
        EvaluationPipeline(metrics=["rouge"], judge_health_min=bad)
