"""The claim machinery shared by faithfulness, groundedness and relevancy.

1. **Extract** (one call per distinct question + answer): atomic claims, each with its answer span and
   relevance to the question, plus whether the answer addresses the question at all.
2. **Verify** (one call per sample; one per chunk when the contexts exceed ``context_budget_tokens``):
   a verdict per claim with the deciding context, a verbatim quote and a reason. Across chunks a claim
   is supported if any chunk supports it, else contradicted if any contradicts it, else not_found.

Both requests go through the caching judge, so metrics that share a judge share the calls: the three
RAG metrics on one sample cost two calls together.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rapidfuzz import fuzz

from ragmetrics._aio import run_sync
from ragmetrics._textnorm import CHARS_PER_TOKEN, estimate_tokens, normalize_for_match
from ragmetrics._version import __version__
from ragmetrics.errors import ConfigError, InvalidInputError, JudgeError, NoScoreError
from ragmetrics.judge import Judge, JudgeReply, JudgeRequest, Message
from ragmetrics.judge.metering import note_unclaimed
from ragmetrics.judge.offline.claims import states_facts
from ragmetrics.metrics._judged import JudgeHolder
from ragmetrics.metrics.base import check_threshold, passed_at
from ragmetrics.metrics.claims.schemas import (
    ClaimExtraction,
    ClaimVerification,
    VerifiedClaim,
    extraction_model,
    verification_model,
)
from ragmetrics.prompting import load_prompt, numbered_blocks, render
from ragmetrics.sample import Sample
from ragmetrics.score import ClaimRecord, MetricResult, Status, Usage, spent_by

__all__ = ["ClaimMetric", "ClaimsOutcome", "VerifiedClaimMetric", "quote_found"]

EXTRACT_VERSION = "claims/extract.v1"
VERIFY_VERSION = "claims/verify.v1"
SYSTEM_VERSION = "claims/system.v1"
LOGIC_VERSION = "1"
QUOTE_MIN_RATIO = 90.0
"""Fuzzy ratio (0-100) at which an evidence quote counts as found in its context."""


def quote_found(quote: str, context: str) -> bool:
    """Whether ``quote`` appears in ``context``: exactly after normalisation, or with fuzzy ratio >= 90."""
    q = normalize_for_match(quote)
    if not q:
        return False
    c = normalize_for_match(context)
    if q in c:
        return True
    return fuzz.partial_ratio(q, c, score_cutoff=QUOTE_MIN_RATIO) >= QUOTE_MIN_RATIO


@dataclass(frozen=True, slots=True)
class _Piece:
    index: int
    """Index of the context in the sample."""
    text: str


def chunk_contexts(contexts: Sequence[str], budget_tokens: int) -> list[list[_Piece]]:
    """Group contexts into chunks of at most ``budget_tokens`` (estimated), splitting oversize ones."""
    pieces: list[_Piece] = []
    limit_chars = budget_tokens * CHARS_PER_TOKEN
    for i, text in enumerate(contexts):
        if estimate_tokens(text) <= budget_tokens:
            pieces.append(_Piece(i, text))
            continue
        start = 0
        while start < len(text):
            end = min(len(text), start + limit_chars)
            if end < len(text):  # prefer to cut after a sentence end or a space
                cut = max(text.rfind(". ", start, end), text.rfind("\n", start, end))
                if cut <= start + limit_chars // 2:
                    cut = text.rfind(" ", start, end)
                if cut > start + limit_chars // 2:
                    end = cut + 1
            pieces.append(_Piece(i, text[start:end]))
            start = end
    chunks: list[list[_Piece]] = [[]]
    used = 0
    for piece in pieces:
        cost = estimate_tokens(piece.text)
        if chunks[-1] and used + cost > budget_tokens:
            chunks.append([])
            used = 0
        chunks[-1].append(piece)
        used += cost
    return chunks


@dataclass(slots=True)
class ClaimsOutcome:
    """Claims of one sample with their verdicts, and what producing them cost."""

    extraction: ClaimExtraction
    verdicts: list[VerifiedClaim | None]
    """Per claim; None when verification was not run (no contexts, or relevancy only)."""
    usage: Usage
    chunks: int = 0
    repairs: tuple[str, ...] = ()
    """Unambiguous slips in the judge's replies that were repaired instead of re-asked."""

    def records(self, contexts: Sequence[str]) -> list[ClaimRecord]:
        """The claims as result records, with the evidence quote checked against its context."""
        out = []
        for i, claim in enumerate(self.extraction.claims):
            v = self.verdicts[i] if i < len(self.verdicts) else None
            verified = None
            if v is not None and v.verdict != "not_found":
                verified = (
                    v.context is not None
                    and 0 <= v.context < len(contexts)
                    and quote_found(v.evidence, contexts[v.context])
                )
            out.append(
                ClaimRecord(
                    text=claim.text,
                    span=claim.span,
                    relevance=claim.relevance,
                    verdict=v.verdict if v else None,
                    context_index=v.context if v else None,
                    evidence=v.evidence if v else "",
                    evidence_verified=verified,
                    reason=v.reason if v else "",
                    support=v.support if v else None,
                )
            )
        return out


def _messages(user: str) -> tuple[Message, ...]:
    return (
        Message(role="system", content=load_prompt(SYSTEM_VERSION).text.strip()),
        Message(role="user", content=user),
    )


def extract_request(sample: Sample, repeat: int = 0) -> JudgeRequest[ClaimExtraction]:
    """The extraction request for one sample.

    When the answer plainly states facts (the offline splitter finds claims in it), the schema asks
    for at least one claim: an empty list for such an answer is a judge failure, not ``no_claims``.
    """
    prompt = load_prompt(EXTRACT_VERSION)
    return JudgeRequest(
        task="claims.extract",
        prompts=(load_prompt(SYSTEM_VERSION), prompt),
        messages=_messages(render(prompt, question=sample.question, answer=sample.answer)),
        response_model=extraction_model(1 if states_facts(sample.answer) else 0),
        variables={"question": sample.question, "answer": sample.answer},
        version=LOGIC_VERSION,
        repeat=repeat,
    )


def verify_request(
    claims: Sequence[str], chunk: Sequence[str], repeat: int = 0
) -> JudgeRequest[ClaimVerification]:
    """The verification request for all claims against one chunk of contexts."""
    prompt = load_prompt(VERIFY_VERSION)
    return JudgeRequest(
        task="claims.verify",
        prompts=(load_prompt(SYSTEM_VERSION), prompt),
        messages=_messages(
            render(
                prompt,
                contexts=numbered_blocks("context", list(chunk)),
                claims=numbered_blocks("claim", list(claims)),
            )
        ),
        response_model=verification_model(len(claims), len(chunk)),
        variables={"claims": list(claims), "contexts": list(chunk)},
        version=LOGIC_VERSION,
        repeat=repeat,
    )


_RANK = {"supported": 0, "contradicted": 1, "not_found": 2}


async def run_claims(
    judge: Judge, sample: Sample, *, verify: bool, budget_tokens: int, repeat: int = 0
) -> ClaimsOutcome:
    """Extract the sample's claims and, if asked and there are contexts, verify them.

    Raises:
        JudgeError: A call failed for good; its ``usage`` covers every call made here (extraction and
            every verification chunk), not only the failed one.
    """
    reply = await judge.complete(extract_request(sample, repeat))
    extraction = reply.value
    usage = reply.usage
    claims = [c.text for c in extraction.claims]
    verdicts: list[VerifiedClaim | None] = [None] * len(claims)
    if not verify or not claims or not sample.contexts:
        return ClaimsOutcome(extraction, verdicts, usage)
    chunks = chunk_contexts(sample.contexts, budget_tokens)
    # every chunk finishes (and is paid for) even when one fails, so the failure carries their usage
    try:
        answers: list[JudgeReply[ClaimVerification] | BaseException] = await asyncio.gather(
            *(judge.complete(verify_request(claims, [p.text for p in chunk], repeat)) for chunk in chunks),
            return_exceptions=True,
        )
    except asyncio.CancelledError:  # the sample timed out: the extraction was paid for all the same
        note_unclaimed(usage)
        raise
    failures = [a for a in answers if isinstance(a, BaseException)]
    for answer in answers:
        usage = usage + (answer.usage if isinstance(answer, JudgeReply) else spent_by(answer))
    if failures:
        first = failures[0]
        raise first.with_usage(usage) if isinstance(first, JudgeError) else first
    replies = [a for a in answers if isinstance(a, JudgeReply)]
    repairs: list[str] = []
    for chunk, chunk_reply in zip(chunks, replies, strict=True):  # gather: one reply per chunk
        result = chunk_reply.value
        repairs += [r for r in result.repairs if r not in repairs]
        for v in result.verdicts:
            local = v.context
            mapped = v.model_copy(update={"context": chunk[local].index if local is not None else None})
            current = verdicts[v.claim]
            if current is None or _RANK[mapped.verdict] < _RANK[current.verdict]:
                verdicts[v.claim] = mapped
    return ClaimsOutcome(extraction, verdicts, usage, chunks=len(chunks), repairs=tuple(repairs))


class ClaimMetric(JudgeHolder):
    """Base of the claim-based RAG metrics: judge resolution, input checks, failure records, sync twins."""

    name: ClassVar[str] = "claim_metric"
    needs_question: ClassVar[bool] = False
    needs_verification: ClassVar[bool] = True

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
            context_budget_tokens: Estimated context tokens per verification call; more contexts are
                split into chunks (one call each).
            **judge_options: Judge settings (temperature, timeout_s, max_concurrency...), plus
                ``api_key`` and ``base_url`` for a spec string and ``model`` for a client object.

        Raises:
            ConfigError: Bad threshold or budget, or a malformed spec (checked at once).
        """
        self.threshold = check_threshold(threshold, type(self).__name__)
        if not isinstance(context_budget_tokens, int) or context_budget_tokens < 64:
            raise ConfigError(f"{type(self).__name__}: context_budget_tokens must be an int >= 64")
        self.context_budget_tokens = context_budget_tokens
        self._init_judge(type(self).__name__, llm, cache, judge_options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(llm={self._judge_spec()!r}, threshold={self.threshold})"

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
            require_question=self.needs_question,
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
            NoScoreError: The judge failed (rate limit, timeout, unusable output); the error carries
                the status and message of the result.
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
        if self.needs_question and not (sample.question or "").strip():
            err = InvalidInputError(
                "question",
                "a non-empty string",
                row=sample.id,
                detail=f"{self.name} judges the answer against the question",
            )
            return self._result(None, started, status="invalid_input", message=str(err))
        if not sample.answer.strip():
            return self._empty_answer(started)
        try:
            outcome = await run_claims(
                judge,
                sample,
                verify=self.needs_verification,
                budget_tokens=self.context_budget_tokens,
                repeat=repeat,
            )
        except JudgeError as exc:  # what the failed calls cost stays on the result
            return self._result(None, started, status=exc.status, message=str(exc), usage=spent_by(exc))
        return self._finish(sample, outcome, started)

    # -- for subclasses -----------------------------------------------------------------------------
    def _finish(self, sample: Sample, outcome: ClaimsOutcome, started: float) -> MetricResult:
        raise NotImplementedError

    def _empty_answer(self, started: float) -> MetricResult:
        raise NotImplementedError

    def _signature(self) -> str:
        prompts = [load_prompt(EXTRACT_VERSION)]
        if self.needs_verification:
            prompts.append(load_prompt(VERIFY_VERSION))
        info = self.judge.info
        return (
            f"{self.name}|prompts={','.join(p.short for p in prompts)}|judge={info.spec}"
            f"|temperature={info.temperature_text}|ragmetrics={__version__}"
        )

    def _result(
        self,
        score: float | None,
        started: float,
        *,
        status: Status = "ok",
        message: str | None = None,
        reasoning: str = "",
        claims: list[ClaimRecord] | None = None,
        usage: Usage | None = None,
        details: dict[str, Any] | None = None,
    ) -> MetricResult:
        claims = claims or []
        rates: dict[str, float | None] = {
            "supported_rate": None,
            "contradicted_rate": None,
            "unverifiable_rate": None,
        }
        judged = [c for c in claims if c.verdict is not None]
        if judged:
            n = len(judged)
            rates = {
                "supported_rate": sum(c.verdict == "supported" for c in judged) / n,
                "contradicted_rate": sum(c.verdict == "contradicted" for c in judged) / n,
                "unverifiable_rate": sum(c.verdict == "not_found" for c in judged) / n,
            }
        info = self.judge.info
        if info.heuristic and reasoning:
            reasoning = f"[offline heuristic judge] {reasoning}"
        if status != "ok" and not reasoning:
            reasoning = f"No score: {message}" if score is None else (message or "")
        return MetricResult(
            name=self.name,
            score=score,
            passed=passed_at(score, self.threshold),
            threshold=self.threshold,
            status=status,
            message=message,
            reasoning=reasoning,
            claims=claims,
            usage=usage or Usage(),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            judge=info,
            signature=self._signature(),
            details=details or {},
            **rates,
        )


class VerifiedClaimMetric(ClaimMetric):
    """Base of the metrics that verify claims against the contexts (faithfulness, groundedness).

    Both score an answer with no claims 1.0 (status ``no_claims``: nothing in it can be wrong) and an
    answer checked against no contexts 0.0 (every claim unverifiable, no verification call made);
    subclasses score the ordinary case in :meth:`_score_claims`.
    """

    _no_claims_reason: ClassVar[str] = "nothing in it needs checking"
    """Ends the reasoning when the answer makes no claim."""
    _no_contexts_reasoning: ClassVar[str] = "No contexts were given, so no claim can be verified."

    def _empty_answer(self, started: float) -> MetricResult:
        return self._result(
            1.0,
            started,
            status="no_claims",
            message="the answer is empty",
            reasoning=f"The answer is empty: it makes no claim, so {self._no_claims_reason}.",
        )

    def _details(self, outcome: ClaimsOutcome) -> dict[str, Any]:
        return {"chunks": outcome.chunks}

    def _finish(self, sample: Sample, outcome: ClaimsOutcome, started: float) -> MetricResult:
        records = outcome.records(sample.contexts)
        details = self._details(outcome)
        if outcome.repairs:
            details["repairs"] = list(outcome.repairs)
        if not records:
            return self._result(
                1.0,
                started,
                status="no_claims",
                usage=outcome.usage,
                details=details,
                message="the judge found no factual claims in the answer",
                reasoning=f"The answer makes no factual claim, so {self._no_claims_reason}.",
            )
        if not sample.contexts:
            for r in records:
                r.verdict = "not_found"
                r.reason = "no contexts were given"
            details["no_contexts"] = True
            return self._result(
                0.0,
                started,
                claims=records,
                usage=outcome.usage,
                details=details,
                reasoning=self._no_contexts_reasoning.format(n=len(records)),
            )
        return self._score_claims(records, outcome, details, started)

    def _score_claims(
        self, records: list[ClaimRecord], outcome: ClaimsOutcome, details: dict[str, Any], started: float
    ) -> MetricResult:
        raise NotImplementedError


def describe_claim(i: int, record: ClaimRecord, limit: int = 80) -> str:
    """``claim 2 'Python is compiled'`` for reasons and reports."""
    text = record.text if len(record.text) <= limit else record.text[: limit - 3] + "..."
    return f"claim {i} {text!r}"
