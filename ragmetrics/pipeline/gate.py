"""The unscored gate: a run in which samples went unscored is a failure, and says why in one line.

A sample is unscored for a metric when its score is ``None``, whatever the status. Per metric, a
metric that scored no sample fails (an empty run too); otherwise it fails when more samples are
unscored than ``max_unscored`` allows: a whole number is a count, a decimal or a percent a share
(``0.1`` or ``10%``). :func:`check_unscored` and :func:`unscored_message` serve ``ragmetrics eval``,
``ragmetrics test``, the pytest plugin and suites alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ragmetrics._check import check_int, check_number
from ragmetrics.errors import ConfigError, shorten
from ragmetrics.pipeline.records import EvaluationResult
from ragmetrics.pipeline.report import MetricAggregate, Report

__all__ = ["UnscoredFailure", "UnscoredLimit", "check_unscored", "unscored_failure", "unscored_message"]

_EXAMPLE_CHARS = 300
_SCORED_STATUSES = frozenset({"ok", "no_claims"})
"""Statuses that normally carry a score; used only when the records themselves are not at hand."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnscoredLimit:
    """How many of a metric's samples may go unscored before the run fails.

    Exactly one of ``count`` (samples) and ``share`` (a fraction of the samples, in [0, 1]) is set.
    """

    count: int | None = None
    share: float | None = None

    def __post_init__(self) -> None:
        if (self.count is None) == (self.share is None):
            raise ConfigError("max_unscored: give either a count of samples or a share, not both")
        if self.count is not None:
            check_int(self.count, "a count", "max_unscored", minimum=0)
        if self.share is not None:
            check_number(self.share, "a share", "max_unscored", low=0, high=1)

    @classmethod
    def of(cls, value: UnscoredLimit | int | float | str) -> UnscoredLimit:
        """A limit from a count (int), a share (float) or text (``"3"``, ``"0.1"``, ``"10%"``).

        Raises:
            ConfigError: Not a whole number >= 0, a share in [0, 1] or a percentage in [0%, 100%].
        """
        if isinstance(value, UnscoredLimit):
            return value
        if isinstance(value, bool):
            raise ConfigError(f"max_unscored: expected a count or a share, got {value!r}")
        if isinstance(value, int):
            return cls(count=value)
        if isinstance(value, float):
            return cls(share=value)
        if not isinstance(value, str):
            raise ConfigError(f"max_unscored: expected a count or a share, got {type(value).__name__}")
        text = value.strip()
        problem = f"max_unscored: expected a count (3), a share (0.1) or a percentage (10%), got {value!r}"
        try:
            if text.endswith("%"):
                return cls(share=float(text[:-1]) / 100.0)
            if text.isdigit():
                return cls(count=int(text))
            return cls(share=float(text))
        except (ValueError, ConfigError):
            raise ConfigError(problem) from None

    def allows(self, unscored: int, total: int) -> bool:
        """Whether ``unscored`` of ``total`` samples is within the limit."""
        if self.count is not None:
            return unscored <= self.count
        share = self.share if self.share is not None else 0.0
        return unscored <= share * total + 1e-9

    def __str__(self) -> str:
        if self.count is not None:
            return str(self.count)
        return f"{(self.share or 0.0) * 100:g}%"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnscoredFailure:
    """One metric that failed the unscored rule."""

    metric: str
    scored: int
    """Samples with a score."""
    total: int
    """Samples the metric was asked to score."""
    statuses: dict[str, int] = field(default_factory=dict)
    """Unscored samples per status, most frequent first."""
    example: str | None = None
    """The message of the first unscored sample's error, when known."""
    limit: UnscoredLimit = field(default_factory=lambda: UnscoredLimit(count=0))
    """The limit it broke."""

    @property
    def unscored(self) -> int:
        """Samples without a score."""
        return self.total - self.scored

    @property
    def nothing_scored(self) -> bool:
        """True when the metric scored no sample at all."""
        return self.scored == 0

    def __str__(self) -> str:
        line = f"{self.metric}: {self.scored} of {self.total} samples scored"
        if self.total == 0:
            return line + ": there were no samples to score"
        if self.statuses:
            line += ": " + ", ".join(f"{status} {n}" for status, n in self.statuses.items())
        if self.example:
            line += f": {self.example}"
        if not self.nothing_scored:
            line += f" (more unscored than the {self.limit} allowed)"
        return line


def unscored_failure(
    metric: str,
    *,
    scored: int,
    total: int,
    statuses: Mapping[str, int] | None = None,
    example: str | None = None,
    max_unscored: UnscoredLimit | int | float | str = 0,
) -> UnscoredFailure | None:
    """The rule for one metric from plain counts: the failure, or None when it passes.

    Args:
        metric: The metric's name (for the message).
        scored: Samples with a score.
        total: Samples it was asked to score. Nothing to score (0 of 0) fails: nothing was measured.
        statuses: Unscored samples per status.
        example: The first unscored sample's error message.
        max_unscored: The limit (see :class:`UnscoredLimit`).
    """
    limit = UnscoredLimit.of(max_unscored)
    if scored > 0 and limit.allows(total - scored, total):
        return None
    ordered = dict(sorted((statuses or {}).items(), key=lambda kv: (-kv[1], kv[0])))
    return UnscoredFailure(
        metric=metric,
        scored=scored,
        total=total,
        statuses=ordered,
        example=shorten(" ".join(example.split()), _EXAMPLE_CHARS) if example else None,
        limit=limit,
    )


def _record_tally(
    records: Iterable[EvaluationResult], metrics: Iterable[str]
) -> dict[str, tuple[Counter[str], str | None]]:
    """Per metric: unscored samples per status, and the first unscored sample's error message."""
    names = list(metrics)
    tally: dict[str, tuple[Counter[str], list[str]]] = {m: (Counter(), []) for m in names}
    for record in records:
        for name in names:
            if name not in record.scores or record.scores[name] is not None:  # not its metric, or scored
                continue
            statuses, example = tally[name]
            statuses[record.status_of(name)] += 1
            if not example:
                message = _message_of(record, name)
                if message:
                    example.append(message)
    return {m: (c, e[0] if e else None) for m, (c, e) in tally.items()}


def _message_of(record: EvaluationResult, metric: str) -> str | None:
    for err in record.errors:
        if err.metric == metric:  # without NoScoreError's "metric: no score (status): ", said already
            return err.message.removeprefix(f"{metric}: no score ({err.status}): ")
    for err in record.errors:
        if err.metric is None:
            return err.message
    result = record.results.get(metric)
    return result.message if result is not None and result.message else None


def check_unscored(
    report: Report | Mapping[str, MetricAggregate],
    *,
    max_unscored: UnscoredLimit | int | float | str = 0,
    records: Iterable[EvaluationResult] | None = None,
) -> list[UnscoredFailure]:
    """Apply the unscored rule to every metric of a report; the failures, in metric order (empty: pass).

    Args:
        report: A :class:`Report` (its records, when it kept them, give exact statuses and an example
            message) or its ``aggregates``.
        max_unscored: The limit (see :class:`UnscoredLimit`): a count, a share, or text.
        records: The run's records, when the report did not keep them (a streamed run).

    Raises:
        ConfigError: ``max_unscored`` is not a valid limit.
    """
    limit = UnscoredLimit.of(max_unscored)
    aggregates = report.aggregates if isinstance(report, Report) else report
    if records is None and isinstance(report, Report) and report.records:
        records = report.records
    tally = _record_tally(records, aggregates) if records is not None else None
    failures = []
    for name, agg in aggregates.items():
        if tally is not None:
            statuses, example = tally[name]
        else:  # only the aggregates: statuses that normally carry no score
            statuses = Counter({s: n for s, n in agg.statuses.items() if s not in _SCORED_STATUSES})
            example = None
        failure = unscored_failure(
            name, scored=agg.count, total=agg.total, statuses=statuses, example=example, max_unscored=limit
        )
        if failure is not None:
            failures.append(failure)
    return failures


def unscored_message(failures: Iterable[UnscoredFailure]) -> str:
    """One line for the failures; metrics that failed alike (same counts, statuses, example) share it.

    ``"0 of 12 samples scored (faithfulness, relevancy): provider_error 12: could not connect ..."``
    """
    groups: dict[tuple[object, ...], list[UnscoredFailure]] = {}
    for f in failures:
        key = (f.scored, f.total, tuple(f.statuses.items()), f.example, f.nothing_scored)
        groups.setdefault(key, []).append(f)
    parts = []
    for members in groups.values():
        first = members[0]
        if len(members) == 1:
            parts.append(str(first))
            continue
        text = str(first).removeprefix(f"{first.metric}: ")
        head, sep, tail = text.partition(" samples scored")
        parts.append(f"{head}{sep} ({', '.join(m.metric for m in members)}){tail}")
    return "; ".join(parts)
