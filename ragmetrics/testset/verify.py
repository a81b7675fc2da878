"""One candidate from slot to item or reject: write it (LLM or extractive), then verify it with the claims.

With an LLM judge a candidate costs one generation call (question, reference, the reference's claims
with spans, and supporting quotes) and one verification of those claims: two calls per accepted item,
three when the generator's claims do not cover its reference and the reference is split by the claim
extraction instead. Checks that cost nothing run first (quotes verbatim in the chunks, the question
not holding its answer). An item is written only if every claim of its reference is ``supported`` with
evidence found in the chunk it names (both chunks for two-chunk kinds); an unanswerable question only
if its plausible answer is ``not_found``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmetrics.errors import JudgeError, JudgeOutputError
from ragmetrics.judge import Judge, JudgeRequest, Message
from ragmetrics.metrics.claims.engine import ClaimTask, plan, quote_found, verify_request
from ragmetrics.metrics.claims.run import run_claims
from ragmetrics.metrics.claims.schemas import ClaimExtraction, ExtractedClaim
from ragmetrics.prompting import load_prompt, numbered_blocks, render
from ragmetrics.sample import Sample
from ragmetrics.score import Usage, spent_by
from ragmetrics.testset.extractive import extract_item
from ragmetrics.testset.records import TWO_CHUNK_KINDS, GeneratedItem, ItemClaim, Reject, TestsetItem
from ragmetrics.testset.slots import Slot
from ragmetrics.text import content_tokens, normalize_for_match, tokenize

__all__ = ["Attempt", "GENERATE_VERSION", "MIN_QUOTE_WORDS", "generate_request", "own_claims", "run_slot"]

GENERATE_VERSION = "testset/generate.v2"
SYSTEM_VERSION = "testset/system.v1"
LOGIC_VERSION = "1"
MIN_QUOTE_WORDS = 3
"""A quote (the generator's or the verifier's) must have this many words to count as evidence: a
word or two is found in almost any passage, so it proves nothing."""
CONTEXT_BUDGET_TOKENS = 6000
"""Source tokens per verification call (the claim metrics' default)."""


@dataclass(slots=True)
class Attempt:
    """What became of one slot, and every call it made."""

    slot: Slot
    item: TestsetItem | None = None
    reject: Reject | None = None
    usage: Usage = field(default_factory=Usage)
    quotes: int = 0
    """Supported and contradicted verdicts of the verification (each quotes the chunk it cites)."""
    quotes_found: int = 0
    """Of them, verdicts whose quote was found in that chunk (the verifier's reading, for the gate)."""


def generate_request(slot: Slot) -> JudgeRequest[GeneratedItem]:
    """The generation request for a slot (also what the estimate prices)."""
    prompt = load_prompt(GENERATE_VERSION)
    system = load_prompt(SYSTEM_VERSION)
    headings = [c.heading or c.doc_id for c in slot.chunks]
    passages = [c.text for c in slot.chunks]
    user = render(
        prompt,
        kind=slot.kind,
        style=slot.style,
        headings=numbered_blocks("heading", headings),
        passages=numbered_blocks("passage", passages),
    )
    return JudgeRequest(
        task="testset.generate",
        prompts=(system, prompt),
        messages=(Message(role="system", content=system.text.strip()), Message(role="user", content=user)),
        response_model=GeneratedItem,
        variables={"kind": slot.kind, "style": slot.style, "headings": headings, "passages": passages},
        version=LOGIC_VERSION,
    )


def _words(text: str) -> int:
    return len(normalize_for_match(text).split())


def _reject(slot: Slot, reason: Any, detail: str, value: GeneratedItem | None = None) -> Reject:
    return Reject(
        slot=slot.index,
        kind=slot.kind,
        reason=reason,
        detail=detail,
        chunk_ids=[c.id for c in slot.chunks],
        question=value.question if value else "",
        reference=value.reference if value else "",
    )


def own_claims(value: GeneratedItem, reference: str) -> ClaimExtraction | None:
    """The generator's claims of ``reference`` as an extraction, or None if they do not check out.

    They check out when there is at least one, every span is found in the reference, and the spans
    hold every content word of the reference (so no statement of it is left out of the claims).
    """
    claims = [c for c in value.claims if c.text.strip()]
    if not claims or not all(quote_found(c.span, reference) for c in claims):
        return None
    covered = {t for c in claims for t in content_tokens(tokenize(c.span))}
    if not set(content_tokens(tokenize(reference))) <= covered:
        return None
    return ClaimExtraction(
        claims=[ExtractedClaim(text=c.text, span=c.span) for c in claims], addresses_question="yes"
    )


def answer_in_question(question: str, reference: str, quotes: Sequence[str]) -> str | None:
    """The text of the answer the question gives away verbatim, or None."""
    q = normalize_for_match(question)
    for text in (reference, *quotes):
        t = normalize_for_match(text)
        if t and _words(text) >= 2 and t in q:
            return text
    return None


async def _written(
    judge: Judge, slot: Slot, extractive: bool, seed: int, df: Counter[str] | None
) -> tuple[GeneratedItem, Usage]:
    if extractive:
        got = extract_item(
            slot.kind,
            [c.text for c in slot.chunks],
            [c.heading or c.doc_id for c in slot.chunks],
            df=df,
            n_docs=n_chunks(df),
            style=slot.style,
            seed=seed + slot.index,
        )
        return GeneratedItem.model_validate(got), Usage()
    reply = await judge.complete(generate_request(slot))
    return reply.value, reply.usage


def n_chunks(df: Counter[str] | None) -> int:
    """How many chunks a document-frequency table counted (kept under the key ``""``)."""
    return max(1, df[""]) if df is not None else 1


async def run_slot(
    judge: Judge,
    slot: Slot,
    *,
    extractive: bool,
    generator: str,
    seed: int = 0,
    df: Counter[str] | None = None,
    duplicate: Callable[[str], str | None] | None = None,
) -> Attempt:
    """Write and verify the candidate of one slot; failures are rejects, never exceptions.

    ``df``: term document frequencies over the corpus's chunks (for the extractive generator), with
    the number of chunks under ``""``. ``duplicate``: names the earlier item a question nearly
    repeats (None if none), checked before verification so that a duplicate costs only its generation.
    """
    att = Attempt(slot)
    try:
        value, att.usage = await _written(judge, slot, extractive, seed, df)
    except JudgeOutputError as exc:
        att.usage = spent_by(exc)
        att.reject = _reject(slot, "invalid_output", str(exc)[:300])
        return att
    except JudgeError as exc:
        att.usage = spent_by(exc)
        att.reject = _reject(slot, "judge_error", str(exc)[:300])
        return att
    twin = duplicate(value.question) if duplicate is not None and value.question.strip() else None
    if twin is not None:
        att.reject = _reject(slot, "near_duplicate", twin, value)
        return att
    try:
        await _check(judge, slot, value, att, generator)
    except JudgeError as exc:
        att.usage = att.usage + spent_by(exc)
        att.reject = _reject(slot, "judge_error", str(exc)[:300], value)
    return att


async def _check(judge: Judge, slot: Slot, value: GeneratedItem, att: Attempt, generator: str) -> None:
    texts = [c.text for c in slot.chunks]
    question, reference = value.question.strip(), value.reference.strip()
    if not question or not reference:
        att.reject = _reject(slot, "no_question", "the generator wrote no question or no reference", value)
        return
    if slot.kind == "unanswerable":
        fact = value.missing_fact.strip()
        if _words(fact) < MIN_QUOTE_WORDS:
            att.reject = _reject(slot, "invalid_output", "no plausible missing answer was given", value)
            return
        reply = await judge.complete(verify_request([fact], texts))
        att.usage = att.usage + reply.usage
        verdicts = reply.value.verdicts
        if not verdicts or any(v.verdict != "not_found" for v in verdicts):
            found = verdicts[0].verdict if verdicts else "no verdict"
            att.reject = _reject(
                slot, "answerable", f"the proposed answer {fact!r} is {found} in the chunks", value
            )
            return
        att.item = _item(slot, question, reference, [], generator)
        return
    quotes = [q for q in value.quotes if q.strip()]
    if not quotes:
        att.reject = _reject(slot, "quote_not_found", "no supporting quote was given", value)
        return
    for quote in quotes:
        if _words(quote) < MIN_QUOTE_WORDS or not any(quote_found(quote, t) for t in texts):
            att.reject = _reject(
                slot, "quote_not_found", f"not verbatim in the chunks: {quote[:160]!r}", value
            )
            return
    leaked = answer_in_question(question, reference, quotes)
    if leaked is not None:
        att.reject = _reject(slot, "answer_in_question", f"the question contains {leaked[:160]!r}", value)
        return
    sample = Sample(question=question, answer=reference, contexts=texts)
    claim_plan = plan(sample, ClaimTask(), CONTEXT_BUDGET_TOKENS)
    outcome = await run_claims(judge, claim_plan, claims=own_claims(value, reference))
    att.usage = att.usage + outcome.usage
    records = outcome.records()
    quoting = [r for r in records if r.verdict in ("supported", "contradicted") or r.judge_verdict]
    att.quotes += len(quoting)
    att.quotes_found += sum(bool(r.evidence_verified) for r in quoting)
    if not records:
        att.reject = _reject(slot, "no_claims", "the claim extraction found no claim in the reference", value)
        return
    for r in records:
        good = (
            r.verdict == "supported"
            and r.evidence_verified
            and _words(r.evidence) >= MIN_QUOTE_WORDS
            and r.context_index is not None
        )
        if not good:
            why = r.verdict if r.verdict != "supported" else "supported without a verbatim quote"
            att.reject = _reject(slot, "unsupported", f"claim {r.text[:160]!r}: {why}", value)
            return
    cited = {r.context_index for r in records}
    if slot.kind in TWO_CHUNK_KINDS and len(cited) < 2:
        att.reject = _reject(
            slot, "single_chunk", "every claim rests on one chunk; the kind needs both", value
        )
        return
    claims = [
        ItemClaim(text=r.text, quote=r.evidence, context_index=int(r.context_index or 0)) for r in records
    ]
    att.item = _item(slot, question, reference, claims, generator)


def _item(slot: Slot, question: str, reference: str, claims: list[ItemClaim], generator: str) -> TestsetItem:
    return TestsetItem(
        id=f"t{slot.index}",
        question=question,
        reference=reference,
        reference_contexts=[c.text for c in slot.chunks],
        reference_context_ids=[c.id for c in slot.chunks],
        kind=slot.kind,
        style=slot.style,
        source=list(dict.fromkeys(c.doc_id for c in slot.chunks)),
        claims=claims,
        generator=generator,
    )
