"""Progress on stderr: done/total, rate, ETA, cache hits and cost so far.

No dependency. How it is drawn depends on where stderr goes:

- a terminal: one line redrawn in place (carriage return and erase-to-end-of-line) at most ten times
  a second;
- a Jupyter kernel: the same line redrawn with a carriage return alone, padded with spaces (notebook
  front ends honour a carriage return but not terminal escape sequences);
- anything else (a pipe, a CI log, a file): a plain line every ``log_interval_s`` (10 s) and a last
  one at the end, so a long run in CI shows it is alive without flooding the log.
"""

from __future__ import annotations

import sys
import time
from typing import Literal, TextIO

from ragmetrics._aio import in_notebook

__all__ = ["ProgressBar"]


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _style(stream: TextIO) -> Literal["terminal", "notebook", "lines"]:
    isatty = getattr(stream, "isatty", None)
    try:
        if isatty and isatty():
            return "terminal"
    except (OSError, ValueError):  # a closed stream
        return "lines"
    if stream in (sys.stderr, sys.__stderr__) and in_notebook():
        return "notebook"
    return "lines"


class ProgressBar:
    """Draws ``done/total |bar| pct rate ETA cache cost``, in the style that suits ``stream``.

    Args:
        total: Rows expected, or None when unknown (no bar, no ETA).
        enabled: True or None to draw, False not to (None is the default: on a terminal, in a
            notebook and in logs alike; pass False to keep a stream clean).
        stream: Where to draw (stderr by default).
        min_interval_s: Least time between two redraws of a terminal or notebook line.
        width: Characters of the bar itself.
        log_interval_s: Least time between two lines when the stream is neither a terminal nor a
            notebook (a pipe or a CI log); the last line is always written.
    """

    def __init__(
        self,
        total: int | None,
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        min_interval_s: float = 0.1,
        width: int = 24,
        log_interval_s: float = 10.0,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled is not False
        self.style = _style(self.stream)
        """``terminal`` (redrawn in place), ``notebook`` (redrawn with ``\r``) or ``lines`` (a log)."""
        self.log_interval_s = log_interval_s
        self.total = total
        self.min_interval_s = min_interval_s
        self.width = width
        self.started = time.perf_counter()
        self._last_draw = self.started if self.style == "lines" else 0.0  # a log's first line waits
        self._last_line = ""
        self._logged_done: int | None = None
        self.done = 0
        self.failed = 0
        self.cache_hits = 0
        self.cache_requests = 0
        self.calls = 0
        self.cost_usd = 0.0
        self._first: tuple[float, int] | None = None
        """When the first rows finished, and how many: the ETA's rate leaves out the start-up before it."""

    def update(
        self,
        done: int,
        *,
        failed: int = 0,
        cache_hits: int = 0,
        cache_requests: int = 0,
        cost_usd: float = 0.0,
        calls: int = 0,
        force: bool = False,
        now: float | None = None,
    ) -> None:
        """Record progress and redraw if enough time has passed (or ``force``).

        ``calls`` is the LLM calls made (cache hits and shared requests make none); ``now`` a
        ``time.perf_counter()`` reading (default: the current one).
        """
        now = time.perf_counter() if now is None else now
        if self._first is None and done > 0:
            self._first = (now, done)
        self.done, self.failed, self.calls = done, failed, calls
        self.cache_hits, self.cache_requests, self.cost_usd = cache_hits, cache_requests, cost_usd
        if not self.enabled:
            return
        if self.style == "lines":  # a log: a line at a steady interval, the last one at close()
            if force or now - self._last_draw >= self.log_interval_s:
                self._last_draw = now
                self._draw(now)
            return
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
            settled = self._settled_rate(now)
            eta = "0:00" if remaining <= 0 else (_clock(remaining / settled) if settled else "?")
            parts.append(f"{rate:.1f}/s ETA {eta}")
        else:
            parts.append(f"{self.done} done")
            parts.append(f"{rate:.1f}/s {_clock(elapsed)}")
        if self.calls or self.cache_hits:
            parts.append(f"{self.calls} calls, {self.cache_hits} cached")
        parts.append(f"${self.cost_usd:.4f}")
        if self.failed:
            parts.append(f"{self.failed} with errors")
        return "  ".join(parts)

    def _settled_rate(self, now: float) -> float | None:
        """Rows per second since the first rows finished, once enough more have (else None: no ETA yet).

        Rows finish in bursts of the concurrency, after a start-up (imports, connections) that a rate
        from the start would spread over the whole run: so the ETA waits for ``min(10, max(2, total //
        10))`` more rows and one second after the first ones.
        """
        if self._first is None or not self.total:
            return None
        started, first = self._first
        rows, seconds = self.done - first, now - started
        if rows < min(10, max(2, self.total // 10)) or seconds < 1.0:
            return None
        return rows / seconds

    def _draw(self, now: float) -> None:
        text = self.line(now)
        if text == self._last_line:
            return
        if self.style == "lines":
            if self._logged_done == self.done:  # a log line per state, however the rate moved
                return
            self._logged_done = self.done
            out = text + "\n"
        elif self.style == "notebook":
            out = "\r" + text.ljust(len(self._last_line))
        else:
            out = "\r" + text + "\x1b[K"
        self._last_line = text
        try:
            self.stream.write(out)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop drawing
            self.enabled = False

    def close(self) -> None:
        """Draw the final state and end the line."""
        if not self.enabled:
            return
        self._draw(time.perf_counter())
        try:
            if self.style != "lines":  # a log line already ends with one
                self.stream.write("\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass
        self.enabled = False
