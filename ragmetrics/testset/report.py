"""The report of a test set: counts per kind and per document, coverage, rejects with reasons, cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.pipeline.canaries import CanaryResult
from ragmetrics.pipeline.judge_health import JudgeHealth
from ragmetrics.score import Usage
from ragmetrics.testset.documents import Chunk
from ragmetrics.testset.records import Reject, TestsetItem

__all__ = ["FINDINGS_LISTED", "TestsetReport", "build_report", "requested_counts"]

FINDINGS_LISTED = 100
"""Instruction-like findings listed in the report (all are counted)."""


class TestsetReport(BaseModel):
    """What a generation run wrote, what it dropped and why, and what it cost."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(extra="forbid")

    requested: int
    """Items asked for."""
    written: int
    """Items in the test set (those resumed from an earlier run included)."""
    resumed: int = 0
    """Items that were already in the output file when this run started."""
    generator: str
    """``extractive`` or the judge spec that wrote the questions."""
    judge: str
    """The judge that verified the references."""
    kinds_requested: dict[str, int] = Field(default_factory=dict)
    """The mix, as item counts."""
    kinds: dict[str, int] = Field(default_factory=dict)
    """Items written per kind."""
    documents: dict[str, int] = Field(default_factory=dict)
    """Items per source document id."""
    documents_total: int = 0
    documents_covered: int = 0
    """Documents with at least one item."""
    chunks_total: int = 0
    chunks_covered: int = 0
    """Chunks that at least one item was written from."""
    rejects: dict[str, int] = Field(default_factory=dict)
    """Rejected candidates per reason (``near_duplicate`` counts the duplicates removed)."""
    rejected: int = 0
    candidates: int = 0
    """Candidates tried in all (written + rejected)."""
    usage: Usage = Field(default_factory=Usage)
    """Every call of this run, accepted or not (resumed items cost nothing here)."""
    calls_per_item: float | None = None
    """Calls sent by this run per item it wrote (None when it wrote none)."""
    instructions_found: int = 0
    """Stretches of instruction-like text found in the documents (see :mod:`.instructions`)."""
    instructions: list[str] = Field(default_factory=list)
    """Where, as ``DOC at character N (pattern): 'text'`` (the first :data:`FINDINGS_LISTED`)."""
    notes: list[str] = Field(default_factory=list)
    canary: CanaryResult | None = None
    """The verifier on a canary drawn from the documents (None: the gate was off)."""
    judge_health: JudgeHealth | None = None
    """The verifier's quotes found in the chunks they cite, over the run's verifications."""
    judge_gate: list[str] = Field(default_factory=list)
    """Why the verifier is not trusted, a line each (empty: the gate passed or was off); the CLI exits 5."""

    def __str__(self) -> str:
        def table(counts: Mapping[str, int]) -> str:
            return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"

        u = self.usage
        per = f"{self.calls_per_item:.2f}" if self.calls_per_item is not None else "-"
        lines = [
            f"test set: {self.written}/{self.requested} items ({self.resumed} resumed), generator "
            f"{self.generator}, verified by {self.judge}",
            f"kinds: {table(self.kinds)} (requested: {table(self.kinds_requested)})",
            f"coverage: {self.documents_covered}/{self.documents_total} documents, "
            f"{self.chunks_covered}/{self.chunks_total} chunks",
            f"rejected: {self.rejected} of {self.candidates} candidates ({table(self.rejects)})",
            f"cost: {u.calls} calls ({u.cached_calls} cached), {u.prompt_tokens} prompt + "
            f"{u.completion_tokens} completion tokens, ${u.cost_usd:.4f}; {per} calls per written item",
        ]
        if self.documents:
            top = sorted(self.documents.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
            lines.append(f"per document: {table(dict(top))}" + (" ..." if len(self.documents) > 10 else ""))
        if self.instructions_found:
            more = self.instructions_found - len(self.instructions)
            lines.append(
                f"instruction-like text: {self.instructions_found} found"
                + (f" ({more} more not listed)" if more else "")
            )
            lines += [f"  {w}" for w in self.instructions]
        lines += [f"note: {n}" for n in self.notes]
        if self.canary is not None:
            lines.append(f"canary, {self.canary.judge}: {self.canary.describe()} ({self.canary.source})")
        if self.judge_health is not None:
            lines.append(f"judge health, {self.judge_health.judge}: {self.judge_health.describe()}")
        lines += [f"JUDGE GATE FAILED: {line}" for line in self.judge_gate]
        return "\n".join(lines)


def requested_counts(size: int, mix: Mapping[str, float]) -> dict[str, int]:
    """Largest-remainder counts of ``size`` over ``mix``."""
    raw = {k: size * w for k, w in mix.items()}
    counts = {k: int(v) for k, v in raw.items()}
    for k in sorted(raw, key=lambda k: (-(raw[k] - counts[k]), k))[: size - sum(counts.values())]:
        counts[k] += 1
    return counts


def build_report(
    items: Sequence[TestsetItem],
    rejects: Sequence[Reject],
    chunks: Sequence[Chunk],
    *,
    size: int,
    mix: Mapping[str, float],
    usage: Usage,
    generator: str,
    judge: str,
    resumed: int = 0,
    notes: Sequence[str] = (),
    instructions: Sequence[str] = (),
    canary: CanaryResult | None = None,
    judge_health: JudgeHealth | None = None,
    judge_gate: Sequence[str] = (),
) -> TestsetReport:
    """Count what a run wrote and dropped (the canary's calls are in ``usage``, not in calls per item)."""
    docs = Counter(d for i in items for d in i.source)
    used_chunks = {c for i in items for c in i.reference_context_ids}
    sent = usage.calls - (canary.usage.calls if canary is not None else 0)
    new = len(items) - resumed
    return TestsetReport(
        requested=size,
        written=len(items),
        resumed=resumed,
        generator=generator,
        judge=judge,
        kinds_requested=requested_counts(size, mix),
        kinds=dict(Counter(i.kind for i in items)),
        documents=dict(sorted(docs.items())),
        documents_total=len({c.doc_id for c in chunks}),
        documents_covered=len(docs),
        chunks_total=len(chunks),
        chunks_covered=len(used_chunks & {c.id for c in chunks}),
        rejects=dict(Counter(r.reason for r in rejects)),
        rejected=len(rejects),
        candidates=len(items) + len(rejects),
        usage=usage,
        calls_per_item=(sent / new) if new > 0 else None,
        instructions_found=len(instructions),
        instructions=list(instructions[:FINDINGS_LISTED]),
        notes=list(notes),
        canary=canary,
        judge_health=judge_health,
        judge_gate=list(judge_gate),
    )
