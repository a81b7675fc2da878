"""Context relevancy: the share of the retrieved contexts that bear on the question.

Each context is judged against the question with a one-line reason; that judgement rides in the
answer's verification request (the one faithfulness makes), so it adds no call; when the answer has no
claims the request is made with none. No reference needed. No contexts: 0.0.
"""

from __future__ import annotations

from ragmetrics.metrics.claims.engine import ClaimTask
from ragmetrics.metrics.claims.metric import ClaimMetric, ClaimScore, Found, context_details, unjudged

__all__ = ["ContextRelevancyMetric", "context_relevancy"]


def context_relevancy(found: Found) -> ClaimScore:
    """Relevant contexts / contexts."""
    if not found.sample.contexts:
        return ClaimScore(
            score=0.0,
            details={"no_contexts": True, "contexts": []},
            reasoning="No contexts were retrieved, so none bears on the question.",
        )
    missing = unjudged(found)
    if missing is not None:
        return missing
    contexts = context_details(found, relevance=True)
    relevant = [c for c in contexts if c["relevant"]]
    off = [
        f"context {c['index']} ({c['reason']})" if c["reason"] else f"context {c['index']}"
        for c in contexts
        if not c["relevant"]
    ]
    parts = [f"{len(relevant)} of {len(contexts)} contexts bear on the question."]
    if off:
        parts.append(f"Not relevant: {'; '.join(off)}.")
    return ClaimScore(
        score=len(relevant) / len(contexts),
        claims=[],
        details={**found.base_details(), "contexts": contexts},
        reasoning=" ".join(parts),
    )


class ContextRelevancyMetric(ClaimMetric):
    """Do the retrieved contexts bear on the question?

    Example:
        >>> metric = ContextRelevancyMetric(llm="openai:gpt-4o-mini")
        >>> await metric.score(question="Where is the Eiffel Tower?", answer="In Paris.",
        ...     contexts=["The Eiffel Tower is in Paris.", "Bananas are yellow."])
        0.5
    """

    name = "context_relevancy"
    task = ClaimTask(per_context=2)
    question_required = True
    verify_always = True
    scoring = staticmethod(context_relevancy)
