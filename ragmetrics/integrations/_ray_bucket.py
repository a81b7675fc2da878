"""One rate limit for a whole Ray cluster: the bucket (a Ray actor) and each worker's gate to it.

:class:`RateBucket` runs as one named actor per quota: the request and token buckets (a
:class:`~ragmetrics.judge.limits.RateLimiter`) and the cluster's 429 signal, which halves the rates
and tells every worker to halve its concurrency; a Retry-After holds every worker's next grant (at
most ``MAX_HOLD_S``). :class:`ClusterGate` is the worker side, a
:class:`~ragmetrics.judge.limits.RateGate` that also hooks the judge's
:class:`~ragmetrics.judge.limits.AdaptiveLimiter`. The bucket keeps no per-worker state. Nothing here
imports ray: ``ragmetrics.integrations.ray`` makes the actor remote.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from ragmetrics.judge.limits import AdaptiveLimiter, RateGate, RateLimiter

__all__ = ["MAX_HOLD_S", "ClusterGate", "RateBucket"]

MAX_HOLD_S = 60.0
"""The longest a Retry-After may hold the whole cluster's grants."""

_LOG_SIZE = 10_000
"""Grants and holds kept for :meth:`RateBucket.log` (the latest ones)."""


class RateBucket:
    """The cluster-wide token buckets and 429 signal (the body of a Ray actor; async methods).

    Args:
        requests_per_minute: Cap on requests started per minute over the whole cluster (None: none).
        tokens_per_minute: Cap on prompt + completion tokens per minute (None: none).
        burst_s: Seconds' worth of each rate the buckets may hold (as :class:`RateLimiter`).
        cooldown_s: After a cut, further 429s within this time are the same signal (no second cut).
        recover_s: After a cut, the rates climb back linearly, by the full cap per ``recover_s``.
        floor: The least share of the caps a run of cuts may leave.
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        burst_s: float = 1.0,
        cooldown_s: float = 1.0,
        recover_s: float = 10.0,
        floor: float = 1 / 16,
    ) -> None:
        self._caps = (requests_per_minute, tokens_per_minute)
        self._rate = (
            RateLimiter(requests_per_minute, tokens_per_minute, burst_s=burst_s)
            if (requests_per_minute or tokens_per_minute)
            else None
        )
        self._cooldown_s = cooldown_s
        self._recover_s = recover_s
        self._floor = floor
        self._lock: asyncio.Lock | None = None
        self._cut_share = 1.0
        self._last_cut = float("-inf")
        self.cuts = 0
        self.requests = 0
        self.throttles = 0
        self._first: float | None = None
        self._last = 0.0
        self._hold_until = float("-inf")
        self.held_s = 0.0
        self._grants: deque[float] = deque(maxlen=_LOG_SIZE)
        self._holds: deque[tuple[float, float]] = deque(maxlen=_LOG_SIZE)
        self._attempts: dict[str, int] = {}

    def config(self) -> dict[str, float | None]:
        """The caps this bucket was made with (to check that a shared bucket is the one meant)."""
        return {"requests_per_minute": self._caps[0], "tokens_per_minute": self._caps[1]}

    def _share(self, now: float) -> float:
        """The share of the caps in force: 1 until a cut, then climbing back from the cut share."""
        return min(1.0, self._cut_share + (now - self._last_cut) / self._recover_s)

    async def acquire(self, tokens: int = 0) -> int:
        """Wait for one request of ``tokens`` prompt tokens under the caps; returns the cut count."""
        self.requests += 1
        rate = self._rate
        if rate is not None:
            if self._lock is None:  # made here, on the actor's event loop
                self._lock = asyncio.Lock()
            async with self._lock:
                await self._hold()
                share = self._share(time.monotonic())
                rpm, tpm = self._caps
                rate.requests_per_minute = rpm * share if rpm else None
                rate.tokens_per_minute = tpm * share if tpm else None
                await rate.acquire(tokens)
                await self._hold()  # a Retry-After that came in while the rate made this one wait
        else:
            await self._hold()
        # no await from the last hold check to here: every grant after a throttle is past its hold
        self._last = time.monotonic()
        self._grants.append(self._last)
        if self._first is None:
            self._first = self._last
        return self.cuts

    async def _hold(self) -> None:
        """Wait out a Retry-After some worker was given (the hold may grow while waiting)."""
        while (wait := self._hold_until - time.monotonic()) > 0:
            self.held_s += wait
            await asyncio.sleep(wait)

    def record(self, tokens: int) -> None:
        """Debit tokens a reply used beyond those acquired (its completion)."""
        if self._rate is not None and tokens > 0:
            self._rate.record(tokens)

    def throttle(self, retry_after_s: float | None = None) -> int:
        """A worker saw a rate limit: halve the rates and count a cut (once per ``cooldown_s``).

        With the server's ``retry_after_s``, no grant is given to any worker until then (at most
        ``MAX_HOLD_S`` from now; a negative or non-finite value is ignored).
        """
        self.throttles += 1
        now = time.monotonic()
        if isinstance(retry_after_s, (int, float)) and 0 < retry_after_s < float("inf"):
            self._hold_until = max(self._hold_until, now + min(float(retry_after_s), MAX_HOLD_S))
            self._holds.append((now, self._hold_until))
        if now - self._last_cut >= self._cooldown_s:
            self._cut_share = max(self._floor, self._share(now) / 2)
            self._last_cut = now
            self.cuts += 1
        return self.cuts

    def stats(self) -> dict[str, float]:
        """What the bucket did: requests, 429s reported, cuts, share of the caps in force, time waited.

        ``span_s`` is the time from the first request granted to the last.
        """
        return {
            "requests": self.requests,
            "span_s": self._last - self._first if self._first is not None else 0.0,
            "throttles": self.throttles,
            "cuts": self.cuts,
            "share": self._share(time.monotonic()),
            "waited_s": self._rate.waited_s if self._rate is not None else 0.0,
            "held_s": self.held_s,
        }

    def log(self) -> dict[str, list[Any]]:
        """The latest grants and Retry-After holds, on this actor's monotonic clock.

        ``grants`` are grant times, ``holds`` are ``[set_at, until]``: every grant later than a hold's
        ``set_at`` is at or after its ``until``.
        """
        return {"grants": list(self._grants), "holds": [list(h) for h in self._holds]}

    def attempt(self, key: str) -> int:
        """Count one more attempt at the batch ``key``; returns how many there have been."""
        self._attempts[key] = count = self._attempts.get(key, 0) + 1
        return count

    def done(self, key: str) -> None:
        """The batch ``key`` finished: forget its attempts."""
        self._attempts.pop(key, None)


class ClusterGate:
    """A judge's :class:`RateGate` that asks the cluster's :class:`RateBucket` actor.

    Built around the judge's own limiter, it sends that limiter's 429s to the bucket
    (``limiter.on_throttle``) and, when the bucket reports a cut made for another worker's 429, cuts
    the limiter too. A local gate (the judge's own ``requests_per_minute``) still applies after it.

    Args:
        bucket: The bucket's Ray actor handle.
        limiter: The judge's concurrency limiter.
        local: The judge's own rate gate, if it had one.
    """

    def __init__(self, bucket: Any, limiter: AdaptiveLimiter, local: RateGate | None = None) -> None:
        self._bucket = bucket
        self._limiter = limiter
        self._local = local
        self._seen = 0
        self.followed = 0
        """Cuts made to this worker's limit for other workers' rate limits."""
        limiter.on_throttle = self._throttled

    async def acquire(self, tokens: int = 0) -> None:
        """Wait for the cluster's bucket (then the local gate, if any)."""
        cuts = await self._bucket.acquire.remote(tokens)
        if cuts > self._seen:
            self._seen = cuts
            self.followed += 1
            self._limiter.cut()  # within the limiter's cooldown of its own cut, this one is a no-op
        if self._local is not None:
            await self._local.acquire(tokens)

    def record(self, tokens: int) -> None:
        """Debit the reply's extra tokens at the bucket (not awaited: nothing waits on it)."""
        if tokens > 0:
            self._bucket.record.remote(tokens)
        if self._local is not None:
            self._local.record(tokens)

    def _throttled(self, retry_after_s: float | None) -> None:
        self._bucket.throttle.remote(retry_after_s)
