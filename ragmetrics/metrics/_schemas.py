"""Response schemas of the claim machinery: what the judge must return, checked with pydantic.

Descriptions stay short: they travel in every request's tool schema and cost prompt tokens.
Cross-field checks (a claim or context index out of range, a verdict missing for a claim) read
the validation context ``{"n_claims": int, "n_contexts": int}`` so that instructor re-asks.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, ValidationInfo, model_validator

__all__ = ["ClaimExtraction", "ClaimVerification", "ExtractedClaim", "VerifiedClaim"]


class ExtractedClaim(BaseModel):
    """One atomic claim of the answer."""

    text: str = Field(description="The self-contained claim, in the answer's language.")
    """The claim."""
    span: str = Field(default="", description="Verbatim answer text it comes from.")
    """The answer text it comes from."""
    relevance: Literal["direct", "supporting", "off_topic"] = Field(
        default="direct", description="How it bears on the question."
    )
    """How it bears on the question."""


class ClaimExtraction(BaseModel):
    """The answer split into claims, with an answer-level relevance judgement."""

    claims: list[ExtractedClaim] = Field(description="The answer's atomic claims, in order.")
    """The claims, in answer order."""
    addresses_question: Literal["yes", "partially", "no"] = Field(
        description="Whether the answer as a whole answers the question."
    )
    """Whether the answer addresses the question."""

    @model_validator(mode="after")
    def _no_blank_claims(self) -> ClaimExtraction:
        self.claims = [c for c in self.claims if c.text.strip()]
        return self


class VerifiedClaim(BaseModel):
    """The verdict on one claim."""

    claim: int = Field(description="Index of the claim.")
    """Index of the claim."""
    verdict: Literal["supported", "contradicted", "not_found"]
    """The verdict."""
    context: int | None = Field(default=None, description="Index of the deciding context.")
    """Index of the context that decides it."""
    evidence: str = Field(default="", description="Verbatim quote from that context.")
    """A verbatim quote from that context."""
    reason: str = Field(default="", description="One short sentence.")
    """Why."""


class ClaimVerification(BaseModel):
    """Verdicts for every claim."""

    verdicts: list[VerifiedClaim]
    """One verdict per claim."""

    @model_validator(mode="after")
    def _indices_in_range(self, info: ValidationInfo) -> ClaimVerification:
        ctx = info.context or {}
        n_claims = ctx.get("n_claims")
        n_contexts = ctx.get("n_contexts")
        problems = []
        seen: set[int] = set()
        for v in self.verdicts:
            if n_claims is not None and not 0 <= v.claim < n_claims:
                problems.append(f"claim index {v.claim} is out of range 0..{n_claims - 1}")
            if v.context is not None and n_contexts is not None and not 0 <= v.context < n_contexts:
                problems.append(f"context index {v.context} for claim {v.claim} is out of range 0..{n_contexts - 1}")
            seen.add(v.claim)
        if n_claims is not None:
            missing = sorted(set(range(n_claims)) - seen)
            if missing:
                problems.append(f"no verdict for claim(s) {missing}: give one verdict per claim")
        if problems:
            raise ValueError("; ".join(problems))
        return self
