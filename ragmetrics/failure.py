"""Failure as data: the one failure record type, and the one function that turns an exception into it.

Wherever ragmetrics keeps going after something raised (a bad row in a batch, a metric or evaluator
that raises, a judge that fails for good, a sample that times out or is skipped for the budget, an eval
case or an eval file that raises), :func:`failure_from` turns the exception into an
:class:`ErrorRecord`: its status, message, exception type, traceback (for unexpected exceptions) and
the usage it spent. The pipeline keeps the record as it is; a metric result, an eval case result and a
suite case take their fields from it (:meth:`ErrorRecord.result_fields`, :attr:`ErrorRecord.summary`).

The two run-level errors that only a runner raises, :class:`SampleTimeoutError` and
:class:`BudgetExceededError`, are defined here so the status table is in one place.
"""

from __future__ import annotations

import asyncio
import traceback as tb
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.errors import InvalidInputError, JudgeError, NoScoreError, RagMetricsError, shorten
from ragmetrics.score import STATUSES, Status, Usage, spent_by

__all__ = [
    "BudgetExceededError",
    "ErrorRecord",
    "SampleTimeoutError",
    "failure_from",
    "format_traceback",
]


class BudgetExceededError(RagMetricsError):
    """A sample was not run because its estimated cost would exceed ``max_cost_usd``."""


class SampleTimeoutError(RagMetricsError):
    """A sample did not finish within ``timeout_per_sample_s``."""


class ErrorRecord(BaseModel):
    """Why a metric (or a whole row, or an eval case) has no score: the one failure record type."""

    model_config = ConfigDict(extra="forbid")

    metric: str | None = None
    """The metric that failed; None when the whole row failed (bad input, skipped for budget)."""
    status: str
    """A result status (``invalid_input``, ``timeout``, ``rate_limited``, ``provider_error``,
    ``judge_output_invalid``, ``truncated``), ``error`` (the metric raised) or ``skipped`` (budget)."""
    message: str
    """What failed and why, in words."""
    type: str
    """The exception class name (``JudgeError``, ``InvalidInputError``, ``NoScoreError``...)."""
    traceback: str | None = None
    """The formatted traceback, for unexpected exceptions."""
    row: int | None = None
    """The dataset row (0-based)."""
    field: str | None = None
    """The input field at fault, for bad input."""
    usage: Usage = Field(default_factory=Usage)
    """What the failed calls cost when no metric result carries it (a metric that raised a
    ``JudgeError``, calls cut off by the sample's timeout); already in the record's ``usage``."""

    @property
    def summary(self) -> str:
        """``ExceptionType: first line of the message`` (cut to 300 characters), for one-line reports."""
        lines = self.message.strip().splitlines()
        if not lines or self.message == self.type:  # the exception had no message
            return self.type
        return f"{self.type}: {shorten(lines[0], 300)}"

    def result_fields(self) -> dict[str, Any]:
        """The fields a :class:`~ragmetrics.score.MetricResult` without a score takes from this failure.

        ``status`` is a result status (an ``error`` or ``skipped`` failure is a ``provider_error``
        result), with ``message`` and the ``usage`` spent: ``MetricResult(name=..., score=None,
        **record.result_fields())``.
        """
        status: Status = self.status if self.status in STATUSES else "provider_error"  # type: ignore[assignment]
        return {"status": status, "message": self.message, "usage": self.usage}


def format_traceback(exc: BaseException, *, hide: Sequence[str] = ()) -> str:
    """The traceback of ``exc`` as text; with ``hide``, only the user's frames of ``exc`` itself.

    Args:
        exc: The exception.
        hide: File name endings (``os.path.join("ragmetrics", "regression", "cases.py")``) of frames
            that are machinery, not the user's code. When given, those frames and importlib's are left
            out (all are kept if every one would go) and chained exceptions are not shown; when empty,
            the full traceback, chained exceptions included.
    """
    if not hide:
        return "".join(tb.format_exception(type(exc), exc, exc.__traceback__))
    frames = tb.extract_tb(exc.__traceback__)
    kept = [
        f
        for f in frames
        if "importlib._bootstrap" not in f.filename and not any(f.filename.endswith(h) for h in hide)
    ]
    lines = ["Traceback (most recent call last):\n", *tb.format_list(kept or frames)]
    lines += tb.format_exception_only(type(exc), exc)
    return "".join(lines)


def _status(exc: BaseException) -> str:
    if isinstance(exc, InvalidInputError):
        return "invalid_input"
    if isinstance(exc, (JudgeError, NoScoreError)):
        return str(exc.status)
    if isinstance(exc, (SampleTimeoutError, asyncio.TimeoutError, TimeoutError)):
        return "timeout"
    if isinstance(exc, BudgetExceededError):
        return "skipped"
    return "error"


def failure_from(
    exc: BaseException,
    *,
    metric: str | None = None,
    row: int | None = None,
    usage: Usage | None = None,
    traceback: bool | None = None,
    hide: Sequence[str] = (),
) -> ErrorRecord:
    """Turn an exception into the failure record: status, message, type, traceback and usage spent.

    Args:
        exc: What was raised (or built to describe a missing score).
        metric: The metric that failed; None when the whole row (or case) failed.
        row: The dataset row; an :class:`~ragmetrics.errors.InvalidInputError` naming its row wins.
        usage: What the failure spent; None: what the exception carries (a ``JudgeError``'s usage),
            else nothing.
        traceback: Whether to keep the traceback; None (the default): only for an unexpected
            exception (status ``error``), not for a judge failure, bad input, a timeout or a skip.
        hide: File name endings of frames left out of the traceback (see :func:`format_traceback`).

    Returns:
        The record. Its status is a result status, ``error`` (an unexpected exception) or ``skipped``.
    """
    status = _status(exc)
    field_name = None
    if isinstance(exc, InvalidInputError):
        field_name = exc.field
        if isinstance(exc.row, int):
            row = exc.row
    keep = status == "error" if traceback is None else traceback
    message = str(exc) or type(exc).__name__
    if status == "error" and metric is not None:
        message = f"metric '{metric}' raised {type(exc).__name__}: {shorten(message, 500)}"
    return ErrorRecord(
        usage=spent_by(exc) if usage is None else usage,
        metric=metric,
        status=status,
        message=message,
        type=type(exc).__name__,
        traceback=format_traceback(exc, hide=hide) if keep else None,
        row=row,
        field=field_name,
    )
