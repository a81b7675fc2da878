"""A one-line progress bar on stderr: done/total, rate, ETA, cache hits and cost so far.

No dependency: a carriage return and an erase-to-end-of-line sequence redraw the line at most ten
times a second. It is on when the stream is a terminal (or when forced) and off otherwise, so logs
and CI output stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ProgressBar:
    """Draws ``done/total |bar| pct rate ETA cache cost`` on one line.

    Args:
        total: Rows expected, or None when unknown (no bar, no ETA).
        enabled: True to draw, False not to, None to draw only when ``stream`` is a terminal.
        stream: Where to draw (stderr by default).
        min_interval_s: Least time between two redraws.
        width: Characters of the bar itself.
    """

    def __init__(
        self,
        total: int | None,
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        min_interval_s: float = 0.1,
        width: int = 24,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.total = total
        self.min_interval_s = min_interval_s
        self.width = width
        self.started = time.perf_counter()
        self._last_draw = 0.0
        self._last_line = ""
        self.done = 0
        self.failed = 0
        self.cache_hits = 0
        self.cache_requests = 0
        self.cost_usd = 0.0

    def update(
        self,
        done: int,
        *,
        failed: int = 0,
        cache_hits: int = 0,
        cache_requests: int = 0,
        cost_usd: float = 0.0,
        force: bool = False,
    ) -> None:
        """Record progress and redraw if enough time has passed (or ``force``)."""
        self.done, self.failed = done, failed
        self.cache_hits, self.cache_requests, self.cost_usd = cache_hits, cache_requests, cost_usd
        if not self.enabled:
            return
        now = time.perf_counter()
        if force or now - self._last_draw >= self.min_interval_s or done == self.total:
            self._last_draw = now
            self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The text of the bar as it would be drawn now."""
        now = time.perf_counter() if now is None else now
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        parts = []
        if self.total:
            frac = min(1.0, self.done / self.total)
            filled = int(frac * self.width)
            bar = "#" * filled + ("-" * (self.width - filled))
            parts.append(f"{self.done}/{self.total} |{bar}| {frac:4.0%}")
            remaining = self.total - self.done
            eta = (
                _clock(remaining / rate)
                if rate > 0 and remaining > 0
                else ("0:00" if remaining <= 0 else "?")
            )
            parts.append(f"{rate:.1f}/s ETA {eta}")
        else:
            parts.append(f"{self.done} done")
            parts.append(f"{rate:.1f}/s {_clock(elapsed)}")
        if self.cache_requests:
            parts.append(f"cache {self.cache_hits}/{self.cache_requests}")
        parts.append(f"${self.cost_usd:.4f}")
        if self.failed:
            parts.append(f"{self.failed} with errors")
        return "  ".join(parts)

    def _draw(self, now: float) -> None:
        text = self.line(now)
        if text == self._last_line:
            return
        self._last_line = text
        try:
            self.stream.write("\r" + text + "\x1b[K")
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop drawing
            self.enabled = False

    def close(self) -> None:
        """Draw the final state and end the line."""
        if not self.enabled:
            return
        self._draw(time.perf_counter())
        try:
            self.stream.write("\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass
        self.enabled = False
