"""One row through every metric: validate it, run each metric and repeat, and build its record.

:class:`SampleExecutor` never raises for a bad row, a metric that raises or a sample that times out:
each becomes an error record through :func:`~ragmetrics.score.failure_from`, and the
first failure is handed back beside the record for ``raise_on_error``. The record's usage counts every
call made for the row: the results', the failures' and that of calls its timeout cut off. A
conversation's turn row gets, on each result, the message each claim cites (``details["cited"]``); it
runs every metric but the conversation-level ones, which run on the conversation's own row
(:meth:`SampleExecutor.calls_for`).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmetrics.errors import InvalidInputError, NoScoreError
from ragmetrics.judge.metering import unclaimed
from ragmetrics.metrics.conversation.turn_claims import _cited as cited
from ragmetrics.pipeline._busy_time import BusyTime, timed
from ragmetrics.pipeline._metric_call import MetricCall
from ragmetrics.pipeline._row import contexts_problem, reference_problem
from ragmetrics.pipeline.dataset import Row, provenance, to_sample
from ragmetrics.pipeline.report import EvaluationResult, ScoreSpread
from ragmetrics.sample import Conversation, Sample
from ragmetrics.score import ErrorRecord, MetricResult, SampleTimeoutError, Usage, failure_from

__all__ = ["SampleExecutor"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SampleExecutor:
    """Runs the metrics of a pipeline over one row at a time."""

    calls: Sequence[MetricCall]
    """The pipeline's metrics, in order."""
    repeats: int
    """Runs of every metric per sample."""
    timeout_s: float | None
    """Wall-time limit per sample (all metrics and repeats), or None."""
    needs_contexts: bool
    """Whether a row without contexts is invalid."""

    def calls_for(self, row: Row) -> Sequence[MetricCall]:
        """The metrics that score ``row``.

        A conversation's turn gets all but the conversation-level ones, a conversation row only those,
        a sample every one (a conversation-level metric refuses it).
        """
        if row.level == "turn":
            return [c for c in self.calls if not c.needs.conversation]
        if row.level == "conversation":
            return [c for c in self.calls if c.needs.conversation]
        return self.calls

    def sample(self, row: Row) -> Sample:
        """The row as a sample.

        Raises:
            InvalidInputError: The row is not a valid sample for these metrics.
        """
        return to_sample(row, require_contexts=self.needs_contexts)

    def failed_record(
        self, row: Row, sample: Sample | None, errors: list[ErrorRecord], latency_ms: float
    ) -> EvaluationResult:
        """A record with no scores for a row that was not run (invalid, or skipped)."""
        rid = sample.id if sample is not None else None
        if rid is None and isinstance(row.values, Mapping):
            raw = row.values.get("id")
            rid = str(raw) if isinstance(raw, (str, int)) and not isinstance(raw, bool) else None
        columns, extra = provenance(row, sample)
        return EvaluationResult(
            index=row.index,
            id=rid if rid is not None else str(row.index),
            sample=sample,
            scores={c.name: None for c in self.calls_for(row)},
            errors=errors,
            latency_ms=latency_ms,
            columns=columns,
            extra=extra,
        )

    async def evaluate_row(self, row: Row, sample: Sample | None = None) -> tuple[EvaluationResult, Any]:
        """One row: validate, run every metric and repeat, and build its record (never raises)."""
        started = time.perf_counter()
        if sample is None:
            try:
                sample = self.sample(row)
            except InvalidInputError as exc:
                errors = [failure_from(exc, row=row.index)]
                return self.failed_record(row, None, errors, (time.perf_counter() - started) * 1000.0), exc
        jobs = [(call, r) for call in self.calls_for(row) for r in range(self.repeats)]
        # A reference that is no string (nor a list of strings), or contexts recorded without their text,
        # fail only the metrics that need them.
        reference, contexts = reference_problem(row), contexts_problem(row)
        refused = [
            (reference if call.needs.reference else None) or (contexts if call.needs.contexts else None)
            for call, _ in jobs
        ]
        runnable = [job for job, no in zip(jobs, refused, strict=True) if no is None]
        busy = BusyTime()
        with unclaimed() as cut_off:  # what calls cancelled by the sample's timeout had spent
            ran = iter(await self._run_jobs(sample, runnable, busy, row.session) if runnable else [])
        outcomes: list[MetricResult | BaseException] = [no if no is not None else next(ran) for no in refused]
        # The row's latency is the time its metrics ran or awaited something of their own, not the time
        # they waited for the event loop behind other rows (which made every row show the batch time).
        return self._build(row, sample, jobs, outcomes, busy.total_ms(), cut_off.usage)

    async def _run_jobs(
        self,
        sample: Sample,
        jobs: list[tuple[MetricCall, int]],
        busy: BusyTime,
        conversation: Conversation | None,
    ) -> list[Any]:
        """Run the jobs, recording their busy time into ``busy``; outcomes in job order."""

        async def job(call: MetricCall, repeat: int) -> MetricResult:
            return await timed(call(sample, repeat, conversation), busy)

        timeout = self.timeout_s
        if len(jobs) == 1 and timeout is None:
            call, repeat = jobs[0]
            try:
                return [await job(call, repeat)]
            except Exception as exc:
                return [exc]
        tasks = [asyncio.ensure_future(job(call, repeat)) for call, repeat in jobs]
        try:
            done, pending = await asyncio.wait(tasks, timeout=timeout)
        except BaseException:
            for task in tasks:
                task.cancel()
            # let them unwind before the run closes the judges, or a late reply reopens the cache
            await asyncio.wait(tasks, timeout=5.0)
            raise
        if pending:
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=5.0)
        outcomes: list[Any] = []
        for task in tasks:
            if task in pending or task.cancelled():
                outcomes.append(
                    SampleTimeoutError(
                        f"did not finish within timeout_per_sample_s={timeout:g} s"
                        if timeout
                        else "cancelled"
                    )
                )
            elif task.exception() is not None:
                outcomes.append(task.exception())
            else:
                outcomes.append(task.result())
        return outcomes

    def _build(
        self,
        row: Row,
        sample: Sample,
        jobs: list[tuple[MetricCall, int]],
        outcomes: list[Any],
        latency_ms: float,
        cut_off: Usage,
    ) -> tuple[EvaluationResult, Any]:
        scores: dict[str, float | None] = {}
        results: dict[str, MetricResult] = {}
        spread: dict[str, ScoreSpread] = {}
        errors: list[ErrorRecord] = []
        usage = Usage()
        first_exc: BaseException | None = None
        by_metric: dict[str, list[tuple[int, Any]]] = {}
        for (call, repeat), outcome in zip(jobs, outcomes, strict=True):
            by_metric.setdefault(call.name, []).append((repeat, outcome))
        for call in self.calls_for(row):
            repeat_scores: list[float | None] = []
            for repeat, outcome in by_metric[call.name]:
                where = f" (repeat {repeat})" if self.repeats > 1 else ""
                if isinstance(outcome, MetricResult):
                    usage = usage + outcome.usage
                    repeat_scores.append(outcome.score)
                    if call.name not in results or (
                        results[call.name].score is None and outcome.score is not None
                    ):
                        results[call.name] = outcome
                    if outcome.score is None:
                        exc: BaseException = NoScoreError(
                            call.name, outcome.status, (outcome.message or "") + where
                        )
                        errors.append(failure_from(exc, metric=call.name, row=row.index))
                        first_exc = first_exc or exc
                else:
                    repeat_scores.append(None)
                    failure = failure_from(outcome, metric=call.name, row=row.index)
                    if isinstance(outcome, SampleTimeoutError) and cut_off.calls:
                        failure.usage, cut_off = cut_off, Usage()  # the first timeout record carries it
                    usage = usage + failure.usage
                    if where:
                        failure.message += where
                    errors.append(failure)
                    if first_exc is None:
                        first_exc = (
                            NoScoreError(call.name, "timeout", str(outcome))
                            if isinstance(outcome, SampleTimeoutError)
                            else outcome
                        )
            got = [s for s in repeat_scores if s is not None]
            scores[call.name] = math.fsum(got) / len(got) if got else None
            if self.repeats > 1:
                spread[call.name] = ScoreSpread.of(repeat_scores)
        usage = usage + cut_off  # spent by calls cut off, if no timeout record took it
        if row.evidence is not None:  # a conversation's turn: the message each claim cites
            results = {name: cited(result, row.evidence) for name, result in results.items()}
        columns, extra = provenance(row, sample)
        record = EvaluationResult(
            index=row.index,
            id=sample.id if sample.id is not None else str(row.index),
            sample=sample,
            scores=scores,
            results=results,
            errors=errors,
            spread=spread,
            usage=usage,
            latency_ms=latency_ms,
            columns=columns,
            extra=extra,
        )
        return record, first_exc
