"""What a run hands back: the records with their summary and exports, streaming runs, and callback events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from ragmetrics.pipeline._notebook import results_html
from ragmetrics.pipeline._record_store import RecordStore
from ragmetrics.pipeline._run_state import RunState
from ragmetrics.pipeline.export import Level, table_rows, to_hf_dataset, write_table_jsonl
from ragmetrics.pipeline.report import (
    EvaluationResult,
    Report,
    ReportBuilder,
    RunStats,
    to_dataframe,
    write_csv,
    write_jsonl,
)

__all__ = ["EvaluationResults", "PipelineEvent", "PipelineRun"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineEvent:
    """What a callback receives: the run started, a record finished, or the run ended."""

    kind: Literal["start", "record", "end"]
    done: int
    """Records finished so far."""
    total: int | None
    """Rows in the dataset, when known."""
    record: EvaluationResult | None = None
    """The record that finished (``kind == "record"``)."""
    stats: RunStats | None = None
    """Run counters so far (``start`` and ``end``)."""


class EvaluationResults(Sequence[EvaluationResult]):
    """The records of a run, in dataset order, with the run's summary and exports.

    A read-only sequence: ``len``, indexing, slices (lists), iteration; ``list(results)`` copies it. Up
    to ``records_in_memory`` records (a pipeline option, 5,000 by default) are kept as objects. A longer
    run's records are kept in an unnamed temporary file and read back at each access (a new object each
    time, so change a copy, not ``results[i]`` in place); the summary and every export stream them.
    """

    def __init__(
        self, records: RecordStore | Sequence[EvaluationResult], builder: ReportBuilder, stats: RunStats
    ) -> None:
        self._store = records if isinstance(records, RecordStore) else RecordStore.of(records)
        self._builder = builder
        self.stats = stats
        """Run counters: samples, failures, usage, cache hits and misses, retries, throttles, time."""
        self._report: Report | None = None

    def __len__(self) -> int:
        return len(self._store)

    @overload
    def __getitem__(self, index: int) -> EvaluationResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[EvaluationResult]: ...

    def __getitem__(self, index: int | slice) -> EvaluationResult | list[EvaluationResult]:
        return self._store[index]

    def __iter__(self) -> Iterator[EvaluationResult]:
        return iter(self._store)

    def __repr__(self) -> str:
        where = "in a temporary file" if self._store.in_file else "in memory"
        return f"EvaluationResults({len(self)} records {where}, metrics={self.metrics})"

    @property
    def in_file(self) -> bool:
        """True when the records are kept in a temporary file (past ``records_in_memory``)."""
        return self._store.in_file

    def summary(self) -> Report:
        """Aggregates per metric (mean, count, statuses, 95% bootstrap CI, pass rate), counters, records."""
        if self._report is None:
            self._report = self._builder.build(self.stats, self._store)
        return self._report

    @property
    def metrics(self) -> list[str]:
        """Metric names, in the pipeline's order."""
        return list(self._builder.metrics)

    def to_jsonl(self, path: Any, *, level: Literal["records"] | Level = "records") -> Any:
        """Write JSON lines: the full records, or the rows of :meth:`to_pandas`.

        ``level="records"`` (default) is lossless (:func:`read_jsonl` reads it back); the other levels
        write the rows of ``to_pandas(level=...)``.
        """
        if level == "records":
            return write_jsonl(self, path)
        return write_table_jsonl(table_rows(self, metrics=self.metrics, level=level), path)

    def to_csv(self, path: Any) -> Any:
        """Write one flat row per record."""
        return write_csv(self, path, metrics=self.metrics)

    def to_pandas(self, level: Level = "samples") -> Any:
        """The records as a pandas DataFrame (needs pandas).

        One row per sample: your own columns (names, order, extra columns, metadata, contexts as
        lists), then a score, status and reason column per metric and the totals. ``level="claims"``:
        one row per claim (id, metric, claim, verdict, context index, evidence quote, quote found,
        reason). ``level="turns"``: one row per conversation turn (the conversation, the turn, the
        user's message, then the sample's columns and the message each context came from);
        ``level="conversations"``: one row per conversation (each metric's mean over its turns, the
        tool-call scores, its status).
        """
        return to_dataframe(self, metrics=self.metrics, level=level)

    def to_hf(self, level: Level = "samples") -> Any:
        """The rows of :meth:`to_pandas` as a Hugging Face ``datasets.Dataset`` (needs ``datasets``)."""
        return to_hf_dataset(self, metrics=self.metrics, level=level)

    def _repr_html_(self) -> str:
        """The summary and the worst samples as an HTML table (Jupyter shows it for ``results``)."""
        return results_html(self.summary(), self)


class PipelineRun:
    """A streaming run: ``async for record in run`` yields records as they finish.

    Use ``async with pipeline.stream(data) as run:`` to close it early cleanly; ``stats`` and
    ``summary()`` give the counters and aggregates of what has finished (records are not kept).
    """

    def __init__(self, records: AsyncIterator[EvaluationResult], state_box: list[RunState]) -> None:
        self._records = records
        self._state_box = state_box

    def __aiter__(self) -> PipelineRun:
        return self

    async def __anext__(self) -> EvaluationResult:
        return await self._records.__anext__()

    async def aclose(self) -> None:
        """Stop the run: cancel samples in flight and close the judges."""
        await self._records.aclose()  # type: ignore[attr-defined]

    async def __aenter__(self) -> PipelineRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def stats(self) -> RunStats:
        """Counters of the run so far (empty before it starts)."""
        return self._state_box[0].stats() if self._state_box else RunStats()

    def summary(self) -> Report:
        """Aggregates of the records finished so far (the records themselves are not kept)."""
        if not self._state_box:
            return Report(aggregates={})
        state = self._state_box[0]
        return state.builder.build(state.stats())
