"""Hand-made records for the report's per-context view (retrieval metrics, issue 13).

``details["contexts"]`` as the retrieval metrics write it: ``[{"index", "relevant", "supports",
"reason"}]`` in retrieval order; plus hostile text and malformed shapes a user metric could write.
"""

from __future__ import annotations

from ragmetrics.pipeline.report import EvaluationResult, Report
from ragmetrics.sample import Sample
from ragmetrics.score import ClaimRecord, MetricResult, Usage
from tests.report import builders as b

METRICS = ("context_precision", "context_relevancy", "faithfulness")
ID = "ctx-1"
QUESTION = "When was Python created and by whom?"
REFERENCE = "Python was created in 1991. Guido van Rossum created it."
CONTEXTS = (
    "Python was created by Guido van Rossum in 1991.",
    f"Bananas are yellow. {b.XSS_FLAG}",
    "Guido van Rossum is a Dutch programmer.",
)
PRECISION_VIEW = [
    {"index": 0, "relevant": True, "supports": [0, 1], "reason": "supports both reference claims"},
    {"index": 1, "relevant": False, "supports": [], "reason": f"nothing of the reference {b.XSS_IMG}"},
    {"index": 2, "relevant": True, "supports": [1, 1, 9], "reason": None},  # 9: no such claim
    {"index": 5, "relevant": None, "supports": [], "reason": "judged a context the sample lacks"},
]
RELEVANCY_VIEW = [
    {"index": 0, "relevant": True, "supports": [], "reason": "lexical overlap: 4/4 question words"},
    {"index": 1, "relevant": False, "supports": [], "reason": "lexical overlap: 0/4 question words"},
    {"index": 2, "relevant": True, "supports": [], "reason": "lexical overlap: 2/4 question words"},
]
HOSTILE_VIEWS = [
    "not a list",
    [None, 3, {"index": True}, {"index": -1}, {"index": "0"}, {"relevant": True}],  # nothing usable
    [{"index": 0, "relevant": "yes", "supports": "0", "reason": 12}, {"index": 1, "supports": [True, -2, 0]}],
]


def _result(name: str, score: float, view: object, claims: list[ClaimRecord]) -> MetricResult:
    return MetricResult(
        name=name,
        score=score,
        status="ok",
        reasoning=f"{name} reasoning",
        claims=claims,
        threshold=0.5,
        passed=score >= 0.5,
        usage=Usage(calls=1, prompt_tokens=300, completion_tokens=40),
        latency_ms=12.0,
        judge=b.OFFLINE,
        signature=f"{name}|judge=offline",
        details={"contexts": view, "average_precision": score},
    )


REFERENCE_CLAIMS = [
    ClaimRecord(
        text="Python was created in 1991.",
        span="Python was created in 1991.",
        verdict="supported",
        context_index=0,
        evidence="in 1991",
        evidence_verified=True,
    ),
    ClaimRecord(
        text="Guido van Rossum created Python.",
        span="Guido van Rossum created it.",
        verdict="supported",
        context_index=0,
        evidence="Guido van Rossum",
        evidence_verified=True,
    ),
]


def record(index: int, rid: str, precision_view: object, relevancy_view: object) -> EvaluationResult:
    sample = Sample(
        question=QUESTION,
        answer="Python was created in 1991 by Guido van Rossum.",
        contexts=CONTEXTS,
        reference=REFERENCE,
        id=rid,
    )
    results = {
        "context_precision": _result("context_precision", 0.8333, precision_view, REFERENCE_CLAIMS),
        "context_relevancy": _result("context_relevancy", 2 / 3, relevancy_view, []),
        "faithfulness": b.result("faithfulness", 1.0, claims=REFERENCE_CLAIMS, judge=b.OFFLINE),
    }
    return EvaluationResult(
        index=index,
        id=rid,
        sample=sample,
        scores={m: results[m].score for m in METRICS},
        results=results,
        usage=Usage(calls=3),
        latency_ms=30.0,
    )


def records() -> list[EvaluationResult]:
    out = [record(0, ID, PRECISION_VIEW, RELEVANCY_VIEW)]
    out += [record(1 + k, f"hostile-{k}", view, view) for k, view in enumerate(HOSTILE_VIEWS)]
    return out


def report() -> Report:
    recs = records()
    return Report.from_records(recs, run=b.run_stats(recs), metrics=list(METRICS))
