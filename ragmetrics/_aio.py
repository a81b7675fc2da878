"""Running coroutines from synchronous code, also inside an already running event loop.

``run_sync`` is the only bridge the ``*_sync`` twins use: ``asyncio.run`` when no loop runs in this
thread; otherwise (Jupyter, pytest-asyncio) the coroutine runs to completion on a worker thread with
its own loop. The event loop is never patched.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["in_notebook", "run_sync"]

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
