"""The evaluator base: shared options, the evaluate trio, and the one place a raw score becomes a result.

Every classic evaluator subclasses :class:`Evaluator` and implements ``_score`` (a coroutine) or
``_score_sync`` (CPU-bound work, run on a worker thread for inputs over :data:`INLINE_CHARS`
characters) returning a :class:`Scored`; :meth:`Evaluator.evaluate` applies ``negate`` and the pass
mark alike for all and builds the :class:`~ragmetrics.score.MetricResult`. Shared options:
``threshold`` (graded evaluators, default 0.9; others keep a fixed pass mark), ``case_sensitive``
(off except for ``exact_match``) and ``negate`` (``1 - score``). A result without a score has
``passed=None``.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ragmetrics import __version__
from ragmetrics._aio import run_sync
from ragmetrics._check import check_field, check_flag
from ragmetrics.errors import JudgeError
from ragmetrics.metrics.base import Needs, check_threshold, missing_input
from ragmetrics.sample import Sample, check_text
from ragmetrics.score import JudgeInfo, MetricResult, Status, Usage, failure_from

__all__ = [
    "DEFAULT_THRESHOLD",
    "FIXED_PASS_MARK",
    "Evaluator",
    "GradedEvaluator",
    "INLINE_CHARS",
    "Scored",
    "check_flag",
    "judge_failure",
    "package_version",
]

DEFAULT_THRESHOLD = 0.9
"""Starting threshold of the graded evaluators (Cannonade)."""
FIXED_PASS_MARK = 0.9
"""Pass mark of ``contains`` and ``json_match``; not configurable."""
INLINE_CHARS = 10_000
"""Inputs (output plus reference) up to this many characters are scored on the event loop; longer
ones by CPU-bound evaluators on a worker thread (a parsed, non-string reference counts as long)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Scored:
    """What an evaluator's scoring step found, before ``negate`` and the pass mark are applied."""

    score: float | None
    """The raw score in [0, 1], or None when ``status`` says why there is none."""
    reasoning: str = ""
    """How the score came about."""
    details: dict[str, Any] = field(default_factory=dict)
    """Evaluator-specific evidence (matched spans, missing paths, tokens, ...)."""
    status: Status = "ok"
    """``ok`` or why there is no score."""
    message: str | None = None
    """Detail for a non-ok status."""
    verdict: bool | None = None
    """A judge's own pass/fail verdict (``llm_rubric``, ``g_eval``); None when the evaluator has none."""
    usage: Usage | None = None
    """LLM usage behind the score."""
    judge: JudgeInfo | None = None
    """The judge that produced it."""


def package_version() -> str:
    """The ragmetrics version, for signatures."""
    return __version__


def judge_failure(exc: JudgeError, judge: JudgeInfo | None = None, *, usage: Usage | None = None) -> Scored:
    """A judge (or embedding provider) failure as a result without a score: status, message, usage spent.

    Args:
        exc: The failure.
        judge: The judge that failed.
        usage: What the whole evaluation spent, when more than the failed call (earlier steps).
    """
    return Scored(score=None, judge=judge, **failure_from(exc, usage=usage).result_fields())


def _check_text(value: object, field_name: str, owner: str) -> str:
    return check_text(
        check_field(value, field_name, str, "a string", detail=f"evaluator {owner}"), field_name
    )


class Evaluator:
    """Base class of the classic evaluators.

    Subclasses set ``name`` and implement ``_score``. They call ``super().__init__`` with the options
    they support; options they do not expose are simply not in their constructor.

    Attributes:
        threshold: The pass mark in force (configurable or fixed), or None for a judge verdict alone.
        case_sensitive: Whether text comparison keeps letter case.
        negate: Whether the score is inverted before it meets the pass mark.
    """

    name: ClassVar[str] = "evaluator"
    """Snake_case type name used in config files, reports and the CLI."""
    needs: ClassVar[Needs] = Needs()
    """What the evaluator reads from a sample (see :class:`~ragmetrics.metrics.base.Needs`). With
    ``reference=True`` it compares the output with a reference, so a sample (or suite case) without one
    cannot be scored: it gets status ``invalid_input`` naming the field, never a silent 0."""
    structured_reference: ClassVar[bool] = False
    """Whether ``reference`` may be a parsed JSON value instead of a string (``json_match``)."""
    by_name: ClassVar[bool] = False
    """Whether its name alone builds it (``--metrics rouge``, ``evaluate(metrics=["rouge"])``): it
    needs no option beyond a threshold, no judge and no embedder."""
    primary_option: ClassVar[str | None] = None
    """The constructor argument a config entry may give as ``value`` (``regex``: ``pattern``)."""
    judged: ClassVar[bool] = False
    """Whether it asks an LLM judge (and so takes the judge settings as config options)."""
    _inline_chars: ClassVar[int] = INLINE_CHARS
    """Largest input :meth:`_score` scores on the event loop; -1 sends every input to a thread."""

    def __init__(
        self,
        *,
        threshold: float | None = None,
        case_sensitive: bool = False,
        negate: bool = False,
    ) -> None:
        self.threshold = check_threshold(threshold, self.name)
        self.case_sensitive = check_flag(case_sensitive, "case_sensitive", self.name)
        self.negate = check_flag(negate, "negate", self.name)
        self._signature: str | None = None

    # -- the public trio ---------------------------------------------------------------------------

    async def evaluate(
        self,
        prediction: str,
        reference: Any = "",
        input: str = "",  # noqa: A002 - the reference documents' parameter name
    ) -> MetricResult:
        """Score one output.

        Args:
            prediction: The model output to judge.
            reference: The expected value (a string; ``json_match`` also takes a parsed JSON value).
            input: The input that produced the output (used by the LLM evaluators).

        Returns:
            The result: score in [0, 1] (or None with a status), ``passed``, ``reasoning``, details.

        Raises:
            InvalidInputError: An argument has the wrong type.
        """
        start = time.perf_counter()
        _check_text(prediction, "prediction", self.name)
        if not self.structured_reference:
            _check_text(reference, "reference", self.name)
        _check_text(input, "input", self.name)
        scored = await self._score(prediction, reference, input)
        return self._result(scored, (time.perf_counter() - start) * 1000.0)

    def evaluate_sync(
        self,
        prediction: str,
        reference: Any = "",
        input: str = "",  # noqa: A002 - the reference documents' parameter name
    ) -> MetricResult:
        """Blocking twin of :meth:`evaluate`; works inside a running event loop too."""
        return run_sync(self.evaluate(prediction, reference, input))

    async def evaluate_sample(self, sample: Sample) -> MetricResult:
        """Score a :class:`~ragmetrics.sample.Sample`: its answer against its reference and question.

        Raises:
            InvalidInputError: The evaluator needs a reference (``needs.reference``) and the sample has
                none, or only whitespace (the pipeline records it as status ``invalid_input``).
        """
        missing = missing_input(sample, self.needs, self.name)
        if missing is not None:
            raise missing
        return await self.evaluate(sample.answer, sample.reference or "", sample.question or "")

    # -- for subclasses ----------------------------------------------------------------------------

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        """Score one output; by default :meth:`_score_sync`, on a worker thread unless the input is small.

        Evaluators that wait (on a judge, an embedding provider) override this coroutine; evaluators
        that compute (parse, match, measure edit distance) implement :meth:`_score_sync` instead, so
        a long computation on a hostile input never stalls the event loop and the rest of the run.
        Inputs of up to ``_inline_chars`` characters (output and reference together) are scored
        inline: there the thread hop (50-300 us) would cost more than the scoring, which takes at
        most about 15 ms in every such evaluator (hostile markup for ``html_validation``).
        """
        size = len(prediction) + (len(reference) if isinstance(reference, str) else INLINE_CHARS)
        if size <= self._inline_chars:
            return self._score_sync(prediction, reference, input)
        return await asyncio.to_thread(self._score_sync, prediction, reference, input)

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        """CPU-bound scoring, run off the event loop by :meth:`_score`."""
        raise NotImplementedError

    def _options(self) -> dict[str, object]:
        """Output-affecting options, for the signature (subclasses extend it)."""
        opts: dict[str, object] = {}
        if self.threshold is not None:
            opts["threshold"] = self.threshold
        opts["case_sensitive"] = self.case_sensitive
        opts["negate"] = self.negate
        return opts

    @property
    def signature(self) -> str:
        """What produces this evaluator's scores: name, options and package version."""
        if self._signature is None:
            opts = "|".join(f"{k}={v}" for k, v in self._options().items())
            self._signature = f"{self.name}|{opts}|ragmetrics={package_version()}"
        return self._signature

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self._options().items())
        return f"{type(self).__name__}({opts})"

    # -- the one place a raw score becomes a result ------------------------------------------------

    def _result(self, scored: Scored, latency_ms: float) -> MetricResult:
        score = scored.score
        verdict = scored.verdict
        reasoning = scored.reasoning
        passed: bool | None = None
        if score is not None:
            if math.isnan(score):
                raise AssertionError(f"{self.name} produced NaN; this is a bug in ragmetrics")
            score = min(1.0, max(0.0, float(score)))  # guards float round-off just outside [0, 1]
            if self.negate:
                raw = score
                score = 1.0 - score
                if verdict is not None:
                    verdict = not verdict
                reasoning = f"Negated: score 1 - {raw:.4f} = {score:.4f}. {reasoning}".rstrip()
            if verdict is not None:
                passed = verdict and (self.threshold is None or score >= self.threshold)
            elif self.threshold is not None:
                passed = score >= self.threshold
        elif not reasoning:
            reasoning = f"No score: {scored.message}"
        return MetricResult(
            name=self.name,
            score=score,
            passed=passed,
            threshold=self.threshold,
            status=scored.status,
            message=scored.message,
            reasoning=reasoning,
            details=scored.details,
            usage=scored.usage or Usage(),
            latency_ms=latency_ms,
            judge=scored.judge,
            signature=self.signature,
        )


class GradedEvaluator(Evaluator):
    """An evaluator graded on [0, 1] against a reference, with a configurable pass mark (default 0.9).

    ``rouge``, ``bleu``, ``levenshtein`` and ``f1`` take exactly these options.
    """

    by_name = True
    needs = Needs(reference=True)

    def __init__(
        self,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        case_sensitive: bool = False,
        negate: bool = False,
    ) -> None:
        super().__init__(threshold=threshold, case_sensitive=case_sensitive, negate=negate)
