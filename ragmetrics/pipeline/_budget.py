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

__all__ = ["capped", "check_priced", "within_budget"]


def check_priced(judges: Any, budget: float, max_calls: int | None = None) -> None:
    """Refuse a budget that could not hold: a judge whose model the price table does not name.

    Such calls would cost 0.0 in our accounting, so ``max_cost_usd`` would let every call through
    (the gateway form ``openai:anthropic/claude-haiku-4-5@URL`` and local servers included). The
    offline judge is free; Judge objects without a price table are not checked. A call cap
    (``max_calls``) is the other consent: the run then holds to that many calls.

    Raises:
        ConfigError: A judge's model has no price; the message says how to give one.
    """
    from ragmetrics.errors import ConfigError

    if max_calls is not None:
        return
    for judge in judges:
        inner = getattr(judge, "inner", judge)
        info, prices = getattr(inner, "info", None), getattr(inner, "prices", None)
        if info is None or prices is None or info.provider == "offline":
            continue
        models = prices.get(info.provider, {})
        if not any(info.model.startswith(name) for name in models):
            raise ConfigError(
                f"max_cost_usd=${budget:g}: the price table has no price for judge '{info.spec}', so its "
                f"calls would count $0 and the budget would not hold; give its price (--price-per-mtok "
                f'IN,OUT, the judge option prices=, or a JSON file {{"{info.provider}": {{"{info.model}": '
                "[USD_PER_MTOK_IN, USD_PER_MTOK_OUT]}} named by RAGMETRICS_PRICES), or cap the calls "
                "instead (--max-calls N, max_calls=N), or drop max_cost_usd"
            )


async def capped(executor: SampleExecutor, row: Row, cap: Any) -> tuple[EvaluationResult, Any]:
    """The ``skipped`` record of a row launched after the run's ``max_calls`` were all sent."""
    try:
        sample = executor.sample(row)
    except InvalidInputError:
        return await executor.evaluate_row(row)  # its invalid_input record; it calls nothing
    exc = BudgetExceededError(
        f"skipped: the call cap max_calls={cap.max_calls} is reached ({cap.sent} calls sent); "
        "nothing was called"
    )
    return executor.failed_record(row, sample, [failure_record(exc, row=row.index)], 0.0), None


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
    raw = estimator.cost(sample, row.level, row.session)
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
