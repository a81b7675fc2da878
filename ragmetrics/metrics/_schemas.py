"""Response schemas of the claim machinery: what the judge must return, checked with pydantic.

The JSON schemas carry no titles or descriptions: they travel in every request as prompt tokens,
and the prompts already say what each field means.
Cross-field checks (a claim or context index out of range, a verdict missing for a claim) read
the validation context ``{"n_claims": int, "n_contexts": int}`` so that instructor re-asks.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, model_validator
from pydantic.json_schema import SkipJsonSchema

__all__ = ["ClaimExtraction", "ClaimVerification", "ExtractedClaim", "LeanSchema", "VerifiedClaim"]


def _strip(node: Any, *, names: bool = False) -> Any:
    """Drop ``title`` and ``description`` keywords (but not properties that happen to be so named)."""
    if isinstance(node, dict):
        return {
            k: _strip(v, names=(k == "properties"))
            for k, v in node.items()
            if names or k not in ("title", "description")
        }
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


_SCHEMAS: dict[tuple[Any, ...], dict[str, Any]] = {}
"""JSON schemas already built (a pure function of the class and arguments)."""


class LeanSchema(BaseModel):
    """Base of response schemas: their JSON schema drops titles and descriptions.

    The schema travels with every request as prompt tokens; the prompt already says what each field
    means, so titles and descriptions would only be paid for twice.
    """

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:  # noqa: D102
        # Built once per schema: instructor asks for it on every request, through a fresh copy of the
        # class it makes each time, so the cache is keyed by the class's name and fields, not identity.
        key = (
            cls.__module__,
            cls.__qualname__,
            tuple(cls.model_fields),
            repr(args),
            repr(sorted(kwargs.items())),
        )
        schema = _SCHEMAS.get(key)
        if schema is None:
            schema = _strip(super().model_json_schema(*args, **kwargs))
            schema["title"] = cls.__name__  # the tool / function name
            _SCHEMAS[key] = schema
        return copy.deepcopy(schema)


class ExtractedClaim(LeanSchema):
    """One atomic claim of the answer."""

    text: str
    """The claim."""
    span: str = ""
    """The answer text it comes from."""
    relevance: Literal["direct", "supporting", "off_topic"] = "direct"

    """How it bears on the question."""


class ClaimExtraction(LeanSchema):
    """The answer split into claims, with an answer-level relevance judgement."""

    claims: list[ExtractedClaim]
    """The claims, in answer order."""
    addresses_question: Literal["yes", "partially", "no"]
    """Whether the answer addresses the question."""

    @model_validator(mode="after")
    def _no_blank_claims(self) -> ClaimExtraction:
        self.claims = [c for c in self.claims if c.text.strip()]
        return self


class VerifiedClaim(LeanSchema):
    """The verdict on one claim."""

    claim: int
    """Index of the claim."""
    verdict: Literal["supported", "contradicted", "not_found"]
    """The verdict."""
    context: int | None = None
    """Index of the context that decides it."""
    evidence: str = ""
    """A verbatim quote from that context."""
    reason: str = ""
    """Why."""
    support: SkipJsonSchema[float | None] = Field(default=None, ge=0.0, le=1.0)
    """Probability that the claim is supported, from heuristic judges only (never asked of an LLM:
    it is left out of the JSON schema). ``supported`` verdicts have support >= 0.5."""


class ClaimVerification(LeanSchema):
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
                problems.append(
                    f"context index {v.context} for claim {v.claim} is out of range 0..{n_contexts - 1}"
                )
            seen.add(v.claim)
        if n_claims is not None:
            missing = sorted(set(range(n_claims)) - seen)
            if missing:
                problems.append(f"no verdict for claim(s) {missing}: give one verdict per claim")
        if problems:
            raise ValueError("; ".join(problems))
        return self
