"""Faithfulness: the share of the answer's claims that the contexts support.

Contradicted and unverifiable claims both count against the answer (an unverifiable addition is
"baseless information", as in RAGTruth). The score is supported / all claims whatever the judge; a
heuristic judge (the offline judge) also gives each claim a probability of being supported, and their
mean goes in ``details["mean_support"]`` (a finer ranking signal), never in the score. No claims: 1.0
with status ``no_claims``. No contexts: every claim is unverifiable, so 0.0 (no verification call is
made).
"""

from __future__ import annotations

from ragmetrics.metrics.claims.engine import ClaimTask
from ragmetrics.metrics.claims.metric import ClaimMetric, ClaimScore, Found, describe_claim, verified_edge

__all__ = ["FaithfulnessMetric", "faithfulness"]


def faithfulness(found: Found) -> ClaimScore:
    """Supported claims / all claims of the answer, with the contradicted and unfound ones named."""
    addresses = found.extraction.addresses_question if found.extraction is not None else None
    details = {"addresses_question": addresses, **found.base_details()}
    edge = verified_edge(
        found,
        details,
        nothing_wrong="nothing in it is unfaithful",
        no_sources="No contexts were given, so none of the {n} claims can be verified.",
    )
    if edge is not None:
        return edge
    records = found.claims
    supported = sum(r.verdict == "supported" for r in records)
    score = supported / len(records)
    parts = [f"{supported} of {len(records)} claims are supported by the contexts."]
    if all(r.support is not None for r in records):
        # A heuristic judge's soft probabilities are a detail for ranking; the score stays the
        # metric's definition over its verdicts, as for every other judge.
        mean_support = sum(r.support or 0.0 for r in records) / len(records)
        details["mean_support"] = mean_support
        parts.append(f"Mean support probability {mean_support:.2f} (heuristic judge).")
    for label in ("contradicted", "not_found"):
        bad = [
            describe_claim(i, r) + (f" (context {r.context_index})" if r.context_index is not None else "")
            for i, r in enumerate(records)
            if r.verdict == label
        ]
        if bad:
            name = "Contradicted" if label == "contradicted" else "Not found in the contexts"
            parts.append(f"{name}: {'; '.join(bad)}.")
    return ClaimScore(score=score, details=details, reasoning=" ".join(parts))


class FaithfulnessMetric(ClaimMetric):
    """Is the answer faithful to the retrieved contexts (no hallucination)?

    Example:
        >>> metric = FaithfulnessMetric(llm="openai:gpt-4o-mini")
        >>> await metric.score(question="What is Python?",
        ...     answer="Python is a compiled language created in 1991.",
        ...     contexts=["Python is an interpreted language created by Guido van Rossum in 1991."])
        0.5
    """

    name = "faithfulness"
    task = ClaimTask()
    scoring = staticmethod(faithfulness)
