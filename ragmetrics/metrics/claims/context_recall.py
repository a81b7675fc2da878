"""Context recall: the share of the reference's claims that the retrieved contexts support.

The reference is split into claims and each is verified against the contexts, in the request that
verifies the answer's claims too (the one faithfulness makes). Each reference claim shows its verdict and
the deciding context with a verbatim quote; ``details["contexts"]`` lists, per context, the reference
claims it supports. A row without a reference: ``invalid_input``. A reference without claims: 1.0,
``no_claims`` (nothing to recall). No contexts: 0.0. ``details["claims_of"]`` is ``"reference"``, as
in context precision: the HTML report locates the claims' spans in the reference.
"""

from __future__ import annotations

from ragmetrics.metrics.claims.engine import ClaimTask
from ragmetrics.metrics.claims.metric import (
    ClaimMetric,
    ClaimScore,
    Found,
    context_details,
    describe_claim,
    unread_claims,
)

__all__ = ["ContextRecallMetric", "context_recall"]


def context_recall(found: Found) -> ClaimScore:
    """Supported reference claims / reference claims."""
    if found.other is None:  # the base checks that the row has a reference
        return ClaimScore(score=None, status="invalid_input", message="context_recall needs a reference")
    found = found.other
    details = {**found.base_details(), "claims_of": "reference"}  # what the report highlights
    unread = unread_claims(found, "reference")
    if unread is not None:
        return unread
    if not found.claims:
        return ClaimScore(
            score=1.0,
            status="no_claims",
            claims=[],
            details=details,
            message="the judge found no factual claims in the reference",
            reasoning="The reference makes no factual claim, so there is nothing to recall.",
        )
    if not found.sources:
        claims = [
            c.model_copy(update={"verdict": "not_found", "reason": "no contexts were given"})
            for c in found.claims
        ]
        return ClaimScore(
            score=0.0,
            claims=[*claims, *found.unverified],
            details={**details, "no_contexts": True, "contexts": []},
            reasoning=f"No contexts were given, so none of the {len(claims)} reference claims is recalled.",
        )
    records = found.claims
    supported = sum(r.verdict == "supported" for r in records)
    details["supported_claims"] = supported
    details["contexts"] = context_details(found)
    parts = [f"{supported} of {len(records)} reference claims are supported by the contexts."]
    missed = [describe_claim(i, r) for i, r in enumerate(records) if r.verdict != "supported"]
    if missed:
        parts.append(f"Not in the contexts: {'; '.join(missed)}.")
    return ClaimScore(
        score=supported / len(records), claims=found.reported, details=details, reasoning=" ".join(parts)
    )


class ContextRecallMetric(ClaimMetric):
    """Did retrieval find what the reference answer needs?

    Example:
        >>> metric = ContextRecallMetric(llm="openai:gpt-4o-mini")
        >>> await metric.score(question="Where is the Eiffel Tower?", answer="In Paris.",
        ...     contexts=["The Eiffel Tower is in Paris."],
        ...     reference="The Eiffel Tower is in Paris. It opened in 1889.")
        0.5
    """

    name = "context_recall"
    task = ClaimTask(also="reference")
    reference_required = True
    scoring = staticmethod(context_recall)
