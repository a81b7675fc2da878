"""The counters and budget bookkeeping of one run, and the run statistics built from them.

Judge counters (cache hits, misses, retries, throttles) are read as a difference from a baseline
taken when the run starts, so a judge shared by several runs reports each run's own work.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from ragmetrics.judge.cache import CachingJudge
from ragmetrics.judge.store import CacheCounts
from ragmetrics.pipeline.progress import ProgressBar
from ragmetrics.pipeline.report import CacheSummary, ReportBuilder, RunStats

__all__ = ["RunState"]


@dataclass(slots=True)
class _Baseline:
    cache: CacheCounts = field(default_factory=CacheCounts)
    retries: int = 0
    throttled: int = 0


def _judge_counters(judge: CachingJudge) -> _Baseline:
    inner = judge.inner
    limiter = getattr(inner, "limiter", None)
    return _Baseline(
        cache=judge.stats.copy(),
        retries=int(getattr(inner, "retries", 0) or 0),
        throttled=int(getattr(limiter, "throttled", 0) or 0),
    )


@dataclass(slots=True)
class RunState:
    """Counters and budget bookkeeping of one run."""

    judges: list[CachingJudge]
    builder: ReportBuilder
    total: int | None
    progress: ProgressBar
    max_cost_usd: float | None
    repeats: int
    started: float = field(default_factory=time.perf_counter)
    baselines: list[_Baseline] = field(default_factory=list)
    done: int = 0
    spent: float = 0.0
    reserved: float = 0.0
    reservations: int = 0
    """Samples in flight holding a share of the budget (an int, so 'none left' is exact)."""
    estimated: float = 0.0
    actual: float = 0.0
    budget_exhausted: bool = False
    budget_cond: asyncio.Condition | None = None

    def __post_init__(self) -> None:
        self.baselines = [_judge_counters(j) for j in self.judges]

    def stats(self) -> RunStats:
        """The run's counters so far."""
        counts = self._cache_counts()
        cache = CacheSummary(hits=counts.hits, shared=counts.shared, misses=counts.misses)
        retries = throttled = 0
        for judge, base in zip(self.judges, self.baselines, strict=True):
            now = _judge_counters(judge)
            retries += now.retries - base.retries
            throttled += now.throttled - base.throttled
        b = self.builder
        return RunStats(
            samples=b.total,
            failed=b.failed,
            skipped=b.skipped,
            usage=b.usage,
            cache=cache,
            retries=retries,
            throttled=throttled,
            wall_time_s=time.perf_counter() - self.started,
            repeats=self.repeats,
            max_cost_usd=self.max_cost_usd,
            budget_exhausted=self.budget_exhausted,
            judges=[j.info.spec for j in self.judges],
        )

    def _cache_counts(self) -> CacheCounts:
        """The judge cache lookups of this run, over every judge."""
        total = CacheCounts()
        for judge, base in zip(self.judges, self.baselines, strict=True):
            total = total + judge.stats.since(base.cache)
        return total

    def calibrated(self, estimate: float) -> float:
        """The estimate scaled by how actual costs compared with estimates so far."""
        if self.estimated > 0 and self.actual > 0:
            return estimate * (self.actual / self.estimated)
        return estimate

    def tick(self) -> None:
        """Redraw the progress bar (done, failed, cache hit rate, cost), if it is enabled."""
        progress = self.progress
        if not progress.enabled:
            return
        counts = self._cache_counts()  # shared requests count as requests, not as hits
        progress.update(
            self.done,
            failed=self.builder.failed,
            cache_hits=counts.hits,
            cache_requests=counts.lookups,
            calls=self.builder.usage.calls,
            cost_usd=self.builder.usage.cost_usd,
        )
