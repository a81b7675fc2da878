"""Faithfulness: the share of the answer's claims that the contexts support.

Contradicted and unverifiable claims both count against the answer (an unverifiable addition is
"baseless information", as in RAGTruth). The score is supported / all claims whatever the judge; a
heuristic judge (the offline judge) also gives each claim a probability of being supported, and their
mean goes in ``details["mean_support"]`` (a finer ranking signal), never in the score. No claims: 1.0
with status ``no_claims``. No contexts: every claim is unverifiable, so 0.0 (no verification call is
made).
"""

from __future__ import annotations

from typing import Any

from ragmetrics.metrics.claims.engine import ClaimsOutcome, VerifiedClaimMetric, describe_claim
from ragmetrics.score import ClaimRecord, MetricResult

__all__ = ["FaithfulnessMetric"]


class FaithfulnessMetric(VerifiedClaimMetric):
    """Is the answer faithful to the retrieved contexts (no hallucination)?

    Example:
        >>> metric = FaithfulnessMetric(llm="openai:gpt-4o-mini")
        >>> await metric.score(question="What is Python?",
        ...     answer="Python is a compiled language created in 1991.",
        ...     contexts=["Python is an interpreted language created by Guido van Rossum in 1991."])
        0.5
    """

    name = "faithfulness"

    _no_claims_reason = "nothing in it is unfaithful"
    _no_contexts_reasoning = "No contexts were given, so none of the {n} claims can be verified."

    def _details(self, outcome: ClaimsOutcome) -> dict[str, Any]:
        return {"addresses_question": outcome.extraction.addresses_question, "chunks": outcome.chunks}

    def _score_claims(
        self, records: list[ClaimRecord], outcome: ClaimsOutcome, details: dict[str, Any], started: float
    ) -> MetricResult:
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
                describe_claim(i, r)
                + (f" (context {r.context_index})" if r.context_index is not None else "")
                for i, r in enumerate(records)
                if r.verdict == label
            ]
            if bad:
                name = "Contradicted" if label == "contradicted" else "Not found in the contexts"
                parts.append(f"{name}: {'; '.join(bad)}.")
        return self._result(
            score, started, claims=records, usage=outcome.usage, details=details, reasoning=" ".join(parts)
        )
