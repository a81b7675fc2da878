"""The judge gate of a test-set run, as ``eval`` has it: canaries drawn from the documents, and reading.

Before the first candidate, the verifier gets a canary drawn from the run's own chunks
(:func:`~ragmetrics.pipeline.canary_draw.draw_canary`): a chunk sentence that must come back supported,
the same or another sentence with a number changed (or ``not`` added) that must come back
contradicted, and another chunk's sentence that must not come back supported. It is sent as a
reference's verification is (the three sentences as the reference's claims, no extraction call): one
call, cached (in batch mode it rides in the first wave's batches). A verifier that fails it verifies
nothing: the run writes no item. During the run, the
verifier's quotes are checked as every candidate's are; a verifier whose quotes are not in the chunks
it cites (reading rate under ``JUDGE_HEALTH_MIN``) fails the gate too.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragmetrics.errors import JudgeError
from ragmetrics.judge import Judge
from ragmetrics.metrics.claims.engine import ClaimTask, plan
from ragmetrics.metrics.claims.run import run_claims
from ragmetrics.metrics.claims.schemas import ClaimExtraction, ExtractedClaim
from ragmetrics.pipeline.canaries import CanaryResult, canary_message
from ragmetrics.pipeline.canary_draw import DRAW_ROWS, draw_canary, probe_verdicts
from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN, JudgeHealth, judge_gate_message
from ragmetrics.sample import Sample
from ragmetrics.testset.documents import Chunk

__all__ = ["gate_messages", "testset_canary"]

_SWITCH = "--no-judge-gate (judge_gate=False) turns the gate off"


async def testset_canary(
    judge: Judge, spec: str, chunks: Sequence[Chunk], budget_tokens: int
) -> CanaryResult:
    """Put a canary drawn from ``chunks`` to the verifier ``judge``; its verdicts, cost and source."""
    rows = [
        Sample(id=c.id, question=f"What does the passage on {c.heading or c.doc_id} say?", contexts=[c.text])
        for c in chunks[:DRAW_ROWS]
    ]
    draw = draw_canary(rows)
    claims = ClaimExtraction(
        claims=[ExtractedClaim(text=s, span=s) for _, s in draw.probes], addresses_question="yes"
    )
    try:
        outcome = await run_claims(judge, plan(draw.sample, ClaimTask(), budget_tokens), claims=claims)
    except JudgeError as exc:
        return CanaryResult.of_error(spec, draw, exc)
    probes = probe_verdicts(outcome.records(), draw.probes)
    return CanaryResult(
        judge=spec,
        passed=all(p.passed for p in probes),
        probes=probes,
        usage=outcome.usage,
        source=draw.source,
    )


def gate_messages(canary: CanaryResult | None, health: JudgeHealth | None) -> list[str]:
    """What failed the gate, a line each (empty: passed)."""
    lines = []
    if canary is not None and canary.failed:
        lines.append(canary_message([canary]).replace("--no-canaries skips the probes, ", ""))
    if health is not None and health.low(JUDGE_HEALTH_MIN):
        lines.append(judge_gate_message([health], JUDGE_HEALTH_MIN, _SWITCH))
    return lines
