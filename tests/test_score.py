"""The one failure record type and the one function that builds it (ragmetrics.score)."""

from __future__ import annotations

import os

from ragmetrics.errors import InvalidInputError, JudgeError, NoScoreError
from ragmetrics.pipeline import ErrorRecord as PipelineErrorRecord
from ragmetrics.pipeline import failure_record
from ragmetrics.score import (
    BudgetExceededError,
    ErrorRecord,
    MetricResult,
    SampleTimeoutError,
    Usage,
    failure_from,
    format_traceback,
)


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:  # noqa: BLE001 - the test wants the exception with its traceback
        return caught


def test_the_pipeline_uses_the_one_type_and_the_one_function():
    assert PipelineErrorRecord is ErrorRecord
    assert failure_record is failure_from


def test_each_kind_of_exception_gets_its_status():
    spent = Usage(calls=3, prompt_tokens=10)
    cases = [
        (InvalidInputError("contexts", "a list of strings", 5, row=4), "invalid_input"),
        (JudgeError("slow", status="timeout", usage=spent), "timeout"),
        (NoScoreError("faithfulness", "no_claims", "nothing to check"), "no_claims"),
        (SampleTimeoutError("too slow"), "timeout"),
        (TimeoutError(), "timeout"),
        (BudgetExceededError("over budget"), "skipped"),
        (ValueError("boom"), "error"),
    ]
    for exc, status in cases:
        record = failure_from(_raised(exc), metric="m", row=1)
        assert record.status == status, exc
        assert record.type == type(exc).__name__
        assert (record.traceback is not None) == (status == "error"), exc
    bad = failure_from(InvalidInputError("contexts", "a list of strings", 5, row=4), row=1)
    assert bad.field == "contexts" and bad.row == 4, "the row the error names wins"
    judged = failure_from(JudgeError("slow", status="timeout", usage=spent))
    assert judged.usage == spent
    assert failure_from(JudgeError("x", usage=spent), usage=Usage(calls=9)).usage.calls == 9
    raised = failure_from(_raised(ValueError("boom")), metric="m")
    assert raised.message == "metric 'm' raised ValueError: boom"
    assert "ValueError: boom" in (raised.traceback or "")


def test_result_fields_build_a_result_without_a_score():
    spent = Usage(calls=2)
    for exc, status in [
        (JudgeError("bad reply", status="judge_output_invalid", usage=spent), "judge_output_invalid"),
        (RuntimeError("bug"), "provider_error"),  # 'error' is no result status
    ]:
        result = MetricResult(name="x", score=None, **failure_from(exc).result_fields())
        assert result.status == status and result.score is None
        assert result.message == str(exc)
    assert failure_from(JudgeError("b", usage=spent)).result_fields()["usage"] == spent


def test_summary_is_one_line_with_the_type():
    assert failure_from(ValueError("first\nsecond")).summary == "ValueError: first"
    assert failure_from(KeyboardInterrupt()).summary == "KeyboardInterrupt"


def test_hidden_frames_leave_the_traceback_but_the_frames_of_the_user_stay():
    exc = _raised(ValueError("inside"))
    here = os.path.join("tests", "test_score.py")
    assert "test_score.py" in format_traceback(exc)
    hidden = format_traceback(exc, hide=(here,))
    assert "test_score.py" in hidden, "every frame would go, so all are kept"
    assert hidden.startswith("Traceback (most recent call last):") and "ValueError: inside" in hidden
