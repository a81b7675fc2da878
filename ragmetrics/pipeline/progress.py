"""Progress on stderr: done/total, rate, ETA, calls, cache hits, dollars and errors so far.

tqdm draws it, imported when a bar starts (not with the package); our figures are its postfix.
Where stderr goes decides how:

- a terminal: tqdm's bar, redrawn in place at most ten times a second;
- a Jupyter kernel: tqdm's notebook widget when ipywidgets is installed, else the same text redrawn
  with carriage returns (notebook front ends honour those, not terminal escape sequences);
- anything else (a pipe, a CI log, a file): the same text as a plain line every ``log_interval_s``
  (10 s) and a last one at the end, so a long run in CI shows it is alive without flooding the log.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import threading
import time
from typing import Any, Literal, TextIO

from ragmetrics._aio import in_notebook

__all__ = ["ProgressBar"]

_KNOWN = "{n_fmt}/{total_fmt} |{bar}| {percentage:3.0f}% {rate_noinv_fmt}{postfix}"
_UNKNOWN = "{n_fmt} done {rate_noinv_fmt} {elapsed}{postfix}"


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


@functools.cache
def _tqdm(widget: bool) -> Any:
    """The bar class of tqdm (its notebook widget if ``widget`` and ipywidgets is installed), made quiet.

    We redraw the bar ourselves, so tqdm's monitor thread is off; and its lock is a thread lock, as
    tqdm's default one is a multiprocessing lock, which would fix the user's multiprocessing start method.
    """
    if widget and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm as base
    else:
        from tqdm.std import tqdm as base

    class Bar(base):  # type: ignore[misc]
        monitor_interval = 0

    Bar.set_lock(threading.RLock())
    return Bar


class ProgressBar:
    """Shows ``done/total |bar| pct rate, ETA, calls, cached, $cost, errors``, as suits ``stream``.

    Args:
        total: Rows expected, or None when unknown (no bar, no ETA).
        enabled: True or None to draw, False not to (None is the default: on a terminal, in a
            notebook and in logs alike; pass False to keep a stream clean).
        stream: Where to draw (stderr by default).
        min_interval_s: Least time between two redraws of a terminal or notebook bar.
        width: Characters of the bar itself in a log line (a terminal's bar fills its width).
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
        """``terminal`` (redrawn in place), ``notebook`` (a widget, or redrawn with ``\r``) or ``lines``."""
        self.log_interval_s = log_interval_s
        self.total = total
        self.min_interval_s = min_interval_s
        self.width = width
        self.started = time.perf_counter()
        self._last_draw = self.started if self.style == "lines" else 0.0  # a log's first line waits
        self._logged_done: int | None = None
        self.done = 0
        self.failed = 0
        self.cache_hits = 0
        self.cache_requests = 0
        self.calls = 0
        self.cost_usd = 0.0
        self._first: tuple[float, int] | None = None
        """When the first rows finished, and how many: the ETA's rate leaves out the start-up before it."""
        self._bar: Any = None
        """tqdm's bar, on a terminal or in a notebook: it starts (and shows 0 done) with the run."""
        if self.enabled and self.style != "lines":
            self._bar = _tqdm(self.style == "notebook")(
                total=total,
                file=self.stream,
                bar_format=_KNOWN if total else _UNKNOWN,
                unit="",
                dynamic_ncols=True,
                leave=True,
                disable=False,
                postfix=self._figures(self.started),
            )

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
        """The text of a log line now (a terminal's bar shows the same, its bar filling the width)."""
        from tqdm.std import tqdm

        now = time.perf_counter() if now is None else now
        bar_format = _KNOWN.replace("{bar}", f"{{bar:{self.width}}}") if self.total else _UNKNOWN
        text: str = tqdm.format_meter(
            self.done,
            self.total,
            max(now - self.started, 1e-9),
            ascii=True,
            unit="",
            bar_format=bar_format,
            postfix=self._figures(now),
        )
        return text

    def _figures(self, now: float) -> str:
        """Ours, after tqdm's done/total, bar and rate: ETA, calls, cache hits, dollars, errors."""
        parts = []
        if self.total:
            from tqdm.std import tqdm

            remaining = self.total - self.done
            settled = self._settled_rate(now)
            seconds = 0.0 if remaining <= 0 else remaining / settled + 0.5 if settled else None
            parts.append(f"ETA {'?' if seconds is None else tqdm.format_interval(seconds)}")  # to the second
        if self.calls or self.cache_hits:
            parts.append(f"{self.calls} calls, {self.cache_hits} cached")
        parts.append(f"${self.cost_usd:.4f}")
        if self.failed:
            parts.append(f"{self.failed} with errors")
        return ", ".join(parts)

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

    def _draw(self, now: float, *, last: bool = False) -> None:
        try:
            if self._bar is not None:  # tqdm redraws it in place, and its close() ends the line
                self._bar.n = self.done
                self._bar.set_postfix_str(self._figures(now), refresh=False)
                if last:
                    self._bar.close()
                else:
                    self._bar.refresh()
            elif self._logged_done != self.done:  # a log line per state, however the rate moved
                self._logged_done = self.done
                self.stream.write(self.line(now) + "\n")
                self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop drawing
            self.enabled = False

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.enabled:
            self._draw(time.perf_counter(), last=True)
        self.enabled = False
