"""Read the spans a running Phoenix server holds, as the same trace spans an OTLP JSON file gives.

``--traces phoenix:http://HOST:PORT[/PROJECT]`` reads the project's spans (``default`` without a path)
through ``arize-phoenix-client`` (``GET /v1/projects/{project}/spans``, paged) as :class:`TraceSpan`
values, which become samples exactly as a file's do; the span kind (a field in Phoenix) is read as
``openinference.span.kind``. Phoenix returns no resource attributes (no ``service.name``). With
``--since`` the server sends only spans from then on, and a trace the window cuts is read again whole
by trace id (Phoenix >= 13.9; an older server is read whole), so it is scored exactly as a full read
would. A read is capped in requests, bytes and time (:mod:`._phoenix_caps`). An API key is read by the
Phoenix client from ``PHOENIX_API_KEY``. Needs the ``phoenix`` extra: ``pip install 'ragmetrics[phoenix]'``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, urlsplit

from ragmetrics.errors import ConfigError, MissingDependencyError, shorten
from ragmetrics.observe._phoenix_caps import (
    MAX_PHOENIX_BYTES,
    MAX_PHOENIX_PAGES,
    MAX_PHOENIX_SECONDS,
    CappedTransport,
    ReadBudget,
)
from ragmetrics.observe.samples import MAX_SPANS
from ragmetrics.observe.spans import TraceSpan, _hex_id, event_messages, keep_attribute

__all__ = ["DEFAULT_PROJECT", "parse_phoenix_url", "phoenix_client", "read_phoenix"]

DEFAULT_PROJECT = "default"
"""The Phoenix project read when the URL names none (Phoenix's own default project)."""
_TIMEOUT_S = 60
_IDS_PER_REQUEST = 50
"""Trace ids per request when traces cut by the ``--since`` window are read again whole."""


def parse_phoenix_url(target: str, flag: str = "--traces") -> tuple[str, str]:
    """``phoenix:http://HOST:PORT[/PROJECT]`` as (base URL, project name).

    Raises:
        ConfigError: Not an http(s) URL after ``phoenix:``.
    """
    url = target[len("phoenix:") :] if target.startswith("phoenix:") else target
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"{flag}: expected phoenix:http://HOST:PORT[/PROJECT] (e.g. phoenix:http://127.0.0.1:6006), "
            f"got {target!r}"
        )
    project = parts.path.strip("/") or DEFAULT_PROJECT
    return f"{parts.scheme}://{parts.netloc}", project


def phoenix_client(base_url: str, feature: str, transport: Any = None) -> Any:
    """A ``phoenix.client.Client`` for ``base_url`` (its requests through ``transport``, when given).

    Raises:
        MissingDependencyError: ``arize-phoenix-client`` is not installed.
    """
    try:
        from phoenix.client import Client
        from phoenix.client.utils.config import get_env_client_headers
    except ImportError as exc:
        raise MissingDependencyError("arize-phoenix-client", "phoenix", feature) from exc
    if transport is None:
        return Client(base_url=base_url)
    import httpx  # a dependency of openai and of the Phoenix client

    # the headers the client would set itself (PHOENIX_API_KEY, PHOENIX_CLIENT_HEADERS)
    http = httpx.Client(base_url=base_url, headers=get_env_client_headers(), transport=transport)
    return Client(base_url=base_url, http_client=http)


def _start_ns(text: Any) -> int:
    if not isinstance(text, str):
        return 0
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def _span(raw: Mapping[str, Any]) -> TraceSpan:
    context: Mapping[str, Any] = raw["context"] if isinstance(raw.get("context"), Mapping) else {}
    found: Mapping[Any, Any] = raw["attributes"] if isinstance(raw.get("attributes"), Mapping) else {}
    attributes = {k: v for k, v in found.items() if isinstance(k, str) and keep_attribute(k, v)}
    for key, value in event_messages(raw.get("events")).items():
        attributes.setdefault(key, value)  # GenAI messages recorded as events; the span's attributes win
    kind = raw.get("span_kind")
    if isinstance(kind, str) and kind not in ("", "UNKNOWN"):
        attributes.setdefault("openinference.span.kind", kind)
    return TraceSpan(
        trace_id=_hex_id(context.get("trace_id")),
        span_id=_hex_id(context.get("span_id")),
        parent_id=_hex_id(raw.get("parent_id")),
        name=str(raw.get("name") or "")[:200],
        start_ns=_start_ns(raw.get("start_time")),
        attributes=attributes,
    )


def _moment(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 1_000_000_000, tz=timezone.utc).replace(
        microsecond=(ns % 1_000_000_000) // 1000
    )


class _Reader:
    """One project's spans through the Phoenix client, its HTTP errors as ConfigErrors."""

    def __init__(self, target: str, **caps: Any) -> None:
        self.base_url, self.project = parse_phoenix_url(target)
        self.budget = ReadBudget(self.base_url, self.project, **caps)
        self.transport = CappedTransport(self.budget)
        self.client = phoenix_client(self.base_url, "reading traces from Phoenix", self.transport)

    def get(self, **filters: Any) -> list[Any]:
        import httpx  # a dependency of openai and of the Phoenix client

        try:
            return list(
                self.client.spans.get_spans(
                    project_identifier=quote(self.project, safe=""),
                    limit=MAX_SPANS + 1,
                    timeout=_TIMEOUT_S,
                    **filters,
                )
            )
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            why = (
                f"no project {self.project!r}"
                if status == 404
                else f"HTTP {status}: {exc.response.text[:200]}"
            )
            raise ConfigError(
                f"--traces: Phoenix at {self.base_url} refused the spans request ({why})"
            ) from None
        except (ValueError, KeyError, TypeError, RecursionError) as exc:  # not JSON, not a page of spans
            raise ConfigError(
                f"--traces: Phoenix at {self.base_url} sent a reply that is not a page of spans "
                f"({type(exc).__name__}: {shorten(str(exc), 200)}); check that the URL is a Phoenix server"
            ) from None
        except httpx.HTTPError as exc:
            if self.budget.left_s() <= 0:  # a timeout cut short by the time cap
                raise self.budget.timed_out() from None
            raise ConfigError(f"--traces: cannot reach Phoenix at {self.base_url}: {exc}") from None


def _trace_id(raw: Any) -> str:
    context = raw.get("context") if isinstance(raw, Mapping) else None
    return str(context.get("trace_id") or "") if isinstance(context, Mapping) else ""


def _cut(raws: list[Any]) -> list[str]:
    """The (raw) trace ids of the traces among ``raws`` that have no span without a parent."""
    rooted: dict[str, bool] = {}
    for raw in raws:
        if isinstance(raw, Mapping) and (trace_id := _trace_id(raw)):
            rooted[trace_id] = rooted.get(trace_id, False) or not raw.get("parent_id")
    return [t for t, has_root in rooted.items() if not has_root]


def _windowed(reader: _Reader, since_ns: int) -> list[Any]:
    """The spans from ``since_ns`` on, and every span of the traces that window cuts."""
    from phoenix.client.exceptions import PhoenixException

    raws = reader.get(start_time=_moment(since_ns))
    cut = _cut(raws)
    if not cut:
        return raws
    whole: list[Any] = []
    try:
        for i in range(0, len(cut), _IDS_PER_REQUEST):
            whole += reader.get(trace_ids=cut[i : i + _IDS_PER_REQUEST])
    except PhoenixException:  # a server too old to filter by trace id: read the project whole
        return reader.get()
    cut_ids = set(cut)
    return [r for r in raws if _trace_id(r) not in cut_ids] + whole


def read_phoenix(
    target: str,
    *,
    since_ns: int | None = None,
    max_pages: int = MAX_PHOENIX_PAGES,
    max_bytes: int = MAX_PHOENIX_BYTES,
    max_seconds: float = MAX_PHOENIX_SECONDS,
) -> Iterator[TraceSpan | str]:
    """Every span of a Phoenix project, oldest first, or a problem string for a span that is not a span.

    Args:
        target: ``phoenix:http://HOST:PORT[/PROJECT]``.
        since_ns: Read only the traces whose root starts at or after it (unix nanoseconds), and the
            traces the window cuts, whole; None: every span. A trace the window cuts (its root started
            before), or whose root has a parent in another service, has no span without a parent among
            those read: each such trace is read again whole, by trace id.
        max_pages: Requests the read may send in all.
        max_bytes: Reply bytes the read may take in all.
        max_seconds: Wall time the read may take.

    Raises:
        ConfigError: A bad URL, a server that cannot be reached or refuses, an unknown project, or a
            server that goes past a cap or sends a page cursor twice.
        MissingDependencyError: ``arize-phoenix-client`` is not installed.
    """
    reader = _Reader(target, max_pages=max_pages, max_bytes=max_bytes, max_seconds=max_seconds)
    try:
        spans = reader.get() if since_ns is None else _windowed(reader, since_ns)
    finally:
        reader.transport.close()
    found = []
    for number, raw in enumerate(spans, 1):
        if isinstance(raw, Mapping):
            found.append(_span(raw))
        else:
            yield f"Phoenix span {number} of project {reader.project!r} is not an object; skipped"
    yield from sorted(found, key=lambda s: s.start_ns)  # Phoenix pages newest first; traces go oldest first
