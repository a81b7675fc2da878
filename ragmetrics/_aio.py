"""How ragmetrics runs in its process: coroutines from synchronous code, and the program's start-up.

``run_sync`` is the only bridge the ``*_sync`` twins use: ``asyncio.run`` when no loop runs in this
thread; otherwise (Jupyter, pytest-asyncio) the coroutine runs to completion on a worker thread with
its own loop. The event loop is never patched. ``collector_held`` is ``ragmetrics eval``'s start-up
without garbage-collector passes over what it loads (see :func:`collector_held`); only the program's
own process does that, never a library call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import gc
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["collector_held", "in_notebook", "own_process", "release_collector", "run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion and return its result, with or without a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    ctx = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragmetrics-sync") as pool:
        return pool.submit(ctx.run, asyncio.run, coro).result()


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython's ZMQ shell), without importing IPython."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and hasattr(shell, "kernel")


_own = False
_held = False


def own_process() -> None:
    """Say that this process is the ``ragmetrics`` program's own (its entry point calls this)."""
    global _own
    _own = True


@contextmanager
def collector_held() -> Iterator[None]:
    """Hold the cyclic collector for a command's start-up, in the program's own process only.

    Up to a judged run's first request, CPython's cyclic collector scanned the objects being imported
    (the judge SDK's modules and types, pydantic's schemas) some 340 times, two of them full passes:
    0.13 s of the 0.9 s before the first request, measured, to find next to no garbage. Held, it is
    released by :func:`release_collector` (the first judge call about to be sent, the first record
    done, or a batch run's start, whichever comes first) or at the end: what exists is frozen
    (``gc.freeze``: moved to the permanent generation, never scanned again, so a long run's full
    passes are shorter too) and the collector turned back on. Frozen objects are still freed by
    reference counting; only cyclic garbage made before the first request stays (about 1,600
    objects, 0.3 MB, for the bundled example). Library calls (``evaluate()``, a ``main()`` called
    in-process) leave the caller's collector alone, and a collector someone already turned off is
    left off.
    """
    global _held
    if not _own or _held or not gc.isenabled():
        yield
        return
    gc.disable()
    _held = True
    try:
        yield
    finally:
        release_collector()


def release_collector() -> None:
    """Freeze what start-up made and turn the held collector back on; a no-op unless it is held."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
