"""A real offline pipeline run of context_recall (and context_precision): claims split from the REFERENCE.

The answer states only the first reference claim, so a report that located the reference's spans in
the answer would highlight one claim there and say "not found in the answer" of the others. The
reference holds an astral character (UTF-16 offsets) and hostile markup (it must stay text).
"""

from __future__ import annotations

from ragmetrics.metrics import metric_from_name
from ragmetrics.pipeline import EvaluationPipeline, Report
from tests.report import builders as b

METRICS = ("context_recall", "context_precision", "faithfulness")
ID = "ref-1"
UNLOCATED_ID = "ref-unlocated"
NO_REFERENCE_ID = "ref-none"
ANSWER = "Paris is the capital of France."
REFERENCE = (
    "\U0001f5fc Paris is the capital of France. Paris lies on the Seine. "
    f"The Louvre shows {b.XSS_FLAG} as art."
)
CONTEXTS = ("Bananas are yellow.", "Paris is the capital of France. Paris lies on the Seine.")
REFERENCE_CLAIMS = (
    "Paris is the capital of France.",
    "Paris lies on the Seine.",
    f"The Louvre shows {b.XSS_FLAG} as art.",
)
STRAY_SPAN = "Paris lies on the Loire."
"""A span in neither text, given to claim 1 of the UNLOCATED_ID record."""


def _row(rid: str, reference: str | None) -> dict[str, object]:
    row: dict[str, object] = {
        "id": rid,
        "question": "What is the capital of France?",
        "answer": ANSWER,
        "contexts": list(CONTEXTS),
    }
    if reference is not None:
        row["reference"] = reference
    return row


def report() -> Report:
    """The run on a row with the reference and one without; plus the first record with a stray span."""
    metrics = [metric_from_name(name, llm="offline") for name in METRICS]
    run = EvaluationPipeline(metrics, progress=False).run([_row(ID, REFERENCE), _row(NO_REFERENCE_ID, None)])
    first, no_reference = run
    recall = first.results["context_recall"]
    claims = list(recall.claims)
    claims[1] = claims[1].model_copy(update={"span": STRAY_SPAN})
    stray = first.model_copy(
        update={
            "index": 2,
            "id": UNLOCATED_ID,
            "results": {**first.results, "context_recall": recall.model_copy(update={"claims": claims})},
        }
    )
    records = [first, no_reference, stray]
    return Report.from_records(records, run=run.stats, metrics=list(METRICS))
