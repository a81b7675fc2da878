"""Answer correctness: claim-level F1 of the answer against the reference, contradictions apart.

Precision is the share of the answer's claims the reference supports; recall the share of the
reference's claims the answer covers; the score is their F1 (``2PR / (P + R)``, 0 when both are 0),
and the threshold applies to it. The three figures, the counts and the contradicted answer claims are
in the details. Both directions ride in the one verification request the RAG metrics share: each
answer claim is also judged against the reference, each reference claim against the answer. A row
without a reference: ``invalid_input``. Neither side with a claim: 1.0; one side without: 0.0 (both
``no_claims``).
"""

from __future__ import annotations

from typing import Any

from ragmetrics.metrics.claims.engine import ClaimTask
from ragmetrics.metrics.claims.metric import ClaimMetric, ClaimScore, Found, describe_claim, unread_claims

__all__ = ["AnswerCorrectnessMetric", "answer_correctness", "f1"]


def f1(precision: float, recall: float) -> float:
    """The harmonic mean of precision and recall (0 when both are 0)."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def answer_correctness(found: Found) -> ClaimScore:
    """F1 of claim precision (answer vs reference) and claim recall (reference vs answer)."""
    reference = found.other
    answer_claims = found.claims
    reference_claims = reference.claims if reference is not None else []
    for part, what in ((found, "answer"), (reference, "reference")):
        unread = unread_claims(part, what) if part is not None else None
        if unread is not None:
            return unread
    if not answer_claims or not reference_claims:
        empty = [name for name, c in (("answer", answer_claims), ("reference", reference_claims)) if not c]
        return ClaimScore(
            score=1.0 if len(empty) == 2 else 0.0,
            status="no_claims",
            message=f"the {' and the '.join(empty)} {'make' if len(empty) == 2 else 'makes'} no claim",
        )
    if reference is None:  # pragma: no cover - reference_claims is not empty
        raise AssertionError("answer correctness runs two tasks")
    vs_reference = found.text_verdicts
    vs_answer = reference.text_verdicts
    if None in vs_reference[: len(answer_claims)] or None in vs_answer[: len(reference_claims)]:
        return ClaimScore(
            score=None,
            status="judge_output_invalid",
            message="the judge gave no verdict against the reference (or the answer) for some claims",
        )
    precise = sum(v == "supported" for v in vs_reference)
    covered = sum(v == "supported" for v in vs_answer)
    precision = precise / len(answer_claims)
    recall = covered / len(reference_claims)
    score = f1(precision, recall)
    contradicted = [i for i, v in enumerate(vs_reference) if v == "contradicted"]
    claims = [
        c.model_copy(
            update={
                "verdict": v,
                "context_index": None,
                "evidence": "",
                "evidence_verified": None,
                "judge_verdict": None,
                "reason": "judged against the reference",
            }
        )
        for c, v in zip(answer_claims, vs_reference, strict=False)
    ]
    claims += found.unverified
    details: dict[str, Any] = {
        "precision": precision,
        "recall": recall,
        "f1": score,
        "answer_claims": len(answer_claims),
        "reference_claims": len(reference_claims),
        "supported_by_reference": precise,
        "covered_by_answer": covered,
        "contradicted": contradicted,
        "reference": [
            {"text": c.text, "verdict": v} for c, v in zip(reference_claims, vs_answer, strict=False)
        ],
    }
    parts = [
        f"Precision {precise}/{len(answer_claims)} answer claims supported by the reference, recall "
        f"{covered}/{len(reference_claims)} reference claims covered by the answer: F1 {score:.3f}."
    ]
    if contradicted:
        named = "; ".join(describe_claim(i, answer_claims[i]) for i in contradicted)
        parts.append(f"Contradicted by the reference: {named}.")
    missed = [
        describe_claim(i, c)
        for i, (c, v) in enumerate(zip(reference_claims, vs_answer, strict=False))
        if v != "supported"
    ]
    if missed:
        parts.append(f"Missing from the answer (reference {'; '.join(missed)}).")
    return ClaimScore(score=score, claims=claims, details=details, reasoning=" ".join(parts))


class AnswerCorrectnessMetric(ClaimMetric):
    """Does the answer say what the reference says, no more and no less?

    Example:
        >>> metric = AnswerCorrectnessMetric(llm="openai:gpt-4o-mini")
        >>> await metric.score(question="Where is the Eiffel Tower?",
        ...     answer="The Eiffel Tower is in Paris.",
        ...     reference="The Eiffel Tower is in Paris. It opened in 1889.")
        0.667
    """

    name = "answer_correctness"
    task = ClaimTask(also="reference")
    reference_required = True
    verify_always = True
    scoring = staticmethod(answer_correctness)
