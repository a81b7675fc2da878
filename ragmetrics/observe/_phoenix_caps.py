"""Caps on one read from a Phoenix server: requests, response bytes and wall time, held in the HTTP layer.

The Phoenix client pages through ``GET /v1/projects/{project}/spans`` for as long as the server sends a
next cursor, and keeps every page until the last. A server that never stops (a new cursor every time,
the same cursor again, pages of any size, a reply one byte at a time) would be read until memory or
patience ran out. The reader's httpx client sends every request through :class:`CappedTransport`,
which counts the requests and body bytes of the whole read, bounds each request's timeouts by the
time left, and stops the read with a ``ConfigError`` naming the server, the cap and what to do.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx  # a dependency of openai and of the Phoenix client

from ragmetrics._check import check_int, check_number
from ragmetrics.errors import ConfigError, shorten

__all__ = ["MAX_PHOENIX_BYTES", "MAX_PHOENIX_PAGES", "MAX_PHOENIX_SECONDS", "CappedTransport", "ReadBudget"]

MAX_PHOENIX_PAGES = 25_000
"""Requests one read may send: 2,000,000 spans (``MAX_SPANS``) at Phoenix's 100 a page, and room for the
re-reads of traces that ``--since`` cuts. A server still sending cursors past it is stopped."""
MAX_PHOENIX_BYTES = 512 * 1024 * 1024
"""Response bytes one read may take (about 650,000 typical spans; the client holds them all until the
read ends, about 3.5 times their size in memory)."""
MAX_PHOENIX_SECONDS = 600.0
"""Wall time one read may take, every request's connect and read timeouts included."""
_FIX = "read a window of it with --since, or name a smaller project (phoenix:http://HOST:PORT/PROJECT)"


class ReadBudget:
    """What one read from one server has used so far, against its caps."""

    def __init__(
        self,
        base_url: str,
        project: str,
        *,
        max_pages: int = MAX_PHOENIX_PAGES,
        max_bytes: int = MAX_PHOENIX_BYTES,
        max_seconds: float = MAX_PHOENIX_SECONDS,
    ) -> None:
        self.base_url, self.project = base_url, project
        self.max_pages = check_int(max_pages, "max_pages", "read_phoenix", minimum=1)
        self.max_bytes = check_int(max_bytes, "max_bytes", "read_phoenix", minimum=1)
        self.max_seconds = check_number(max_seconds, "max_seconds", "read_phoenix", low=0, low_open=True)
        self.started = time.monotonic()
        self.pages = 0
        self.bytes = 0
        self.cursors: set[str] = set()

    def left_s(self) -> float:
        """Seconds left before the time cap."""
        return self.max_seconds - (time.monotonic() - self.started)

    def error(self, what: str, fix: str = _FIX) -> ConfigError:
        """The error that ends the read: which server and project, what happened, how far it got."""
        took = time.monotonic() - self.started
        return ConfigError(
            f"--traces: Phoenix at {self.base_url} (project {self.project!r}) {what}; stopped after "
            f"{self.pages:,} requests, {self.bytes:,} bytes and {took:.1f} s; {fix}"
        )

    def timed_out(self) -> ConfigError:
        """The error for a read that ran out of time."""
        return self.error(
            f"did not finish sending spans within {self.max_seconds:g} s (MAX_PHOENIX_SECONDS)",
            f"{_FIX}; a server this slow may be overloaded",
        )

    def request(self, request: httpx.Request) -> None:
        """Count one request; refuse it past a cap, and bound its timeouts by the time left."""
        if self.pages >= self.max_pages:
            raise self.error(
                f"kept sending a next page after {self.max_pages:,} requests (MAX_PHOENIX_PAGES)"
            )
        cursor = request.url.params.get("cursor")
        if cursor is not None:
            if cursor in self.cursors:
                raise self.error(
                    f"sent the page cursor {shorten(cursor, 60)!r} a second time, so its pages would "
                    "go round for ever",
                    "check the server (or a proxy in front of it); --since reads fewer pages",
                )
            self.cursors.add(cursor)
        left = self.left_s()
        if left <= 0:
            raise self.timed_out()
        self.pages += 1
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            request.extensions["timeout"] = {
                k: left if v is None else min(float(v), left) for k, v in timeouts.items()
            }

    def body(self, size: int) -> None:
        """Count ``size`` body bytes; stop past the byte or time cap."""
        self.bytes += size
        if self.bytes > self.max_bytes:
            raise self.error(f"sent more than {self.max_bytes:,} bytes of spans (MAX_PHOENIX_BYTES)")
        if self.left_s() <= 0:
            raise self.timed_out()


class _CappedStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, budget: ReadBudget) -> None:
        self.inner, self.budget = inner, budget

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            self.budget.body(len(chunk))
            yield chunk

    def close(self) -> None:
        self.inner.close()


class CappedTransport(httpx.BaseTransport):
    """An httpx transport that holds every request and response of one read to a :class:`ReadBudget`."""

    def __init__(self, budget: ReadBudget, inner: httpx.BaseTransport | None = None) -> None:
        self.budget = budget
        self.inner = inner if inner is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` within the budget; its body is counted as it is read."""
        self.budget.request(request)
        response = self.inner.handle_request(request)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self.budget),
            extensions=response.extensions,
        )

    def close(self) -> None:
        """Close the connections."""
        self.inner.close()
