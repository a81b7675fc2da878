"""What a run hands back: the records with their summary and exports, streaming runs, and callback events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragmetrics.pipeline._run_state import RunState
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


class EvaluationResults(list[EvaluationResult]):
    """The records of a run, in dataset order, with the run's summary and exports."""

    def __init__(self, records: Sequence[EvaluationResult], builder: ReportBuilder, stats: RunStats) -> None:
        super().__init__(records)
        self._builder = builder
        self.stats = stats
        """Run counters: samples, failures, usage, cache hits and misses, retries, throttles, time."""
        self._report: Report | None = None

    def summary(self) -> Report:
        """Aggregates per metric (mean, count, statuses, 95% bootstrap CI, pass rate), counters, records."""
        if self._report is None:
            self._report = self._builder.build(self.stats, list(self))
        return self._report

    @property
    def metrics(self) -> list[str]:
        """Metric names, in the pipeline's order."""
        return list(self._builder.metrics)

    def to_jsonl(self, path: Any) -> Any:
        """Write the records as JSON lines."""
        return write_jsonl(self, path)

    def to_csv(self, path: Any) -> Any:
        """Write one flat row per record."""
        return write_csv(self, path, metrics=self.metrics)

    def to_pandas(self) -> Any:
        """The records as a pandas DataFrame (needs pandas)."""
        return to_dataframe(self, metrics=self.metrics)


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
