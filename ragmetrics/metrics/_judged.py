"""What every judged metric shares: holding its judge, resolving it lazily, and sharing it.

The RAG metrics and the model-graded evaluators hold a judge the same way, through a
:class:`~ragmetrics.judge.resolve.LazyJudge` (which checks the ``llm`` argument); the pipeline relies on
``judge_key()`` and ``use_judge()`` to give metrics that name the same judge one caching judge.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from ragmetrics.judge import CachingJudge
from ragmetrics.judge.resolve import LazyJudge
from ragmetrics.metrics.base import passed_at
from ragmetrics.score import MetricResult, Usage

__all__ = ["JudgeHolder", "judged_result", "result_reasoning"]

_T = TypeVar("_T")


def result_reasoning(info: Any, reasoning: str, status: str, message: str | None, score: float | None) -> str:
    """A judged result's reasoning: marked when the offline judge gave it; a failure's message else.

    Args:
        info: The judge's ``JudgeInfo`` (``heuristic`` for the offline judge).
        reasoning: What the judge said (may be empty).
        status: The result's status.
        message: Its message (why it has no score, or a warning).
        score: Its score (None: no score).
    """
    if info.heuristic and reasoning:
        reasoning = f"[offline heuristic judge] {reasoning}"
    if status != "ok" and not reasoning:
        reasoning = f"No score: {message}" if score is None else (message or "")
    return reasoning


def judged_result(
    metric: Any, scored: Any, started: float, usage: Usage | None, **fields: Any
) -> MetricResult:
    """The one place a judged metric's scoring becomes its :class:`MetricResult`.

    Args:
        metric: The metric (its ``name``, ``threshold``, ``judge`` and ``_signature()``).
        scored: What its scoring gave: ``score``, ``status``, ``message``, ``reasoning``, ``details``.
        started: ``time.perf_counter()`` when the metric started, for the latency.
        usage: What the judge calls cost (None: nothing).
        **fields: The metric's own result fields (claims, rates).
    """
    info = metric.judge.info
    score = scored.score
    return MetricResult(
        name=metric.name,
        score=score,
        passed=passed_at(score, metric.threshold),
        threshold=metric.threshold,
        status=scored.status,
        message=scored.message,
        reasoning=result_reasoning(info, scored.reasoning, scored.status, scored.message, score),
        details=scored.details,
        usage=usage or Usage(),
        latency_ms=(time.perf_counter() - started) * 1000.0,
        judge=info,
        signature=metric._signature(),
        **fields,
    )


class JudgeHolder:
    """Holds a judge spec or object and resolves it into a caching judge on first use."""

    def _init_judge(
        self, owner: str, llm: Any, cache: bool | str | Path, judge_options: dict[str, Any]
    ) -> None:
        """Check and store the judge settings.

        ``llm`` is any form :func:`~ragmetrics.judge.resolve_judge` takes. ``judge_options`` may hold
        ``api_key`` and ``base_url`` (spec strings) and ``model`` (clients) besides the judge settings.

        Raises:
            ConfigError: ``llm`` is no accepted form (or a synchronous SDK client); a malformed spec;
                an unknown or invalid judge option; a keyword that does not fit the form of ``llm``.
        """
        self._lazy_judge = LazyJudge(llm, owner=owner, cache=cache, **judge_options)

    @property
    def judge(self) -> CachingJudge:
        """The caching judge, resolved on first use (which is when a missing API key is reported)."""
        return self._lazy_judge.judge

    def judge_key(self) -> tuple[object, ...]:
        """What identifies this metric's judge: metrics with equal keys can share one judge object."""
        return self._lazy_judge.key()

    async def _closing(self, coro: Awaitable[_T]) -> _T:
        """Await ``coro``, then close the judge (the ``*_sync`` twins end their event loop after this)."""
        try:
            return await coro
        finally:
            if self._lazy_judge.resolved is not None:
                await self._lazy_judge.resolved.aclose()  # its HTTP clients and disk cache (both reopen)

    def use_judge(self, judge: CachingJudge) -> None:
        """Share ``judge`` with other metrics (the pipeline does this, so claims are extracted once)."""
        self._lazy_judge.use(judge)

    def _judge_spec(self) -> str | None:
        return self._lazy_judge.spec
