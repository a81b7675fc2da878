"""The loopback transport of the fake LLM server: a threaded HTTP/1.1 keep-alive server and its handler.

The handler reads request bodies (``Content-Length`` or chunked), writes each response in one send,
can hang or drop a request, and the server can close all its open connections at once (so that
stopping never waits for a hanging request). What a request means is decided by the ``dispatch``
function the server is given.
"""

from __future__ import annotations

import http.server
import select
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ragmetrics._fake.providers import error_body
from ragmetrics._fake.wire import dumps

__all__ = ["Handler", "LoopbackServer"]

_POLL = 0.05  # seconds between checks of a hanging request


class LoopbackServer(http.server.ThreadingHTTPServer):
    """A threaded HTTP server (one daemon thread per connection) that hands requests to ``dispatch``.

    Args:
        address: ``(host, port)`` to bind; port 0 picks a free one.
        dispatch: Called on the connection's thread with the handler and the method (``GET``/``POST``).
    """

    daemon_threads = True
    request_queue_size = 1024  # bursts of concurrent connects must not overflow the listen backlog

    def __init__(self, address: tuple[str, int], dispatch: Callable[[Handler, str], None]) -> None:
        self.dispatch = dispatch
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, Handler)

    def track(self, conn: socket.socket, *, open_: bool) -> None:
        """Remember (or forget) an open connection."""
        with self._open_lock:
            if open_:
                self._open.add(conn)
            else:
                self._open.discard(conn)

    def close_connections(self) -> None:
        """Shut every open connection down, waking the threads that wait on them."""
        with self._open_lock:
            connections = list(self._open)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore clients that went away; report anything else."""
        if isinstance(sys.exc_info()[1], OSError | ValueError):
            return
        super().handle_error(request, client_address)


class Handler(http.server.BaseHTTPRequestHandler):
    """One connection: HTTP/1.1 keep-alive, no Nagle delay, one write per response, no logging."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: LoopbackServer

    def setup(self) -> None:
        """Track the connection so that stopping can close it."""
        super().setup()
        self.server.track(self.connection, open_=True)

    def finish(self) -> None:
        """Forget the connection."""
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.track(self.connection, open_=False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Keep quiet: the fake server records requests instead of logging them."""

    _pace: tuple[float, threading.Event] | None = None
    """Bytes per second for the response being sent, and the server's stop event (None: at once)."""

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        """Serve a GET request."""
        self._pace = None
        self.server.dispatch(self, "GET")

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        """Serve a POST request."""
        self._pace = None
        self.server.dispatch(self, "POST")

    def pace(self, bytes_per_s: float, stopping: threading.Event) -> None:
        """Send this request's response at ``bytes_per_s``, one byte at a time, until ``stopping`` is set."""
        self._pace = (bytes_per_s, stopping)

    def read_body(self) -> bytes:
        """The request body (``Content-Length`` or chunked)."""
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length))
        if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
            return b""
        chunks: list[bytes] = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    def send(
        self,
        status: int,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        content_type: str = "application/json",
    ) -> None:
        """Write a response (JSON unless ``content_type`` says otherwise) in one send."""
        reason = self.responses.get(status, ("",))[0]
        lines = [
            f"HTTP/1.1 {status} {reason}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
        ]
        if headers:
            lines.extend(f"{name}: {value}" for name, value in headers.items())
        if self.close_connection:
            lines.append("Connection: close")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        if self._pace is None:
            self.wfile.write(data)
            return
        bytes_per_s, stopping = self._pace
        self.close_connection = True  # a client that gave up mid-reply leaves the connection unusable
        for i in range(len(data)):
            if i and stopping.wait(1.0 / bytes_per_s):
                return
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()

    def send_error_body(
        self, endpoint: str, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        """Write an error response in the shape of the provider behind ``endpoint``."""
        self.send(status, dumps(error_body(endpoint, status, message)), headers)

    def drop(self) -> None:
        """Close the connection without a response."""
        self.close_connection = True

    def hang(self, stopping: threading.Event) -> None:
        """Answer nothing until the client disconnects or ``stopping`` is set, then close."""
        self.close_connection = True
        while not stopping.is_set():
            try:
                readable, _, _ = select.select([self.connection], [], [], _POLL)
            except (OSError, ValueError):
                return
            if readable:  # the client closed (or sent something that will not be read): give up
                return
