"""Pipeline records and their summary: ``EvaluationResult``, ``Report``, aggregates and exports.

An :class:`EvaluationResult` is what the pipeline returns for one dataset row: a score per metric
(``None`` when there is none, and then an :class:`ErrorRecord` says why), the per-metric records with
their claims and verdicts, summed usage, latency, and the row's id and index. A :class:`Report`
aggregates many records per metric: mean, count of scored samples, count per status, a 95% percentile
bootstrap confidence interval of the mean (numpy, seeded), pass rate; plus run-level counters (cache
hits and misses, retries, throttles, calls, tokens, cost). Nothing here is ever NaN: what has no score
is counted by status and left out of means, openly.

Exports: JSONL (one record per line, lossless), CSV and pandas (one flat row per record), and a JSON
round-trip of the whole report. This module sits below the runner and imports only the record types.
"""

from __future__ import annotations

import csv
import json
import math
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragmetrics._version import __version__
from ragmetrics.errors import MissingDependencyError
from ragmetrics.sample import Sample
from ragmetrics.score import MetricResult, Usage

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

RESERVED_NAMES = frozenset(
    {
        "index",
        "id",
        "sample",
        "scores",
        "results",
        "errors",
        "spread",
        "usage",
        "latency_ms",
        "mean_score",
        "ok",
        "skipped",
        "score",
        "cost_usd",
        "model_config",
        "model_fields",
    }
)
"""Names a metric may not take: they are attributes of :class:`EvaluationResult` already."""


class ErrorRecord(BaseModel):
    """Why a metric (or a whole row) has no score."""

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


class ScoreSpread(BaseModel):
    """One metric's scores over ``repeats=N`` runs on one sample."""

    model_config = ConfigDict(extra="forbid")

    scores: list[float | None]
    """The score of each repeat (None where that repeat had none)."""
    n: int
    """Repeats that produced a score."""
    mean: float | None
    """Mean of those scores."""
    std: float | None
    """Population standard deviation of those scores (0 for one score)."""
    min: float | None
    max: float | None

    @classmethod
    def of(cls, scores: Sequence[float | None]) -> ScoreSpread:
        """The spread of a list of scores (None entries are counted out)."""
        got = [s for s in scores if s is not None]
        if not got:
            return cls(scores=list(scores), n=0, mean=None, std=None, min=None, max=None)
        mean = math.fsum(got) / len(got)
        std = math.sqrt(math.fsum((s - mean) ** 2 for s in got) / len(got))
        return cls(scores=list(scores), n=len(got), mean=mean, std=std, min=min(got), max=max(got))


def _fmt(value: float | None) -> str:
    return "None" if value is None else f"{value:.2f}"


class EvaluationResult(BaseModel):
    """The scores of one dataset row, with everything behind them.

    Each metric's score is also an attribute named after the metric (``result.faithfulness``);
    ``None`` when the metric produced no score, in which case ``errors`` says why.
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    """Position of the row in the dataset (0-based); results come back in this order."""
    id: str
    """The row's id, or its index as text when it had none."""
    sample: Sample | None = None
    """The validated sample; None when the row itself was invalid."""
    scores: dict[str, float | None] = Field(default_factory=dict)
    """Score per metric, in the pipeline's metric order (mean over repeats when ``repeats > 1``)."""
    results: dict[str, MetricResult] = Field(default_factory=dict)
    """Full record per metric that returned one: claims, verdicts, reasons, usage (first repeat)."""
    errors: list[ErrorRecord] = Field(default_factory=list)
    """Why some metric (or the row) has no score."""
    spread: dict[str, ScoreSpread] = Field(default_factory=dict)
    """Per metric, the scores of every repeat and their spread (only when ``repeats > 1``)."""
    usage: Usage = Field(default_factory=Usage)
    """LLM calls, tokens and cost of this row, summed over metrics and repeats."""
    latency_ms: float = 0.0
    """Wall time of this row."""
    mean_score: float | None = None
    """Mean of the scores that exist; None when no metric produced one (computed, never NaN)."""

    @model_validator(mode="after")
    def _compute_mean(self) -> EvaluationResult:
        got = [s for s in self.scores.values() if s is not None]
        self.mean_score = math.fsum(got) / len(got) if got else None
        return self

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_"):
            scores = self.__dict__.get("scores")
            if scores is not None and name in scores:
                return scores[name]
        return super().__getattr__(name)  # type: ignore[misc]

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.scores))

    def __repr__(self) -> str:
        parts = [f"{name}={_fmt(score)}" for name, score in self.scores.items()]
        parts.append(f"mean_score={_fmt(self.mean_score)}")
        if self.errors:
            parts.append(f"errors={len(self.errors)}")
        return f"EvaluationResult({', '.join(parts)})"

    __str__ = __repr__

    def score(self, metric: str) -> float | None:
        """The score of ``metric`` (None when it has none).

        Raises:
            KeyError: No metric of that name ran.
        """
        return self.scores[metric]

    @property
    def ok(self) -> bool:
        """True when every metric produced a score and nothing failed."""
        return not self.errors

    @property
    def skipped(self) -> bool:
        """True when the row was not run because the cost budget was reached."""
        return any(e.status == "skipped" for e in self.errors)

    @property
    def cost_usd(self) -> float:
        """Cost of this row in USD."""
        return self.usage.cost_usd

    def status_of(self, metric: str) -> str:
        """The status of ``metric`` on this row: the result's status, else the error's."""
        result = self.results.get(metric)
        if result is not None:
            return result.status
        for err in self.errors:
            if err.metric == metric:
                return err.status
        for err in self.errors:
            if err.metric is None:
                return err.status
        return "missing"


# -- aggregates -----------------------------------------------------------------------------------


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
    """Requests answered from the disk cache or memory."""
    shared: int = 0
    """Requests that joined an identical request in flight."""
    misses: int = 0
    """Requests sent to the provider."""

    @property
    def hit_rate(self) -> float | None:
        """``(hits + shared) / all requests``; None before any request."""
        total = self.hits + self.shared + self.misses
        return (self.hits + self.shared) / total if total else None


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
    ) -> None:
        self.metrics = list(metrics)
        self.thresholds = dict(thresholds or {})
        self.repeats = repeats
        self._scores = {m: array("d") for m in self.metrics}
        self._statuses: dict[str, Counter[str]] = {m: Counter() for m in self.metrics}
        self._passed: dict[str, list[int]] = {m: [0, 0] for m in self.metrics}
        self._spreads: dict[str, list[float]] = {
            m: [0.0, 0.0, 0.0] for m in self.metrics
        }  # sum std, n, max range
        self.total = 0
        self.failed = 0
        self.skipped = 0
        self.usage = Usage()

    def add(self, record: EvaluationResult) -> None:
        """Count one record in."""
        self.total += 1
        if record.errors:
            self.failed += 1
        if record.skipped:
            self.skipped += 1
        self.usage = self.usage + record.usage
        for name in self.metrics:
            if name not in self._scores:  # a metric seen only in records (read back from a file)
                continue
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
                total=self.total,
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
        return Report(aggregates=self.aggregates(), run=stats, records=list(records or []))


class Report(BaseModel):
    """Aggregates per metric and the run's counters, optionally with the records themselves."""

    model_config = ConfigDict(extra="forbid")

    aggregates: dict[str, MetricAggregate]
    """Per metric, in the pipeline's metric order."""
    run: RunStats = Field(default_factory=RunStats)
    """Run-level counters: samples, failures, usage, cache, retries, throttles, time."""
    records: list[EvaluationResult] = Field(default_factory=list)
    """The records (empty for a streamed run, which does not keep them)."""
    created_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    """When the report was made (UTC, ISO 8601)."""
    ragmetrics_version: str = __version__
    """The package version that made it."""

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

    def __getitem__(self, metric: str) -> MetricAggregate:
        return self.aggregates[metric]

    def __str__(self) -> str:
        lines = [f"{'metric':<16} {'mean':>6} {'95% CI':>15} {'scored':>9} {'pass':>6}  statuses"]
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
            f"{r.usage.calls} calls, {r.usage.prompt_tokens + r.usage.completion_tokens} tokens, "
            f"${r.usage.cost_usd:.4f}; cache hits {r.cache.hits + r.cache.shared}, misses {r.cache.misses} "
            f"({rate}); retries {r.retries}; throttled {r.throttled}"
        )
        return "\n".join(lines)

    # -- JSON round-trip ---------------------------------------------------------------------------
    def to_json(self, *, indent: int | None = None) -> str:
        """The whole report as JSON (``Report.from_json`` reads it back)."""
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Report:
        """Read a report written by :meth:`to_json`."""
        return cls.model_validate_json(text)

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

    def to_pandas(self) -> Any:
        """The records as a pandas DataFrame, one flat row per record."""
        return to_dataframe(self.records, metrics=list(self.aggregates))

    def aggregates_frame(self) -> Any:
        """The aggregates as a pandas DataFrame, one row per metric."""
        pd = _pandas("Report.aggregates_frame()")
        return pd.DataFrame([a.model_dump() for a in self.aggregates.values()]).set_index("name")


def _metric_names(records: Sequence[EvaluationResult]) -> list[str]:
    names: dict[str, None] = {}
    for r in records:
        for name in r.scores:
            names.setdefault(name, None)
    return list(names)


def _pandas(feature: str) -> Any:
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingDependencyError("pandas", "pandas", feature) from exc
    return pd


def flat_row(record: EvaluationResult, metrics: Sequence[str] | None = None) -> dict[str, Any]:
    """One record as a flat mapping: ids, input, a score and a status column per metric, totals, errors."""
    names = list(metrics) if metrics is not None else list(record.scores)
    sample = record.sample
    row: dict[str, Any] = {
        "index": record.index,
        "id": record.id,
        "question": sample.question if sample else None,
        "answer": sample.answer if sample else None,
        "contexts": json.dumps(list(sample.contexts), ensure_ascii=False) if sample else None,
        "reference": sample.reference if sample else None,
    }
    for name in names:
        row[name] = record.scores.get(name)
        row[f"{name}_status"] = record.status_of(name)
        result = record.results.get(name)
        row[f"{name}_reason"] = result.reasoning if result is not None else None
        spread = record.spread.get(name)
        if spread is not None:
            row[f"{name}_std"] = spread.std
    row["mean_score"] = record.mean_score
    row["calls"] = record.usage.calls
    row["cached_calls"] = record.usage.cached_calls
    row["prompt_tokens"] = record.usage.prompt_tokens
    row["completion_tokens"] = record.usage.completion_tokens
    row["cost_usd"] = record.usage.cost_usd
    row["latency_ms"] = record.latency_ms
    row["errors"] = "; ".join(f"{e.metric or 'row'}: {e.status}: {e.message}" for e in record.errors) or None
    return row


def write_jsonl(records: Iterable[EvaluationResult], path: str | Path) -> Path:
    """Write records as JSON lines, one per record, in the order given."""
    out = Path(path)
    with out.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(record.model_dump_json())
            fh.write("\n")
    return out


def read_jsonl(path: str | Path) -> Iterator[EvaluationResult]:
    """Read back records written by :func:`write_jsonl`."""
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield EvaluationResult.model_validate_json(line)


def write_csv(
    records: Iterable[EvaluationResult], path: str | Path, *, metrics: Sequence[str] | None = None
) -> Path:
    """Write records as CSV, one flat row each (see :func:`flat_row`)."""
    out = Path(path)
    items = list(records)
    names = list(metrics) if metrics is not None else _metric_names(items)
    rows = [flat_row(r, names) for r in items]
    fields: dict[str, None] = {}
    for row in rows:
        for key in row:
            fields.setdefault(key, None)
    with out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(fields) or ["index", "id"])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return out


def to_dataframe(records: Iterable[EvaluationResult], *, metrics: Sequence[str] | None = None) -> Any:
    """Records as a pandas DataFrame, one flat row each (needs the ``pandas`` extra)."""
    pd = _pandas("to_pandas()")
    items = list(records)
    names = list(metrics) if metrics is not None else _metric_names(items)
    return pd.DataFrame([flat_row(r, names) for r in items])
