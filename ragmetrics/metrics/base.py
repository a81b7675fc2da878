"""The metric contract: what the pipeline, the estimator, the suites and the adapters are typed against.

A metric has a snake_case ``name``, a ``threshold`` (or None), a :class:`Needs` value saying which
sample fields it reads and whether it calls a judge, and ``evaluate_sample(sample) -> MetricResult``.
A metric that may share its judge is a :class:`JudgedMetric` (``judge``, ``judge_key()``,
``use_judge()``): metrics with equal keys get one caching judge. Plain functions of a
:class:`~ragmetrics.sample.Sample` stay accepted (``ragmetrics.pipeline._metric_call`` normalises
them). RAG metrics and evaluators return the one result shape, ``MetricResult``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from ragmetrics._check import check_unit
from ragmetrics.errors import ConfigError, InvalidInputError, shorten
from ragmetrics.sample import Sample
from ragmetrics.score import MetricResult

if TYPE_CHECKING:  # typing only: the judge layer is below metrics, but its import is not needed here
    from ragmetrics.judge.cache import CachingJudge

__all__ = [
    "MAX_SPLIT_CHARS",
    "JudgedMetric",
    "Metric",
    "MetricLike",
    "Needs",
    "check_threshold",
    "missing_input",
    "needs_of",
    "passed_at",
    "too_long_to_split",
]

SampleField = Literal["question", "answer", "contexts", "reference"]


@dataclass(frozen=True, slots=True)
class Needs:
    """What a metric reads from a sample, and whether it calls a judge.

    A required ``question`` or ``reference`` that is missing on a row gives that metric the status
    ``invalid_input`` on that row (never a silent 0); required ``contexts`` make the pipeline refuse a
    row without a ``contexts`` field (an explicit empty list is allowed).
    """

    question: bool = False
    answer: bool = True
    contexts: bool = False
    reference: bool = False
    judge: bool = False
    """The metric calls an LLM judge (its calls are estimated, its judge closed after a run)."""
    shares_judge: bool = False
    """The metric is a :class:`JudgedMetric` whose judge may be shared with metrics of equal key."""
    conversation: bool = False
    """The metric scores a whole conversation: the pipeline runs it once per conversation (on its
    conversation record), with ``evaluate_sample(sample, conversation=...)``, and on no turn."""

    @property
    def fields(self) -> tuple[SampleField, ...]:
        """The required sample fields, in sample order."""
        flags: tuple[tuple[SampleField, bool], ...] = (
            ("question", self.question),
            ("answer", self.answer),
            ("contexts", self.contexts),
            ("reference", self.reference),
        )
        return tuple(name for name, wanted in flags if wanted)


NO_NEEDS = Needs()
"""What a plain function of a Sample is assumed to need: the answer only, no judge."""


@runtime_checkable
class Metric(Protocol):
    """Anything the pipeline can run over samples."""

    name: str
    """Snake_case name used in reports, config, the CLI and ``BUILTIN_METRICS``."""
    threshold: float | None
    """The pass mark, or None."""

    @property
    def needs(self) -> Needs:
        """The sample fields the metric reads and its judge."""
        ...

    async def evaluate_sample(self, sample: Sample) -> MetricResult:
        """Score one sample. Judge failures become a result with a status, not an exception."""
        ...


MetricLike: TypeAlias = "Metric | str | Callable[[Sample], Any]"
"""What a list of metrics may hold: a :class:`Metric`, a built-in metric's name (``"context_recall"``)
or a plain function of a :class:`~ragmetrics.sample.Sample` (sync or async)."""


class JudgedMetric(Metric, Protocol):
    """A metric whose caching judge the pipeline may share (``needs.shares_judge``)."""

    @property
    def judge(self) -> CachingJudge:
        """The caching judge, resolved on first use."""
        ...

    def judge_key(self) -> tuple[object, ...]:
        """What identifies the judge: metrics with equal keys can share one judge object."""
        ...

    def use_judge(self, judge: CachingJudge) -> None:
        """Use ``judge`` (shared with other metrics) from now on."""
        ...


def needs_of(metric: Any) -> Needs:
    """What ``metric`` declares it needs.

    A plain function (or an object without ``needs``) needs the answer only; an older user object's
    ``needs_question`` / ``needs_contexts`` flags are read here, once.
    """
    needs = getattr(metric, "needs", None)
    if isinstance(needs, Needs):
        return needs
    if needs is not None:
        raise ConfigError(
            f"metric {shorten(metric, 80)}: needs must be a ragmetrics.metrics.base.Needs, "
            f"got {type(needs).__name__}"
        )
    question = getattr(metric, "needs_question", False) is True
    contexts = getattr(metric, "needs_contexts", False) is True
    return Needs(question=question, contexts=contexts) if question or contexts else NO_NEEDS


def missing_input(
    sample: Sample, needs: Needs, owner: str, *, names: Mapping[str, str] | None = None
) -> InvalidInputError | None:
    """The error for a required question or reference the sample lacks (None when nothing is missing).

    The one check of a missing input, for the claim metrics and the evaluators alike (a row, a suite
    case, a captured run). The answer and the contexts are checked when the row becomes a sample;
    this covers the fields a row may lack while other metrics still score it.

    Args:
        sample: The sample.
        needs: What the metric needs.
        owner: The metric's name, for the message.
        names: Where a field comes from when it is not called as on a sample, named in the message
            instead (a suite case: ``{"question": "input", "reference": "expected"}``).
    """
    named = names or {}
    if needs.question and not (sample.question or "").strip():
        return InvalidInputError(
            named.get("question", "question"),
            "a non-empty string",
            row=sample.id,
            detail=f"{owner} judges the answer against the question",
        )
    if needs.reference and not (sample.reference or "").strip():
        field = named.get("reference", "reference")
        return InvalidInputError(
            field,
            "a non-empty string",
            row=sample.id,
            detail=f"{owner} compares with a reference answer: give a '{field}', or leave {owner} out",
        )
    return None


def check_threshold(threshold: float | None, owner: str) -> float | None:
    """Validate a pass mark at construction time.

    Raises:
        ConfigError: The threshold is not a finite number in [0, 1].
    """
    return check_unit(threshold, "threshold", owner, optional=True)


def passed_at(score: float | None, threshold: float | None) -> bool | None:
    """``score >= threshold``, or None when either is missing."""
    if score is None or threshold is None:
        return None
    return score >= threshold


MAX_SPLIT_CHARS = 1_000_000
"""The longest answer or reference a claim metric splits into claims (characters). Longer is the row's
``invalid_input``, at once and with no call: the offline judge took 52 s and 1.1 GB on a 7 MB answer,
and no judge's reply holds the claims of a text that long."""


def too_long_to_split(
    sample: Sample, owner: str, fields: Sequence[str] = ("answer", "reference")
) -> InvalidInputError | None:
    """The error for a text of ``fields`` over :data:`MAX_SPLIT_CHARS` (None when each fits)."""
    for name in fields:
        text = getattr(sample, name) or ""
        if len(text) > MAX_SPLIT_CHARS:
            return InvalidInputError(
                name,
                f"at most {MAX_SPLIT_CHARS:,} characters (MAX_SPLIT_CHARS)",
                row=sample.id,
                detail=f"{owner}'s request splits it into claims; it has {len(text):,}: score a shorter text",
            )
    return None
