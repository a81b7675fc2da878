r"""custom: a function you write scores the output, in Python or in sandboxed JavaScript.

The function receives the output and returns ``{score, details}`` (a bare number or boolean is also
accepted); the score is clamped to [0, 1] and compared against the threshold (default 0.9). ``negate``
is refused: the function itself is the place to express the inversion.

- **Python**: any callable ``(output) -> {"score": ..., "details": ...}``, sync or async. Sync
  callables run on a worker thread so a slow check does not stall the event loop.
- **JavaScript** (for suites loaded from files): source text that evaluates to a function, e.g.
  ``(output) => ({ score: output.split('\n').length <= 3 ? 1 : 0, details: 'At most three lines' })``.
  It runs in a fresh QuickJS context per call (the ``quickjs`` package: a separate JavaScript engine,
  not Node), on a worker thread: no ``require``, ``process``, ``fs``, ``fetch`` or module loader exists
  there, nothing of Python is exposed to it, and each call is capped at ``memory_limit_mb`` (64 MB) and
  ``timeout`` (5 s). QuickJS measures the time cap in process CPU time, so under heavy load in the same
  process a script is stopped sooner, never later. An async function's promise is awaited.

A function that throws, exceeds a cap or returns something unusable gives a result without a score and
a message saying which (status ``timeout`` for the time cap, ``invalid_input`` otherwise), never an
exception out of :meth:`~ragmetrics.metrics.evaluators.Evaluator.evaluate`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import gc
import inspect
import json
import math
import numbers
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ragmetrics.errors import ConfigError, MissingDependencyError, shorten
from ragmetrics.metrics.evaluators import DEFAULT_THRESHOLD, Evaluator, Scored

__all__ = ["CustomEvaluator"]

JS_TIMEOUT_S = 5.0
JS_MEMORY_MB = 64

# Runs inside the sandbox. The user's source is first tried as an expression (the documented arrow
# function form), then as a script whose completion value is the function. Results leave as JSON text.
_HARNESS = r"""
globalThis.__rm_result = null;
(function () {
  var src = globalThis.__rm_source, out = globalThis.__rm_output;
  delete globalThis.__rm_source;
  delete globalThis.__rm_output;
  function describe(e) {
    try { return (e && e.stack) ? String(e) + "\n" + e.stack : String(e); } catch (_) { return "an error"; }
  }
  function finite(v) { return (typeof v === "number" && !isFinite(v)) ? String(v) : v; }
  function settle(ok, payload) {
    try {
      if (ok && payload !== null && typeof payload === "object" && "score" in payload) {
        payload = {score: finite(payload.score), details: payload.details};
      } else if (ok) {
        payload = finite(payload);
      }
      globalThis.__rm_result = JSON.stringify(ok ? {ok: true, value: payload === undefined ? null : payload}
                                                 : {ok: false, error: payload});
    } catch (e) {
      globalThis.__rm_result = JSON.stringify(
        {ok: false, error: "the result cannot be turned into JSON: " + describe(e)});
    }
  }
  Promise.resolve().then(function () {
    var fn;
    try {
      fn = (0, eval)("(\n" + src + "\n)");
    } catch (e) {
      if (!(e instanceof SyntaxError)) throw e;
      fn = (0, eval)(src);
    }
    if (typeof fn !== "function") {
      throw new TypeError("the custom code must evaluate to a function of the output, e.g. " +
        "(output) => ({score: 1, details: 'ok'}); it evaluated to " + typeof fn);
    }
    return fn(out);
  }).then(function (value) { settle(true, value); }, function (e) { settle(false, describe(e)); });
})();
"""

_SYNTAX_CHECK = r"""
(function () {
  var src = globalThis.__rm_source;
  try { new Function("return (\n" + src + "\n);"); return ""; } catch (e) {}
  try { new Function(src); return ""; } catch (e) { return String(e); }
})()
"""


@dataclass(frozen=True, slots=True)
class _JsOutcome:
    value: Any = None
    error: str | None = None
    kind: str = "ok"  # ok | threw | timeout | memory | stack


def _quickjs() -> Any:
    try:
        import quickjs
    except ImportError as exc:  # pragma: no cover - quickjs is a core dependency
        raise MissingDependencyError("quickjs", "custom", "custom JavaScript evaluators") from exc
    return quickjs


def _classify(message: str) -> str:
    if "interrupted" in message:
        return "timeout"
    # QuickJS throws null when it cannot even allocate the error object: the memory cap was hit.
    if "out of memory" in message or message.strip() in ("", "null"):
        return "memory"
    if "stack overflow" in message:
        return "stack"
    return "threw"


@functools.cache
def _js_thread() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread that touches QuickJS.

    QuickJS runtimes are not thread-safe and check stack depth against the thread that made them, so
    every context is created, used, freed and garbage-collected on this single thread.
    """
    return concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragmetrics-quickjs")


def _on_js_thread(fn: Any, *args: Any) -> Any:
    def run() -> Any:
        try:
            return fn(*args)
        finally:
            gc.collect()  # free any QuickJS objects caught in cycles here, not on another thread

    return _js_thread().submit(run)


def _run_js(source: str, output: str, timeout: float, memory_bytes: int) -> _JsOutcome:
    """Run the user's function on ``output`` in a fresh context; everything it touches dies here."""
    quickjs = _quickjs()
    ctx = quickjs.Context()
    try:
        ctx.set_memory_limit(memory_bytes)
        ctx.set_time_limit(timeout)
        ctx.set("__rm_source", source)
        ctx.set("__rm_output", output)
        ctx.eval(_HARNESS)
        while ctx.execute_pending_job():
            pass
        raw = ctx.eval("globalThis.__rm_result")
    except (quickjs.JSException, quickjs.StackOverflow) as exc:
        message = str(exc)
        return _JsOutcome(error=message, kind=_classify(message))
    finally:
        del ctx
    if raw is None:
        return _JsOutcome(error="the function's promise never settled", kind="threw")
    data = json.loads(raw)
    if data.get("ok"):
        return _JsOutcome(value=_numbers_back(data.get("value")))
    message = str(data.get("error", ""))
    return _JsOutcome(error=message, kind=_classify(message))


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _numbers_back(value: Any) -> Any:
    """Undo the harness's spelling of NaN and the infinities (JSON has none)."""
    if isinstance(value, dict) and isinstance(value.get("score"), str) and value["score"] in _NON_FINITE:
        return {**value, "score": _NON_FINITE[value["score"]]}
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    return value


def _check_js(source: str) -> str:
    quickjs = _quickjs()
    ctx = quickjs.Context()
    try:
        ctx.set_memory_limit(JS_MEMORY_MB * 1024 * 1024)
        ctx.set_time_limit(JS_TIMEOUT_S)
        ctx.set("__rm_source", source)
        return str(ctx.eval(_SYNTAX_CHECK))
    except (quickjs.JSException, quickjs.StackOverflow) as exc:
        return str(exc)
    finally:
        del ctx


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
        if math.isnan(number):
            return None, details, "the function returned a score that is NaN"
        return number, details, None
    return None, details, f"the score must be a number or a boolean, got {shorten(repr(value), 120)}"


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
        timeout: JavaScript time cap in seconds (default 5).
        memory_limit_mb: JavaScript memory cap in megabytes (default 64).

    Raises:
        ConfigError: ``negate`` is set, the function is neither callable nor a string, the JavaScript
            does not parse, or a cap is out of range.
    """

    name = "custom"

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
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 60:
            raise ConfigError(f"custom: timeout must be a number of seconds in (0, 60], got {timeout!r}")
        if (
            isinstance(memory_limit_mb, bool)
            or not isinstance(memory_limit_mb, int)
            or not 1 <= memory_limit_mb <= 1024
        ):
            raise ConfigError(
                f"custom: memory_limit_mb must be an integer in [1, 1024], got {memory_limit_mb!r}"
            )
        self.timeout = float(timeout)
        self.memory_limit_mb = memory_limit_mb
        if isinstance(function, str):
            if not function.strip():
                raise ConfigError("custom: the JavaScript source is empty")
            problem = _on_js_thread(_check_js, function).result()
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
            import hashlib

            code = "js:" + hashlib.sha256(self.source.encode("utf-8")).hexdigest()[:12]
        else:
            code = "py:" + getattr(self.function, "__qualname__", type(self.function).__name__)
        return {"function": code, "threshold": self.threshold}

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        if self.source is not None:
            outcome = await asyncio.wrap_future(
                _on_js_thread(
                    _run_js, self.source, prediction, self.timeout, self.memory_limit_mb * 1024 * 1024
                )
            )
            if outcome.kind != "ok":
                return self._js_failure(outcome)
            value = outcome.value
        else:
            try:
                value = await self._call_python(prediction)
            except Exception as exc:  # noqa: BLE001 - the user's function failing is data, not a crash
                return Scored(
                    score=None,
                    status="invalid_input",
                    message=f"custom: the function raised {type(exc).__name__}: {shorten(str(exc), 300)}",
                    details={"traceback": shorten("".join(traceback.format_exception(exc)), 4000)},
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

    def _js_failure(self, outcome: _JsOutcome) -> Scored:
        first = shorten((outcome.error or "").strip().splitlines()[0] if outcome.error else "", 300)
        if outcome.kind == "timeout":
            return Scored(
                score=None,
                status="timeout",
                message=f"custom: the JavaScript ran past the {self.timeout:g} s time limit and was stopped",
            )
        if outcome.kind == "memory":
            message = (
                f"custom: the JavaScript exceeded the {self.memory_limit_mb} MB memory limit and was "
                "stopped (or it threw null)"
            )
        elif outcome.kind == "stack":
            message = "custom: the JavaScript overflowed its stack (runaway recursion?) and was stopped"
        else:
            message = f"custom: the JavaScript threw an error: {first}"
        return Scored(
            score=None,
            status="invalid_input",
            message=message,
            details={"error": shorten(outcome.error or "", 2000)},
        )
