"""Every HTTP attempt of a judge request, counted: first sends, re-asks, retries and tokens.

The SDK clients of the provider judges carry httpx event hooks (:func:`event_hooks`) that report
each POST sent and each response received to the :class:`Meter` of the judge request running in the
current task. The meter sits in a context variable, so concurrent requests sharing one SDK client
never mix, and it sees every attempt whoever makes it: instructor's re-asks, the retry loop, the
truncation retries and the tools-to-JSON fallback alike, whether the call then succeeds or fails.

An attempt after a reply that arrived (2xx) is a re-ask unless the judge said it is re-sending
(truncated output); an attempt after no reply or an error status is a retry. Tokens are read from
the ``usage`` of every 2xx body (OpenAI ``prompt_tokens``/``completion_tokens``, Anthropic
``input_tokens``/``output_tokens``); an attempt without one is ``unmetered``.

What a request spent when it was cancelled (its sample timed out) has no result to ride on; it is
added to the :func:`unclaimed` tally of the enclosing row instead, so the row's record still counts it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ragmetrics.score import Usage

__all__ = ["Meter", "Tally", "current", "event_hooks", "metering", "note_unclaimed", "unclaimed"]


@dataclass(slots=True)
class Meter:
    """The attempts of one judge request."""

    calls: int = 0
    reasks: int = 0
    retries: int = 0
    metered: int = 0
    """Attempts whose reply reported token usage."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _answered: bool = False
    """The last attempt got a 2xx reply."""
    _resending: bool = False
    """The judge is re-sending on purpose (truncated reply, transient failure)."""

    def sent(self) -> None:
        """An HTTP request left for the provider."""
        if self.calls:
            if self._answered and not self._resending:
                self.reasks += 1
            else:
                self.retries += 1
        self.calls += 1
        self._answered = self._resending = False

    def answered(self, status: int, body: Any) -> None:
        """A response arrived with ``status``; ``body`` is its parsed JSON (or None)."""
        self._answered = 200 <= status < 300
        usage = body.get("usage") if isinstance(body, dict) else None
        if not self._answered or not isinstance(usage, dict):
            return
        prompt = _count(usage.get("prompt_tokens", usage.get("input_tokens")))
        completion = _count(usage.get("completion_tokens", usage.get("output_tokens")))
        if prompt is not None or completion is not None:
            self.metered += 1
            self.prompt_tokens += prompt or 0
            self.completion_tokens += completion or 0

    def resend(self) -> None:
        """The judge is about to send the request again (truncation or a transient failure): a retry."""
        self._resending = True

    def usage(self, cost: Callable[[int, int], float]) -> Usage:
        """What the attempts so far cost, priced by ``cost(prompt_tokens, completion_tokens)``."""
        return Usage(
            calls=self.calls,
            reasks=self.reasks,
            retries=self.retries,
            unmetered=self.calls - self.metered,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost_usd=cost(self.prompt_tokens, self.completion_tokens),
        )


def _count(value: Any) -> int | None:
    """A token count from a reply: a non-negative int, else None (a server cannot bill negative tokens)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


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


async def _on_request(request: Any) -> None:
    meter = _METER.get()
    if meter is not None and request.method == "POST":
        meter.sent()


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
