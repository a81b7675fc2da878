"""The pipeline's per-row records: :class:`EvaluationResult`, :class:`ErrorRecord`, :class:`ScoreSpread`.

An :class:`EvaluationResult` is what the pipeline returns for one dataset row: a score per metric
(``None`` when there is none, and then an :class:`ErrorRecord` says why), the per-metric records with
their claims and verdicts, summed usage, latency, and the row's id and index. Nothing here is ever NaN.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragmetrics.sample import Sample
from ragmetrics.score import ErrorRecord as ErrorRecord  # the one failure record, re-exported
from ragmetrics.score import MetricResult, Usage

_FIELD_NAMES = frozenset(
    {
        "index",
        "id",
        "columns",
        "extra",
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
"""The record's own fields and properties (the rest of :data:`RESERVED_NAMES` is read off the class)."""


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
    columns: dict[str, str | None] = Field(default_factory=dict)
    """The source row's column names, in order, each mapped to the sample field read from it (None for
    an extra column); empty for a Sample or column lists. The exports write the user's own names."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """The source row's values the sample does not hold as they came: extra columns (``model_version``),
    a non-string id, a meta that was not a mapping, and every column of an invalid row."""

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


RESERVED_NAMES = frozenset(_FIELD_NAMES | {n for n in dir(EvaluationResult) if not n.startswith("_")})
"""Names a metric may not take: attributes of :class:`EvaluationResult` already (its fields, its
methods, and pydantic's: ``json``, ``copy``, ``dict``, ``model_dump``...), so ``result.<name>`` would
not be the score. Any ``model_*`` name is refused too (pydantic reserves the prefix)."""


def reserved_name(name: str) -> bool:
    """Whether a metric named ``name`` would be shadowed on :class:`EvaluationResult`."""
    return name in RESERVED_NAMES or name.startswith("model_")


# -- one pass over many records ----------------------------------------------------------------------


def _mean(record: EvaluationResult) -> float:
    return math.inf if record.mean_score is None else record.mean_score


class RecordScan:
    """What a summary shows of many records, in one pass that holds only that.

    The ``n`` records with the lowest mean score (lowest first, ties in the order given), the records
    carrying errors (how many, and the first) and the scores of each of ``metrics``. Records read back
    from a run's temporary file are each parsed once.
    """

    def __init__(self, records: Iterable[EvaluationResult], n: int, metrics: Sequence[str] = ()) -> None:
        self.failed = 0
        """Records carrying at least one error."""
        self.first_failed: EvaluationResult | None = None
        self.scores: dict[str, array[float]] = {name: array("d") for name in metrics}
        """Per metric, the scores in the order given (unscored records left out)."""
        self.worst = heapq.nsmallest(n, self._scored(records), key=_mean)
        """The ``n`` lowest mean scores, lowest first."""

    def _scored(self, records: Iterable[EvaluationResult]) -> Iterator[EvaluationResult]:
        for record in records:
            if record.errors:
                self.failed += 1
                self.first_failed = self.first_failed or record
            for name, values in self.scores.items():
                score = record.scores.get(name)
                if score is not None:
                    values.append(score)
            if record.mean_score is not None:
                yield record
