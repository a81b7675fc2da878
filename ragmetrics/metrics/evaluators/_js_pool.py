"""Sandbox processes for custom JavaScript: a small pool of reusable workers, each replaceable.

Every evaluation of custom JavaScript runs in a worker process (``_js_worker``),
never in the host. The pool keeps up to :data:`POOL_SIZE` workers; each evaluation takes an idle one
(or starts one), sends the request and waits for the reply on the pipe with a wall-clock deadline of
the time cap plus :data:`GRACE_S`. A worker that misses the deadline is killed, one that crashes is
reaped, and either way the evaluation gets an outcome (``timeout``, ``crashed``) and the next one gets a
fresh worker. Evaluations run side by side (one pool thread each), so a stalled script holds up only
its own worker. Replies longer than the result cap are refused unread.

The pool belongs to the process that made it: after a ``fork`` the child starts its own. Workers are
closed at interpreter exit.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics.metrics.evaluators import _js_worker

__all__ = ["GRACE_S", "POOL_SIZE", "JsOutcome", "JsPool", "shared_pool"]

POOL_SIZE = min(16, max(4, os.cpu_count() or 1))
"""Most JavaScript evaluations (and worker processes) at once in one host process."""
GRACE_S = 0.5
"""How long past its time cap a worker may take to answer before it is killed."""
START_TIMEOUT_S = 30.0
"""How long a new worker may take to start (interpreter plus ``import quickjs``) on a loaded machine."""
MAX_JOBS_PER_WORKER = 1000
"""Evaluations a worker serves before it is replaced (bounds what fragmentation or a leak can grow)."""
_MAX_FRAME = _js_worker.MAX_RESULT_CHARS * 4 + 4096  # UTF-8 of the longest result, plus its envelope
_WORKER_SCRIPT = Path(_js_worker.__file__)


@dataclass(frozen=True, slots=True, kw_only=True)
class JsOutcome:
    """How one evaluation ended.

    ``kind`` is ``ok`` (``value`` holds what the function returned), ``threw``, ``unusable`` (the
    result could not be turned into JSON), ``timeout``, ``memory``, ``stack``, ``crashed`` (the worker
    died) or ``internal`` (the sandbox itself failed); ``error`` says more. ``nonfinite`` names a
    returned score JSON cannot carry (``NaN``, ``Infinity``, ``-Infinity``).
    """

    kind: str
    value: Any = None
    nonfinite: str | None = None
    error: str = ""


class _Stalled(Exception):
    pass


class _Died(Exception):
    pass


def _classify(message: str) -> str:
    if "interrupted" in message:
        return "timeout"
    # QuickJS throws null when it cannot even allocate the error object: the memory cap was hit.
    if "out of memory" in message or message.strip() in ("", "null"):
        return "memory"
    if "stack overflow" in message:
        return "stack"
    return "threw"


def _clean(text: object) -> str:
    """Text safe to store anywhere: lone surrogates (from the JavaScript) replaced."""
    return str(text).encode("utf-8", "replace").decode("utf-8")


def _outcome(body: bytes) -> JsOutcome:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return JsOutcome(kind="internal", error=f"the sandbox's reply is not JSON: {exc}")
    if not isinstance(data, dict):
        return JsOutcome(kind="internal", error="the sandbox's reply is not an object")
    kind = data.get("kind")
    if data.get("ok") is True:
        return JsOutcome(kind="ok", value=data.get("value"), nonfinite=data.get("nonfinite"))
    error = _clean(data.get("error", ""))
    if kind == "ok":  # a syntax check
        return JsOutcome(kind="ok", value=_clean(data.get("problem", "")))
    if kind in ("unusable", "timeout", "memory", "internal"):
        return JsOutcome(kind=kind, error=error)
    return JsOutcome(kind=_classify(error), error=error)


class _Worker:
    """One sandbox process and its two pipes (non-blocking on this side, read and written with poll)."""

    def __init__(self) -> None:
        self.jobs = 0
        self.proc = subprocess.Popen(  # noqa: S603 - our interpreter running our own script
            [sys.executable, "-I", str(_WORKER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in the terminal reaches the host, which closes the pool
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)

    def _wait(self, fd: int, events: int, deadline: float) -> None:
        poller = select.poll()
        poller.register(fd, events)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Stalled
            if poller.poll(max(1, int(left * 1000))):
                return

    def send(self, body: bytes, deadline: float) -> None:
        view = memoryview(len(body).to_bytes(4, "big") + body)
        while view:
            self._wait(self._in, select.POLLOUT, deadline)
            try:
                view = view[os.write(self._in, view) :]
            except BlockingIOError:
                continue
            except OSError as exc:  # BrokenPipeError: the worker is gone
                raise _Died from exc

    def _read(self, size: int, deadline: float) -> bytes:
        data = bytearray()
        while len(data) < size:
            self._wait(self._out, select.POLLIN, deadline)
            try:
                chunk = os.read(self._out, min(size - len(data), 1 << 20))
            except BlockingIOError:
                continue
            if not chunk:
                raise _Died
            data += chunk
        return bytes(data)

    def receive(self, deadline: float) -> bytes:
        size = int.from_bytes(self._read(4, deadline), "big")
        if size > _MAX_FRAME:
            raise _Died(f"the sandbox sent a {size}-byte reply, over the {_MAX_FRAME}-byte limit")
        return self._read(size, deadline)

    def end(self, *, kill: bool) -> int:
        """Stop the process (politely when idle: closing stdin ends it) and return its exit code."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        if kill and self.proc.poll() is None:
            self.proc.kill()
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.proc.stdout.close()
        return code


def _death(code: int) -> JsOutcome:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == getattr(signal, "SIGXCPU", None):
            return JsOutcome(kind="timeout", error="the sandbox process hit its CPU-time limit (SIGXCPU)")
        return JsOutcome(kind="crashed", error=f"killed by {name}")
    return JsOutcome(kind="crashed", error=f"it exited with code {code}")


class JsPool:
    """Worker processes for JavaScript evaluations, at most ``size`` at once.

    Args:
        size: Most evaluations in flight (one worker process each).
        max_jobs: Evaluations a worker serves before it is replaced (1: a fresh process every time).
    """

    def __init__(self, size: int = POOL_SIZE, max_jobs: int = MAX_JOBS_PER_WORKER) -> None:
        self._threads = concurrent.futures.ThreadPoolExecutor(
            max_workers=size, thread_name_prefix="ragmetrics-js"
        )
        self._max_jobs = max_jobs
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._closed = False

    def submit(self, request: dict[str, Any]) -> concurrent.futures.Future[JsOutcome]:
        """Run ``request`` (see ``_js_worker``) on a pool thread; never fails."""
        try:
            return self._threads.submit(self.run, request)
        except RuntimeError as exc:  # shut down: the interpreter is exiting
            done: concurrent.futures.Future[JsOutcome] = concurrent.futures.Future()
            done.set_result(JsOutcome(kind="internal", error=f"the JavaScript sandbox is closed: {exc}"))
            return done

    def run(self, request: dict[str, Any]) -> JsOutcome:
        """Run ``request`` in a worker and wait for it (at most its ``timeout`` plus :data:`GRACE_S`)."""
        output = request.get("output", "")
        if len(output) > request["memory_bytes"]:  # QuickJS needs at least a byte per character
            return JsOutcome(kind="memory", error=f"the output ({len(output)} characters) cannot fit")
        body = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")
        if len(body) >= 1 << 32:
            return JsOutcome(kind="memory", error=f"the request ({len(body)} bytes) cannot be framed")
        try:
            worker = self._take()
        except (OSError, _Died) as exc:
            return JsOutcome(kind="internal", error=f"the JavaScript sandbox could not start: {exc}")
        try:
            deadline = time.monotonic() + float(request["timeout"]) + GRACE_S
            worker.send(body, deadline)
            reply = worker.receive(deadline)
        except _Stalled:
            self._drop(worker)
            return JsOutcome(kind="timeout", error="the sandbox process was killed at the time limit")
        except _Died as exc:
            code = self._drop(worker)
            return JsOutcome(kind="crashed", error=str(exc)) if exc.args else _death(code)
        except BaseException:  # its state is unknown: it must not serve another evaluation
            self._drop(worker)
            raise
        worker.jobs += 1
        self._give_back(worker)
        return _outcome(reply)

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise _Died("the pool is closed (the interpreter is exiting)")
            if self._idle:
                return self._idle.pop()
        worker = _Worker()
        try:
            hello = json.loads(worker.receive(time.monotonic() + START_TIMEOUT_S))
        except (_Stalled, _Died, ValueError):
            self._drop(worker)
            raise _Died("the sandbox process did not report ready") from None
        if isinstance(hello, dict) and hello.get("kind") == "ready":
            return worker
        self._drop(worker)
        raise _Died(_clean(hello.get("error", hello) if isinstance(hello, dict) else hello))

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            keep = not self._closed and worker.jobs < self._max_jobs
            if keep:
                self._idle.append(worker)
                return
        worker.end(kill=False)

    def _drop(self, worker: _Worker) -> int:
        return worker.end(kill=True)

    def close(self) -> None:
        """Stop the idle workers; busy ones stop when their evaluation ends, queued ones are cancelled."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.end(kill=False)
        self._threads.shutdown(wait=False, cancel_futures=True)


_shared: tuple[int, JsPool] | None = None
_shared_lock = threading.Lock()


def shared_pool() -> JsPool:
    """The pool of this process (made on first use; a forked child makes its own)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared[0] != os.getpid():
            pool = JsPool()
            atexit.register(pool.close)
            _shared = (os.getpid(), pool)
        return _shared[1]
