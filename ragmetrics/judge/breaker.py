"""A dead judge stops the run early: a circuit breaker over one provider judge's calls.

Connection failures are transient and retried (``max_attempts`` per call, with backoff), and 401/403
are fatal per call but every call still tries; so a judge that is not there (a closed port, a wrong
base URL, a bad API key) used to cost every call of a run its full retry budget. The breaker counts
*dead* failures (the server could not be reached, or refused the credentials with 401/403) in a row;
any answer from the server (a success, a 429 or 5xx, an invalid reply) shows it is alive and resets
the count, and timeouts leave it alone. It trips after :data:`DEAD_AFTER` dead failures in a row when
nothing has succeeded yet; once the judge has answered, a streak must also last :data:`MIN_OUTAGE_S`
seconds, so a short network blip in a long run does not end it. Once tripped, calls fail at once with
a ``provider_error`` saying the judge is unreachable and why; after :data:`PROBE_AFTER_S` seconds one
call is let through as a probe, and its success closes the breaker again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ragmetrics.judge.retry import Failure

__all__ = ["DEAD_AFTER", "MIN_OUTAGE_S", "PROBE_AFTER_S", "DeadJudgeBreaker", "is_dead_failure"]

DEAD_AFTER = 5
"""Dead failures in a row (with nothing succeeding) that trip the breaker."""
MIN_OUTAGE_S = 30.0
"""After a success, how long a streak of dead failures must last before it trips the breaker."""
PROBE_AFTER_S = 30.0
"""How long a tripped breaker fails calls at once before it lets one through to see."""

_AUTH_STATUSES = frozenset({401, 403})


def is_dead_failure(failure: Failure) -> bool:
    """True for a failure that says the judge cannot be used at all: no connection, or 401/403."""
    if failure.http_status in _AUTH_STATUSES:
        return True
    return failure.status == "provider_error" and failure.http_status is None and failure.transient


class DeadJudgeBreaker:
    """Counts dead failures of one judge; once tripped, :meth:`check` fails calls at once.

    Args:
        dead_after: Dead failures in a row that trip it (>= 1).
        min_outage_s: After any success, the least duration of such a streak before it trips.
        probe_after_s: Seconds a tripped breaker waits before letting one call through.
        clock: A monotonic clock in seconds (for tests).
    """

    def __init__(
        self,
        *,
        dead_after: int = DEAD_AFTER,
        min_outage_s: float = MIN_OUTAGE_S,
        probe_after_s: float = PROBE_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.dead_after = max(1, dead_after)
        self.min_outage_s = min_outage_s
        self.probe_after_s = probe_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._streak = 0
        self._streak_started = 0.0
        self._succeeded = False
        self._tripped_at: float | None = None
        self._last: Failure | None = None
        self.trips = 0
        """Times the breaker tripped."""
        self.refused = 0
        """Calls failed at once because it was tripped."""

    @property
    def tripped(self) -> bool:
        """True while calls fail at once."""
        return self._tripped_at is not None

    @property
    def answered(self) -> bool:
        """True once any attempt got a usable reply."""
        return self._succeeded

    def check(self) -> Failure | None:
        """Before an attempt: None to go ahead, or the failure to raise at once (no request sent)."""
        with self._lock:
            if self._tripped_at is None:
                return None
            now = self._clock()
            if now - self._tripped_at >= self.probe_after_s:
                self._tripped_at = now  # this call is the probe; the others keep failing meanwhile
                return None
            self.refused += 1
            return self._refusal()

    def on_success(self) -> None:
        """An attempt got a usable reply: the judge is alive."""
        with self._lock:
            self._succeeded = True
            self._streak = 0
            self._tripped_at = None

    def on_failure(self, failure: Failure) -> None:
        """An attempt failed as ``failure`` says."""
        with self._lock:
            if failure.status == "timeout" and failure.http_status is None:
                return  # slow is not dead
            if not is_dead_failure(failure):
                self._streak = 0
                self._tripped_at = None
                return
            now = self._clock()
            if self._streak == 0:
                self._streak_started = now
            self._streak += 1
            self._last = failure
            if self._tripped_at is not None:
                self._tripped_at = now  # a failed probe: wait again
                return
            long_enough = not self._succeeded or now - self._streak_started >= self.min_outage_s
            if self._streak >= self.dead_after and long_enough:
                self._tripped_at = now
                self.trips += 1

    def _refusal(self) -> Failure:
        last = self._last
        auth = last is not None and last.http_status in _AUTH_STATUSES
        what = "judge refused the credentials" if auth else "judge unreachable"
        cause = f": {last.message}" if last is not None else ""
        hint = last.hint if last is not None and last.hint else None
        if hint is None:
            hint = "check the key and its access" if auth else "check that the server is running at that URL"
        return Failure(
            status="provider_error",
            transient=False,
            http_status=last.http_status if last is not None else None,
            message=(f"{what}, so calls now fail at once{cause} ({self._streak} failures in a row)"),
            hint=hint,
        )
