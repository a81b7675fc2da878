"""Test-set generation through the providers' batch APIs (``generate(..., batch=True)``, ``--batch``).

The eval pipeline's batch machinery (:mod:`ragmetrics.pipeline.batch`) with no second client: each
wave of candidate slots runs in rounds through the same
:class:`~ragmetrics.judge.providers.batch_judge.DeferringJudge`, deferring each request not answered
yet and sending a round's deferred requests as one batch, until a round defers nothing: exactly the
attempts a real-time run of that wave makes, at batch prices. A wait stopped by ``max_wait_s`` raises
:class:`~ragmetrics.errors.BatchPendingError` with the earlier waves written; ``resume=True``
collects the batches in the ledger and sends nothing twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ragmetrics.judge import Judge
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.pipeline.batch import (
    BatchOptions,
    collect_batches,
    open_lane,
    refuse_unfinished,
    submit_deferred,
)
from ragmetrics.testset.slots import Slot
from ragmetrics.testset.verify import Attempt

__all__ = ["BatchWaves"]

SlotRun = Callable[[Judge, Slot], Awaitable[Attempt]]


class BatchWaves:
    """Runs the waves of one generation through the provider batch API of ``judge``.

    Args:
        judge: The run's caching provider judge (its disk cache gets every reply a batch brings).
        options: How to submit, poll, wait and resume.

    Raises:
        ConfigError: The judge has no batch API (the offline judge).
    """

    def __init__(self, judge: CachingJudge, options: BatchOptions) -> None:
        self.options = options
        self.lane = open_lane(judge, options)
        self.started = time.monotonic()
        self._ready = False

    async def run(
        self, wave: Sequence[Slot], attempt: SlotRun, also: Callable[[Judge], Awaitable[Any]] | None = None
    ) -> tuple[list[Attempt], Any]:
        """The attempts of ``wave`` (and what ``also`` returns), every call answered through provider batches.

        ``also`` rides in the same batches as the wave (the verifier's canary beside the first wave, so
        it costs no round of its own); None: nothing beside the wave.

        Raises:
            ConfigError: Unfinished batches of an earlier run and ``resume`` off.
            BatchPendingError: ``max_wait_s`` passed with batches still running.
            JudgeError: The batch API itself failed.
        """
        lane, options = self.lane, self.options
        if not self._ready:
            refuse_unfinished([lane], options)
            await collect_batches([lane], options, self.started)
            self._ready = True
        attempts: list[Attempt] = []
        extra: Any = None
        for number in range(1, options.max_rounds + 1):
            lane.deferring.last_round = number == options.max_rounds
            judge = CachingJudge(lane.deferring, None)
            attempts = list(await asyncio.gather(*(attempt(judge, s) for s in wave)))
            extra = await also(judge) if also is not None else None
            if not await submit_deferred(lane, options):
                break
            await collect_batches([lane], options, self.started)
        # the wave's replies are in the judge cache now: a later request for one is a cache hit
        lane.ledger.forget(list(lane.deferring.conversations()))
        lane.deferring.touched.clear()
        return attempts, extra

    async def aclose(self) -> None:
        """Close the batch API client and the ledger (the caller closes the judge)."""
        await self.lane.api.aclose()
        self.lane.ledger.close()
