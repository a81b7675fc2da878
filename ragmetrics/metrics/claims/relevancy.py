"""Relevancy: how well the answer addresses the question.

Score = mean claim relevance (direct 1, supporting 1, off_topic 0) times the answer-level factor
(addresses the question: yes 1, partially 0.5, no 0). It rides in the extraction call, so it adds no
call to faithfulness and groundedness. An evasive answer ("I don't know") has no claims and scores 0.0
with status ``no_claims``; so does an empty answer. Contexts are not needed.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.metrics.claims.engine import ClaimTask
from ragmetrics.metrics.claims.metric import ClaimMetric, ClaimScore, Found, describe_claim, unread_claims

__all__ = ["RelevancyMetric", "relevancy"]

_CLAIM_WEIGHT = {"direct": 1.0, "supporting": 1.0, "off_topic": 0.0}
_ANSWER_FACTOR = {"yes": 1.0, "partially": 0.5, "no": 0.0}


def relevancy(found: Found) -> ClaimScore:
    """Mean claim relevance times the answer-level factor."""
    if found.extraction is None:
        return ClaimScore(
            score=0.0,
            status="no_claims",
            message="the answer is empty",
            reasoning="The answer is empty, so it does not address the question.",
        )
    unread = unread_claims(found, "answer")
    if unread is not None:
        return unread
    records = found.claims
    addresses = found.extraction.addresses_question
    details: dict[str, Any] = {"addresses_question": addresses}
    if not records:
        return ClaimScore(
            score=0.0,
            status="no_claims",
            details=details,
            message="the answer makes no claim (evasive or non-committal)",
            reasoning="The answer makes no claim about the question: it is evasive or non-committal.",
        )
    mean = sum(_CLAIM_WEIGHT[r.relevance or "direct"] for r in records) / len(records)
    factor = _ANSWER_FACTOR[addresses]
    off = [describe_claim(i, r) for i, r in enumerate(records) if r.relevance == "off_topic"]
    parts = [
        f"{len(records) - len(off)} of {len(records)} claims bear on the question; the answer "
        f"addresses it: {addresses} (factor {factor:g})."
    ]
    if off:
        parts.append(f"Off topic: {'; '.join(off)}.")
    details["claim_relevance_mean"] = mean
    return ClaimScore(score=mean * factor, details=details, reasoning=" ".join(parts))


class RelevancyMetric(ClaimMetric):
    """Does the answer address the question asked?

    Example:
        >>> metric = RelevancyMetric(llm="openai:gpt-4o-mini")
        >>> await metric.score(question="What is the capital of France?",
        ...     answer="Paris is the capital and largest city of France.")
        1.0
    """

    name = "relevancy"
    task = ClaimTask(split="answer", against=None)
    question_required = True
    scoring = staticmethod(relevancy)
