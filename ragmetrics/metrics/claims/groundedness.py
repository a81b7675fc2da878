"""Groundedness: the share of the answer's claim text backed by a *verified* quote from the contexts.

A claim counts only if the judge says it is supported **and** its evidence quote is found in the cited
context (normalised; exact, or fuzzy partial ratio >= 0.9). Claims are weighted by their length, so a
long unsupported claim weighs more than a short one. No claims: 1.0 with status ``no_claims``; no
contexts: 0.0.
"""

from __future__ import annotations

from ragmetrics.metrics.claims.engine import ClaimTask
from ragmetrics.metrics.claims.metric import ClaimMetric, ClaimScore, Found, describe_claim, verified_edge

__all__ = ["GroundednessMetric", "groundedness"]


def groundedness(found: Found) -> ClaimScore:
    """The length-weighted share of claims judged supported whose quote is found in the cited context."""
    details = found.base_details()
    edge = verified_edge(
        found,
        details,
        nothing_wrong="nothing in it needs grounding",
        no_sources="No contexts were given, so no claim can be grounded.",
    )
    if edge is not None:
        return edge
    records = found.claims
    weights = [max(1, len(r.text)) for r in records]
    grounded = [r.verdict == "supported" and bool(r.evidence_verified) for r in records]
    score = sum(w for w, g in zip(weights, grounded, strict=True) if g) / sum(weights)
    unverified = [
        describe_claim(i, r)
        for i, r in enumerate(records)
        if r.judge_verdict == "supported" and not r.evidence_verified
    ]
    ungrounded = [
        describe_claim(i, r)
        for i, r in enumerate(records)
        if r.verdict != "supported" and r.judge_verdict != "supported"
    ]
    details["grounded_claims"] = sum(grounded)
    parts = [
        f"{sum(grounded)} of {len(records)} claims ({score:.0%} of the claim text) are backed by a "
        "quote found in the cited context."
    ]
    if unverified:
        parts.append(f"Judged supported but the quote was not found in the context: {'; '.join(unverified)}.")
    if ungrounded:
        parts.append(f"Not supported: {'; '.join(ungrounded)}.")
    return ClaimScore(score=score, details=details, reasoning=" ".join(parts))


class GroundednessMetric(ClaimMetric):
    """How much of the answer is attributable to a quote from the retrieved contexts?

    Example:
        >>> metric = GroundednessMetric(llm="openai:gpt-4o-mini")
        >>> await metric.score(answer="SynapseKit supports 31 LLM providers.",
        ...     contexts=["SynapseKit supports 31 LLM providers including OpenAI, Anthropic, and Gemini."])
        1.0
    """

    name = "groundedness"
    task = ClaimTask()
    scoring = staticmethod(groundedness)
