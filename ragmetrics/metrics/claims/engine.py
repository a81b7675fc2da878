"""The claim engine: ONE call plan, run by the metrics and read by the estimator.

A claim metric declares a :class:`ClaimTask`: which text is split into claims (the answer or the
reference) and what the claims are checked against (the contexts, the reference, the answer, or
nothing). :func:`plan` turns a task and a sample into the calls that sample needs:

1. **Extract** (one call per distinct question + text): atomic claims, each with its span and
   relevance to the question, plus whether the text addresses the question at all. No call when the
   split text is empty.
2. **Verify** (one call per chunk of the sources; the sources are split into chunks of at most
   ``budget_tokens``): a verdict per claim with the deciding source, a verbatim quote and a reason.
   Across chunks a claim is supported if any chunk supports it, else contradicted if any contradicts
   it, else not_found. No call when there are no claims or no sources.

:func:`run_claims` runs a plan; ``ragmetrics.pipeline.estimate`` prices the same plan, so an
estimate cannot drift from a run. Both requests go through the caching judge, so metrics that share a
judge and ask the same request share the call: the three RAG metrics on one sample cost two calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

from ragmetrics._textnorm import CHARS_PER_TOKEN, estimate_tokens, normalize_for_match
from ragmetrics.errors import JudgeError
from ragmetrics.judge import Judge, JudgeReply, JudgeRequest, Message
from ragmetrics.judge.metering import note_unclaimed
from ragmetrics.judge.offline.claims import states_facts
from ragmetrics.metrics.claims.schemas import (
    ClaimExtraction,
    ClaimVerification,
    VerifiedClaim,
    extraction_model,
    verification_model,
)
from ragmetrics.prompting import load_prompt, numbered_blocks, render
from ragmetrics.sample import Sample
from ragmetrics.score import ClaimRecord, Usage, spent_by

__all__ = [
    "ClaimPlan",
    "ClaimTask",
    "ClaimsOutcome",
    "chunk_contexts",
    "extract_request",
    "plan",
    "quote_found",
    "run_claims",
    "verify_request",
]

EXTRACT_VERSION = "claims/extract.v1"
VERIFY_VERSION = "claims/verify.v1"
SYSTEM_VERSION = "claims/system.v1"
LOGIC_VERSION = "1"
QUOTE_MIN_RATIO = 90.0
"""Fuzzy ratio (0-100) at which an evidence quote counts as found in its context."""

SplitText = Literal["answer", "reference"]
Source = Literal["contexts", "reference", "answer"]


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
    """Index of the source text (the context) in the sample."""
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


# -- the plan -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClaimTask:
    """What a claim metric asks of the engine: split which text, check its claims against what."""

    split: SplitText = "answer"
    """The text split into claims."""
    against: Source | None = "contexts"
    """What the claims are verified against; None: extraction only (relevancy)."""


@dataclass(frozen=True, slots=True)
class ClaimPlan:
    """The calls one sample needs for one task: the extraction, then one verification per chunk."""

    task: ClaimTask
    question: str | None
    text: str
    """The split text (empty: no call at all)."""
    sources: tuple[str, ...]
    """The texts the claims are checked against (verdict indices point into these)."""
    chunks: tuple[tuple[_Piece, ...], ...]
    """The sources in chunks of at most the token budget; empty when nothing is verified."""
    extract: JudgeRequest[ClaimExtraction] | None
    """The extraction request; None when the split text is empty."""
    repeat: int = 0

    def verify(self, claims: Sequence[str]) -> list[JudgeRequest[ClaimVerification]]:
        """The verification requests for ``claims`` (one per chunk; none without claims or sources)."""
        if not claims:
            return []
        return [verify_request(claims, [p.text for p in chunk], self.repeat) for chunk in self.chunks]


def _sources(sample: Sample, against: Source | None) -> tuple[str, ...]:
    if against is None:
        return ()
    if against == "contexts":
        return tuple(sample.contexts)
    text = sample.reference if against == "reference" else sample.answer
    return (text,) if text and text.strip() else ()


def plan(sample: Sample, task: ClaimTask, budget_tokens: int, repeat: int = 0) -> ClaimPlan:
    """The calls ``sample`` needs for ``task``; what a run makes and what an estimate prices."""
    text = (sample.reference or "") if task.split == "reference" else sample.answer
    question = sample.question
    sources = _sources(sample, task.against)
    chunks = tuple(tuple(c) for c in chunk_contexts(sources, budget_tokens)) if sources else ()
    extract = _extract_request(question, text, repeat) if text.strip() else None
    return ClaimPlan(task, question, text, sources, chunks, extract, repeat)


def _messages(user: str) -> tuple[Message, ...]:
    return (
        Message(role="system", content=load_prompt(SYSTEM_VERSION).text.strip()),
        Message(role="user", content=user),
    )


def _extract_request(question: str | None, text: str, repeat: int) -> JudgeRequest[ClaimExtraction]:
    prompt = load_prompt(EXTRACT_VERSION)
    return JudgeRequest(
        task="claims.extract",
        prompts=(load_prompt(SYSTEM_VERSION), prompt),
        messages=_messages(render(prompt, question=question, answer=text)),
        response_model=extraction_model(1 if states_facts(text) else 0),
        variables={"question": question, "answer": text},
        version=LOGIC_VERSION,
        repeat=repeat,
    )


def extract_request(sample: Sample, repeat: int = 0) -> JudgeRequest[ClaimExtraction]:
    """The extraction request for the answer of one sample.

    When the text plainly states facts (the offline splitter finds claims in it), the schema asks for
    at least one claim: an empty list for such a text is a judge failure, not ``no_claims``.
    """
    return _extract_request(sample.question, sample.answer, repeat)


def verify_request(
    claims: Sequence[str], chunk: Sequence[str], repeat: int = 0
) -> JudgeRequest[ClaimVerification]:
    """The verification request for all claims against one chunk of sources."""
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


# -- running a plan -------------------------------------------------------------------------------


@dataclass(slots=True)
class ClaimsOutcome:
    """Claims of one text with their verdicts, and what producing them cost."""

    plan: ClaimPlan
    extraction: ClaimExtraction | None
    """None when the split text was empty (no call made)."""
    verdicts: list[VerifiedClaim | None]
    """Per claim; None when verification was not run (no sources, or extraction only)."""
    usage: Usage
    chunks: int = 0
    repairs: tuple[str, ...] = ()
    """Unambiguous slips in the judge's replies that were repaired instead of re-asked."""

    def records(self) -> list[ClaimRecord]:
        """The claims as result records, with the evidence quote checked against its source."""
        sources = self.plan.sources
        claims = self.extraction.claims if self.extraction is not None else []
        out = []
        for i, claim in enumerate(claims):
            v = self.verdicts[i] if i < len(self.verdicts) else None
            verified = None
            if v is not None and v.verdict != "not_found":
                verified = (
                    v.context is not None
                    and 0 <= v.context < len(sources)
                    and quote_found(v.evidence, sources[v.context])
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


_RANK = {"supported": 0, "contradicted": 1, "not_found": 2}


async def run_claims(judge: Judge, claim_plan: ClaimPlan) -> ClaimsOutcome:
    """Make the calls of ``claim_plan``: extract the claims, then verify them chunk by chunk.

    Raises:
        JudgeError: A call failed for good; its ``usage`` covers every call made here (extraction and
            every verification chunk), not only the failed one.
    """
    if claim_plan.extract is None:
        return ClaimsOutcome(claim_plan, None, [], Usage())
    reply = await judge.complete(claim_plan.extract)
    extraction = reply.value
    usage = reply.usage
    claims = [c.text for c in extraction.claims]
    verdicts: list[VerifiedClaim | None] = [None] * len(claims)
    requests = claim_plan.verify(claims)
    if not requests:
        return ClaimsOutcome(claim_plan, extraction, verdicts, usage)
    # every chunk finishes (and is paid for) even when one fails, so the failure carries their usage
    try:
        answers: list[JudgeReply[ClaimVerification] | BaseException] = await asyncio.gather(
            *(judge.complete(request) for request in requests), return_exceptions=True
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
    for chunk, chunk_reply in zip(claim_plan.chunks, replies, strict=True):  # gather: one per chunk
        result = chunk_reply.value
        repairs += [r for r in result.repairs if r not in repairs]
        for v in result.verdicts:
            local = v.context
            mapped = v.model_copy(update={"context": chunk[local].index if local is not None else None})
            current = verdicts[v.claim]
            if current is None or _RANK[mapped.verdict] < _RANK[current.verdict]:
                verdicts[v.claim] = mapped
    return ClaimsOutcome(
        claim_plan, extraction, verdicts, usage, chunks=len(claim_plan.chunks), repairs=tuple(repairs)
    )
