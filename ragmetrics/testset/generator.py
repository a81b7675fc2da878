"""``ragmetrics.generate(documents, size=N, out=...)``: a test set from the user's own documents.

The run: load and chunk the documents, find instruction-like text in them (:mod:`.instructions`: a
candidate from such a chunk is a reject unless ``allow_instructions``), lay out the candidate slots
(:mod:`.slots`), then run them in waves of at most ``concurrency`` (each wave only as large as the
items still missing, and as the budget allows), and keep the accepted items in slot order, dropping
near-duplicate questions. Items and rejects are appended to their JSONL files as each wave ends,
flushed and synced, so a run killed at any point loses at most the wave in flight, whose calls are
in the judge's disk cache: a rerun with the same arguments skips the slots already written and pays
only for the missing items.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from rapidfuzz import fuzz

from ragmetrics._aio import run_sync
from ragmetrics._check import check_choice, check_flag, check_int
from ragmetrics.errors import ConfigError
from ragmetrics.judge import Judge, resolve_judge
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.pipeline.batch import batch_options
from ragmetrics.pipeline.canaries import CanaryResult
from ragmetrics.pipeline.judge_health import JudgeHealth
from ragmetrics.pipeline.progress import ProgressBar
from ragmetrics.score import Usage
from ragmetrics.testset.batch import BatchWaves
from ragmetrics.testset.budget import estimate_slots, priced
from ragmetrics.testset.documents import Chunk, chunk_documents
from ragmetrics.testset.gate import gate_messages, testset_canary
from ragmetrics.testset.instructions import Finding, chunk_key, distinct, scan_chunks
from ragmetrics.testset.limits import DocumentLimits, RunTally, limits_or_default
from ragmetrics.testset.loading import load_documents, valid_text
from ragmetrics.testset.records import Reject, TestsetItem
from ragmetrics.testset.report import TestsetReport, build_report, requested_counts
from ragmetrics.testset.slots import Slot, chunk_terms, normalise_mix, plan_slots
from ragmetrics.testset.verify import CONTEXT_BUDGET_TOKENS, Attempt, run_slot
from ragmetrics.text import content_tokens, tokenize

__all__ = ["DUPLICATE_RATIO", "Testset", "generate", "generate_sync", "prepare"]

DUPLICATE_RATIO = 90.0
"""Similarity (rapidfuzz ratio of the questions' content words, 0-100) that makes a near duplicate."""


@dataclass(slots=True)
class Testset:
    """What a run produced: the items (those resumed from ``out`` first), the rejects, the report."""

    __test__ = False  # not a pytest test class
    items: list[TestsetItem]
    rejects: list[Reject]
    report: TestsetReport
    chunks: list[Chunk] = field(default_factory=list)

    def to_dicts(self) -> list[dict[str, Any]]:
        """The items as plain dicts (what the output file holds, one a line)."""
        return [i.model_dump(mode="json", exclude_none=True) for i in self.items]


def _read_jsonl(path: Path, model: type[BaseModel]) -> list[Any]:
    """The records of an append-only file; a torn last line (a crash mid-write) is cut off the file."""
    if not path.exists():
        return []
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):  # the tail after the last newline was being written when the run died
        with path.open("r+b") as fh:
            fh.truncate(keep)
    out = []
    for n, line in enumerate(data[:keep].decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(model.model_validate_json(line))
        except ValidationError as exc:
            raise ConfigError(
                f"{path}:{n}: not a {model.__name__} line; move the file away or pass a new path "
                f"({exc.error_count()} problem(s))"
            ) from exc
    return out


def _append(path: Path | None, records: Sequence[BaseModel]) -> None:
    if path is None or not records:
        return
    with path.open("a", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r.model_dump(mode="json", exclude_none=True), ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _key(question: str) -> str:
    """A question's content words, in order (templates and function words left out)."""
    return " ".join(content_tokens(tokenize(question)))


def _duplicate_of(question: str, kept: Sequence[TestsetItem]) -> TestsetItem | None:
    q = _key(question)
    for item in kept:
        if fuzz.ratio(q, _key(item.question), score_cutoff=DUPLICATE_RATIO):
            return item
    return None


def _pick(pending: Sequence[Slot], want: int, quota: Mapping[str, int], have: Counter[str]) -> list[Slot]:
    """The next ``want`` slots of kinds still short of their quota; other kinds once none is short."""
    wave: list[Slot] = []
    taken = Counter(have)
    for slot in pending:
        if len(wave) >= want:
            break
        if taken[slot.kind] < quota.get(slot.kind, 0):
            wave.append(slot)
            taken[slot.kind] += 1
    if not wave:  # every kind with slots left has its quota (others ran out of chunks): fill with any
        wave = list(pending[:want])
    return wave


def _affordable(
    judge: CachingJudge, wave: Sequence[Slot], left_usd: float, extractive: bool
) -> tuple[list[Slot], float]:
    """The first slots of ``wave`` whose estimates fit in ``left_usd``, and the estimate that did not.

    The second value is the first slot's estimate that did not fit (0 when all fit). Each slot is
    priced on its own: two-chunk and summary slots cost more than the average, and a wave of them must
    not pass the budget by the difference.
    """
    kept: list[Slot] = []
    total = 0.0
    for slot in wave:
        cost = estimate_slots(judge, [slot], extractive=extractive).cost_usd
        if total + cost > left_usd:
            return kept, cost
        kept.append(slot)
        total += cost
    return kept, 0.0


def prepare(
    documents: Any,
    *,
    chunk_tokens: int = 256,
    overlap_tokens: int = 32,
    limits: DocumentLimits | None = None,
) -> list[Chunk]:
    """The chunks of ``documents`` (paths, folders, LangChain Documents, LlamaIndex nodes, or chunks).

    Raises:
        ConfigError: Unreadable documents, or a cap of ``limits`` passed (chunks given as they are
            are counted against the run's caps too).
    """
    limits = limits_or_default(limits)
    if isinstance(documents, Sequence) and documents and all(isinstance(d, Chunk) for d in documents):
        tally = RunTally(limits)
        for chunk in documents:
            tally.text(chunk.id, len(chunk.text))
            tally.chunk(chunk.id, len(chunk.text))
            valid_text(chunk.text, "text", chunk.id)
        return list(documents)
    return chunk_documents(
        load_documents(documents, limits=limits),
        chunk_tokens=chunk_tokens,
        overlap_tokens=overlap_tokens,
        limits=limits,
    )


async def generate(
    documents: Any,
    *,
    size: int = 20,
    llm: Any = None,
    out: str | Path | None = None,
    rejects: str | Path | None = None,
    mix: Mapping[str, float] | None = None,
    styles: Sequence[str] = ("plain",),
    generator: str = "auto",
    chunk_tokens: int = 256,
    overlap_tokens: int = 32,
    seed: int = 0,
    max_cost_usd: float | None = None,
    max_candidates: int | None = None,
    concurrency: int = 8,
    cache: bool | str | Path = True,
    resume: bool = True,
    progress: bool | None = False,
    batch: Any = False,
    limits: DocumentLimits | None = None,
    allow_instructions: bool = False,
    judge_gate: bool = True,
) -> Testset:
    """Generate ``size`` verified question/reference items from ``documents``.

    Example:
        >>> ts = await ragmetrics.generate("docs/", size=50, llm="openai:gpt-4o-mini", out="testset.jsonl")
        >>> print(ts.report)

    Args:
        documents: Files and folders (``.txt``, ``.md``, ``.html``, ``.pdf``; ``.jsonl`` of ready
            chunks), LangChain ``Document``s, LlamaIndex nodes, or :class:`Chunk` objects.
        size: Items wanted.
        llm: The judge that writes and verifies: a spec string, an SDK client, a ``Judge``; None: from
            the environment (offline when nothing is configured).
        out: The output JSONL, appended to item by item (and read back to resume).
        rejects: The rejects JSONL (default: ``out`` with ``.rejects.jsonl``; none without ``out``).
        mix: Weights per kind (``single_hop``, ``multi_hop``, ``comparison``, ``summary``,
            ``unanswerable``); default :data:`~ragmetrics.testset.slots.DEFAULT_MIX`.
        styles: Question styles used in turn (``plain``, ``short``, ``conversational``, ``typos``).
        generator: ``llm``, ``extractive`` (the offline generator: questions built from the documents'
            own sentences, verified by ``llm``), or ``auto``: extractive when the judge is the offline
            heuristic, else llm.
        chunk_tokens: Chunk size in estimated tokens (characters / 4).
        overlap_tokens: Overlap between neighbouring chunks.
        seed: Seeds the chunk order and the typos.
        max_cost_usd: Stop launching candidates once their estimated cost would pass this.
        max_candidates: Slots tried at most (default 3 x size): regenerations for rejected ones.
        concurrency: Candidates in flight.
        cache: The judge cache (True: the default folder; a path; False: memory only).
        resume: Read ``out`` and ``rejects`` and skip the slots they hold (False: start them afresh).
        progress: Draw a progress bar on stderr (None: the pipeline's default, on).
        batch: Send the calls through the provider's batch API at its half price, as
            ``EvaluationPipeline(batch=...)``: True, a :class:`~ragmetrics.pipeline.batch.BatchOptions`
            or a dict of its fields (``directory``, ``resume``, ``poll_interval_s``, ``max_wait_s``...).
            Each wave of candidates (all the missing items at once) takes a batch per step: generation,
            then verification (and claim extraction between them for references whose own claims do
            not check out). The items are those of a real-time run with
            ``concurrency >= size``.
        limits: The caps on files, documents, chunks and the run's text
            (:class:`~ragmetrics.testset.limits.DocumentLimits`; default: its named defaults).
        allow_instructions: Write items from chunks holding instruction-like text (marked in their
            ``instructions`` field). By default such a candidate is a reject with reason
            ``instructions`` naming the document and offset, and costs no call (see
            :mod:`~ragmetrics.testset.instructions`); the report lists every finding either way.
        judge_gate: Put a canary drawn from the documents to the verifier first, and check its quotes
            as the run goes (:mod:`ragmetrics.testset.gate`): a verifier that fails the canary writes
            no item, and either failure is in ``report.judge_gate`` (the CLI exits 5). False: no canary,
            no check.

    Raises:
        ConfigError: Bad arguments, unreadable documents, a budget with an unpriced model, batch
            mode with the offline judge, unfinished batches of an earlier run without ``resume``.
        BatchPendingError: Batch mode's ``max_wait_s`` passed with batches running (rerun with
            ``resume``: the items written so far are kept, nothing is sent twice).
    """
    check_int(concurrency, "concurrency", "generate()", minimum=1)
    check_choice(generator, "generator", "generate()", ("auto", "llm", "extractive"))
    normalise_mix(mix)
    options = batch_options(batch)
    chunks = prepare(documents, chunk_tokens=chunk_tokens, overlap_tokens=overlap_tokens, limits=limits)
    slots = plan_slots(chunks, size=size, mix=mix, styles=styles, seed=seed, max_slots=max_candidates)
    judge = resolve_judge(llm, cache=cache, owner="generate()")
    waves = None
    try:
        waves = BatchWaves(judge, options) if options is not None else None
        return await _run(
            judge,
            chunks,
            slots,
            size=size,
            out=out,
            rejects=rejects,
            mix=mix,
            generator=generator,
            seed=seed,
            max_cost_usd=max_cost_usd,
            concurrency=concurrency,
            resume=resume,
            progress=progress,
            waves=waves,
            judge_gate=judge_gate,
            allow_instructions=check_flag(allow_instructions, "allow_instructions", "generate"),
        )
    finally:
        if waves is not None:
            await waves.aclose()
        # as the pipeline does: a judge the user passed in is closed only as far as it is ours to close
        # (this loop's SDK client and the disk cache, which reopen on the next run)
        await judge.aclose()


async def _run(
    judge: CachingJudge,
    chunks: list[Chunk],
    slots: list[Slot],
    *,
    size: int,
    out: str | Path | None,
    rejects: str | Path | None,
    mix: Mapping[str, float] | None,
    generator: str,
    seed: int,
    max_cost_usd: float | None,
    concurrency: int,
    resume: bool,
    progress: bool | None,
    waves: BatchWaves | None = None,
    allow_instructions: bool = False,
    judge_gate: bool = True,
) -> Testset:
    extractive = generator == "extractive" or (generator == "auto" and judge.info.heuristic)
    name = "extractive" if extractive else judge.info.spec
    out_path = Path(out) if out is not None else None
    rejects_path = (
        Path(rejects)
        if rejects is not None
        else (
            out_path.with_name(out_path.name.removesuffix(".jsonl") + ".rejects.jsonl") if out_path else None
        )
    )
    for p in (out_path, rejects_path):
        if p is not None:
            p.parent.mkdir(parents=True, exist_ok=True)
            if not resume and p.exists():
                p.unlink()
    items: list[TestsetItem] = _read_jsonl(out_path, TestsetItem) if out_path else []
    dropped: list[Reject] = _read_jsonl(rejects_path, Reject) if rejects_path else []
    resumed = len(items)
    done = {int(i.id.removeprefix("t")) for i in items if i.id.startswith("t")} | {r.slot for r in dropped}
    notes: list[str] = []
    if max_cost_usd is not None and not extractive and not priced(judge):
        raise ConfigError(
            f"max_cost_usd: the judge {judge.info.spec} has no price in the price table; give a price "
            "(RAGMETRICS_PRICES) or use max_candidates= to cap the calls"
        )
    findings = scan_chunks(chunks)
    df: Counter[str] = Counter(t for c in chunks for t in chunk_terms(c))
    df[""] = len(chunks)
    usage = Usage()
    bar = ProgressBar(size, enabled=progress)
    pending = [s for s in slots if s.index not in done]
    bar.update(len(items), failed=len(dropped))
    quota = requested_counts(size, normalise_mix(mix))
    canary: CanaryResult | None = None

    plain = [c for c in chunks if chunk_key(c) not in findings]  # no canary quotes instruction-like text

    async def probe(verifier: Judge) -> CanaryResult:
        return await testset_canary(verifier, judge.info.spec, plain, CONTEXT_BUDGET_TOKENS)

    def untrusted(got: CanaryResult) -> bool:
        if got.failed:
            notes.append(
                f"no item was written: the verifier {judge.info.spec} failed its canary (a sentence of "
                "the documents, one with a number or 'not' changed, another document's sentence), so no "
                "reference it verified could be trusted"
            )
        return got.failed

    if judge_gate and waves is None and len(items) < size and pending:  # before any candidate is paid for
        canary = await probe(judge)
        usage = usage + canary.usage
        if untrusted(canary):
            pending = []
    quotes = [0, 0]  # the verifier's quotes, and those found in the chunk they cite
    try:
        while len(items) < size and pending:
            want = size - len(items) if waves is not None else min(size - len(items), concurrency)
            wave = _pick(pending, want, quota, Counter(i.kind for i in items))
            if max_cost_usd is not None:
                wave, next_cost = _affordable(judge, wave, max_cost_usd - usage.cost_usd, extractive)
                if not wave:
                    notes.append(
                        f"stopped at the budget max_cost_usd=${max_cost_usd:g}: spent ${usage.cost_usd:.6f}, "
                        f"the next candidate is estimated at ${next_cost:.6f}"
                    )
                    break
            pending = [s for s in pending if s not in wave]

            def earlier(question: str, written: Sequence[TestsetItem] = tuple(items)) -> str | None:
                twin = _duplicate_of(question, written)
                return None if twin is None else f"near duplicate of {twin.id}: {twin.question[:120]!r}"

            async def attempt(judge: Judge, s: Slot, earlier: Any = earlier) -> Attempt:
                flagged = [f for c in s.chunks for f in findings.get(chunk_key(c), ())]
                if flagged and not allow_instructions:
                    return Attempt(slot=s, reject=_instructions_reject(s, flagged))
                att = await run_slot(
                    judge, s, extractive=extractive, generator=name, seed=seed, df=df, duplicate=earlier
                )
                if flagged and att.item is not None:
                    marks = [f.where() for f in distinct(flagged)]
                    att.item = att.item.model_copy(update={"instructions": marks})
                return att

            if waves is not None:  # the canary rides in the first wave's batches: no round of its own
                first = judge_gate and canary is None
                attempts, got = await waves.run(wave, attempt, probe if first else None)
                if got is not None:
                    canary = got
                    usage = usage + canary.usage
                    if untrusted(canary):  # what the wave cost is counted; nothing of it is written
                        usage = sum((a.usage for a in attempts), usage)
                        pending = []
                        break
            else:
                attempts = await asyncio.gather(*(attempt(judge, s) for s in wave))
            kept: list[TestsetItem] = []
            lost: list[Reject] = []
            for att in attempts:  # in slot order, so a rerun keeps the same items
                usage = usage + att.usage
                quotes[0] += att.quotes
                quotes[1] += att.quotes_found
                if att.item is not None and len(items) + len(kept) < size:
                    twin = _duplicate_of(att.item.question, [*items, *kept])
                    if twin is None:
                        kept.append(att.item)
                        continue
                    att.reject = Reject(
                        slot=att.slot.index,
                        kind=att.slot.kind,
                        reason="near_duplicate",
                        detail=f"near duplicate of {twin.id}: {twin.question[:120]!r}",
                        chunk_ids=att.item.reference_context_ids,
                        question=att.item.question,
                        reference=att.item.reference,
                    )
                if att.reject is not None:
                    lost.append(att.reject)
            _append(out_path, kept)
            _append(rejects_path, lost)
            items += kept
            dropped += lost
            bar.update(
                len(items),
                failed=len(dropped),
                cost_usd=usage.cost_usd,
                cache_hits=judge.stats.hits,
                cache_requests=judge.stats.hits + judge.stats.misses,
            )
    finally:
        bar.close()
    if len(items) < size and not pending and not notes:
        notes.append(
            f"all {len(slots)} candidate slots were used; {size - len(items)} item(s) short "
            "(raise max_candidates, add documents or lower size)"
        )
    health = (
        JudgeHealth(judge=judge.info.spec, quotes=quotes[0], quotes_found=quotes[1])
        if judge_gate and quotes[0]
        else None
    )
    report = build_report(
        items,
        dropped,
        chunks,
        size=size,
        mix=normalise_mix(mix),
        usage=usage,
        generator=name,
        judge=judge.info.spec,
        resumed=resumed,
        notes=notes,
        canary=canary,
        judge_health=health,
        judge_gate=gate_messages(canary, health),
        instructions=[f.where() for f in distinct([f for fs in findings.values() for f in fs])],
    )
    return Testset(items=items, rejects=dropped, report=report, chunks=chunks)


def _instructions_reject(slot: Slot, flagged: Sequence[Finding]) -> Reject:
    """The reject of a candidate whose chunks hold instruction-like text (no call was made for it)."""
    found = distinct(flagged)
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return Reject(
        slot=slot.index,
        kind=slot.kind,
        reason="instructions",
        detail=f"instruction-like text in {found[0].where()}{more}; no item is written from it "
        "(allow_instructions=True, --allow-instructions, keeps such chunks)",
        chunk_ids=[c.id for c in slot.chunks],
    )


def generate_sync(documents: Any, **options: Any) -> Testset:
    """:func:`generate`, blocking (also inside a running event loop, e.g. Jupyter)."""
    return run_sync(generate(documents, **options))
