"""Pipeline records and their summary: ``EvaluationResult``, ``Report``, aggregates and exports.

An :class:`EvaluationResult` is one dataset row's outcome: a score per metric (``None`` with an
:class:`ErrorRecord` saying why), the per-metric records, usage, latency, id and index. A
:class:`Report` aggregates records per metric (mean, counts per status, a seeded bootstrap 95%
interval, pass rate) plus run-level counters; nothing is ever NaN. The record types live in
:mod:`ragmetrics.pipeline.records` and the exports in :mod:`ragmetrics.pipeline.export`, both
re-exported here. A report round-trips through JSON.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    field_serializer,
    field_validator,
)

from ragmetrics import __version__
from ragmetrics.judge.store import CacheCounts
from ragmetrics.pipeline._record_store import RecordStore
from ragmetrics.pipeline.canaries import CanaryResult
from ragmetrics.pipeline.conversation_summary import ConversationSummary, ConversationTally
from ragmetrics.pipeline.export import (
    Level,
    _metric_names,
    _pandas,
    dump_json,
    flat_row,
    load_json_model,
    read_jsonl,
    to_dataframe,
    write_csv,
    write_jsonl,
)
from ragmetrics.pipeline.judge_health import (
    JUDGE_HEALTH_MIN,
    PYTHON_SWITCH,
    HealthTally,
    JudgeHealth,
    judge_gate,
    judge_gate_message,
)
from ragmetrics.pipeline.records import ErrorRecord, EvaluationResult, ScoreSpread
from ragmetrics.score import Usage

__all__ = [
    "CacheSummary",
    "ErrorRecord",
    "EvaluationResult",
    "MetricAggregate",
    "Report",
    "ReportBuilder",
    "RunStats",
    "ScoreSpread",
    "bootstrap_ci",
    "flat_row",
    "read_jsonl",
    "to_dataframe",
    "write_csv",
    "write_jsonl",
]

CI_LEVEL = 0.95
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
_BLOCK_DRAWS = 1_000_000  # random indices drawn per numpy block: bounds the bootstrap's memory


def bootstrap_ci(
    values: Sequence[float] | Any,
    *,
    level: float = CI_LEVEL,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval of the mean (seeded, so reproducible).

    Returns None for no values; a zero-width interval for one value.
    """
    import numpy as np

    data = np.asarray(values, dtype=float)
    n = int(data.size)
    if n == 0:
        return None
    if n == 1 or float(data.min()) == float(data.max()):
        v = float(data[0])
        return v, v
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    block = max(1, min(resamples, _BLOCK_DRAWS // n))
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = data[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    lo, hi = float(min(max(low, data.min()), 1.0)), float(max(min(high, data.max()), 0.0))
    return lo, hi


class MetricAggregate(BaseModel):
    """One metric over a dataset."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """The metric's name."""
    total: int
    """Rows the metric was asked to score."""
    count: int
    """Rows with a score (the others are counted in ``statuses`` and left out of the mean)."""
    mean: float | None
    """Mean score over scored rows; None when there are none."""
    std: float | None = None
    """Population standard deviation of the scores."""
    min: float | None = None
    max: float | None = None
    ci_low: float | None = None
    """Lower end of the 95% percentile bootstrap confidence interval of the mean."""
    ci_high: float | None = None
    """Upper end of that interval."""
    ci_level: float = CI_LEVEL
    statuses: dict[str, int] = Field(default_factory=dict)
    """Rows per status (``ok``, ``no_claims``, ``timeout``, ``skipped``...)."""
    passed: int | None = None
    """Rows at or above the metric's threshold (None when it has none)."""
    pass_rate: float | None = None
    """``passed / rows with a pass mark``; None without a threshold."""
    repeats: int = 1
    """Runs per row."""
    mean_spread: float | None = None
    """With repeats: the mean over rows of the per-row standard deviation across repeats."""
    max_spread: float | None = None
    """With repeats: the largest per-row range (max - min) across repeats."""

    @property
    def failed(self) -> int:
        """Rows without a score."""
        return self.total - self.count


class CacheSummary(BaseModel):
    """Judge cache counters of one run (summed over the judges used)."""

    model_config = ConfigDict(extra="forbid")

    hits: int = 0
    """Requests answered from the judge cache (replies stored by an earlier run)."""
    shared: int = 0
    """Requests answered by an identical request of this run (in flight or already done)."""
    misses: int = 0
    """Requests sent to the provider."""

    @property
    def hit_rate(self) -> float | None:
        """``hits / all requests`` (shared requests are not cache hits); None before any request."""
        return CacheCounts(hits=self.hits, shared=self.shared, misses=self.misses).hit_rate


class RunStats(BaseModel):
    """Counters of one pipeline run."""

    model_config = ConfigDict(extra="forbid")

    samples: int = 0
    """Rows returned (every row of the dataset, failed and skipped ones included)."""
    failed: int = 0
    """Rows with at least one error record (skipped ones included)."""
    skipped: int = 0
    """Rows not run because the cost budget was reached."""
    usage: Usage = Field(default_factory=Usage)
    """Calls, tokens and cost over the run."""
    cache: CacheSummary = Field(default_factory=CacheSummary)
    """Judge cache hits and misses."""
    retries: int = 0
    """Transient failures (429, 5xx, timeouts) retried by the judges."""
    throttled: int = 0
    """Times a rate limit lowered a judge's concurrency."""
    wall_time_s: float = 0.0
    """Run time in seconds."""
    repeats: int = 1
    """Runs per metric per row."""
    max_cost_usd: float | None = None
    """The budget, if one was set."""
    budget_exhausted: bool = False
    """True when rows were skipped to stay within the budget."""
    judges: list[str] = Field(default_factory=list)
    """Spec strings of the judges used."""

    @property
    def samples_per_s(self) -> float | None:
        """Throughput of the run."""
        return self.samples / self.wall_time_s if self.wall_time_s > 0 else None


class ReportBuilder:
    """Accumulates aggregates record by record, keeping only numbers (so streams stay small)."""

    def __init__(
        self,
        metrics: Sequence[str],
        *,
        thresholds: Mapping[str, float | None] | None = None,
        repeats: int = 1,
        judge_health_min: float | None = JUDGE_HEALTH_MIN,
    ) -> None:
        self.metrics = list(metrics)
        self.judge_health_min = judge_health_min
        self.thresholds = dict(thresholds or {})
        self.repeats = repeats
        self._scores = {m: array("d") for m in self.metrics}
        self._statuses: dict[str, Counter[str]] = {m: Counter() for m in self.metrics}
        self._passed: dict[str, list[int]] = {m: [0, 0] for m in self.metrics}
        self._totals: Counter[str] = Counter()  # per metric, the records it applies to
        self._spreads: dict[str, list[float]] = {
            m: [0.0, 0.0, 0.0] for m in self.metrics
        }  # sum std, n, max range
        self.total = 0
        self.failed = 0
        self.skipped = 0
        self.usage = Usage()
        self.health = HealthTally()
        self.canaries: list[CanaryResult] = []
        self.conversations = ConversationTally(self.metrics)

    def add(self, record: EvaluationResult) -> None:
        """Count one record in."""
        self.total += 1
        self.conversations.add(record)
        self.health.add(record.results.values())
        if record.errors:
            self.failed += 1
        if record.skipped:
            self.skipped += 1
        self.usage = self.usage + record.usage
        for name in self.metrics:
            if name not in self._scores:  # a metric seen only in records (read back from a file)
                continue
            if name not in record.scores:  # not this record's (a conversation-level metric on a turn)
                continue
            self._totals[name] += 1
            score = record.scores.get(name)
            self._statuses[name][record.status_of(name)] += 1
            if score is not None:
                self._scores[name].append(score)
            result = record.results.get(name)
            if result is not None and result.passed is not None:
                self._passed[name][1] += 1
                passed = (
                    result.passed if score is None or result.threshold is None else score >= result.threshold
                )
                self._passed[name][0] += int(passed)
                if result.threshold is not None:
                    self.thresholds.setdefault(name, result.threshold)
            spread = record.spread.get(name)
            if spread is not None and spread.std is not None:
                acc = self._spreads[name]
                acc[0] += spread.std
                acc[1] += 1
                acc[2] = max(acc[2], (spread.max or 0.0) - (spread.min or 0.0))

    def recounted(self, records: Iterable[EvaluationResult]) -> ReportBuilder:
        """A builder with the same settings, canaries, usage and judge health, counting ``records`` anew.

        For records changed after they were counted (an untrusted judge's scores set aside at the end).
        """
        fresh = ReportBuilder(
            self.metrics,
            thresholds=self.thresholds,
            repeats=self.repeats,
            judge_health_min=self.judge_health_min,
        )
        for record in records:
            fresh.add(record)
        fresh.usage, fresh.health, fresh.canaries = self.usage, self.health, self.canaries
        return fresh

    def aggregates(self) -> dict[str, MetricAggregate]:
        """The per-metric aggregates so far."""
        import numpy as np

        out = {}
        for name in self.metrics:
            values = (
                np.frombuffer(self._scores[name], dtype=float) if len(self._scores[name]) else np.empty(0)
            )
            n = int(values.size)
            ci = bootstrap_ci(values)
            passed, judged = self._passed[name]
            spread_sum, spread_n, spread_max = self._spreads[name]
            out[name] = MetricAggregate(
                name=name,
                total=self._totals[name],
                count=n,
                mean=float(values.mean()) if n else None,
                std=float(values.std()) if n else None,
                min=float(np.min(values)) if n else None,
                max=float(np.max(values)) if n else None,
                ci_low=ci[0] if ci else None,
                ci_high=ci[1] if ci else None,
                statuses=dict(sorted(self._statuses[name].items())),
                passed=passed if judged else None,
                pass_rate=passed / judged if judged else None,
                repeats=self.repeats,
                mean_spread=spread_sum / spread_n if spread_n else None,
                max_spread=spread_max if spread_n else None,
            )
        return out

    def build(self, run: RunStats | None = None, records: Sequence[EvaluationResult] | None = None) -> Report:
        """The report: aggregates, run counters (filled in from the records when not given), records."""
        stats = run.model_copy() if run is not None else RunStats(repeats=self.repeats)
        stats.samples = self.total
        stats.failed = self.failed
        stats.skipped = self.skipped
        if run is None:
            stats.usage = self.usage
        return Report(
            aggregates=self.aggregates(),
            run=stats,
            # a store whose records are in its file stays unread; any other records are copied once
            records=records if isinstance(records, RecordStore) and records.in_file else list(records or []),
            judge_health=self.health.result(),
            judge_health_min=self.judge_health_min,
            canaries=list(self.canaries),
            conversations=self.conversations.result(),
        )


class Report(BaseModel):
    """Aggregates per metric and the run's counters, optionally with the records themselves."""

    model_config = ConfigDict(extra="forbid")

    aggregates: dict[str, MetricAggregate]
    """Per metric, in the pipeline's metric order."""
    run: RunStats = Field(default_factory=RunStats)
    """Run-level counters: samples, failures, usage, cache, retries, throttles, time."""
    records: Sequence[EvaluationResult] = Field(default_factory=list)
    """The records (empty for a streamed run, which does not keep them). A list, or for a run past
    ``records_in_memory`` the run's records read back from its temporary file as they are iterated."""
    judge_health: dict[str, JudgeHealth] = Field(default_factory=dict)
    """Per judge spec: spans and quotes found in the texts it was given, verification re-asks."""
    judge_health_min: float | None = JUDGE_HEALTH_MIN
    """The judge gate's minimum reading rate (None: the gate is off); see :attr:`judge_gate`."""
    canaries: list[CanaryResult] = Field(default_factory=list)
    """Per LLM judge: its known-answer probes (their calls are in ``run.usage``, in no aggregate)."""
    conversations: list[ConversationSummary] = Field(default_factory=list)
    """Per conversation scored (one record per assistant turn): its turns, its mean per metric and its
    tool-call scores; empty when the data held no conversation."""
    created_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    """When the report was made (UTC, ISO 8601)."""
    ragmetrics_version: str = __version__
    """The package version that made it."""

    @field_validator("records", mode="wrap")
    @classmethod
    def _records_from_file(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A run's records in its temporary file stay there (validating them would read them all)."""
        return value if isinstance(value, RecordStore) else handler(value)

    @field_serializer("records", mode="wrap")
    def _write_records(self, value: Any, handler: SerializerFunctionWrapHandler) -> Any:
        return handler(list(value) if isinstance(value, RecordStore) else value)

    @classmethod
    def from_records(
        cls,
        records: Iterable[EvaluationResult],
        *,
        run: RunStats | None = None,
        metrics: Sequence[str] | None = None,
        keep_records: bool = True,
    ) -> Report:
        """Aggregate records (metric names from the first record unless given)."""
        items = list(records)
        names = list(metrics) if metrics is not None else _metric_names(items)
        repeats = (
            run.repeats
            if run is not None
            else max((len(s.scores) for r in items for s in r.spread.values()), default=1)
        )
        builder = ReportBuilder(names, repeats=repeats)
        for record in items:
            builder.add(record)
        return builder.build(run, items if keep_records else None)

    @property
    def mean_score(self) -> float | None:
        """Mean of the per-metric means that exist."""
        got = [a.mean for a in self.aggregates.values() if a.mean is not None]
        return math.fsum(got) / len(got) if got else None

    @property
    def judge_gate(self) -> list[JudgeHealth]:
        """The judges plainly not reading their inputs (reading rate below ``judge_health_min``).

        Empty when the gate passed or is off. A judge listed here fills the schema without reading:
        none of its scores mean anything (``ragmetrics eval`` exits 5 on it).
        """
        return judge_gate(self.judge_health, self.judge_health_min)

    def __getitem__(self, metric: str) -> MetricAggregate:
        return self.aggregates[metric]

    def __str__(self) -> str:
        unread = self.judge_gate
        minimum = self.judge_health_min or 0.0
        lines = [f"JUDGE GATE FAILED: {judge_gate_message(unread, minimum, PYTHON_SWITCH)}"] if unread else []
        lines += [f"judge {c.judge} canaries {c.describe()}" for c in self.canaries if c.failed]
        lines += [f"{'metric':<16} {'mean':>6} {'95% CI':>15} {'scored':>9} {'pass':>6}  statuses"]
        for a in self.aggregates.values():
            ci = f"[{a.ci_low:.3f}, {a.ci_high:.3f}]" if a.ci_low is not None else "-"
            mean = f"{a.mean:.3f}" if a.mean is not None else "-"
            rate = f"{a.pass_rate:.0%}" if a.pass_rate is not None else "-"
            statuses = ", ".join(f"{k} {v}" for k, v in a.statuses.items())
            lines.append(f"{a.name:<16} {mean:>6} {ci:>15} {a.count:>4}/{a.total:<4} {rate:>6}  {statuses}")
        r = self.run
        rate = f"{r.cache.hit_rate:.0%}" if r.cache.hit_rate is not None else "-"
        lines.append(
            f"{r.samples} samples ({r.failed} with errors, {r.skipped} skipped) in {r.wall_time_s:.1f} s; "
            f"{r.usage.describe()}, {r.usage.prompt_tokens + r.usage.completion_tokens} tokens, "
            f"${r.usage.cost_usd:.4f}; cache hits {r.cache.hits} ({rate}), shared {r.cache.shared}, "
            f"misses {r.cache.misses}; transient retries {r.retries}; throttled {r.throttled}"
        )
        lines += [f"judge {h.judge}: {h.describe()}" for h in self.judge_health.values()]
        lines += [f"canaries, {c.judge}: {c.describe()}" for c in self.canaries if not c.failed]
        return "\n".join(lines)

    # -- JSON round-trip ---------------------------------------------------------------------------
    def to_json(self, *, indent: int | None = None) -> str:
        """The whole report as JSON (``Report.from_json`` reads it back)."""
        return dump_json(self, indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Report:
        """Read a report written by :meth:`to_json`."""
        return load_json_model(cls, text)

    def save(self, path: str | Path) -> Path:
        """Write the report as JSON to ``path``."""
        out = Path(path)
        out.write_text(self.to_json(indent=2), encoding="utf-8")
        return out

    @classmethod
    def load(cls, path: str | Path) -> Report:
        """Read a report saved with :meth:`save`."""
        return cls.from_json(Path(path).read_bytes())

    # -- record exports ----------------------------------------------------------------------------
    def to_jsonl(self, path: str | Path) -> Path:
        """Write the records as JSON lines (lossless: :func:`read_jsonl` reads them back)."""
        return write_jsonl(self.records, path)

    def to_csv(self, path: str | Path) -> Path:
        """Write one flat row per record (see :func:`flat_row`)."""
        return write_csv(self.records, path, metrics=list(self.aggregates))

    def to_pandas(self, level: Level = "samples") -> Any:
        """The records as a pandas DataFrame, one flat row per record (``level="claims"``: per claim)."""
        return to_dataframe(self.records, metrics=list(self.aggregates), level=level)

    def aggregates_frame(self) -> Any:
        """The aggregates as a pandas DataFrame, one row per metric."""
        pd = _pandas("Report.aggregates_frame()")
        return pd.DataFrame([a.model_dump() for a in self.aggregates.values()]).set_index("name")
