"""Batch mode: the pipeline's judge requests sent through the providers' batch APIs, at their half price.

``EvaluationPipeline(..., batch=True)`` runs the same metrics, prompts and cache keys as a real-time
run, in rounds: every judge is a ``DeferringJudge`` (:mod:`ragmetrics.judge.providers.batch_judge`),
each round's unanswered requests go to the provider as one batch, polled until it ends, and the next
round answers them from the ledger on disk and defers what they lead to; a round that defers nothing
is the last. The ledger (``BatchOptions.directory``) lets ``resume=True`` continue a run left half way
without sending anything twice. This module owns :class:`BatchOptions` and the round loop; batch
mode with the offline judge is a :class:`~ragmetrics.errors.ConfigError`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ragmetrics._aio import release_collector
from ragmetrics._check import check_int, check_number
from ragmetrics.errors import BatchPendingError, ConfigError
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.judge.providers.batch_api import BatchAPI, Intent, batch_api_for
from ragmetrics.judge.providers.batch_judge import BatchLedger, DeferringJudge, ledger_folder
from ragmetrics.pipeline._metric_call import share_judges

if TYPE_CHECKING:
    from ragmetrics.pipeline._results import EvaluationResults
    from ragmetrics.pipeline.dataset import Dataset


class BatchedPipeline(Protocol):
    """What the batch runner needs of ``EvaluationPipeline`` (the runner calls it, not the reverse)."""

    metrics: list[Any]
    callbacks: list[Any]
    progress: Any
    raise_on_error: bool

    def round_twin(self, *, quiet: bool) -> BatchedPipeline:
        """A real-time twin for one round: quiet, or with the user's events and progress."""
        ...

    async def evaluate(self, data: Any) -> EvaluationResults:
        """Score ``data`` in real time."""
        ...


__all__ = [
    "BatchOptions",
    "Lane",
    "batch_options",
    "collect_batches",
    "evaluate_in_batches",
    "open_lane",
    "refuse_unfinished",
    "submit_deferred",
]

log = logging.getLogger("ragmetrics.batch")


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchOptions:
    """How a batch run submits, waits and resumes (``EvaluationPipeline(batch=BatchOptions(...))``).

    Attributes:
        directory: The ledger folder (default: ``batches`` in the cache folder, i.e.
            ``RAGMETRICS_CACHE_DIR`` or the platform's cache directory).
        resume: Continue the unfinished batches of an earlier run instead of refusing to start.
        poll_interval_s: Seconds between polls of a running batch (providers finish most batches
            within hours; polling more than once a minute gains nothing in production).
        max_wait_s: Stop waiting after this many seconds with a
            :class:`~ragmetrics.errors.BatchPendingError` (resume later); None waits until every batch
            ends (the providers end each one within their 24 h window, expiring what is left).
        max_rounds: Batches in a row one request may need (extraction, verification, re-asks,
            resubmissions); a request still unanswered after that gets status ``provider_error``.
        resubmits: How many times a request that failed transiently (429, 5xx, expired) is sent again.
        max_requests: Requests per provider batch (OpenAI takes 50,000, Anthropic 100,000).
        notify: Called with a one-line message at each submission and poll (the CLI prints them).
    """

    directory: str | Path | None = None
    resume: bool = False
    poll_interval_s: float = 60.0
    max_wait_s: float | None = None
    max_rounds: int = 8
    resubmits: int = 2
    max_requests: int = 10_000
    notify: Callable[[str], Any] | None = None

    def __post_init__(self) -> None:
        check_number(self.poll_interval_s, "poll_interval_s", "BatchOptions", low=0)
        check_number(self.max_wait_s, "max_wait_s", "BatchOptions", low=0, optional=True)
        for name, low in (("max_rounds", 2), ("resubmits", 0), ("max_requests", 1)):
            check_int(getattr(self, name), name, "BatchOptions", minimum=low)

    def folder(self) -> Path:
        """The ledger folder."""
        if self.directory is not None:
            return Path(self.directory).expanduser()
        from ragmetrics.settings import default_cache_dir

        return default_cache_dir() / "batches"


def batch_options(value: Any) -> BatchOptions | None:
    """``EvaluationPipeline``'s ``batch`` argument as options (None: real time).

    Raises:
        ConfigError: Not a bool, a :class:`BatchOptions` or a mapping of its fields.
    """
    if value is None or value is False:
        return None
    if value is True:
        return BatchOptions()
    if isinstance(value, BatchOptions):
        return value
    if isinstance(value, Mapping):
        names = {f.name for f in dataclasses.fields(BatchOptions)}
        unknown = sorted(set(value) - names)
        if unknown:
            raise ConfigError(f"batch: unknown option(s) {unknown}; BatchOptions takes {sorted(names)}")
        return BatchOptions(**value)
    raise ConfigError(f"batch must be True, False, a BatchOptions or a dict of its fields, got {value!r}")


@dataclass(slots=True)
class Lane:
    """One provider judge in a batch run: its deferring judge, batch API and ledger."""

    real: CachingJudge
    deferring: DeferringJudge
    api: BatchAPI
    ledger: BatchLedger


def open_lane(real: CachingJudge, options: BatchOptions) -> Lane:
    """The batch lane of one caching provider judge (also used by test-set generation).

    Raises:
        ConfigError: The judge has no batch API (the offline judge, an unsupported provider).
    """
    api = batch_api_for(real.inner)  # ConfigError for the offline judge and the unsupported
    inner = api.judge
    ledger = BatchLedger(ledger_folder(options.folder(), inner))
    deferring = DeferringJudge(inner, real, ledger, resubmits=options.resubmits)
    try:
        for record in ledger.open_batches():
            deferring.in_flight.update(ledger.custom_ids(record["id"]))
    except BaseException:
        ledger.close()  # a damaged ledger: its file is not left open for the garbage collector
        raise
    return Lane(real, deferring, api, ledger)


def refuse_unfinished(lanes: list[Lane], options: BatchOptions) -> None:
    """ConfigError if a lane has unfinished batches (or creates) of an earlier run and ``resume`` is off."""
    for lane in lanes:
        pending = [b["id"] for b in lane.ledger.open_batches()]
        pending += [f"a batch being created ({i['requests']} requests)" for i in lane.ledger.intents()]
        if pending and not options.resume:
            ids = ", ".join(pending[:5])
            raise ConfigError(
                f"batch mode: {len(pending)} unfinished batch(es) of an earlier run are in "
                f"{lane.ledger.directory} ({ids}); pass resume=True (--resume) to collect them, "
                "or delete that folder to start over (its batches are then paid for and lost)"
            )


def _lanes(pipeline: BatchedPipeline, options: BatchOptions) -> list[Lane]:
    lanes: list[Lane] = []
    try:
        for real in share_judges(pipeline.metrics):
            lanes.append(open_lane(real, options))
    except BaseException:
        for lane in lanes:
            lane.ledger.close()  # no SDK client is built before the first request
        raise
    if not lanes:
        raise ConfigError(
            "batch mode: none of the metrics calls an LLM judge, so there is nothing to batch; "
            "drop batch=True / --batch"
        )
    return lanes


def _swap(pipeline: BatchedPipeline, judges: Mapping[int, CachingJudge]) -> None:
    """Give each metric whose judge is a key of ``judges`` (by id) that entry instead."""
    for metric in pipeline.metrics:
        use = getattr(metric, "use_judge", None)
        current = getattr(metric, "judge", None) if callable(use) else None
        if callable(use) and id(current) in judges:
            use(judges[id(current)])


async def evaluate_in_batches(
    pipeline: BatchedPipeline, dataset: Dataset, options: BatchOptions
) -> EvaluationResults:
    """Run ``pipeline`` over ``dataset`` in batch rounds (see the module docstring).

    Raises:
        ConfigError: A judge without a batch API; unfinished batches found without ``resume``.
        BatchPendingError: ``max_wait_s`` passed with batches still running.
        JudgeError: The batch API itself failed (upload, create, poll or download).
    """
    release_collector()  # the eval command's start-up ends before it may wait on batches for hours
    lanes = _lanes(pipeline, options)
    dataset = dataset.materialize()  # read once per round
    started = time.monotonic()
    quiet = pipeline.round_twin(quiet=True)
    try:
        refuse_unfinished(lanes, options)
        await collect_batches(lanes, options, started)
        for number in range(1, options.max_rounds + 1):
            by_real = {id(lane.real): CachingJudge(lane.deferring, None) for lane in lanes}
            for lane in lanes:
                lane.deferring.last_round = number == options.max_rounds
            _swap(pipeline, by_real)
            try:
                results = await quiet.evaluate(dataset)
            finally:
                _swap(pipeline, {id(j): lane.real for j, lane in zip(by_real.values(), lanes, strict=True)})
            submitted = 0
            for lane in lanes:
                submitted += await submit_deferred(lane, options)
            log.info("batch round %d: %d requests submitted", number, submitted)
            if not submitted:
                break
            await collect_batches(lanes, options, started)
        if pipeline.callbacks or pipeline.raise_on_error or pipeline.progress:
            # the user's own settings (events, progress, raise on error), on answers all at hand now
            by_real = {id(lane.real): CachingJudge(lane.deferring, None) for lane in lanes}
            _swap(pipeline, by_real)
            try:
                results = await pipeline.round_twin(quiet=False).evaluate(dataset)
            finally:
                _swap(pipeline, {id(j): lane.real for j, lane in zip(by_real.values(), lanes, strict=True)})
        for lane in lanes:
            lane.ledger.forget(list(lane.deferring.conversations()))
        # the run's time is from its start (the first submission follows at once), not the final pass's
        return _timed_from(results, started)
    finally:
        for lane in lanes:
            await lane.api.aclose()
            await lane.real.aclose()
            lane.ledger.close()


def _timed_from(results: EvaluationResults, started: float) -> EvaluationResults:
    """``results`` with the wall time of the whole batch run (rounds, polls and the final pass)."""
    results.stats = results.stats.model_copy(update={"wall_time_s": time.monotonic() - started})
    results._report = None  # summary() is built from the stats on first use
    return results


def _tell(options: BatchOptions, message: str) -> None:
    log.info("%s", message)
    if options.notify is not None:
        options.notify(message)


def _intent(lane: Lane, record: Mapping[str, Any]) -> Intent:
    known = frozenset(b["id"] for b in lane.ledger.batches())
    return Intent(id=record["id"], started_at=record["started_at"], requests=record["requests"], known=known)


async def _resolve_intents(lane: Lane, options: BatchOptions) -> None:
    """Look up the batches an earlier run was creating when it stopped (its create reply lost, or killed).

    A batch found is taken on as if its create had answered; an intent with no batch is dropped, and
    its requests are deferred again. Nothing is created before this lookup.
    """
    for record in lane.ledger.intents():
        intent = _intent(lane, record)
        found = await lane.api.find(intent)
        if found is None:
            lane.ledger.drop_intent(intent.id)
            _tell(
                options,
                f"no batch was created for {intent.requests} requests of an earlier run: sending them again",
            )
            continue
        custom_ids = [str(c) for c in record.get("custom_ids", [])]
        if found not in intent.known:
            lane.ledger.add_batch(
                found, lane.real.info.provider, lane.real.info.spec, custom_ids, intent=intent.id
            )
            lane.deferring.in_flight.update(custom_ids)
        else:
            lane.ledger.drop_intent(intent.id)
        _tell(options, f"found batch {found} ({intent.requests} requests), created by an earlier run")


async def submit_deferred(lane: Lane, options: BatchOptions) -> int:
    """Send the lane's deferred requests as provider batches; returns how many were sent.

    Each batch's intent is in the ledger before its create is sent, so a run stopped in between (or a
    lost reply) is looked up by the next run rather than created twice.
    """
    items = lane.deferring.take_outbox()
    for start in range(0, len(items), options.max_requests):
        chunk = items[start : start + options.max_requests]
        custom_ids = [c for c, _ in chunk]
        record = lane.ledger.add_intent(custom_ids)
        batch_id = await lane.api.submit(
            chunk, _intent(lane, record), functools.partial(lane.ledger.drop_intent, record["id"])
        )
        lane.ledger.add_batch(
            batch_id, lane.real.info.provider, lane.real.info.spec, custom_ids, intent=record["id"]
        )
        lane.deferring.in_flight.update(custom_ids)
        _tell(options, f"submitted batch {batch_id} ({len(chunk)} requests) to {lane.real.info.spec}")
    return len(items)


async def collect_batches(lanes: list[Lane], options: BatchOptions, started: float) -> None:
    """Look up the batches an earlier run was creating, then wait for every open batch; file the results."""
    for lane in lanes:
        await _resolve_intents(lane, options)
    await _wait(lanes, options, started)


async def _wait(lanes: list[Lane], options: BatchOptions, started: float) -> None:
    """Wait for every open batch to end and file its results; BatchPendingError past ``max_wait_s``."""
    while True:
        waiting: list[str] = []
        for lane in lanes:
            for record in lane.ledger.open_batches():
                state = await lane.api.poll(record["id"])
                if not state.ended:
                    waiting.append(record["id"])
                    _tell(options, f"batch {state.id}: {state.status} ({state.progress})")
                    continue
                custom_ids = lane.ledger.custom_ids(record["id"])
                results = await lane.api.results(record["id"], custom_ids)
                for custom_id, reply in results.items():
                    lane.ledger.add_reply(custom_id, reply)
                lane.deferring.in_flight.difference_update(custom_ids)
                lane.ledger.mark_collected(record["id"], state.status)
                _tell(options, f"batch {state.id}: {state.status} ({state.progress}); results read")
        if not waiting:
            return
        waited = time.monotonic() - started
        if options.max_wait_s is not None and waited + options.poll_interval_s > options.max_wait_s:
            raise BatchPendingError(waiting, str(options.folder()), waited)
        await asyncio.sleep(options.poll_interval_s)
