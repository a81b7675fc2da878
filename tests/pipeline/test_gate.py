"""The unscored gate (ragmetrics.pipeline.gate): what counts as unscored, the limit, the one-line message."""

from __future__ import annotations

import pytest

from ragmetrics.errors import ConfigError
from ragmetrics.pipeline import ErrorRecord, EvaluationResult, Report
from ragmetrics.pipeline.gate import UnscoredLimit, check_unscored, unscored_failure, unscored_message
from ragmetrics.score import MetricResult

_DEAD = "openai:x failed after 6 attempts: could not connect to http://127.0.0.1:9/v1: Connection error."


def _failed(i: int, metrics: tuple[str, ...]) -> EvaluationResult:
    errors = [
        ErrorRecord(metric=m, status="provider_error", message=_DEAD, type="JudgeError") for m in metrics
    ]
    return EvaluationResult(index=i, id=str(i), scores=dict.fromkeys(metrics), errors=errors)


def _scored(i: int, score: float) -> EvaluationResult:
    result = MetricResult(name="faithfulness", score=score)
    return EvaluationResult(
        index=i, id=str(i), scores={"faithfulness": score}, results={"faithfulness": result}
    )


def test_nothing_scored_fails_with_one_line_naming_status_and_cause() -> None:
    report = Report.from_records([_failed(i, ("faithfulness", "relevancy")) for i in range(12)])
    failures = check_unscored(report, max_unscored=1.0)  # even a limit allowing everything
    assert [f.metric for f in failures] == ["faithfulness", "relevancy"]
    assert all(f.nothing_scored and f.statuses == {"provider_error": 12} for f in failures)
    line = unscored_message(failures)
    assert "\n" not in line
    assert line.startswith("0 of 12 samples scored (faithfulness, relevancy): provider_error 12: ")
    assert "could not connect to http://127.0.0.1:9/v1" in line


def test_limit_as_count_share_and_percentage() -> None:
    report = Report.from_records([_failed(0, ("faithfulness",)), *(_scored(i, 0.5) for i in range(1, 10))])
    assert [f.unscored for f in check_unscored(report)] == [1]  # default: none allowed
    assert check_unscored(report, max_unscored="1") == []
    assert check_unscored(report, max_unscored="0.1") == []
    assert check_unscored(report, max_unscored="10%") == []
    (failure,) = check_unscored(report, max_unscored="5%")
    assert str(failure).startswith("faithfulness: 9 of 10 samples scored: provider_error 1: ")
    assert "more unscored than the 5% allowed" in str(failure)


def test_a_status_with_a_score_is_scored() -> None:
    result = MetricResult(name="faithfulness", score=1.0, status="no_claims")
    no_claims = EvaluationResult(
        index=0, id="0", scores={"faithfulness": 1.0}, results={"faithfulness": result}
    )
    report = Report.from_records([no_claims, _scored(1, 0.4)])
    assert check_unscored(report) == []


def test_aggregates_alone_still_count_statuses() -> None:
    report = Report.from_records([_failed(0, ("faithfulness",)), _scored(1, 0.5)])
    (failure,) = check_unscored(report.aggregates)
    assert failure.statuses == {"provider_error": 1} and failure.example is None


def test_an_empty_run_fails_and_bad_limits_are_refused() -> None:
    empty = unscored_failure("m", scored=0, total=0, max_unscored="100%")
    assert empty is not None and str(empty) == "m: 0 of 0 samples scored: there were no samples to score"
    for bad in ("-1", "x", "1.5", "nan", "150%", True, -2):
        with pytest.raises(ConfigError, match="max_unscored"):
            UnscoredLimit.of(bad)  # type: ignore[arg-type]
