"""The claim metric: a :class:`~ragmetrics.metrics.claims.engine.ClaimTask` plus one pure scoring function.

A claim metric is a :class:`ClaimMetric` subclass with a ``name``, a ``task`` (what is split, what it
is checked against) and a ``scoring`` function from the :class:`Found` claims and verdicts to a
:class:`ClaimScore`. The base class does the rest once for every claim metric: the judge (resolved
lazily, shared by the pipeline), the input checks its :class:`~ragmetrics.metrics.base.Needs` imply,
running the plan, the failure result, latency, the claim rates and the ``*_sync`` twins.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from ragmetrics import __version__
from ragmetrics._aio import run_sync
from ragmetrics._check import check_int
from ragmetrics.errors import InvalidInputError, JudgeError, NoScoreError
from ragmetrics.judge import Judge
from ragmetrics.metrics._judged import JudgeHolder, judged_result
from ragmetrics.metrics.base import Needs, check_threshold, missing_input, too_long_to_split
from ragmetrics.metrics.claims.engine import (
    EXTRACT_VERSION,
    VERIFY_V2_VERSION,
    VERIFY_VERSION,
    ClaimPlan,
    ClaimTask,
    merge_tasks,
    plan,
)
from ragmetrics.metrics.claims.run import ClaimsOutcome, run_claims
from ragmetrics.metrics.claims.schemas import ClaimExtraction, ContextJudgement
from ragmetrics.metrics.claims.verification import Health
from ragmetrics.prompting import load_prompt
from ragmetrics.sample import Sample
from ragmetrics.score import ClaimRecord, MetricResult, Status, Usage, Verdict, failure_from

__all__ = [
    "ClaimMetric",
    "share_tasks",
    "ClaimScore",
    "Found",
    "context_details",
    "describe_claim",
    "unjudged",
    "unread_claims",
    "verified_edge",
]


@dataclass(frozen=True, slots=True)
class Found:
    """What the claim engine found on one sample, as a metric's scoring function reads it."""

    sample: Sample
    claims: list[ClaimRecord]
    """The claims of the split text, with their verdicts (None where nothing was verified)."""
    extraction: ClaimExtraction | None
    """The judge's extraction; None when the split text is empty (no call was made)."""
    sources: tuple[str, ...]
    """What the claims were checked against (a claim's ``context_index`` points in here)."""
    chunks: int = 0
    """Verification calls made (one per chunk of the sources)."""
    repairs: tuple[str, ...] = ()
    text_verdicts: tuple[Verdict | None, ...] = ()
    """Per claim, its verdict against the task's second text (``ClaimTask.also``), None if not judged."""
    judged: tuple[ContextJudgement | None, ...] = ()
    """Per source (context), what the judge said of it: the claims it supports, its relevance."""
    other: Found | None = None
    """The reference's claims, for a task that splits it too (``ClaimTask.also``): its text verdicts
    are against the answer."""
    unverified: tuple[ClaimRecord, ...] = ()
    """Claims the judge extracted whose span is not in the split text (after one re-ask): left out of
    ``claims`` and of the score, reported after the counted claims (``span_found=False``)."""
    health: dict[str, Any] = field(default_factory=dict)
    """``details["judge_health"]``: spans and quotes checked and found, verification re-asks."""

    @property
    def reported(self) -> list[ClaimRecord]:
        """The claims a result shows: the counted ones, then the ones whose span was not found."""
        return [*self.claims, *self.unverified]

    @property
    def empty(self) -> bool:
        """The split text is empty (nothing was extracted)."""
        return self.extraction is None

    def base_details(self) -> dict[str, Any]:
        """``chunks`` and, if any, ``repairs``: the details every verifying metric reports."""
        details: dict[str, Any] = {"chunks": self.chunks}
        if self.repairs:
            details["repairs"] = list(self.repairs)
        return details


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimScore:
    """A claim metric's score on one sample, before the base adds the pass mark, usage and latency."""

    score: float | None
    reasoning: str = ""
    status: Status = "ok"
    message: str | None = None
    claims: Sequence[ClaimRecord] | None = None
    """The claims to report; None: the ones found, as they are."""
    details: dict[str, Any] = field(default_factory=dict)


def describe_claim(i: int, record: ClaimRecord, limit: int = 80) -> str:
    """``claim 2 'Python is compiled'`` for reasons and reports."""
    text = record.text if len(record.text) <= limit else record.text[: limit - 3] + "..."
    return f"claim {i} {text!r}"


def verified_edge(
    found: Found, details: dict[str, Any], *, nothing_wrong: str, no_sources: str
) -> ClaimScore | None:
    """The edge cases of a metric that verifies the answer's claims; None for the ordinary case.

    An empty answer or one without claims scores 1.0 (status ``no_claims``: nothing in it can be
    wrong; the reasoning ends with ``nothing_wrong``); claims checked against no sources score 0.0,
    every claim unverifiable (``no_sources`` may use ``{n}``, the number of claims).
    """
    if found.empty:
        return ClaimScore(
            score=1.0,
            status="no_claims",
            message="the answer is empty",
            reasoning=f"The answer is empty: it makes no claim, so {nothing_wrong}.",
        )
    unread = unread_claims(found, "answer")
    if unread is not None:
        return unread
    if not found.claims:
        return ClaimScore(
            score=1.0,
            status="no_claims",
            details=details,
            message="the judge found no factual claims in the answer",
            reasoning=f"The answer makes no factual claim, so {nothing_wrong}.",
        )
    if not found.sources:
        claims = [
            c.model_copy(update={"verdict": "not_found", "reason": "no contexts were given"})
            for c in found.claims
        ]
        return ClaimScore(
            score=0.0,
            claims=[*claims, *found.unverified],
            details={**details, "no_contexts": True},
            reasoning=no_sources.format(n=len(claims)),
        )
    return None


def unread_claims(found: Found, what: str) -> ClaimScore | None:
    """No score when the judge extracted claims but none of their spans is in the ``what`` text.

    Such claims are not the text's, so no verdict on them says anything about it: the judge is not
    reading its input (``judge_output_invalid``), never a perfect score for a text with "no claims".
    """
    if found.claims or not found.unverified:
        return None
    n = len(found.unverified)
    return ClaimScore(
        score=None,
        status="judge_output_invalid",
        claims=found.reported,
        details={**found.base_details()},
        message=(
            f"none of the {n} claim{'s' if n != 1 else ''} the judge extracted has its span in the "
            f"{what}, even after a re-ask naming them: the judge is not reading the {what}"
        ),
    )


def context_details(found: Found, *, relevance: bool = False) -> list[dict[str, Any]]:
    """``details["contexts"]``: per context in retrieval order, relevant or not, its claims and reason.

    ``relevance``: relevant is the judge's relevance to the question; otherwise a context is relevant
    when it supports a claim. Unjudged contexts have ``None``s.
    """
    out: list[dict[str, Any]] = []
    for i in range(len(found.sources)):
        judged = found.judged[i] if i < len(found.judged) else None
        if judged is None:
            out.append({"index": i, "relevant": None, "supports": [], "reason": None})
            continue
        relevant = judged.relevant if relevance else bool(judged.supports)
        reason = (judged.reason or None) if relevance else None
        out.append({"index": i, "relevant": relevant, "supports": list(judged.supports), "reason": reason})
    return out


def unjudged(found: Found) -> ClaimScore | None:
    """A no-score result when the judge left some context without its per-context judgement."""
    missing = [i for i in range(len(found.sources)) if i >= len(found.judged) or found.judged[i] is None]
    if not missing:
        return None
    return ClaimScore(
        score=None,
        status="judge_output_invalid",
        message=f"the judge gave no per-context judgement for context(s) {missing}",
    )


class ClaimMetric(JudgeHolder):
    """Base of the claim-based metrics: a task and a scoring function; judge, checks and result here."""

    name: ClassVar[str] = "claim_metric"
    task: ClassVar[ClaimTask] = ClaimTask()
    """What is split into claims and what they are checked against."""
    question_required: ClassVar[bool] = False
    """The metric judges against the question (a row without one gets ``invalid_input``)."""
    reference_required: ClassVar[bool] = False
    """The metric needs a reference even though its task does not split it (answer correctness)."""
    verify_always: ClassVar[bool] = False
    """Verify even when the split text has no claims (the per-context part is wanted all the same)."""

    def __init__(
        self,
        llm: str | Judge | Any | None = None,
        *,
        threshold: float | None = None,
        cache: bool | str | Path = True,
        context_budget_tokens: int = 6000,
        **judge_options: Any,
    ) -> None:
        """Configure the metric.

        Args:
            llm: A judge spec (``openai:gpt-4o-mini``, ``anthropic:MODEL``,
                ``openai:MODEL@http://localhost:11434/v1``, ``azure:DEPLOYMENT@URL``, ``gemini:MODEL``,
                ``bedrock:MODEL``, ``vertex:MODEL``, ``offline``), an async openai / anthropic SDK
                client, a Judge object, or None for the default judge (offline, with an
                ``OfflineJudgeWarning``, when nothing is configured). A client or Judge passed in is
                never closed by ragmetrics.
            threshold: Optional pass mark in [0, 1]; ``passed`` is ``score >= threshold``.
            cache: True for the default disk cache, a folder path, or False for none.
            context_budget_tokens: Estimated source tokens per verification call; more sources are
                split into chunks (one call each).
            **judge_options: Judge settings (temperature, timeout_s, max_concurrency...), plus
                ``api_key`` and ``base_url`` for a spec string and ``model`` for a client object.

        Raises:
            ConfigError: Bad threshold or budget, or a malformed spec (checked at once).
        """
        self.threshold = check_threshold(threshold, type(self).__name__)
        self.context_budget_tokens = check_int(
            context_budget_tokens, "context_budget_tokens", type(self).__name__, minimum=64
        )
        self._shared_task: ClaimTask | None = None
        self._init_judge(type(self).__name__, llm, cache, judge_options)

    @staticmethod
    def scoring(found: Found) -> ClaimScore:
        """The metric's definition: a pure function from what was found to the score.

        Subclasses set it with ``scoring = staticmethod(function)``.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(llm={self._judge_spec()!r}, threshold={self.threshold})"

    @property
    def needs(self) -> Needs:
        """The sample fields the task reads, and a judge that may be shared."""
        task = self.task
        return Needs(
            question=self.question_required,
            contexts=task.against == "contexts",
            reference=self.reference_required or "reference" in (task.split, task.against),
            judge=True,
            shares_judge=True,
        )

    def plans(self, sample: Sample, repeat: int = 0) -> list[ClaimPlan]:
        """The calls this metric makes on ``sample`` (none when an input it needs is missing)."""
        if missing_input(sample, self.needs, self.name) or self._too_long(sample):
            return []
        return [plan(sample, self.active_task, self.context_budget_tokens, repeat, force=self.verify_always)]

    @property
    def active_task(self) -> ClaimTask:
        """The task run: ``task``, or the merged task of the claim metrics sharing this judge in a run."""
        return self._shared_task or self.task

    def use_task(self, task: ClaimTask | None) -> None:
        """Run ``task`` (a merge of this metric's task with others', see :func:`share_tasks`)."""
        self._shared_task = task

    # -- public API ---------------------------------------------------------------------------------
    async def evaluate(
        self,
        question: str | None = None,
        answer: str | None = None,
        contexts: Sequence[str] | None = None,
        reference: str | None = None,
    ) -> MetricResult:
        """Score one answer and return the full record (claims, verdicts, evidence, usage).

        Raises:
            InvalidInputError: A field has the wrong type, or a required field is missing.
        """
        sample = Sample.from_fields(
            question=question,
            answer=answer,
            contexts=contexts,
            reference=reference,
            require_question=self.question_required,
        )
        return await self.evaluate_sample(sample)

    async def score(
        self,
        question: str | None = None,
        answer: str | None = None,
        contexts: Sequence[str] | None = None,
        reference: str | None = None,
    ) -> float:
        """Score one answer: a float in [0, 1].

        Raises:
            InvalidInputError: Bad input.
            NoScoreError: The judge failed (rate limit, timeout, unusable output), or an input the
                metric needs is missing; the error carries the status and message of the result.
        """
        result = await self.evaluate(question=question, answer=answer, contexts=contexts, reference=reference)
        if result.score is None:
            raise NoScoreError(self.name, result.status, result.message or "")
        return result.score

    def evaluate_sync(
        self,
        question: str | None = None,
        answer: str | None = None,
        contexts: Sequence[str] | None = None,
        reference: str | None = None,
    ) -> MetricResult:
        """Blocking twin of :meth:`evaluate` (works inside a running event loop too)."""
        return run_sync(self._closing(self.evaluate(question, answer, contexts, reference)))

    def score_sync(
        self,
        question: str | None = None,
        answer: str | None = None,
        contexts: Sequence[str] | None = None,
        reference: str | None = None,
    ) -> float:
        """Blocking twin of :meth:`score`."""
        return run_sync(self._closing(self.score(question, answer, contexts, reference)))

    async def evaluate_sample(self, sample: Sample, *, repeat: int = 0) -> MetricResult:
        """Score a validated sample; judge failures become a result with a status, never an exception."""
        started = time.perf_counter()
        judge = self.judge
        missing = missing_input(sample, self.needs, self.name) or self._too_long(sample)
        if missing is not None:
            return self._result(ClaimScore(score=None, status="invalid_input", message=str(missing)), started)
        try:
            claim_plan = plan(
                sample, self.active_task, self.context_budget_tokens, repeat, force=self.verify_always
            )
            outcome = await run_claims(judge, claim_plan)
        except JudgeError as exc:  # what the failed calls cost stays on the result
            fields = failure_from(exc, metric=self.name).result_fields()
            health = {"judge_health": exc.health.as_details()} if isinstance(exc.health, Health) else {}
            failed = ClaimScore(
                score=None, status=fields["status"], message=fields["message"], details=health
            )
            return self._result(failed, started, usage=fields["usage"])
        found = _found(sample, outcome)
        scored = self.scoring(found)
        scored = replace(scored, details={**scored.details, "judge_health": found.health})
        return self._result(scored, started, usage=outcome.usage, found=found.reported)

    def _too_long(self, sample: Sample) -> InvalidInputError | None:
        """The error for a text this metric's task splits into claims that is over ``MAX_SPLIT_CHARS``."""
        task = self.active_task
        return too_long_to_split(sample, self.name, (task.split, *(("reference",) if task.also else ())))

    # -- the one place a claim score becomes a result ----------------------------------------------
    def _signature(self) -> str:
        prompts = [load_prompt(EXTRACT_VERSION)]
        task = self.active_task
        if task.against is not None:
            prompts.append(load_prompt(VERIFY_V2_VERSION if task.v2 else VERIFY_VERSION))
        info = self.judge.info
        return (
            f"{self.name}|prompts={','.join(p.short for p in prompts)}|judge={info.spec}"
            f"|temperature={info.temperature_text}|ragmetrics={__version__}"
        )

    def _result(
        self,
        scored: ClaimScore,
        started: float,
        *,
        usage: Usage | None = None,
        found: Sequence[ClaimRecord] = (),
    ) -> MetricResult:
        claims = list(scored.claims if scored.claims is not None else found)
        rates: dict[str, float | None] = {
            "supported_rate": None,
            "contradicted_rate": None,
            "unverifiable_rate": None,
        }
        judged = [c for c in claims if c.verdict is not None and c.span_found is not False]
        if judged:
            n = len(judged)
            rates = {
                "supported_rate": sum(c.verdict == "supported" for c in judged) / n,
                "contradicted_rate": sum(c.verdict == "contradicted" for c in judged) / n,
                "unverifiable_rate": sum(c.verdict == "not_found" for c in judged) / n,
            }
        return judged_result(self, scored, started, usage, claims=claims, **rates)


def _found(sample: Sample, outcome: ClaimsOutcome) -> Found:
    """What was found, as the scoring reads it: the split text's claims, and the reference's apart.

    Claims whose span is not in their text are set apart (``Found.unverified``): the verdicts, text
    verdicts and per-context supports of the others are renumbered without them.
    """
    n = outcome.n_main
    health = outcome.health.as_details()

    def part(records: list[ClaimRecord], lo: int, **kwargs: Any) -> Found:
        keep = [i for i, r in enumerate(records) if r.span_found is not False]
        renumber = {lo + old: new for new, old in enumerate(keep)}
        got = outcome.verdicts[lo : lo + len(records)]
        text_verdicts = tuple(got[i].text_verdict if got[i] is not None else None for i in keep)  # type: ignore[union-attr]
        judged = tuple(
            None
            if j is None
            else j.model_copy(update={"supports": [renumber[i] for i in j.supports if i in renumber]})
            for j in outcome.judged
        )
        return Found(
            sample=sample,
            claims=[records[i] for i in keep],
            sources=outcome.plan.sources,
            chunks=outcome.chunks,
            repairs=outcome.repairs,
            text_verdicts=text_verdicts,
            judged=judged,
            unverified=tuple(r for r in records if r.span_found is False),
            health=health,
            **kwargs,
        )

    other = None
    if outcome.also_extraction is not None:
        other = part(outcome.records(also=True), n, extraction=outcome.also_extraction)
    return part(outcome.records(), 0, extraction=outcome.extraction, other=other)


def share_tasks(metrics: Sequence[object]) -> None:
    """Give the claim metrics on one judge one merged task, so their requests are the same (made once).

    Run after the judges are shared (``share_judges``); a metric alone on its judge runs its own task.
    """
    groups: dict[int, list[ClaimMetric]] = {}
    for metric in metrics:
        if isinstance(metric, ClaimMetric):
            groups.setdefault(id(metric.judge), []).append(metric)
    for members in groups.values():
        mergeable = [m for m in members if merge_tasks([m.task]) is not None]
        merged = merge_tasks([m.task for m in mergeable])
        for m in members:
            m.use_task(merged if m in mergeable and len(mergeable) > 1 else None)
