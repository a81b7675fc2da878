"""The claim engine: ONE call plan, run by the metrics and read by the estimator.

A claim metric declares a :class:`ClaimTask`: which text is split into claims, what the claims are
checked against, whether the other text is split too (``also``) and what is asked per context
(``per_context``). :func:`plan` turns a task and a sample into its calls: one **extract** call per
distinct text (claims with spans and relevance), then one **verify** call per chunk of the sources
(a verdict, quote and reason per claim; supported in any chunk wins). No call for an empty text or no
claims. :func:`ragmetrics.metrics.claims.run.run_claims` runs a plan and
``ragmetrics.pipeline.estimate`` prices the same plan; :func:`merge_tasks` gives the claim metrics on
one judge identical requests, which the caching judge makes once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

from ragmetrics._check import check_choice
from ragmetrics.errors import ConfigError
from ragmetrics.judge import JudgeRequest, Message
from ragmetrics.judge.offline.claims import states_facts
from ragmetrics.metrics.claims.schemas import (
    ClaimExtraction,
    ClaimVerification,
    extraction_model,
    verification_model,
)
from ragmetrics.prompting import load_prompt, numbered_blocks, numbered_lines, render
from ragmetrics.sample import Sample
from ragmetrics.text import CHARS_PER_TOKEN, estimate_tokens, normalize_for_match

__all__ = [
    "merge_tasks",
    "ClaimPlan",
    "ClaimTask",
    "chunk_contexts",
    "extract_request",
    "plan",
    "quote_found",
    "verify_request",
]

EXTRACT_VERSION = "claims/extract.v2"
VERIFY_VERSION = "claims/verify.v3"
VERIFY_V2_VERSION = "claims/verify.v4"
"""Verification with a second text (a verdict per claim against it too) and a per-context part."""
SYSTEM_VERSION = "claims/system.v2"
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
    c = _normalized_context(context)
    if q in c:
        return True
    return fuzz.partial_ratio(q, c, score_cutoff=QUOTE_MIN_RATIO) >= QUOTE_MIN_RATIO


@functools.lru_cache(maxsize=16)
def _normalized_context(context: str) -> str:
    """:func:`normalize_for_match` of a context, kept for the next quote.

    Every claim of a sample is checked against the same few texts, and folding a 200 KB answer once
    per claim was quadratic.
    """
    return normalize_for_match(context)


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
    also: Literal["reference"] | None = None
    """Split the reference too, when the sample has one, and verify both claim lists in the same
    request, each claim also judged against the other text (the answer's against the reference, the
    reference's against the answer); only with ``split="answer"`` (the joint ``verify.v4`` request)."""
    per_context: int = 0
    """Per context, 1: the claims it supports; 2: also its relevance to the question (``verify.v4``)."""

    def __post_init__(self) -> None:
        if self.also is not None and (self.split != "answer" or self.against != "contexts"):
            raise ConfigError("ClaimTask: also='reference' goes with split='answer', against='contexts'")
        check_choice(self.per_context, "per_context", "ClaimTask", (0, 1, 2))

    @property
    def v2(self) -> bool:
        """Whether the verification asks more than a verdict per claim (the joint ``verify.v4`` prompt)."""
        return self.also is not None or self.per_context > 0


def merge_tasks(tasks: Sequence[ClaimTask]) -> ClaimTask | None:
    """One task that asks everything ``tasks`` ask, for metrics that share a judge; None if they differ.

    Tasks that split the answer and check it against the contexts merge into one (the reference split
    too if any asks it, the widest per-context part), so faithfulness, groundedness, the context
    metrics and answer correctness make one verification request per sample together; alone,
    faithfulness and groundedness still make the plain ``verify.v3`` request.
    """
    if not tasks or any(t.split != "answer" or t.against != "contexts" for t in tasks):
        return None
    if any(t.also for t in tasks):
        return ClaimTask(also="reference", per_context=max(t.per_context for t in tasks))
    return ClaimTask(per_context=max(t.per_context for t in tasks))


@dataclass(frozen=True, slots=True)
class ClaimPlan:
    """The calls one sample needs for one task: the extraction(s), then one verification per chunk."""

    task: ClaimTask
    question: str | None
    text: str
    """The split text (empty: nothing extracted from it)."""
    sources: tuple[str, ...]
    """The texts the claims are checked against (verdict indices point into these)."""
    chunks: tuple[tuple[_Piece, ...], ...]
    """The sources in chunks of at most the token budget; empty when nothing is verified."""
    extract: JudgeRequest[ClaimExtraction] | None
    """The extraction request; None when the split text is empty."""
    repeat: int = 0
    also_text: str | None = None
    """The reference (``task.also``) when the sample has one."""
    also_extract: JudgeRequest[ClaimExtraction] | None = None
    """Its extraction request."""
    force: bool = False
    """Verify even without claims (a per-context judgement is wanted all the same)."""

    def verify(
        self, claims: Sequence[str], also_claims: Sequence[str] = ()
    ) -> list[JudgeRequest[ClaimVerification]]:
        """The verification requests (one per chunk; none without claims or sources unless forced)."""
        if not claims and not also_claims and not self.force:
            return []
        if not self.task.v2:
            return [verify_request(claims, [p.text for p in chunk], self.repeat) for chunk in self.chunks]
        joint = self.also_text is not None
        return [
            verify_request(
                claims,
                [p.text for p in chunk],
                self.repeat,
                question=self.question if self.task.per_context > 1 else None,
                answer=self.text if joint else None,
                reference=self.also_text,
                reference_claims=also_claims,
                per_context=self.task.per_context,
            )
            for chunk in self.chunks
        ]


def _sources(sample: Sample, against: Source | None) -> tuple[str, ...]:
    if against is None:
        return ()
    if against == "contexts":
        return tuple(sample.contexts)
    text = sample.reference if against == "reference" else sample.answer
    return (text,) if text and text.strip() else ()


def plan(
    sample: Sample, task: ClaimTask, budget_tokens: int, repeat: int = 0, *, force: bool = False
) -> ClaimPlan:
    """The calls ``sample`` needs for ``task``; what a run makes and what an estimate prices.

    ``force``: verify even when there are no claims, and against no contexts when there is a
    reference (a metric that needs the per-context part, or the verdicts against the other text).
    """
    text = (sample.reference or "") if task.split == "reference" else sample.answer
    question = sample.question
    sources = _sources(sample, task.against)
    also = _sources(sample, task.also)[0] if task.also is not None and _sources(sample, task.also) else None
    chunks: tuple[tuple[_Piece, ...], ...] = ()
    if sources:
        chunks = tuple(tuple(c) for c in chunk_contexts(sources, budget_tokens))
    elif force and also is not None:
        chunks = ((),)  # nothing to check against but the other text
    return ClaimPlan(
        task,
        question,
        text,
        sources,
        chunks,
        _extract_request(question, text, repeat) if text.strip() else None,
        repeat,
        also,
        _extract_request(question, also, repeat) if also is not None else None,
        force and bool(chunks),
    )


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
    claims: Sequence[str],
    chunk: Sequence[str],
    repeat: int = 0,
    *,
    question: str | None = None,
    answer: str | None = None,
    reference: str | None = None,
    reference_claims: Sequence[str] = (),
    per_context: int = 0,
) -> JudgeRequest[ClaimVerification]:
    """The verification request for all claims against one chunk of sources.

    With a ``reference`` or a ``per_context`` part it is a joint (``verify.v4``) request: the reference's
    claims follow the answer's (numbered on), each verdict also judges the claim against the other text,
    and each context lists the claims it supports (and, with ``per_context=2``, its relevance to
    ``question``).
    """
    if reference is None and not per_context and answer is None:
        prompt = load_prompt(VERIFY_VERSION)
        return JudgeRequest(
            task="claims.verify",
            prompts=(load_prompt(SYSTEM_VERSION), prompt),
            messages=_messages(
                render(
                    prompt,
                    contexts=numbered_blocks("context", list(chunk)),
                    claims=numbered_lines("claim", list(claims)),
                )
            ),
            response_model=verification_model(len(claims), len(chunk)),
            variables={"claims": list(claims), "contexts": list(chunk)},
            version=LOGIC_VERSION,
            repeat=repeat,
        )
    prompt = load_prompt(VERIFY_V2_VERSION)
    n = len(claims)
    return JudgeRequest(
        task="claims.verify",
        prompts=(load_prompt(SYSTEM_VERSION), prompt),
        messages=_messages(
            render(
                prompt,
                question=question,
                answer=answer,
                reference=reference,
                contexts=numbered_blocks("context", list(chunk)),
                claims=numbered_lines("claim", list(claims)),
                reference_claims=numbered_lines("reference claim", list(reference_claims), start=n),
            )
        ),
        response_model=verification_model(
            n + len(reference_claims), len(chunk), text=reference is not None, per_context=per_context
        ),
        variables={
            "claims": list(claims),
            "reference_claims": list(reference_claims),
            "contexts": list(chunk),
            "question": question,
            "answer": answer,
            "reference": reference,
            "per_context": per_context,
        },
        version=LOGIC_VERSION,
        repeat=repeat,
    )
