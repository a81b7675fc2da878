"""The one run loop: a few workers pull items lazily, run them, and hand back what they return.

:func:`run_bounded` is what the pipeline's :meth:`~ragmetrics.pipeline.EvaluationPipeline.evaluate`
and :meth:`~ragmetrics.pipeline.EvaluationPipeline.stream` and the suites'
:func:`~ragmetrics.regression.suite.run_suite` run on: ``concurrency`` workers take items from an
iterator one at a time (so a stream of 100,000 rows holds only ``concurrency`` in flight) and push
results through a bounded queue. The work function turns its own failures into records (see
:mod:`ragmetrics.score`); an exception that escapes it (a bug, a dataset read error) ends the
run and is raised to the consumer. Leaving the loop early (an error in the consumer, ``break``,
cancellation) cancels the workers and waits for them to unwind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["run_bounded"]

T = TypeVar("T")
R = TypeVar("R")

_DONE = object()
_NONE = object()


@dataclass(frozen=True, slots=True)
class _Abort:
    exc: BaseException


async def _close_when_done(workers: Sequence[asyncio.Task[None]], out: asyncio.Queue[Any]) -> None:
    try:
        await asyncio.gather(*workers)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # a bug or a dataset read error: end the run with it
        await out.put(_Abort(exc))
        return
    await out.put(_DONE)


async def run_bounded(
    items: Iterator[T], work: Callable[[T], Awaitable[R]], *, concurrency: int
) -> AsyncGenerator[R, None]:
    """Run ``work`` on every item, at most ``concurrency`` at a time; yield results as they finish.

    Use it under ``contextlib.aclosing`` so that leaving the loop early stops the workers at once.

    Args:
        items: The items, pulled lazily (one per free worker).
        work: Runs one item; it should record its own failures rather than raise.
        concurrency: Workers, so items in flight at once.

    Raises:
        BaseException: Whatever escaped ``work`` or the iterator first; the run stops there.
    """
    out: asyncio.Queue[Any] = asyncio.Queue(maxsize=concurrency * 2)

    async def worker() -> None:
        while True:
            item = next(items, _NONE)
            if item is _NONE:
                return
            await out.put(await work(item))  # type: ignore[arg-type]

    workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
    closer = asyncio.create_task(_close_when_done(workers, out))
    try:
        while True:
            got = await out.get()
            if got is _DONE:
                return
            if isinstance(got, _Abort):
                raise got.exc
            yield got
    finally:
        for task in (*workers, closer):
            task.cancel()
        await asyncio.gather(*workers, closer, return_exceptions=True)
