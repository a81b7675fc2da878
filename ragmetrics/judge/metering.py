"""Every HTTP attempt of a judge request, counted: first sends, re-asks, retries and tokens.

The provider judges' SDK clients carry httpx event hooks (:func:`event_hooks`) that report each POST
and response to the :class:`Meter` of the judge request running in the current task (a context
variable, so concurrent requests on one client never mix). An attempt after a 2xx reply is a re-ask
(unless the judge is re-sending truncated output), any other a retry. Tokens come from each 2xx
body's ``usage`` when :func:`plausible` (bounded by :data:`TRUST_FACTOR` times ragmetrics' own
estimate and :data:`MAX_ATTEMPT_TOKENS`), else the attempt is ``estimated``; an attempt with no 2xx
reply is ``unmetered``. What a cancelled request spent goes to the row's :func:`unclaimed` tally.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ragmetrics.score import Usage
from ragmetrics.text import tokens_for_chars

__all__ = [
    "MAX_ATTEMPT_TOKENS",
    "TRUST_FACTOR",
    "CallCap",
    "CallCapReached",
    "Meter",
    "Tally",
    "call_cap",
    "current",
    "current_cap",
    "event_hooks",
    "metering",
    "note_unclaimed",
    "plausible",
    "unclaimed",
]

TRUST_FACTOR = 100
"""A reported token count above this many times ragmetrics' estimate (plus :data:`_SLACK`) is not believed."""
MAX_ATTEMPT_TOKENS = 10_000_000
"""No model reads or writes more tokens than this in one call (the largest context windows are 1-10 M)."""
_SLACK = 1_000
"""Tokens allowed above the scaled estimate, so that tiny requests are not judged on rounding."""
_MAX_TOKENS = re.compile(rb'(?<!\\)"max(?:_completion)?_tokens"\s*:\s*(\d{1,12})')


def plausible(reported: Any, estimate: int | None, *, allowed: int = 0) -> bool:
    """Whether a reported token count can be believed.

    It must be a whole number in [0, :data:`MAX_ATTEMPT_TOKENS`] and, when ``estimate`` is known, at
    most ``TRUST_FACTOR * estimate + 1000`` (or ``allowed``, e.g. the ``max_tokens`` asked for).
    """
    if isinstance(reported, bool) or not isinstance(reported, int):
        return False
    if not 0 <= reported <= MAX_ATTEMPT_TOKENS:
        return False
    return estimate is None or reported <= max(allowed, TRUST_FACTOR * estimate + _SLACK)


@dataclass(slots=True)
class Meter:
    """The attempts of one judge request."""

    calls: int = 0
    reasks: int = 0
    retries: int = 0
    metered: int = 0
    """Attempts whose reply reported a token usage that was believed."""
    estimated: int = 0
    """Attempts answered without a usage or with an implausible one, priced at ragmetrics' estimate."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    downgraded: int = 0
    """1 if the request was answered in a weaker structured-output form than a strict tool call."""
    _answered: bool = False
    """The last attempt got a 2xx reply."""
    _resending: bool = False
    """The judge is re-sending on purpose (truncated reply, transient failure)."""
    _prompt_estimate: int | None = None
    """Estimated prompt tokens of the attempt in flight (None: unknown)."""
    _max_tokens: int = 0
    """The ``max_tokens`` the attempt in flight asked for (0: unknown)."""

    def sent(self, prompt_estimate: int | None = None, max_tokens: int = 0) -> None:
        """An HTTP request left for the provider, of about ``prompt_estimate`` tokens."""
        if self.calls:
            if self._answered and not self._resending:
                self.reasks += 1
            else:
                self.retries += 1
        self.calls += 1
        self._answered = self._resending = False
        self._prompt_estimate, self._max_tokens = prompt_estimate, max_tokens

    def answered(self, status: int, body: Any, completion_estimate: int | None = None) -> None:
        """A response arrived with ``status``; ``body`` is its parsed JSON (or None).

        ``completion_estimate`` (tokens of the reply's text) defaults to the estimate from ``body``.
        """
        self._answered = 200 <= status < 300
        if not self._answered:
            return
        usage = body.get("usage") if isinstance(body, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
        completion = usage.get("completion_tokens", usage.get("output_tokens"))
        if completion_estimate is None and self._prompt_estimate is not None:
            completion_estimate = tokens_for_chars(reply_chars(body))
        # an answer without usage was still served (and billed): priced at our estimate, as a lie is
        believed = (prompt is not None or completion is not None) and (
            (prompt is None or plausible(prompt, self._prompt_estimate))
            and (completion is None or plausible(completion, completion_estimate, allowed=self._max_tokens))
        )
        if believed:
            self.metered += 1
            self.prompt_tokens += prompt or 0
            self.completion_tokens += completion or 0
            return
        self.estimated += 1
        self.prompt_tokens += self._prompt_estimate or 0
        self.completion_tokens += completion_estimate or 0

    def resend(self) -> None:
        """The judge is about to send the request again (truncation or a transient failure): a retry."""
        self._resending = True

    def usage(self, cost: Callable[[int, int], float]) -> Usage:
        """What the attempts so far cost, priced by ``cost(prompt_tokens, completion_tokens)``."""
        return Usage(
            calls=self.calls,
            reasks=self.reasks,
            retries=self.retries,
            unmetered=self.calls - self.metered - self.estimated,
            estimated=self.estimated,
            downgraded=self.downgraded,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost_usd=cost(self.prompt_tokens, self.completion_tokens),
        )


def reply_chars(body: Any) -> int:
    """Characters of the text a chat or messages reply carries (content, tool arguments, tool input)."""
    if not isinstance(body, dict):
        return 0
    chars = 0
    for choice in _items(body.get("choices")):
        message = _get(choice, "message")
        texts = [_get(message, "content"), _get(_get(message, "function_call"), "arguments")]
        texts += [_get(_get(call, "function"), "arguments") for call in _items(_get(message, "tool_calls"))]
        chars += sum(len(t) for t in texts if isinstance(t, str))
    for block in _items(body.get("content")):
        text = _get(block, "text")
        if isinstance(text, str):
            chars += len(text)
        elif _get(block, "input") is not None:
            chars += len(json.dumps(_get(block, "input")))
    return chars


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def request_estimate(content: bytes) -> tuple[int, int]:
    """(estimated prompt tokens, ``max_tokens`` asked for or 0) of a request body."""
    limits = [int(m) for m in _MAX_TOKENS.findall(content)]
    return tokens_for_chars(len(content.decode("utf-8", "replace"))), max(limits, default=0)


_METER: ContextVar[Meter | None] = ContextVar("ragmetrics_meter", default=None)


def current() -> Meter | None:
    """The meter of the judge request running in this task, if any."""
    return _METER.get()


@contextmanager
def metering() -> Iterator[Meter]:
    """Count the HTTP attempts made inside the block (and in tasks it starts) on a fresh meter."""
    meter = Meter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


class CallCapReached(Exception):  # noqa: N818 - a refusal, not a bug
    """An attempt was not sent: the run's ``max_calls`` were all sent already."""


@dataclass(slots=True)
class CallCap:
    """A run's ``max_calls``: every POST of our guarded clients counts when it is sent."""

    max_calls: int
    sent: int = 0
    """Attempts sent so far (first sends, re-asks and retries alike)."""
    refused: int = 0
    """Attempts not sent because the cap was reached."""

    @property
    def full(self) -> bool:
        """No attempt may be sent any more."""
        return self.sent >= self.max_calls


_CAP: ContextVar[CallCap | None] = ContextVar("ragmetrics_call_cap", default=None)


def current_cap() -> CallCap | None:
    """The call cap of the run this task belongs to, if any."""
    return _CAP.get()


@contextmanager
def call_cap(cap: CallCap | None) -> Iterator[CallCap | None]:
    """Count (and cap) the POSTs sent inside the block, and in tasks it starts, on ``cap``."""
    token = _CAP.set(cap)
    try:
        yield cap
    finally:
        _CAP.reset(token)


async def _on_request(request: Any) -> None:
    cap = _CAP.get()
    if cap is not None and request.method == "POST":
        if cap.full:  # raised before the request is written: nothing reaches the server
            cap.refused += 1
            raise CallCapReached(f"max_calls={cap.max_calls} reached: this attempt was not sent")
        cap.sent += 1
    meter = _METER.get()
    if meter is not None and request.method == "POST":
        try:
            content = request.content
        except Exception:  # noqa: BLE001 - a streamed body has no content to estimate from
            meter.sent()
            return
        meter.sent(*request_estimate(content))


async def _on_response(response: Any) -> None:
    meter = _METER.get()
    if meter is None or response.request.method != "POST":
        return
    body: Any = None
    if 200 <= response.status_code < 300:
        try:
            await response.aread()
            body = json.loads(response.content)
        except Exception:  # noqa: BLE001 - the SDK reports an unreadable body itself; no usage here
            body = None
    meter.answered(response.status_code, body)


def event_hooks() -> dict[str, list[Any]]:
    """The ``event_hooks`` of an SDK's httpx ``http_client``: they feed the current request's meter."""
    return {"request": [_on_request], "response": [_on_response]}


@dataclass(slots=True)
class Tally:
    """Usage spent by judge requests that were cancelled before they could return it."""

    usage: Usage = field(default_factory=Usage)


_UNCLAIMED: ContextVar[Tally | None] = ContextVar("ragmetrics_unclaimed", default=None)


@contextmanager
def unclaimed() -> Iterator[Tally]:
    """Collect, for the block and the tasks it starts, what cancelled judge requests had spent."""
    tally = Tally()
    token = _UNCLAIMED.set(tally)
    try:
        yield tally
    finally:
        _UNCLAIMED.reset(token)


def note_unclaimed(usage: Usage) -> None:
    """Add a cancelled request's spend to the enclosing :func:`unclaimed` tally (if there is one)."""
    tally = _UNCLAIMED.get()
    if tally is not None and usage.calls:
        tally.usage = tally.usage + usage
