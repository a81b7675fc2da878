"""The runner's names for the one failure function and its run-level errors (see ``ragmetrics.score``).

:func:`failure_record` is :func:`ragmetrics.score.failure_from`, the one place an exception becomes
an :class:`~ragmetrics.score.ErrorRecord`; a bad row, a metric that raises, a judge that fails for
good, a sample that times out or one skipped for the budget gives a record with a status and a
message, never a missing row or a NaN.
"""

from __future__ import annotations

from ragmetrics.score import BudgetExceededError, SampleTimeoutError, failure_from

__all__ = ["BudgetExceededError", "SampleTimeoutError", "failure_record"]

failure_record = failure_from
"""The pipeline's (documented) name of :func:`ragmetrics.score.failure_from`."""
