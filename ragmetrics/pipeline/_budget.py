"""The ``max_cost_usd`` budget: reserve a sample's estimated cost before launching it, settle it after.

A sample is launched only if its estimate (scaled by how real costs compared with estimates so far)
fits beside what was spent and what samples in flight have reserved; while it does not fit, the worker
waits for samples in flight to settle. A sample that still does not fit once nothing is in flight is
skipped with an error record saying so, and nothing is called for it.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.errors import InvalidInputError
from ragmetrics.pipeline._execute import SampleExecutor
from ragmetrics.pipeline._failure import BudgetExceededError, failure_record
from ragmetrics.pipeline._run_state import RunState
from ragmetrics.pipeline.dataset import Row
from ragmetrics.pipeline.report import EvaluationResult

__all__ = ["within_budget"]


async def within_budget(
    executor: SampleExecutor, row: Row, state: RunState, estimator: Any
) -> tuple[EvaluationResult, Any]:
    """Run one row if its estimated cost fits the budget, else return a ``skipped`` record.

    Args:
        executor: Runs the row.
        row: The dataset row.
        state: The run's budget bookkeeping (``budget_cond`` must be set).
        estimator: Predicts a sample's cost (a :class:`~ragmetrics.pipeline.estimate.SampleEstimator`).

    Returns:
        The record and the first failure (None for a skipped row), as ``SampleExecutor.evaluate_row``.
    """
    try:
        sample = executor.sample(row)
    except InvalidInputError:
        return await executor.evaluate_row(row)
    raw = estimator.cost(sample)
    guess = state.calibrated(raw)
    budget = float(state.max_cost_usd or 0.0)
    cond = state.budget_cond
    assert cond is not None
    async with cond:
        # wait for samples in flight to settle their real cost while the estimate does not fit
        await cond.wait_for(lambda: state.spent + state.reserved + guess <= budget or state.reservations == 0)
        fits = state.spent + state.reserved + guess <= budget
        if fits:
            state.reserved += guess
            state.reservations += 1
    if not fits:
        state.budget_exhausted = True
        exc = BudgetExceededError(
            f"skipped: the estimated cost ${guess:.6f} of this sample would exceed the budget "
            f"max_cost_usd=${budget:g} (spent ${state.spent:.6f} so far); nothing was called"
        )
        record = executor.failed_record(row, sample, [failure_record(exc, row=row.index)], 0.0)
        return record, None
    outcome: tuple[EvaluationResult, Any] | None = None
    try:
        outcome = await executor.evaluate_row(row, sample)
    finally:
        async with cond:  # settle: the reservation goes, the real cost comes, in one step
            state.reserved = max(0.0, state.reserved - guess) if state.reservations > 1 else 0.0
            state.reservations -= 1
            if outcome is not None:
                cost = outcome[0].usage.cost_usd
                state.spent += cost
                if cost > 0 and raw > 0:
                    state.estimated += raw
                    state.actual += cost
            cond.notify_all()
    return outcome
