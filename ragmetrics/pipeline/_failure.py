"""Failure as data: the one function turning an exception into an error record; the runner's own errors.

:func:`failure_record` is the one place an exception becomes an
:class:`~ragmetrics.pipeline.report.ErrorRecord`; a bad row, a metric that raises, a judge that fails
for good, a sample that times out or one skipped for the budget gives a record with a status and a
message, never a missing row or a NaN.
"""

from __future__ import annotations

import asyncio
import traceback as tb

from ragmetrics.errors import InvalidInputError, JudgeError, NoScoreError, RagMetricsError, shorten
from ragmetrics.pipeline.report import ErrorRecord
from ragmetrics.score import spent_by

__all__ = ["BudgetExceededError", "SampleTimeoutError", "failure_record"]


class BudgetExceededError(RagMetricsError):
    """A sample was not run because its estimated cost would exceed ``max_cost_usd``."""


class SampleTimeoutError(RagMetricsError):
    """A sample did not finish within ``timeout_per_sample_s``."""


def failure_record(exc: BaseException, *, metric: str | None = None, row: int | None = None) -> ErrorRecord:
    """Turn an exception into an error record: status, message, type, usage, and (if unexpected) traceback.

    Args:
        exc: What was raised (or built to describe a missing score).
        metric: The metric that failed; None when the whole row failed.
        row: The dataset row.
    """
    status = "error"
    field_name = None
    trace = None
    if isinstance(exc, InvalidInputError):
        status, field_name = "invalid_input", exc.field
        if isinstance(exc.row, int):
            row = exc.row
    elif isinstance(exc, (JudgeError, NoScoreError)):
        status = exc.status
    elif isinstance(exc, (SampleTimeoutError, asyncio.TimeoutError, TimeoutError)):
        status = "timeout"
    elif isinstance(exc, BudgetExceededError):
        status = "skipped"
    else:
        trace = "".join(tb.format_exception(type(exc), exc, exc.__traceback__))
    message = str(exc) or type(exc).__name__
    if status == "error" and metric is not None:
        message = f"metric '{metric}' raised {type(exc).__name__}: {shorten(message, 500)}"
    return ErrorRecord(
        usage=spent_by(exc),
        metric=metric,
        status=status,
        message=message,
        type=type(exc).__name__,
        traceback=trace,
        row=row,
        field=field_name,
    )
