"""A row's own latency: the time its metrics were running or awaiting something, not queueing.

Many rows share one event loop. A row whose metric is ready to resume still waits for the other
rows' steps (CPU-bound work such as the offline judge holds the loop), so its wall time is close to
the batch's. :func:`timed` drives a coroutine step by step and records two kinds of interval: each
step (its own code running) and each wait on a future it yielded (an HTTP reply, a shared call, a
timer), from the yield until the future is done. A row's latency is the length of the union of its
jobs' intervals: the time when some of its own work was running or being waited for.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["BusyTime", "timed"]

_T = TypeVar("_T")


class BusyTime:
    """The intervals of one row's work (seconds on ``time.perf_counter``)."""

    __slots__ = ("intervals",)

    def __init__(self) -> None:
        self.intervals: list[tuple[float, float]] = []

    def add(self, start: float, end: float) -> None:
        """Record ``[start, end]``; adjacent intervals are merged as they come, so the list stays short."""
        if self.intervals and start <= self.intervals[-1][1]:
            last_start, last_end = self.intervals[-1]
            self.intervals[-1] = (min(last_start, start), max(last_end, end))
        else:
            self.intervals.append((start, end))

    def total_ms(self) -> float:
        """Length of the union of the intervals, in milliseconds."""
        total = 0.0
        current_start = current_end = None
        for start, end in sorted(self.intervals):
            if current_end is None or start > current_end:
                if current_end is not None and current_start is not None:
                    total += current_end - current_start
                current_start, current_end = start, end
            else:
                current_end = max(current_end, end)
        if current_end is not None and current_start is not None:
            total += current_end - current_start
        return total * 1000.0


class _Timed:
    """Awaitable that runs ``coro`` and records its steps and waits into ``busy``."""

    __slots__ = ("busy", "coro")

    def __init__(self, coro: Coroutine[Any, Any, Any], busy: BusyTime) -> None:
        self.coro = coro
        self.busy = busy

    def __await__(self) -> Generator[Any, Any, Any]:
        inner = self.coro.__await__()
        busy = self.busy
        send: Any = None
        error: BaseException | None = None
        while True:
            started = time.perf_counter()
            try:
                yielded = inner.throw(error) if error is not None else inner.send(send)
            except StopIteration as stop:
                busy.add(started, time.perf_counter())
                return stop.value
            except BaseException:
                busy.add(started, time.perf_counter())
                raise
            now = time.perf_counter()
            busy.add(started, now)
            callback = getattr(yielded, "add_done_callback", None)
            if callable(callback):  # a future: its wait is this row's, until it is done
                callback(lambda _f, since=now: busy.add(since, time.perf_counter()))
            try:
                send, error = (yield yielded), None
            except GeneratorExit:
                inner.close()
                raise
            except BaseException as exc:  # cancellation and errors thrown in go to the coroutine
                send, error = None, exc


async def timed(coro: Coroutine[Any, Any, _T], busy: BusyTime) -> _T:
    """Await ``coro``, recording its running and waiting intervals into ``busy``."""
    result: _T = await _Timed(coro, busy)
    return result
