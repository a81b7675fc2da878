"""Retry policy for transient provider failures: exponential backoff with jitter that honours Retry-After.

Only transient failures are retried here (429, 5xx, timeouts, dropped connections), all with the same
exponential backoff; a timeout also waits at least a quarter of the timeout (a slow local server is
likely still computing the abandoned request) and, like a 429, halves the concurrency limit. Schema and JSON
failures are re-asked by instructor with its own small budget, and truncated output is retried by the
provider adapter with more room. Adapters classify SDK exceptions into :class:`Failure` values.
"""

from __future__ import annotations

import datetime as _dt
import random
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from tenacity import RetryCallState
from tenacity.wait import wait_base

from ragmetrics.score import Status

__all__ = [
    "REFUSED_WAIT_S",
    "Failure",
    "RetryPolicy",
    "WaitRetryAfterOrBackoff",
    "http_failure",
    "parse_retry_after",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how long to wait between attempts at one request."""

    max_attempts: int = 6
    initial_s: float = 0.5
    """First backoff; doubled each attempt."""
    maximum_s: float = 30.0
    """Longest backoff (Retry-After may ask for longer, up to ``max_retry_after_s``)."""
    jitter: float = 0.5
    """Random extra wait, as a fraction of the backoff (spreads retries apart)."""
    max_retry_after_s: float = 120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A classified provider failure."""

    status: Status
    """Result status it maps to: rate_limited, timeout, provider_error, truncated, judge_output_invalid."""
    transient: bool
    """Whether another attempt may succeed."""
    message: str
    http_status: int | None = None
    retry_after_s: float | None = None
    min_wait_s: float = 0.0
    """Least wait before the next attempt (up to the policy's ``maximum_s``): after a timeout, a
    quarter of the timeout, so a server still computing the abandoned request is not sent it again
    at once."""
    hint: str | None = None
    refused: bool = False
    """The connection was refused (nothing listens at that address): the judge is not starting up, it
    is not there, so while it has never answered, its retries come quickly (see ``max_wait_s``)."""
    max_wait_s: float | None = None
    """Longest wait before the next attempt, when set (a refused connection to a judge that never
    answered: :data:`REFUSED_WAIT_S`), so a dead judge is reported within seconds."""


REFUSED_WAIT_S = 0.25
"""Longest wait between attempts while every attempt at a judge that never answered was refused."""


class TransientFailure(Exception):
    """Raised inside the retry loop for a transient failure; carries the classification."""

    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        super().__init__(failure.message)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``-style seconds) header value."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = (when - _dt.datetime.now(when.tzinfo or _dt.timezone.utc)).total_seconds()
    return max(0.0, seconds)


def http_failure(code: int, retry_after: str | None, text: str, hints: Mapping[int, str]) -> Failure:
    """Classify a provider's HTTP error status: 429 and 408/409/5xx are transient, the rest fatal.

    Args:
        code: The HTTP status.
        retry_after: The ``Retry-After`` header value, if any.
        text: The provider's error message.
        hints: What to do, per fatal status (e.g. 401: which key variable to check).
    """
    wait = parse_retry_after(retry_after)
    if code == 429:
        return Failure(
            status="rate_limited",
            transient=True,
            http_status=code,
            retry_after_s=wait,
            message=f"rate limited: {text}",
        )
    if code in (408, 409) or code >= 500:
        return Failure(
            status="provider_error",
            transient=True,
            http_status=code,
            retry_after_s=wait,
            message=f"server error: {text}",
        )
    return Failure(
        status="provider_error",
        transient=False,
        http_status=code,
        message=f"request refused: {text}",
        hint=hints.get(code),
    )


class WaitRetryAfterOrBackoff(wait_base):
    """Wait what the server asked for (Retry-After), else exponential backoff with jitter."""

    def __init__(self, policy: RetryPolicy, rng: random.Random | None = None) -> None:
        self.policy = policy
        self.rng = rng or random.Random()

    def __call__(self, retry_state: RetryCallState) -> float:
        """Seconds to wait before the next attempt (tenacity's wait protocol)."""
        policy = self.policy
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        backoff = min(policy.maximum_s, policy.initial_s * 2.0 ** (retry_state.attempt_number - 1))
        backoff += backoff * policy.jitter * self.rng.random()
        if isinstance(exc, TransientFailure) and exc.failure.retry_after_s is not None:
            return min(policy.max_retry_after_s, max(exc.failure.retry_after_s, 0.0))
        if isinstance(exc, TransientFailure):
            backoff = max(backoff, min(policy.maximum_s, exc.failure.min_wait_s))
            if exc.failure.max_wait_s is not None:
                backoff = min(backoff, exc.failure.max_wait_s)
        return backoff
