"""Helpers shared by the instructor-based adapters: the re-ask policy and reading its results.

Instructor re-asks only on schema/JSON failures here, through a tenacity policy we own (a bare
integer would do the same in recent releases, but our own instance also tells how many attempts ran).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from ragmetrics.errors import redact
from ragmetrics.judge.providers._deadline import deadline_message
from ragmetrics.judge.retry import Failure, http_failure

__all__ = [
    "classify_call_error",
    "classify_instructor",
    "classify_reply",
    "hit_token_limit",
    "prepared",
    "reask_policy",
    "total_tokens",
    "used_all",
]


@functools.lru_cache(maxsize=128)
def prepared(model: type[Any]) -> type[Any]:
    """``model`` wrapped once as instructor's ``ResponseSchema``.

    Given a plain pydantic model, instructor builds a new wrapper class on every request (measured:
    about a millisecond of CPU per call); given one that is already a ``ResponseSchema`` it uses it
    as is. The wrapper subclasses ``model``, so replies are still instances of it.
    """
    import instructor

    return instructor.response_schema(model)


def _parse_errors() -> tuple[type[BaseException], ...]:
    from instructor.core.exceptions import ResponseParsingError

    return (ValidationError, json.JSONDecodeError, ResponseParsingError)


def reask_policy(reasks: int, cut: Callable[[], bool] | None = None) -> AsyncRetrying:
    """A fresh re-ask policy: ``reasks`` more attempts after invalid output, no waiting.

    ``cut`` says whether the last reply used its whole completion limit: a re-ask at the same limit
    cannot help it (it would be cut again), so none is sent and the adapter retries with more room.
    """
    errors = _parse_errors()

    def reask(exc: BaseException) -> bool:
        return isinstance(exc, errors) and not (cut is not None and cut())

    return AsyncRetrying(stop=stop_after_attempt(reasks + 1), retry=retry_if_exception(reask), reraise=True)


def used_all(completion: Any, max_tokens: int) -> bool:
    """Whether a reply used its whole completion limit (cut off, whatever its finish reason says)."""
    usage = getattr(completion, "usage", None)
    used = getattr(usage, "completion_tokens", None)
    if used is None:
        used = getattr(usage, "output_tokens", None)
    return isinstance(used, int) and used >= max_tokens


def total_tokens(value: Any, fallback: Any) -> tuple[int, int]:
    """(prompt, completion) tokens over every attempt instructor made, from its accumulated usage.

    A count that is not a whole non-negative number (NaN, negative, a string) reads as 0; the judge's
    meter decides what an attempt is billed at (see :func:`ragmetrics.judge.metering.plausible`).
    """
    usage = getattr(value, "_total_usage", None) or getattr(fallback, "usage", None)
    if usage is None:
        return 0, 0
    prompt = getattr(usage, "prompt_tokens", None)
    if prompt is None:
        prompt = getattr(usage, "input_tokens", 0)
    completion = getattr(usage, "completion_tokens", None)
    if completion is None:
        completion = getattr(usage, "output_tokens", 0)
    return _whole(prompt), _whole(completion)


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def classify_instructor(exc: BaseException) -> tuple[Failure | None, BaseException]:
    """Classify instructor's own exceptions; returns (failure or None, the exception to look at next).

    Instructor wraps SDK errors raised inside its loop in ``InstructorRetryException``; the cause is
    returned so that the adapter can classify the SDK error itself.
    """
    from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException

    if isinstance(exc, IncompleteOutputException):
        return Failure(status="truncated", transient=False, message="finish_reason=length"), exc
    if isinstance(exc, InstructorRetryException):
        cause = exc.__cause__ or exc.__context__
        if cause is not None and not isinstance(cause, _parse_errors()):
            return None, cause
        reply = _last_reply_text(getattr(exc, "last_completion", None))
        problems = _problems(cause)
        return Failure(
            status="judge_output_invalid",
            transient=False,
            message=f"last reply failed validation: {'; '.join(problems)[:300]} (reply: {reply[:200]!r})",
            hint="try a stronger judge model, or check that the server supports tool calling / JSON mode",
        ), exc
    if isinstance(exc, _parse_errors()):
        return Failure(
            status="judge_output_invalid",
            transient=False,
            message=f"output failed validation: {'; '.join(_problems(exc))[:300]}",
        ), exc
    return None, exc


def classify_reply(exc: BaseException, cause: BaseException) -> Failure | None:
    """A 2xx reply that instructor could not read: a gateway's error body, or a body nothing can parse.

    Some gateways answer HTTP 200 with ``{"error": ...}`` instead of an error status: that is the
    provider's error, transient or not by the code it carries (transient when it carries none, as a
    gateway's upstream failure is). A body nested too deep to decode, or one without the fields of a
    reply, is a provider error that retrying the same server will not fix.

    Returns:
        The failure, or None when ``exc`` is not instructor's wrapper around such a reply.
    """
    from instructor.core.exceptions import InstructorRetryException

    if not isinstance(exc, InstructorRetryException):
        return None
    error = _error_in(getattr(exc, "last_completion", None))
    if error is not None:
        message, code = error
        text = f"the server answered HTTP 200 with an error instead of a reply: {message[:300]}"
        if code is not None and 400 <= code < 600:
            return dataclasses.replace(http_failure(code, None, "", {}), message=text, http_status=None)
        return Failure(status="provider_error", transient=True, message=text)
    if isinstance(cause, RecursionError):
        why = "its JSON nests too deep to decode"
    else:
        why = f"{type(cause).__name__}: {str(cause)[:200]}"
    return Failure(
        status="provider_error",
        transient=False,
        message=f"the server's reply could not be read as a completion ({why})",
        hint="check that the base URL points at an OpenAI- or Anthropic-compatible API",
    )


def _error_in(completion: Any) -> tuple[str, int | None] | None:
    """The (message, code) of an error object inside a 2xx reply body, if it carries one."""
    extra = getattr(completion, "model_extra", None)
    error = extra.get("error") if isinstance(extra, dict) else None
    if error is None and getattr(completion, "type", None) == "error":  # Anthropic's shape
        error = getattr(completion, "error", None) or {}
    if error is None:
        return None
    if not isinstance(error, dict):
        return str(error), None
    message = error.get("message") or error.get("type") or json.dumps(error, default=str)[:300]
    code = error.get("code", error.get("status"))
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    return str(message), code if isinstance(code, int) and not isinstance(code, bool) else None


def hit_token_limit(exc: BaseException, max_tokens: int) -> bool:
    """Whether an invalid last reply used the whole completion budget: cut off, whatever it says.

    Some servers report a tool call cut off at ``max_tokens`` with ``finish_reason: "tool_calls"``
    (llama-cpp-python 0.3.x hard-codes it), so truncation shows only as invalid JSON; a reply that
    spent every token it was allowed is treated as truncated and retried with more room.
    """
    return used_all(getattr(exc, "last_completion", None), max_tokens)


def _problems(exc: BaseException | None) -> list[str]:
    if isinstance(exc, ValidationError):
        return [f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()][:5]
    return [str(exc)] if exc is not None else []


def _last_reply_text(completion: Any) -> str:
    if completion is None:
        return ""
    try:
        message = completion.choices[0].message
        if message.tool_calls:
            return str(message.tool_calls[0].function.arguments)
        return str(message.content or "")
    except (AttributeError, IndexError, TypeError):
        pass
    try:
        return " ".join(str(getattr(b, "input", "") or getattr(b, "text", "")) for b in completion.content)
    except (AttributeError, TypeError):
        return str(completion)[:500]


def classify_call_error(
    exc: BaseException,
    sdk: Any,
    *,
    host: str,
    timeout_s: float,
    hints: Mapping[int, str],
    text: Callable[[Any], str],
    secret: str | None = None,
) -> Failure | None:
    """Classify what one structured call raised: instructor's errors, then the SDK's.

    The ``openai`` and ``anthropic`` SDKs name and shape their errors alike (``APITimeoutError``,
    ``APIConnectionError``, ``APIStatusError`` with ``status_code`` and ``response``), so one function
    serves both adapters.

    Args:
        exc: What the call raised.
        sdk: The SDK module (``openai`` or ``anthropic``).
        host: Where the call went, for the connection-error message.
        timeout_s: The per-call timeout, for the timeout message.
        hints: What to do per fatal HTTP status.
        text: The provider's error message from an ``APIStatusError``.
        secret: The API key the call sent: any copy of it in the message (a proxy or gateway that
            echoes the request) is replaced by ``[redacted]``, so records, CSV and reports never hold it.

    Returns:
        The failure, or None when the exception is not one of these (the caller re-raises it).
    """
    failure = _classify(exc, sdk, host=host, timeout_s=timeout_s, hints=hints, text=text)
    if failure is None:
        return None
    clean = redact(failure.message, secret)
    return failure if clean == failure.message else dataclasses.replace(failure, message=clean)


def _refused(exc: BaseException) -> bool:
    """Whether a connection error was a refused connection (its causes hold a ConnectionRefusedError)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError) or "connection refused" in str(cause).lower():
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _classify(
    exc: BaseException,
    sdk: Any,
    *,
    host: str,
    timeout_s: float,
    hints: Mapping[int, str],
    text: Callable[[Any], str],
) -> Failure | None:
    original = exc
    failure, exc = classify_instructor(exc)
    if failure is not None:
        return failure
    if isinstance(exc, sdk.APITimeoutError):
        return Failure(
            status="timeout",
            transient=True,
            message=deadline_message(exc) or f"no reply within {timeout_s:g} s",
            min_wait_s=timeout_s / 4,
        )
    if isinstance(exc, sdk.APIConnectionError):
        return Failure(
            status="provider_error",
            transient=True,
            message=f"could not connect to {host}: {exc}",
            refused=_refused(exc),
        )
    if isinstance(exc, sdk.APIStatusError):
        return http_failure(exc.status_code, exc.response.headers.get("retry-after"), text(exc), hints)
    return classify_reply(original, exc)
