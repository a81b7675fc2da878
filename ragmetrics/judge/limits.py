"""Adaptive concurrency: the bound on LLM requests in flight for one judge.

Additive increase, multiplicative decrease: a 429 halves the limit (down to 1) and ``recover_after``
successes in a row raise it by one again, up to the configured maximum. The state is per event loop,
because asyncio primitives cannot cross loops (``*_sync`` calls each run their own loop).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field

__all__ = ["AdaptiveLimiter"]


@dataclass(slots=True)
class _LoopState:
    condition: asyncio.Condition
    in_flight: int = 0


@dataclass(slots=True)
class AdaptiveLimiter:
    """Bounds requests in flight; shrinks on rate limits and grows back as calls succeed."""

    maximum: int
    recover_after: int = 8
    limit: int = field(init=False)
    throttled: int = field(default=0, init=False)
    """How many times a rate limit lowered the limit."""
    _successes: int = field(default=0, init=False)
    _loops: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary, init=False)

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

    def on_rate_limited(self) -> None:
        """Record a 429: halve the limit (at least 1)."""
        self._successes = 0
        new = max(1, self.limit // 2)
        if new < self.limit:
            self.throttled += 1
        self.limit = new
