r"""custom: a function you write scores the output, in Python or in sandboxed JavaScript.

The function receives the output and returns ``{score, details}`` (or a bare number or boolean); the
score is clamped to [0, 1] and compared with the threshold (default 0.9); NaN is ``invalid_input`` and
``negate`` is refused. A Python callable (sync or async; sync ones run on a worker thread) is called
directly. JavaScript source (for suites loaded from files) runs in a fresh QuickJS context inside a
sandbox process from a small pool (:mod:`ragmetrics.metrics.evaluators._js_pool`), with no access to
the host, under a ``timeout`` and a ``memory_limit_mb``. A function that throws, exceeds a cap,
crashes or returns something unusable gives a result without a score and a message saying which,
never an exception out of :meth:`~ragmetrics.metrics.evaluators.base.Evaluator.evaluate`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import importlib.util
import inspect
import json
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

from ragmetrics._check import check_int, check_seconds
from ragmetrics.errors import ConfigError, MissingDependencyError, shorten
from ragmetrics.metrics.evaluators._js_pool import JsOutcome, shared_pool
from ragmetrics.metrics.evaluators.base import DEFAULT_THRESHOLD, Evaluator, Scored
from ragmetrics.score import failure_from

__all__ = ["CustomEvaluator"]

JS_TIMEOUT_S = 5.0
JS_MEMORY_MB = 64


def _run_js(source: str, output: str, timeout: float, memory_mb: int) -> concurrent.futures.Future[JsOutcome]:
    """Evaluate the user's function on ``output`` in a sandbox process; the future never raises."""
    request = {
        "op": "run",
        "source": source,
        "output": output,
        "timeout": timeout,
        "memory_bytes": memory_mb * 1024 * 1024,
    }
    return shared_pool().submit(request)


def _check_js(source: str) -> str:
    """Why ``source`` does not parse as a function (empty when it does), checked in a sandbox process."""
    if importlib.util.find_spec("quickjs") is None:  # pragma: no cover - quickjs is a core dependency
        raise MissingDependencyError("quickjs", "custom", "custom JavaScript evaluators")
    request = {"op": "check", "source": source, "timeout": JS_TIMEOUT_S, "memory_bytes": JS_MEMORY_MB << 20}
    outcome = shared_pool().submit(request).result()
    if outcome.kind == "ok":
        return str(outcome.value)
    return f"checking it failed ({outcome.kind}): {outcome.error or 'no detail'}"


def _coerce(value: Any) -> tuple[float | None, Any, str | None]:
    """``(score, details, problem)`` from what the function returned."""
    details: Any = None
    if isinstance(value, Mapping):
        if "score" not in value:
            return None, None, f"the function returned an object without 'score': {shorten(repr(value), 120)}"
        details = value.get("details")
        value = value["score"]
    if isinstance(value, bool):
        return (1.0 if value else 0.0), details, None
    numeric = isinstance(value, numbers.Real) or hasattr(value, "__float__")  # numpy scalars, Decimal
    if numeric and not isinstance(value, (str, bytes)):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            return None, details, f"the score must be a number or a boolean, got {shorten(repr(value), 120)}"
        if not math.isfinite(number):
            label = "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
            return None, details, f"the function returned a score that is {label}, not a finite number"
        return number, details, None
    return None, details, f"the score must be a number or a boolean, got {shorten(repr(value), 120)}"


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _json_safe(value: Any) -> Any:
    """``value`` if it survives a JSON round trip (results are serialised), else its text."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return str(value)


class CustomEvaluator(Evaluator):
    """Score the output with your own function: a Python callable or JavaScript source.

    Args:
        function: A callable ``(output) -> {score, details}`` (sync or async), or JavaScript source
            that evaluates to such a function.
        threshold: Pass mark for the clamped score (default 0.9).
        negate: Not available: raises ConfigError when true.
        timeout: JavaScript wall-clock cap in seconds for the whole evaluation (default 5).
        memory_limit_mb: JavaScript memory cap in megabytes (default 64).

    Raises:
        ConfigError: ``negate`` is set, the function is neither callable nor a string, the JavaScript
            does not parse, or a cap is out of range.
    """

    name = "custom"
    primary_option = "function"

    def __init__(
        self,
        function: Callable[[str], Any] | str,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        negate: bool = False,
        timeout: float = JS_TIMEOUT_S,
        memory_limit_mb: int = JS_MEMORY_MB,
    ) -> None:
        if negate is not False:
            raise ConfigError(
                "custom: negate is not available; express the inversion in the function itself "
                "(return 1 - score)"
            )
        super().__init__(threshold=threshold)
        check_seconds(timeout, "timeout", "custom")
        check_int(memory_limit_mb, "memory_limit_mb", "custom", minimum=1, maximum=1024)
        self.timeout = float(timeout)
        self.memory_limit_mb = memory_limit_mb
        if isinstance(function, str):
            if not function.strip():
                raise ConfigError("custom: the JavaScript source is empty")
            problem = _check_js(function)
            if problem:
                raise ConfigError(f"custom: the JavaScript does not parse: {shorten(problem.strip(), 300)}")
            self.language = "javascript"
            self.source: str | None = function
            self.function: Callable[[str], Any] | None = None
        elif callable(function):
            self.language = "python"
            self.source = None
            self.function = function
        else:
            kind = type(function).__name__
            raise ConfigError(f"custom: function must be a Python callable or JavaScript source, got {kind}")

    def _options(self) -> dict[str, object]:
        if self.source is not None:
            code = "js:" + hashlib.sha256(self.source.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        else:
            code = "py:" + getattr(self.function, "__qualname__", type(self.function).__name__)
        return {"function": code, "threshold": self.threshold}

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        if self.source is not None:
            outcome = await asyncio.wrap_future(
                _run_js(self.source, prediction, self.timeout, self.memory_limit_mb)
            )
            if outcome.kind != "ok":
                return self._js_failure(outcome)
            value = outcome.value
            if outcome.nonfinite is not None:  # JSON has no NaN or Infinity: the harness names them
                number = _NON_FINITE.get(outcome.nonfinite, math.nan)
                value = {**value, "score": number} if isinstance(value, dict) else number
        else:
            try:
                value = await self._call_python(prediction)
            except Exception as exc:  # noqa: BLE001 - the user's function failing is data, not a crash
                failure = failure_from(exc, traceback=True)
                return Scored(
                    score=None,
                    status="invalid_input",
                    message=f"custom: the function raised {failure.type}: {shorten(str(exc), 300)}",
                    details={"traceback": shorten(failure.traceback or "", 4000)},
                )
        score, details, problem = _coerce(value)
        if problem is not None or score is None:
            return Scored(score=None, status="invalid_input", message=f"custom: {problem}")
        clamped = min(1.0, max(0.0, score))
        text = (
            details
            if isinstance(details, str)
            else (json.dumps(details, default=str) if details is not None else "")
        )
        reasoning = f"Custom {self.language} check scored {clamped:.4f}, threshold: {self.threshold:.4f}"
        reasoning += f": {shorten(text, 300)}" if text else "."
        extra: dict[str, Any] = {"details": _json_safe(details)} if details is not None else {}
        if clamped != score:
            extra["raw_score"] = score
        return Scored(score=clamped, reasoning=reasoning, details=extra)

    async def _call_python(self, output: str) -> Any:
        function = self.function
        assert function is not None
        call = type(function).__call__ if not inspect.isroutine(function) else None
        if inspect.iscoroutinefunction(function) or (call is not None and inspect.iscoroutinefunction(call)):
            return await function(output)
        result = await asyncio.to_thread(function, output)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _js_failure(self, outcome: JsOutcome) -> Scored:
        first = shorten(outcome.error.strip().splitlines()[0] if outcome.error.strip() else "", 300)
        if outcome.kind == "timeout":
            return Scored(
                score=None,
                status="timeout",
                message=f"custom: the JavaScript ran past the {self.timeout:g} s time limit and was stopped",
                details={"error": shorten(outcome.error, 2000)},
            )
        if outcome.kind == "memory":
            message = (
                f"custom: the JavaScript exceeded the {self.memory_limit_mb} MB memory limit and was "
                "stopped (or it threw null)"
            )
        elif outcome.kind == "stack":
            message = "custom: the JavaScript overflowed its stack (runaway recursion?) and was stopped"
        elif outcome.kind == "unusable":
            message = f"custom: the function's result cannot be used: {first}"
        elif outcome.kind == "crashed":
            # QuickJS crashes on some paths when a script reaches its memory limit (building the error's
            # backtrace) and in JSON.stringify of a value nested ~100,000 deep
            message = (
                f"custom: the JavaScript crashed its sandbox process ({first}; QuickJS does this on some "
                f"out-of-memory paths near the {self.memory_limit_mb} MB limit and on very deep values); "
                "the process was replaced and the run goes on"
            )
        elif outcome.kind == "internal":
            message = f"custom: the JavaScript sandbox failed: {first}"
        else:
            message = f"custom: the JavaScript threw an error: {first}"
        return Scored(
            score=None,
            status="invalid_input",
            message=message,
            details={"error": shorten(outcome.error, 2000)},
        )
