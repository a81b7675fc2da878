"""Background scoring shared by the framework handlers: captured runs in, :class:`RunResult` records out.

A handler turns each finished top-level run into a :class:`Capture` and calls
:meth:`BackgroundScorer.submit`, which returns at once. In an async app the work is scheduled on the
app's loop (in a fresh ``contextvars`` context); in a sync app it goes to one background thread per
scorer. Each loop has a lane whose drain task scores queued runs in batches through
:class:`~ragmetrics.pipeline.EvaluationPipeline`, one batch after another. Failure is data: every
failure ends as a record with a status and errors, never as an exception in the app.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ragmetrics._aio import in_notebook
from ragmetrics._check import check_int
from ragmetrics.errors import shorten
from ragmetrics.integrations._records import (
    Capture,
    References,
    RunResult,
    Source,
    check_references,
    check_sink,
    json_safe,
)
from ragmetrics.metrics.base import MetricLike
from ragmetrics.pipeline import ErrorRecord, EvaluationPipeline, EvaluationResult, failure_record
from ragmetrics.sample import Sample

__all__ = ["BackgroundScorer", "Capture", "RunResult", "ScoredHandler", "json_safe"]

logger = logging.getLogger("ragmetrics.integrations")

_CANCELLED = (
    "scoring was cancelled: the event loop stopped before it finished; call 'await handler.flush()' "
    "(or 'handler.flush_sync()') before the loop ends"
)


@dataclass(slots=True, eq=False)
class _Job:
    capture: Capture
    future: concurrent.futures.Future[RunResult]
    """Settled once the job's batch is over (its pipeline run has closed its judges' clients)."""
    result: RunResult | None = None


@dataclass(slots=True)
class _Lane:
    """The queue and drain task of one event loop (touched only from that loop's thread)."""

    jobs: list[_Job] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    background: bool = False
    """The scorer's own background loop (never hands its jobs over: it is the fallback)."""


def _summary(errors: Sequence[ErrorRecord]) -> str | None:
    if not errors:
        return None
    text = "; ".join(e.message for e in errors[:3])
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return shorten(text, 600) + more


class BackgroundScorer:
    """Scores captured runs off the app's path; keeps the records and feeds the optional sink.

    Args:
        metrics: The metrics to run on every captured run: metric objects, built-in names
            (``"context_recall"``) or functions of a Sample.
        source: Which adapter captures (``langchain`` or ``llamaindex``).
        references: Reference answers by question (a mapping, or a function ``question -> reference
            or None``), for the metrics that need one (``context_recall``, ``answer_correctness``); a
            reference the run itself carries comes first.
        sink: None, a JSONL file path (one record per line, appended), or a callable (sync or async)
            called with each :class:`RunResult`.
        concurrency: Captured runs scored at once per event loop.
        timeout_per_sample_s: Wall-time limit per run's scoring (None: only the judges' timeouts).
        max_pending: Captured runs waiting for scoring beyond which new ones are skipped (with a
            reason) instead of queued, so a slow judge cannot grow memory without bound.

    Raises:
        ConfigError: No metrics, a bad metric, sink or limit (checked at once).
    """

    def __init__(
        self,
        metrics: Sequence[MetricLike],
        *,
        source: Source,
        references: References = None,
        sink: object = None,
        concurrency: int = 8,
        timeout_per_sample_s: float | None = None,
        max_pending: int = 1000,
    ) -> None:
        check_int(max_pending, "max_pending", type(self).__name__, minimum=1)
        self.pipeline = EvaluationPipeline(  # each job is a stream of its own: no canaries per job
            metrics,
            concurrency=concurrency,
            timeout_per_sample_s=timeout_per_sample_s,
            progress=False,
            canaries=False,
        )
        self.source: Source = source
        self.max_pending = max_pending
        self._sink = check_sink(sink)
        self._references = check_references(references)
        self._lock = threading.Lock()
        self._results: list[RunResult] = []
        self._outstanding: dict[_Job, asyncio.AbstractEventLoop] = {}
        """Jobs not settled yet -> the loop that scores them."""
        self._lanes: dict[asyncio.AbstractEventLoop, _Lane] = {}
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    @property
    def metrics(self) -> list[MetricLike]:
        """The metrics run on every captured run."""
        return self.pipeline.metrics

    @property
    def results(self) -> list[RunResult]:
        """The records so far, in the order they finished (a copy)."""
        with self._lock:
            return list(self._results)

    @property
    def pending(self) -> int:
        """Captured runs not yet recorded."""
        with self._lock:
            return len(self._outstanding)

    # -- the app's side: must return at once and never raise -------------------------------------------
    def submit(self, capture: Capture) -> None:
        """Queue ``capture`` for scoring (or recording, when skipped) and return at once."""
        job = _Job(capture, concurrent.futures.Future())
        try:
            try:
                loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None and in_notebook():
                # a kernel's loop runs the cells: it cannot score while a cell waits in close()
                loop = None
            on_this_thread = loop is not None
            if loop is None:
                loop = self._background_loop()
            with self._lock:
                full = len(self._outstanding) >= self.max_pending
                if not full:
                    self._outstanding[job] = loop
            if full:
                reason = (
                    f"not scored: {self.max_pending} captured runs were already waiting for the judge "
                    "(max_pending); scoring cannot keep up with the app"
                )
                self._store(job, capture.result("skipped", reason=reason))
                self._settle([job])
            elif on_this_thread:
                self._enqueue(loop, job)
            else:
                loop.call_soon_threadsafe(self._enqueue, loop, job)
        except Exception as exc:  # e.g. the background loop was closed meanwhile: record, never raise
            logger.warning("ragmetrics: could not queue a captured run for scoring: %r", exc)
            self._abandon([job], exc)
            self._settle([job])

    def _background_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._thread_loop is None or self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=_run_forever, args=(loop,), name="ragmetrics-scoring", daemon=True
                )
                thread.start()
                self._thread_loop, self._thread = loop, thread
            return self._thread_loop

    def _enqueue(self, loop: asyncio.AbstractEventLoop, job: _Job) -> None:
        """On ``loop``'s thread: queue the job and make sure a drain task runs."""
        with self._lock:
            lane = self._lanes.setdefault(loop, _Lane(background=loop is self._thread_loop))
        lane.jobs.append(job)
        if lane.task is None or lane.task.done():
            # a fresh context: scoring must not run inside (or be traced as part of) the app's run
            lane.task = contextvars.Context().run(loop.create_task, self._drain(loop, lane))
            lane.task.add_done_callback(lambda task: self._lane_ended(loop, lane, task))

    def _lane_ended(self, loop: asyncio.AbstractEventLoop, lane: _Lane, task: asyncio.Task[None]) -> None:
        """A drain task cancelled before it ran (the loop closing at once) still hands its jobs over."""
        if task.cancelled() and lane.jobs and lane.task is task:
            jobs, lane.jobs = lane.jobs, []
            self._settle(self._cut_off(jobs, lane))
            with self._lock:
                if self._lanes.get(loop) is lane:
                    del self._lanes[loop]

    # -- the loop's side --------------------------------------------------------------------------------
    async def _drain(self, loop: asyncio.AbstractEventLoop, lane: _Lane) -> None:
        try:
            while lane.jobs:
                batch, lane.jobs = lane.jobs, []
                kept = batch
                try:
                    await self._process(batch)
                except asyncio.CancelledError:
                    kept = self._cut_off(batch, lane)
                    raise
                except Exception as exc:  # a bug of ours: the runs still get a record
                    logger.exception("ragmetrics: scoring a batch of captured runs failed")
                    self._abandon(batch, exc)
                finally:
                    self._settle(kept)
        except asyncio.CancelledError:
            self._settle(self._cut_off(lane.jobs, lane))
            lane.jobs = []
            raise
        finally:
            with self._lock:
                if self._lanes.get(loop) is lane and not lane.jobs:
                    del self._lanes[loop]

    def _cut_off(self, jobs: list[_Job], lane: _Lane) -> list[_Job]:
        """The loop was cancelling our work (``asyncio.run`` ending before a flush): nothing is lost.

        The jobs not scored yet are handed to the background thread, which scores them again
        (``close()`` or ``flush()`` from any thread waits for them). On the background loop itself, or
        if the hand-over fails, they get a "cancelled" failure record. Returns the jobs kept here.
        """
        todo = [job for job in jobs if job.result is None]
        if todo and not lane.background:
            try:
                target = self._background_loop()
                with self._lock:
                    for job in todo:
                        self._outstanding[job] = target
                for job in todo:
                    target.call_soon_threadsafe(self._enqueue, target, job)
                logger.info(
                    "ragmetrics: %d captured runs cut off by their event loop closing are "
                    "scored on the background thread",
                    len(todo),
                )
                return [job for job in jobs if job.result is not None]
            except Exception:  # noqa: BLE001 - the thread could not start: record them as cut off
                logger.exception("ragmetrics: could not hand over captured runs cut off by their loop")
        self._abandon(jobs, asyncio.CancelledError(_CANCELLED))
        return jobs

    def _abandon(self, jobs: Iterable[_Job], exc: BaseException) -> None:
        """Give every job of ``jobs`` that has no record yet a failure record."""
        for job in jobs:
            if job.result is None:
                error = failure_record(exc)
                self._store(job, job.capture.result("failed", reason=error.message, errors=[error]))

    async def _process(self, batch: list[_Job]) -> None:
        scored: list[_Job] = []
        samples: list[Sample] = []
        for job in batch:
            cap = job.capture
            if cap.skip_reason is not None:
                await self._deliver(job, cap.result("skipped", reason=cap.skip_reason))
                continue
            try:
                if cap.reference is None and self._references is not None and cap.question is not None:
                    cap.reference = self._references(cap.question)  # the user's lookup: may raise
                samples.append(
                    Sample.from_fields(
                        question=cap.question,
                        answer=cap.answer,
                        contexts=cap.contexts,
                        reference=cap.reference,
                        id=cap.run_id,
                        meta=cap.meta,
                    )
                )
                scored.append(job)
            except Exception as exc:
                error = failure_record(exc)
                await self._deliver(job, cap.result("failed", reason=error.message, errors=[error]))
        if samples:
            await self._score(scored, samples)

    async def _score(self, jobs: list[_Job], samples: list[Sample]) -> None:
        """The one place captured samples are scored: through the pipeline, records as they finish."""
        finished: set[int] = set()
        try:
            async for record in self.pipeline.stream(samples):
                finished.add(record.index)
                await self._deliver(jobs[record.index], self._from_record(jobs[record.index].capture, record))
        except Exception as exc:
            error = failure_record(exc)
            for i, job in enumerate(jobs):
                if i not in finished:
                    await self._deliver(
                        job, job.capture.result("failed", reason=error.message, errors=[error])
                    )

    @staticmethod
    def _from_record(capture: Capture, record: EvaluationResult) -> RunResult:
        status: Literal["ok", "failed"] = "failed" if record.errors else "ok"
        return capture.result(
            status,
            reason=_summary(record.errors),
            scores=dict(record.scores),
            evaluation=record,
            errors=list(record.errors),
        )

    async def _deliver(self, job: _Job, result: RunResult) -> None:
        if self._sink is not None:
            try:
                out = self._sink(result)
                if inspect.isawaitable(out):
                    await out
            except Exception as exc:
                error = failure_record(exc)
                error.message = f"the sink raised {type(exc).__name__}: {shorten(str(exc), 300)}"
                result.errors.append(error)
                logger.warning("ragmetrics: %s", error.message)
        self._store(job, result)

    def _store(self, job: _Job, result: RunResult) -> None:
        with self._lock:
            self._results.append(result)
        job.result = result

    def _settle(self, jobs: Iterable[_Job]) -> None:
        """The jobs' batch is over: wake whoever flushes (a job with no record gets one)."""
        jobs = list(jobs)
        self._abandon(jobs, RuntimeError("the captured run was not scored (internal error)"))
        with self._lock:
            for job in jobs:
                self._outstanding.pop(job, None)
        for job in jobs:
            if not job.future.done() and job.result is not None:
                job.future.set_result(job.result)

    # -- waiting and closing ------------------------------------------------------------------------------
    async def flush(self, timeout: float | None = None) -> list[RunResult]:
        """Wait until every run captured so far is recorded and its scoring cleaned up; return all records.

        Raises:
            TimeoutError: ``timeout`` seconds passed first (scoring goes on).
        """
        with self._lock:
            waiting = [job.future for job in self._outstanding]
        if waiting:
            _, pending = await asyncio.wait([asyncio.wrap_future(f) for f in waiting], timeout=timeout)
            if pending:
                raise TimeoutError(f"{len(pending)} captured runs were still being scored after {timeout} s")
        return self.results

    def flush_sync(self, timeout: float | None = None) -> list[RunResult]:
        """Blocking twin of :meth:`flush`, for sync apps.

        Raises:
            RuntimeError: Called on an event loop's thread while that loop holds runs to score (it
                would wait forever); use ``await flush()`` there.
            TimeoutError: ``timeout`` seconds passed first.
        """
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None:
            self._hand_over(running)
        with self._lock:
            waiting = list(self._outstanding.items())
        if running is not None and any(loop is running for _, loop in waiting):
            raise RuntimeError(
                "flush_sync() was called inside the event loop that is scoring captured runs right now "
                "(it cannot go on while this call waits); use 'await handler.flush()' there"
            )
        futures = [job.future for job, _ in waiting]
        if futures:
            _, pending = concurrent.futures.wait(futures, timeout=timeout)
            if pending:
                raise TimeoutError(f"{len(pending)} captured runs were still being scored after {timeout} s")
        return self.results

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        """Before blocking ``loop``'s thread: its runs not yet being scored go to the background thread."""
        with self._lock:
            lane = self._lanes.get(loop)
        if lane is None or lane.background or not lane.jobs:
            return
        jobs, lane.jobs = lane.jobs, []  # a drain task that has not started finds nothing and ends
        target = self._background_loop()
        with self._lock:
            for job in jobs:
                self._outstanding[job] = target
        for job in jobs:
            target.call_soon_threadsafe(self._enqueue, target, job)

    def _stop_thread(self, timeout: float | None) -> None:
        with self._lock:
            loop, thread = self._thread_loop, self._thread
            self._thread_loop = self._thread = None
        if loop is None or thread is None:
            return
        try:
            loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:  # the loop is closed already
            pass
        thread.join(timeout)
        if thread.is_alive():  # still finishing (timeout): it records its runs itself
            return
        # runs handed to the loop just as it stopped never reached a drain task: record them
        with self._lock:
            stranded = [job for job, owner in self._outstanding.items() if owner is loop]
        self._abandon(
            stranded, RuntimeError("the background scoring thread stopped before this run was scored")
        )
        self._settle(stranded)

    async def aclose(self, timeout: float | None = None) -> list[RunResult]:
        """Flush, then stop the background thread (a later run starts it again). Returns all records."""
        results = await self.flush(timeout)
        await asyncio.get_running_loop().run_in_executor(None, self._stop_thread, timeout)
        return results

    def close(self, timeout: float | None = None) -> list[RunResult]:
        """Blocking twin of :meth:`aclose`."""
        results = self.flush_sync(timeout)
        self._stop_thread(timeout)
        return results


def _run_forever(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


class ScoredHandler:
    """The results side of both handlers: records, waiting for them, closing. Needs ``self._scorer``."""

    _scorer: BackgroundScorer

    @property
    def results(self) -> list[RunResult]:
        """One record per finished top-level run or query (scored, failed or skipped), in finishing order."""
        return self._scorer.results

    @property
    def pending(self) -> int:
        """Finished runs whose record is not ready yet."""
        return self._scorer.pending

    async def flush(self, timeout: float | None = None) -> list[RunResult]:
        """Wait until every run finished so far is recorded; return all records.

        Raises:
            TimeoutError: ``timeout`` seconds passed first.
        """
        return await self._scorer.flush(timeout)

    def flush_sync(self, timeout: float | None = None) -> list[RunResult]:
        """Blocking twin of :meth:`flush` for sync apps (in async code, ``await flush()``)."""
        return self._scorer.flush_sync(timeout)

    async def aclose(self, timeout: float | None = None) -> list[RunResult]:
        """Flush and stop the background scoring thread, if one was started; return all records."""
        return await self._scorer.aclose(timeout)

    def close(self, timeout: float | None = None) -> list[RunResult]:
        """Blocking twin of :meth:`aclose`."""
        return self._scorer.close(timeout)
