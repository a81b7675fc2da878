"""Read OpenTelemetry traces from OTLP JSON files: spans, checked line by line.

The file is what the OpenTelemetry Collector's ``file`` exporter writes: one ``ExportTraceServiceRequest``
as JSON per line; one pretty-printed document (a file whose first line is ``{``) is read too. Each line
is checked against the format (the type of every level, string ids, times as whole nanoseconds) before
any of its spans is kept. A line that is not UTF-8, not JSON or not OTLP is skipped whole, and the
message says where and what: every trace with spans on it gets an ``invalid_input`` status (incomplete,
not scored), or the line is one ``invalid_input`` row when no trace id can be read. Only the attributes
a sample is built from (and short scalars, for ``--where``) are kept, so 100,000 spans cost their text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError, shorten
from ragmetrics.observe.samples import MAX_SPANS
from ragmetrics.observe.spans import (
    SpanProblem,
    TraceSpan,
    _attributes,
    _hex_id,
    event_messages,
)

__all__ = ["MAX_LINE_BYTES", "read_otlp_json"]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""One OTLP JSON line longer than this is skipped and reported."""
_MAX_NANOS = 2**64 - 1
"""OTLP times are fixed64: nanoseconds since the epoch, unsigned."""


class _Malformed(ValueError):
    """A part of an OTLP document that does not have the type the format gives it."""


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, (int, float)):
        return f"a number ({shorten(value, 40)})"
    if isinstance(value, str):
        return f"a string ({shorten(value, 40)!r})"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, Mapping) else "?"


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Malformed(f"{path} is {_kind(value)}, not an object")
    return value


def _items(parent: Mapping[str, Any], key: str, path: str) -> list[Any]:
    """``parent[key]`` as a list of objects ([] when absent or null)."""
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Malformed(f"{path}{key} is {_kind(value)}, not a list")
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            _object(item, f"{path}{key}[{i}]")
    return value


def _id(span: Mapping[str, Any], key: str, path: str, *, required: bool = True) -> str:
    value = span.get(key)
    if value is None or value == "":
        if required:
            raise _Malformed(f"{path}.{key} is missing")
        return ""
    if not isinstance(value, str):
        raise _Malformed(f"{path}.{key} is {_kind(value)}, not a hex string")
    return _hex_id(value)


def _nanos(span: Mapping[str, Any], key: str, path: str) -> int:
    """A time in unix nanoseconds: a decimal string (OTLP JSON) or a whole number; 0 when absent."""
    value = span.get(key)
    if value is None:
        return 0
    number: int | None = None
    if isinstance(value, str) and value.isascii() and value.strip().isdigit() and len(value) <= 40:
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():  # finite: inf and NaN are not integers
        number = int(value)
    if number is None or not 0 <= number <= _MAX_NANOS:
        raise _Malformed(f"{path}.{key} is {_kind(value)}, not a whole number of nanoseconds (0 to 2^64-1)")
    return number


def _attribute_items(parent: Mapping[str, Any], path: str) -> list[Any]:
    items = _items(parent, "attributes", f"{path}.")
    for i, item in enumerate(items):
        if not isinstance(item.get("key"), str):
            raise _Malformed(f"{path}.attributes[{i}].key is {_kind(item.get('key'))}, not a string")
        if item.get("value") is not None and not isinstance(item["value"], Mapping):
            raise _Malformed(f"{path}.attributes[{i}].value is {_kind(item['value'])}, not an object")
    return items


def _span(span: Mapping[str, Any], shared: Mapping[str, Any], origin: str) -> TraceSpan:
    """One span.

    Raises:
        _Malformed: The message starts at the span (``.traceId is missing``); the caller names the span
            (formatting its path for every span cost a tenth of the read).
    """
    name = span.get("name")
    if name is not None and not isinstance(name, str):
        raise _Malformed(f".name is {_kind(name)}, not a string")
    attributes = {**shared, **_attributes(_attribute_items(span, ""))}
    for key, value in event_messages(_items(span, "events", ".")).items():
        attributes.setdefault(key, value)  # the span's own attributes win
    _nanos(span, "endTimeUnixNano", "")
    return TraceSpan(
        trace_id=_id(span, "traceId", ""),
        span_id=_id(span, "spanId", ""),
        parent_id=_id(span, "parentSpanId", "", required=False),
        name=(name or "")[:200],
        start_ns=_nanos(span, "startTimeUnixNano", ""),
        attributes=attributes,
        origin=origin,
    )


def _spans(document: Any, origin: str) -> list[TraceSpan]:
    """Every span of one OTLP JSON document.

    Raises:
        _Malformed: A part of it does not have the type the format gives it (the message says where).
    """
    root = _object(document, "the document")
    spans: list[TraceSpan] = []
    for r, resource in enumerate(_items(root, "resourceSpans", "")):
        path = f"resourceSpans[{r}]"
        about = resource.get("resource")
        if about is None:
            shared: dict[str, Any] = {}
        else:
            shared = _attributes(_attribute_items(_object(about, f"{path}.resource"), f"{path}.resource"))
        for s, scope in enumerate(_items(resource, "scopeSpans", f"{path}.")):
            at = f"{path}.scopeSpans[{s}]"
            for n, span in enumerate(_items(scope, "spans", f"{at}.")):
                try:
                    spans.append(_span(span, shared, origin))
                except _Malformed as exc:
                    raise _Malformed(f"{at}.spans[{n}]{exc}") from None
    return spans


def _trace_ids(document: Any) -> list[str]:
    """The trace ids that can be read from a damaged document (its spans are not read)."""
    found: dict[str, None] = {}
    for resource in _loose(document, "resourceSpans"):
        for scope in _loose(resource, "scopeSpans"):
            for span in _loose(scope, "spans"):
                if (trace_id := _hex_id(span.get("traceId"))) and len(found) < MAX_SPANS:
                    found[trace_id] = None
    return list(found)


def _loose(parent: Any, key: str) -> list[Mapping[str, Any]]:
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _bounded_lines(handle: Any) -> Iterator[bytes]:
    """Lines of at most MAX_LINE_BYTES + 1 bytes; the rest of a longer line is skipped, never held."""
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # drain the rest of the long line
                rest = handle.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
        yield line


def _line(line: bytes, where: str) -> Iterator[TraceSpan | SpanProblem | str]:
    """The spans of one line, or what was wrong with it (for each trace it holds, else for the line)."""
    if len(line) > MAX_LINE_BYTES:
        yield f"{where} is over {MAX_LINE_BYTES:,} bytes; skipped"
        return
    try:
        document = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        yield f"{where} is not UTF-8 (byte {exc.start}); skipped"
        return
    except RecursionError:
        yield f"{where} is nested too deeply to read; skipped"
        return
    except ValueError as exc:
        yield f"{where} is not OTLP JSON ({str(exc)[:120]}); skipped"
        return
    try:
        yield from _spans(document, where)
    except _Malformed as exc:
        why = f"{where} is not OTLP JSON: {exc}; the line was skipped"
        trace_ids = _trace_ids(document)
        for trace_id in trace_ids:
            yield SpanProblem(trace_id, f"trace {trace_id} is incomplete, so it was not scored: {why}")
        if not trace_ids:
            yield why


def read_otlp_json(path: str | os.PathLike[str]) -> Iterator[TraceSpan | SpanProblem | str]:
    """Every span of an OTLP JSON file, and what could not be read.

    A line that could not be read gives a :class:`SpanProblem` for each trace with spans on it, or a
    problem string when no trace id can be read from it.
    """
    target = Path(path)
    try:
        handle = target.open("rb")
    except OSError as exc:
        raise ConfigError(f"--traces: cannot read {target}: {exc.strerror or exc}") from None
    with handle:
        first = handle.readline(1 << 16).strip()
        handle.seek(0)
        if first == b"{":  # one pretty-printed JSON document, not the collector's lines
            lines: Iterator[bytes] = iter([handle.read(MAX_LINE_BYTES + 1)])
        else:
            lines = _bounded_lines(handle)
        for number, line in enumerate(lines, 1):
            if line.strip():
                yield from _line(line, f"{target.name} line {number}")
