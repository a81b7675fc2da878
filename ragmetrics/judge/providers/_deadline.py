"""A wall-clock limit on each HTTP attempt, however slowly the server sends.

The SDKs' ``timeout`` bounds each socket read, so a server trickling one byte a second never trips it.
The HTTP client the provider judges build (:func:`deadline_client`) bounds the whole ``send`` instead
(connect, send, hooks and body end at ``deadline_s``), raising the HTTP library's ``ReadTimeout``
marked with whether the reply had begun. Closing the client also closes every connection a reply
came on, even those the pool lost track of, so no socket is left for the garbage collector.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
from contextvars import ContextVar
from typing import Any

__all__ = ["deadline_client", "deadline_message", "http_module", "tls_options"]

_BEGUN: ContextVar[list[bool] | None] = ContextVar("ragmetrics_reply_begun", default=None)
_PRUNE_AT = 64  # connections remembered before the closed ones are forgotten


def _is_closed(stream: Any) -> bool:
    """Whether a connection's network stream (httpcore's ``network_stream``) has closed its socket."""
    try:
        sock = stream.get_extra_info("socket")
        return sock is None or sock.fileno() < 0
    except Exception:  # a stream that cannot say is not ours to keep
        return True


async def _reply_begun(response: Any) -> None:
    """A response hook: the status line and headers arrived (the body may still be on its way)."""
    begun = _BEGUN.get()
    if begun is not None:
        begun.append(True)


def http_module(client_class: type) -> Any:
    """The HTTP library of an SDK's async client class: ``httpx``, or ``httpx2`` (openai 3 on)."""
    root = next(c for c in type.mro(client_class) if c.__name__ == "AsyncClient")
    return importlib.import_module(root.__module__.split(".", 1)[0])


def tls_options(client_class: type) -> dict[str, Any]:
    """``verify=``: one TLS context per process for the HTTP clients ragmetrics builds, or nothing.

    The context is the one the HTTP library builds for each client by default (``create_ssl_context()``:
    its CA bundle, ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` honoured), loaded once instead of once per
    client (about 16 ms each, before a run's first request). Empty for a library without that function.
    """
    context = _tls_context(http_module(client_class))
    return {} if context is None else {"verify": context}


@functools.cache
def _tls_context(http: Any) -> Any:
    create = getattr(http, "create_ssl_context", None)
    return create() if create is not None else None


@functools.cache
def _client_class(base: type) -> type:
    """``base`` (an SDK's default async HTTP client class) with a deadline on every ``send``."""
    http = http_module(base)

    class AttemptDeadline(http.ReadTimeout):  # type: ignore[misc,name-defined]
        """The whole attempt outlived its wall-clock limit."""

        ragmetrics_deadline: tuple[float, bool] = (0.0, False)
        """The limit in seconds, and whether the reply had begun to arrive."""

    class DeadlineClient(base):  # type: ignore[misc]
        def __init__(self, *args: Any, deadline_s: float, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._ragmetrics_deadline_s = deadline_s
            hooks: dict[str, list[Any]] = dict(self.event_hooks)  # type: ignore[has-type]
            hooks["response"] = [_reply_begun, self._remember_connection, *hooks.get("response", [])]
            self.event_hooks = hooks
            self._ragmetrics_streams: dict[int, Any] = {}
            """The network stream of every connection a reply came on, by id, until it is seen closed."""

        async def _remember_connection(self, response: Any) -> None:
            stream = response.extensions.get("network_stream")
            if stream is None:
                return
            streams = self._ragmetrics_streams
            streams[id(stream)] = stream
            if len(streams) > _PRUNE_AT:
                for key in [key for key, known in streams.items() if _is_closed(known)]:
                    del streams[key]

        async def aclose(self) -> None:
            try:
                await super().aclose()
            finally:
                streams, self._ragmetrics_streams = list(self._ragmetrics_streams.values()), {}
                for stream in streams:
                    if not _is_closed(stream):
                        with contextlib.suppress(Exception):
                            await stream.aclose()

        async def send(self, request: Any, **kwargs: Any) -> Any:
            limit = self._ragmetrics_deadline_s
            begun: list[bool] = []
            token = _BEGUN.set(begun)  # copied into the task wait_for runs the send in
            try:
                return await asyncio.wait_for(super().send(request, **kwargs), timeout=limit)
            except asyncio.TimeoutError as exc:
                what = "the reply did not finish" if begun else "no reply"
                error = AttemptDeadline(f"{what} within {limit:g} s", request=request)
                error.ragmetrics_deadline = (limit, bool(begun))
                raise error from exc
            finally:
                _BEGUN.reset(token)

    DeadlineClient.__name__ = DeadlineClient.__qualname__ = f"Deadline{base.__name__.lstrip('_')}"
    return DeadlineClient


def deadline_client(sdk: Any, deadline_s: float, **kwargs: Any) -> Any:
    """The SDK's default async HTTP client whose every request ends within ``deadline_s`` seconds."""
    client_class = _client_class(sdk.DefaultAsyncHttpxClient)
    return client_class(deadline_s=deadline_s, **{**tls_options(client_class), **kwargs})


def deadline_message(exc: BaseException) -> str | None:
    """What ended the attempt, if ``exc`` (an SDK timeout error) came from its wall-clock limit."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        mark = getattr(current, "ragmetrics_deadline", None)
        if isinstance(mark, tuple):
            limit, begun = mark
            what = "the reply did not finish" if begun else "no reply"
            return f"{what} within {limit:g} s (timeout_s bounds each attempt's whole wall clock)"
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
