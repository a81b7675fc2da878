"""Adaptive concurrency: the bound on LLM requests in flight for one judge.

:class:`AdaptiveLimiter`: additive increase, multiplicative decrease (a 429 halves the limit,
``recover_after`` successes in a row raise it by one), with state per event loop.
:class:`RateLimiter` adds optional requests- and tokens-per-minute caps: two continuously refilled
token buckets holding at most ``burst_s`` seconds' worth. A limit shared beyond this process plugs in
at two seams: :class:`RateGate`, awaited before each request, and
:attr:`AdaptiveLimiter.on_throttle`, told of every rate limit (``ragmetrics.integrations.ray`` uses
both).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["AdaptiveLimiter", "RateGate", "RateLimiter"]


@dataclass(slots=True)
class _LoopState:
    condition: asyncio.Condition
    in_flight: int = 0


@dataclass(slots=True)
class AdaptiveLimiter:
    """Bounds requests in flight; shrinks on rate limits and grows back as calls succeed."""

    maximum: int
    recover_after: int = 8
    cooldown_s: float = 1.0
    """Time after a cut during which further 429s do not cut again."""
    limit: int = field(init=False)
    throttled: int = field(default=0, init=False)
    """How many times a rate limit lowered the limit."""
    _successes: int = field(default=0, init=False)
    _last_cut: float = field(default=float("-inf"), init=False)
    _loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = field(
        default_factory=weakref.WeakKeyDictionary, init=False
    )
    on_throttle: Callable[[float | None], None] | None = field(default=None, repr=False)
    """Seam: called after each rate limit :meth:`on_rate_limited` records, with the server's
    Retry-After in seconds (None: it gave none, or a timeout); a cluster-wide limit passes the signal
    on to every worker (see ``ragmetrics.integrations.ray``). None: nobody else is told."""

    def __post_init__(self) -> None:
        self.limit = self.maximum

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            state = _LoopState(condition=asyncio.Condition())
            self._loops[loop] = state
        return state

    async def acquire(self) -> None:
        """Wait for a free slot."""
        state = self._state()
        async with state.condition:
            await state.condition.wait_for(lambda: state.in_flight < self.limit)
            state.in_flight += 1

    async def release(self) -> None:
        """Free a slot."""
        state = self._state()
        async with state.condition:
            state.in_flight -= 1
            state.condition.notify_all()

    def on_success(self) -> None:
        """Record a success; after ``recover_after`` in a row the limit climbs by one."""
        self._successes += 1
        if self.limit < self.maximum and self._successes >= self.recover_after:
            self.limit += 1
            self._successes = 0

    def on_rate_limited(self, retry_after_s: float | None = None) -> None:
        """Record a 429: halve the limit (at least 1), at most once per ``cooldown_s``; tell ``on_throttle``.

        ``retry_after_s`` is the server's Retry-After (None: none given), passed on to ``on_throttle``.

        A burst of 429s from requests that were all in flight together is one signal, not many:
        without the cooldown, 32 simultaneous 429s would cut a limit of 32 down to 1.
        """
        self.cut()
        if self.on_throttle is not None:
            self.on_throttle(retry_after_s)

    def cut(self) -> None:
        """Halve the limit (at least 1), at most once per ``cooldown_s``, telling no one.

        :meth:`on_rate_limited` calls it for this judge's own 429s; a shared limit calls it when
        another worker saw one.
        """
        self._successes = 0
        now = time.monotonic()
        if now - self._last_cut < self.cooldown_s:
            return
        new = max(1, self.limit // 2)
        if new < self.limit:
            self.throttled += 1
            self._last_cut = now
        self.limit = new


class RateGate(Protocol):
    """Seam: what a judge awaits before each request, and tells of the tokens each reply used.

    :class:`RateLimiter` is the one of a single process; a limit shared by many processes (a Ray
    actor's token bucket) is another.
    """

    async def acquire(self, tokens: int = 0) -> None:
        """Wait until one request of ``tokens`` prompt tokens may be sent."""

    def record(self, tokens: int) -> None:
        """Debit tokens a reply used beyond those acquired."""


@dataclass(slots=True)
class RateLimiter:
    """Requests-per-minute and tokens-per-minute caps (token buckets); either may be None.

    ``acquire(tokens)`` waits until one request and ``tokens`` (the prompt estimate) are available;
    ``record(tokens)`` debits what the reply used beyond that (the completion), which may leave the
    token bucket in debt and so delays the next requests.
    """

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    burst_s: float = 1.0
    """Seconds' worth of each rate the buckets may hold (at least one request, one request's tokens)."""
    waited_s: float = field(default=0.0, init=False)
    """Total time callers spent waiting for the caps."""
    _requests: float = field(default=0.0, init=False)
    _tokens: float = field(default=0.0, init=False)
    _stamp: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0 or None, got {value}")
        self._stamp = time.monotonic()
        self._requests = self._request_capacity()
        self._tokens = self._token_capacity(0)

    def _request_capacity(self) -> float:
        rpm = self.requests_per_minute
        return max(1.0, rpm / 60.0 * self.burst_s) if rpm else 0.0

    def _token_capacity(self, want: float) -> float:
        tpm = self.tokens_per_minute
        return max(float(want), tpm / 60.0 * self.burst_s) if tpm else 0.0

    def _refill(self, want: float) -> None:
        now = time.monotonic()
        elapsed, self._stamp = now - self._stamp, now
        if self.requests_per_minute:
            refill = elapsed * self.requests_per_minute / 60.0
            self._requests = min(self._request_capacity(), self._requests + refill)
        if self.tokens_per_minute:
            refill = elapsed * self.tokens_per_minute / 60.0
            self._tokens = min(self._token_capacity(want), self._tokens + refill)

    async def acquire(self, tokens: int = 0) -> None:
        """Wait until a request (and ``tokens`` prompt tokens) fit under the caps, then take them."""
        while True:
            self._refill(tokens)
            wait = 0.0
            if self.requests_per_minute and self._requests < 1.0:
                wait = (1.0 - self._requests) * 60.0 / self.requests_per_minute
            if self.tokens_per_minute and tokens and self._tokens < tokens:
                wait = max(wait, (tokens - self._tokens) * 60.0 / self.tokens_per_minute)
            if wait <= 0.0:
                if self.requests_per_minute:
                    self._requests -= 1.0
                if self.tokens_per_minute:
                    self._tokens -= tokens
                return
            self.waited_s += wait
            await asyncio.sleep(wait)

    def record(self, tokens: int) -> None:
        """Debit tokens used beyond those acquired (the completion tokens of a reply)."""
        if self.tokens_per_minute and tokens > 0:
            self._refill(0)
            self._tokens -= tokens
