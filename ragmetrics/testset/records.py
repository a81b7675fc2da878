"""The records of a test set: items, their verified claims, rejects, and the LLM's response schema.

A :class:`TestsetItem` is one line of the output JSONL. It loads unchanged into ``ragmetrics eval``,
``evaluate()`` and suites once the user's app has filled ``answer`` and ``contexts``: the dataset
reader takes ``question`` and ``reference`` by name and keeps the other fields as the row's own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.metrics.claims.schemas import LeanSchema

__all__ = [
    "KINDS",
    "STYLES",
    "GeneratedClaim",
    "GeneratedItem",
    "ItemClaim",
    "Kind",
    "Reject",
    "Style",
    "TestsetItem",
]

Kind = Literal["single_hop", "multi_hop", "comparison", "summary", "unanswerable"]
KINDS: tuple[Kind, ...] = ("single_hop", "multi_hop", "comparison", "summary", "unanswerable")
Style = Literal["plain", "short", "conversational", "typos"]
STYLES: tuple[Style, ...] = ("plain", "short", "conversational", "typos")
TWO_CHUNK_KINDS = frozenset({"multi_hop", "comparison"})
"""Kinds asked over two chunks that share terms."""


class ItemClaim(BaseModel):
    """One claim of the reference, verified against the item's chunks."""

    model_config = ConfigDict(extra="forbid")

    text: str
    """The claim, as the generator split the reference (or the claim extraction, if those failed)."""
    quote: str
    """A verbatim quote from the chunk that supports it (checked to be in that chunk)."""
    context_index: int
    """Index into ``reference_contexts`` of the chunk the quote comes from."""


class TestsetItem(BaseModel):
    """One generated question with its verified reference."""

    __test__ = False  # not a pytest test class, whatever its name says
    model_config = ConfigDict(extra="forbid")

    id: str
    """``tN``: N is the candidate slot it was generated in (stable across resumed runs)."""
    question: str
    """The question."""
    reference: str
    """The reference answer; for ``unanswerable``, a sentence saying the documents do not say."""
    reference_contexts: list[str]
    """The text of the chunks the question was written from."""
    reference_context_ids: list[str]
    """Their chunk ids (``DOC_ID#N``)."""
    kind: str
    """``single_hop``, ``multi_hop``, ``comparison``, ``summary`` or ``unanswerable``."""
    style: str = "plain"
    """``plain``, ``short``, ``conversational`` or ``typos``."""
    source: list[str]
    """The ids of the documents the chunks come from."""
    claims: list[ItemClaim] = Field(default_factory=list)
    """The reference's claims, each with a quote from its chunk (none for ``unanswerable``)."""
    generator: str
    """``extractive`` (the offline generator) or the judge that wrote it (``openai:gpt-4o-mini``)."""
    instructions: list[str] | None = None
    """Instruction-like text found in its chunks, as ``DOC at character N (pattern): 'text'``: only on
    items kept with ``allow_instructions=True``; None otherwise (and left out of the file)."""


RejectReason = Literal[
    "invalid_output",
    "quote_not_found",
    "answer_in_question",
    "no_claims",
    "unsupported",
    "single_chunk",
    "answerable",
    "near_duplicate",
    "judge_error",
    "no_question",
    "instructions",
]


class Reject(BaseModel):
    """A candidate that was not written, and why (one line of the rejects file)."""

    model_config = ConfigDict(extra="forbid")

    slot: int
    """The candidate slot (the item id it would have had is ``tSLOT``)."""
    kind: str
    reason: RejectReason
    """What failed (see :data:`RejectReason`)."""
    detail: str = ""
    """One line naming the claim, quote or earlier item concerned."""
    chunk_ids: list[str] = Field(default_factory=list)
    question: str = ""
    reference: str = ""


class GeneratedClaim(LeanSchema):
    """One claim of the reference, as the generator split it."""

    text: str
    """The claim."""
    span: str
    """The reference text it comes from (checked to be in the reference)."""


class GeneratedItem(LeanSchema):
    """What the generation call returns: a question, its reference, its claims, the quotes it rests on."""

    question: str
    """The question."""
    reference: str
    """The answer, using only the passages."""
    quotes: list[str]
    """Verbatim quotes from the passages that support the reference (none for unanswerable)."""
    claims: list[GeneratedClaim]
    """The reference split into claims, each with its span ([] for unanswerable). Used as the claim
    extraction when the spans are found in the reference and cover it; else the reference is split by
    the claim extraction call, as an answer is."""
    missing_fact: str
    """Unanswerable only: a plausible answer the passages do NOT contain ("" otherwise)."""
