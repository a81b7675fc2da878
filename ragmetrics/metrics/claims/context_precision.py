"""Context precision: are the relevant contexts ranked first? Rank-aware average precision, as RAGAS.

A context is relevant when it supports at least one claim of the reference (of the answer when the row
has no reference). With ``rel_k`` 1 for a relevant context at rank k (1-based, retrieval order) and
``precision@k`` the share of relevant contexts among the first k, the score is
``sum_k(precision@k * rel_k) / (number of relevant contexts)``, and 0.0 when none is relevant. For
example relevant, irrelevant, relevant gives (1/1 + 2/3) / 2 = 0.833; irrelevant, relevant gives 0.5.
``details["contexts"]`` lists, per context, the claims it supports. No contexts: 0.0.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragmetrics.metrics.claims.engine import ClaimTask
from ragmetrics.metrics.claims.metric import (
    ClaimMetric,
    ClaimScore,
    Found,
    context_details,
    unjudged,
    unread_claims,
)

__all__ = ["ContextPrecisionMetric", "average_precision", "context_precision"]


def average_precision(relevant: Sequence[bool]) -> float:
    """Rank-aware average precision of a ranking (``relevant[k]``: the context at rank k+1 is relevant)."""
    hits = 0
    total = 0.0
    for k, rel in enumerate(relevant, start=1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def context_precision(found: Found) -> ClaimScore:
    """Average precision of the contexts, relevant when they support a claim."""
    of = "reference" if found.other is not None else "answer"
    found = found.other if found.other is not None else found
    details = {**found.base_details(), "claims_of": of}
    if not found.sources:
        return ClaimScore(
            score=0.0,
            details={**details, "no_contexts": True, "contexts": []},
            reasoning="No contexts were retrieved, so none is relevant.",
        )
    unread = unread_claims(found, of)
    if unread is not None:
        return unread
    if not found.claims:
        return ClaimScore(
            score=0.0,
            status="no_claims",
            claims=[],
            details={**details, "contexts": context_details(found)},
            message=f"the {of} makes no factual claim, so no context can support one",
        )
    missing = unjudged(found)
    if missing is not None:
        return missing
    contexts = context_details(found)
    flags = [bool(c["relevant"]) for c in contexts]
    score = average_precision(flags)
    details["contexts"] = contexts
    ranks = [str(i + 1) for i, f in enumerate(flags) if f]
    reasoning = (
        f"{len(ranks)} of {len(flags)} contexts support a claim of the {of}"
        + (f" (at rank {', '.join(ranks)})" if ranks else "")
        + f"; average precision {score:.3f}."
    )
    return ClaimScore(score=score, claims=found.reported, details=details, reasoning=reasoning)


class ContextPrecisionMetric(ClaimMetric):
    """Are the contexts that matter ranked above those that do not?

    Example:
        >>> metric = ContextPrecisionMetric(llm="openai:gpt-4o-mini")
        >>> await metric.score(question="Where is the Eiffel Tower?", answer="In Paris.",
        ...     contexts=["Bananas are yellow.", "The Eiffel Tower is in Paris."],
        ...     reference="The Eiffel Tower is in Paris.")
        0.5
    """

    name = "context_precision"
    task = ClaimTask(also="reference", per_context=1)
    scoring = staticmethod(context_precision)
