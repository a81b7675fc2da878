"""Eval cases: running cases against their bounds; the marker and discovery are re-exported here.

``@eval_case(min_score=0.8, max_cost_usd=0.05, max_latency_ms=2000, tags=["qa"])`` only attaches an
:class:`EvalCaseMeta` to the function (:mod:`ragmetrics.regression.marker`); discovery imports
``eval_*.py`` / ``*_eval.py`` files by path and collects the marked functions, as pytest does
(:mod:`ragmetrics.regression.discovery`). How a case's return value becomes a verdict lives in
:mod:`ragmetrics.regression.case_result`. A case passes only when it ran, returned a well-formed value
and broke no bound.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Sequence
from typing import Any

from ragmetrics._aio import run_sync
from ragmetrics._check import check_int, check_number
from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN
from ragmetrics.regression.case_result import CaseResult, Violation, judge_value
from ragmetrics.regression.discovery import (
    EVAL_FILE_PATTERNS,
    CollectError,
    Collection,
    case_failure,
    collect_cases,
    collect_module,
    find_eval_files,
    import_path,
    is_eval_file,
    select_cases,
)
from ragmetrics.regression.marker import EvalCase, EvalCaseMeta, _Bounds, eval_case
from ragmetrics.score import ErrorRecord

__all__ = [
    "EVAL_FILE_PATTERNS",
    "CaseResult",
    "Collection",
    "CollectError",
    "EvalCase",
    "EvalCaseMeta",
    "Violation",
    "collect_cases",
    "collect_module",
    "error_result",
    "eval_case",
    "find_eval_files",
    "import_path",
    "is_eval_file",
    "run_case",
    "run_cases",
    "run_cases_sync",
    "select_cases",
]


def _check_unit(value: float | None, option: str) -> float | None:
    if value is None:
        return None
    return check_number(value, option, "eval cases", low=0.0, high=1.0)


def _check_threshold(threshold: float | None) -> float | None:
    return _check_unit(threshold, "threshold")


async def run_case(
    case: EvalCase,
    *,
    threshold: float | None = None,
    warm: bool = False,
    judge_health_min: float | None = JUDGE_HEALTH_MIN,
) -> CaseResult:
    """Run one case and judge it against its bounds; exceptions become an ``error`` result.

    Sync cases run on a worker thread, so a running event loop keeps serving async cases. Latency
    is measured from the call to the return when the case reports none.

    Args:
        case: The case.
        threshold: The min_score for a case that sets none.
        warm: When the case reports no latency (ragmetrics measures it), run it a second time and
            keep that run, so the latency is a warm one (the first call's imports and connections
            are left out; the cold figure is kept in ``details["cold_latency_ms"]``). Used when
            latency is gated; a case that reports its latency runs once.
        judge_health_min: The judge gate: a case whose returned results were judged by a judge
            reading below this rate fails (:mod:`ragmetrics.pipeline.judge_health`); None turns it off.

    Raises:
        ConfigError: ``threshold`` or ``judge_health_min`` is not in [0, 1].
    """
    gate = _check_unit(judge_health_min, "judge_health_min")
    first = await _run_once(case, threshold=threshold, gate=gate)
    if not (warm and first.latency_measured and first.outcome != "error"):
        return first
    second = await _run_once(case, threshold=threshold, gate=gate)
    if second.latency_measured:
        second.details["cold_latency_ms"] = first.latency_ms
    return second


async def _run_once(case: EvalCase, *, threshold: float | None, gate: float | None) -> CaseResult:
    min_score = case.meta.min_score if case.meta.min_score is not None else _check_threshold(threshold)
    bounds: _Bounds = {
        "min_score": min_score,
        "max_cost_usd": case.meta.max_cost_usd,
        "max_latency_ms": case.meta.max_latency_ms,
        "tags": case.meta.tags,
    }
    start = time.perf_counter()
    try:
        value = await case.func() if case.is_async else await asyncio.to_thread(case.func)
        if inspect.isawaitable(value):
            value = await value
    except (Exception, SystemExit) as exc:
        return error_result(case_failure(exc), name=case.id, **bounds)
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    return judge_value(value, name=case.id, elapsed_ms=elapsed_ms, judge_health_min=gate, **bounds)


async def run_cases(
    cases: Sequence[EvalCase],
    *,
    threshold: float | None = None,
    concurrency: int = 8,
    warm: bool = False,
    judge_health_min: float | None = JUDGE_HEALTH_MIN,
) -> list[CaseResult]:
    """Run cases, at most ``concurrency`` at a time, results in input order.

    Async cases overlap; sync cases run one at a time (on a worker thread, beside the async ones),
    and a sync case waiting for its turn holds no concurrency slot. ``warm`` and
    ``judge_health_min`` are :func:`run_case`'s.

    Raises:
        ConfigError: ``concurrency`` is below 1, or ``threshold`` or ``judge_health_min`` is not in [0, 1].
    """
    check_int(concurrency, "concurrency", "run_cases", minimum=1)
    _check_threshold(threshold)
    _check_unit(judge_health_min, "judge_health_min")
    limit, sync_turn = asyncio.Semaphore(concurrency), asyncio.Lock()
    options: dict[str, Any] = {"threshold": threshold, "warm": warm, "judge_health_min": judge_health_min}

    async def one(case: EvalCase) -> CaseResult:
        if case.is_async:
            async with limit:
                return await run_case(case, **options)
        async with sync_turn, limit:
            return await run_case(case, **options)

    return list(await asyncio.gather(*(one(c) for c in cases)))


def run_cases_sync(
    cases: Sequence[EvalCase],
    *,
    threshold: float | None = None,
    concurrency: int = 8,
    warm: bool = False,
    judge_health_min: float | None = JUDGE_HEALTH_MIN,
) -> list[CaseResult]:
    """Blocking twin of :func:`run_cases`; works inside a running event loop too."""
    return run_sync(
        run_cases(
            cases, threshold=threshold, concurrency=concurrency, warm=warm, judge_health_min=judge_health_min
        )
    )


def error_result(error: CollectError | ErrorRecord, *, name: str | None = None, **bounds: Any) -> CaseResult:
    """The ``error`` result of a file that failed to import, or of a case whose failure record is given.

    Args:
        error: The file's collection error, or a case's failure record.
        name: The case id (a collection error names its file).
        bounds: The case's bounds and tags, kept on the result.
    """
    failure = error.failure if isinstance(error, CollectError) else error
    label = error.id if isinstance(error, CollectError) else name or "?"
    return CaseResult(
        name=label, outcome="error", error=failure.summary, traceback=failure.traceback, **bounds
    )
