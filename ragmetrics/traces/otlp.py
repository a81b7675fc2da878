"""Read OpenTelemetry traces from OTLP JSON files and turn each trace into a sample to score.

The file is what the OpenTelemetry Collector's ``file`` exporter writes: one ``ExportTraceServiceRequest``
as JSON per line (``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``); one pretty-printed
document (a file whose first line is ``{``) is read too. Spans are grouped by ``traceId``; a trace becomes
one sample:

* **id**: the trace id (hex); ``meta`` keeps ``trace_id``, the root ``span_id``, the root span's
  ``name`` and ``start_time`` (ISO 8601, UTC), the spans the question, answer and contexts came from,
  and the last LLM span's ``gen_ai.response.id`` as ``response_id`` (when it has one).
* **question**: the root span's ``input.value`` (OpenInference); when that is JSON, its ``question``,
  ``query``, ``input`` or ``text`` key. Else the last ``user`` message of the first LLM span
  (``llm.input_messages.N.message.role`` / ``.content``; GenAI: ``gen_ai.input.messages``, a JSON list
  of ``{"role", "parts": [{"type": "text", "content"}]}``, or the older ``gen_ai.prompt.N.role`` /
  ``.content``).
* **answer**: the root span's ``output.value`` (JSON: ``answer``, ``output``, ``result``, ``content`` or
  ``text``, or a LangChain message's ``data.content``); else the last LLM span's first output message
  (``llm.output_messages.0.message.content``; GenAI: ``gen_ai.output.messages`` or
  ``gen_ai.completion.0.content``).
* GenAI messages recorded as span events instead of attributes are read too:
  ``gen_ai.client.inference.operation.details`` (its ``gen_ai.input.messages`` /
  ``gen_ai.output.messages``), the per-message events ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (``content``) and ``gen_ai.choice``
  (``message.content``), and the older ``gen_ai.content.prompt`` / ``gen_ai.content.completion``
  (``gen_ai.prompt`` / ``gen_ai.completion``); a span's own attributes win over its events.
* **contexts**: every retriever span (``openinference.span.kind = RETRIEVER``, or GenAI
  ``gen_ai.operation.name = retrieval``) in start-time order, and within each its documents in index
  order (``retrieval.documents.N.document.content``; GenAI: ``gen_ai.retrieval.documents``, a JSON list
  of strings or of ``{"content"}``).

A trace with no retriever span is an ``invalid_input`` row saying so (an empty context list would
score its answer as unsupported, which nobody measured). A trace with no answer, a line that is not
JSON or not UTF-8, and a value over :data:`MAX_VALUE_CHARS` make that trace an ``invalid_input``
row that says why;
nothing stops the rest. Spans are read one line at a time and only the attributes above are kept, so
100,000 spans cost their text, not their JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.pipeline.dataset import Row

__all__ = [
    "MAX_SPANS",
    "MAX_VALUE_CHARS",
    "TraceSpan",
    "event_messages",
    "keep_attribute",
    "read_otlp_json",
    "rows_from_spans",
    "trace_rows",
]

MAX_VALUE_CHARS = 1_000_000
"""A question, answer or document longer than this makes its trace invalid_input (never truncated)."""
MAX_SPANS = 2_000_000
"""Spans read from one file at most; more is a ConfigError (split the file)."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""One OTLP JSON line longer than this is skipped and reported."""

_QUESTION_KEYS = ("question", "query", "input", "text")
_ANSWER_KEYS = ("answer", "output", "result", "content", "text")
_KEPT = ("input.value", "output.value", "openinference.span.kind", "gen_ai.operation.name")
_KEPT_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "retrieval.documents.", "gen_ai.")


@dataclass(slots=True, kw_only=True)
class TraceSpan:
    """The parts of one span that a sample is built from."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)


def _value(raw: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` as plain Python."""
    if not isinstance(raw, Mapping) or depth > 8:
        return None
    if "stringValue" in raw:
        return raw["stringValue"] if isinstance(raw["stringValue"], str) else None
    if "intValue" in raw:
        try:
            return int(raw["intValue"])
        except (TypeError, ValueError):
            return None
    if "doubleValue" in raw:
        return raw["doubleValue"] if isinstance(raw["doubleValue"], (int, float)) else None
    if "boolValue" in raw:
        return raw["boolValue"] if isinstance(raw["boolValue"], bool) else None
    if "arrayValue" in raw:
        values = raw["arrayValue"].get("values", []) if isinstance(raw["arrayValue"], Mapping) else []
        return [_value(v, depth + 1) for v in values] if isinstance(values, list) else None
    if "kvlistValue" in raw:  # a structured value (GenAI messages on an event)
        pairs = raw["kvlistValue"].get("values", []) if isinstance(raw["kvlistValue"], Mapping) else []
        return {
            p["key"]: _value(p.get("value"), depth + 1)
            for p in (pairs if isinstance(pairs, list) else [])
            if isinstance(p, Mapping) and isinstance(p.get("key"), str)
        }
    return None


def _hex_id(value: Any) -> str:
    """A trace or span id as lowercase hex: OTLP JSON writes hex; protobuf's JSON mapping writes base64."""
    if not isinstance(value, str) or not value:
        return ""
    text = value.strip()
    if len(text) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text[:64]
    return raw.hex() if len(raw) in (8, 16) else text[:64]


def _kept(key: str) -> bool:
    return key in _KEPT or key.startswith(_KEPT_PREFIXES)


def keep_attribute(key: str, value: Any) -> bool:
    """Whether a span attribute is kept: one a sample is built from, or a short scalar (for ``--where``)."""
    short = isinstance(value, (int, float, bool)) or (isinstance(value, str) and len(value) <= 256)
    return _kept(key) or (short and len(key) <= 128)


def _attributes(items: Any) -> dict[str, Any]:
    """The attributes a sample is built from, and every short scalar one (for ``--where``)."""
    found: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            continue
        key = item["key"]
        value = _value(item.get("value"))
        if keep_attribute(key, value):
            found[key] = value
    return found


_PROMPT_EVENTS = {
    "gen_ai.content.prompt": ("gen_ai.prompt", "gen_ai.input.messages"),
    "gen_ai.content.completion": ("gen_ai.completion", "gen_ai.output.messages"),
}
"""GenAI span events before semantic conventions 1.28: the messages as a JSON attribute of the event."""
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
"""The GenAI event (1.37 and later) that carries ``gen_ai.input.messages`` / ``gen_ai.output.messages``."""
_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
"""GenAI message events (1.28 to 1.36), one per message, its text in ``content``; ``gen_ai.choice`` is
the output's (its text in ``message.content``, ``message`` or ``content``)."""


def _choice_text(attributes: Mapping[str, Any]) -> Any:
    message = attributes.get("message")
    if isinstance(message, Mapping):
        return message.get("content")
    return attributes.get("message.content", attributes.get("content"))


def event_messages(events: Any) -> dict[str, Any]:
    """The messages a span's GenAI events record, as the ``gen_ai.*.messages`` attributes they stand for.

    ``events``: the span's events, each ``{"name", "attributes"}`` with OTLP JSON attributes (a list of
    ``{"key", "value"}``) or plain ones (a mapping, as Phoenix returns them).
    """
    found: dict[str, Any] = {}
    inputs: list[dict[str, str]] = []
    outputs: list[dict[str, str]] = []
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, Mapping):
            continue
        name = event.get("name")
        items = event.get("attributes")
        if isinstance(items, Mapping):
            attributes = {k: v for k, v in items.items() if isinstance(k, str)}
        else:
            attributes = {
                i["key"]: _value(i.get("value"))
                for i in (items if isinstance(items, list) else [])
                if isinstance(i, Mapping) and isinstance(i.get("key"), str)
            }
        if name in _PROMPT_EVENTS:
            source, target = _PROMPT_EVENTS[name]
            if isinstance(attributes.get(source), str):
                found.setdefault(target, attributes[source])
        elif name == _DETAILS_EVENT:
            for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
                if isinstance(attributes.get(key), (str, list)):
                    found.setdefault(key, attributes[key])
        elif name in _ROLE_EVENTS and isinstance(attributes.get("content"), str):
            inputs.append({"role": _ROLE_EVENTS[name], "content": attributes["content"]})
        elif name == "gen_ai.choice" and isinstance(text := _choice_text(attributes), str):
            outputs.append({"role": "assistant", "content": text})
    if inputs:
        found.setdefault("gen_ai.input.messages", inputs)
    if outputs:
        found.setdefault("gen_ai.output.messages", outputs)
    return found


def _spans(document: Any) -> Iterator[TraceSpan]:
    if not isinstance(document, Mapping):
        raise ValueError(f"expected an OTLP JSON object, got {type(document).__name__}")
    for resource in document.get("resourceSpans") or []:
        if not isinstance(resource, Mapping):
            continue
        shared = _attributes((resource.get("resource") or {}).get("attributes"))
        for scope in resource.get("scopeSpans") or []:
            for span in (scope or {}).get("spans") or []:
                if not isinstance(span, Mapping):
                    continue
                attributes = {**shared, **_attributes(span.get("attributes"))}
                for key, value in event_messages(span.get("events")).items():
                    attributes.setdefault(key, value)  # the span's own attributes win
                try:
                    start = int(span.get("startTimeUnixNano") or 0)
                except (TypeError, ValueError):
                    start = 0
                yield TraceSpan(
                    trace_id=_hex_id(span.get("traceId")),
                    span_id=_hex_id(span.get("spanId")),
                    parent_id=_hex_id(span.get("parentSpanId")),
                    name=str(span.get("name") or "")[:200],
                    start_ns=start,
                    attributes=attributes,
                )


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


def read_otlp_json(path: str | os.PathLike[str]) -> Iterator[TraceSpan | str]:
    """Every span of an OTLP JSON file, or a problem string for a line that could not be read."""
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
            if not line.strip():
                continue
            where = f"{target.name} line {number}"
            if len(line) > MAX_LINE_BYTES:
                yield f"{where} is over {MAX_LINE_BYTES:,} bytes; skipped"
                continue
            try:
                document = json.loads(line.decode("utf-8"))
                yield from _spans(document)
            except UnicodeDecodeError as exc:
                yield f"{where} is not UTF-8 (byte {exc.start}); skipped"
            except RecursionError:
                yield f"{where} is nested too deeply to read; skipped"
            except ValueError as exc:
                yield f"{where} is not OTLP JSON ({str(exc)[:120]}); skipped"


def _json_pick(text: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(text, str) or not text.lstrip().startswith(("{", "[")):
        return text
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(value, Mapping):
        for key in keys:
            if isinstance(value.get(key), str):
                return value[key]
        data = value.get("data")  # a LangChain message as OpenInference dumps it: {"type": "ai", "data": ...}
        if isinstance(data, Mapping) and isinstance(data.get("content"), str):
            return data["content"]
        return text
    return value if isinstance(value, str) else text


def _indexed(attributes: Mapping[str, Any], prefix: str, suffix: str) -> list[tuple[int, Any]]:
    found = []
    for key, value in attributes.items():
        if key.startswith(prefix) and key.endswith(suffix):
            middle = key[len(prefix) : len(key) - len(suffix)]
            if middle.isdigit():
                found.append((int(middle), value))
    return sorted(found, key=lambda kv: kv[0])


def _messages(attributes: Mapping[str, Any], direction: str) -> list[tuple[str, str]]:
    """(role, text) messages of an LLM span, OpenInference or GenAI."""
    oi = "llm.input_messages." if direction == "input" else "llm.output_messages."
    roles = dict(_indexed(attributes, oi, ".message.role"))
    found = [(str(roles.get(i, "")), c) for i, c in _indexed(attributes, oi, ".message.content")]
    if found:
        return [(r, c) for r, c in found if isinstance(c, str)]
    raw = attributes.get(f"gen_ai.{direction}.messages")
    if isinstance(raw, (str, list)):  # a JSON string on a span, a structured value on an event
        try:
            items = json.loads(raw) if isinstance(raw, str) else raw
        except (ValueError, RecursionError):
            items = []
        out = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, Mapping):
                continue
            parts = item.get("parts") or []
            text = " ".join(
                str(p.get("content")) for p in parts if isinstance(p, Mapping) and p.get("type") == "text"
            )
            if isinstance(item.get("content"), str):
                text = text or item["content"]
            if text:
                out.append((str(item.get("role", "")), text))
        return out
    old = "gen_ai.prompt." if direction == "input" else "gen_ai.completion."
    roles = dict(_indexed(attributes, old, ".role"))
    return [
        (str(roles.get(i, "")), c) for i, c in _indexed(attributes, old, ".content") if isinstance(c, str)
    ]


def _is_llm(span: TraceSpan) -> bool:
    kind = span.attributes.get("openinference.span.kind")
    messages = span.attributes.get("gen_ai.input.messages") or span.attributes.get("gen_ai.output.messages")
    return kind == "LLM" or (kind is None and bool(messages))


def _is_retriever(span: TraceSpan) -> bool:
    return (
        span.attributes.get("openinference.span.kind") == "RETRIEVER"
        or span.attributes.get("gen_ai.operation.name") == "retrieval"
    )


def _documents(span: TraceSpan) -> list[Any]:
    docs = [c for _, c in _indexed(span.attributes, "retrieval.documents.", ".document.content")]
    raw = span.attributes.get("gen_ai.retrieval.documents")
    if not docs and isinstance(raw, str):
        try:
            items = json.loads(raw)
        except (ValueError, RecursionError):
            items = []
        for item in items if isinstance(items, list) else []:
            docs.append(item.get("content") if isinstance(item, Mapping) else item)
    return docs


def _iso(ns: int) -> str | None:
    if ns <= 0:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat()


def trace_sample(trace_id: str, spans: list[TraceSpan]) -> tuple[dict[str, Any], str | None]:
    """A trace's sample fields (and ``meta``), and the problem that makes it unscorable, if any."""
    ids = {s.span_id for s in spans}
    spans = sorted(spans, key=lambda s: s.start_ns)
    roots = [s for s in spans if not s.parent_id or s.parent_id not in ids] or spans
    root = roots[0]
    meta: dict[str, Any] = {
        "trace_id": trace_id,
        "span_id": root.span_id,
        "root_name": root.name,
        "start_time": _iso(root.start_ns),
        "start_time_unix_nano": root.start_ns,
        "attributes": {
            k: v
            for k, v in root.attributes.items()
            if not _kept(k) and (isinstance(v, (int, float, bool)) or (isinstance(v, str) and len(v) <= 256))
        },
    }
    llm = [s for s in spans if _is_llm(s)]
    question: Any = _json_pick(root.attributes.get("input.value"), _QUESTION_KEYS)
    if not isinstance(question, str) and llm:
        users = [c for r, c in _messages(llm[0].attributes, "input") if r == "user"]
        question = users[-1] if users else None
        meta["question_span_id"] = llm[0].span_id
    answer: Any = _json_pick(root.attributes.get("output.value"), _ANSWER_KEYS)
    if not isinstance(answer, str) and llm:
        outputs = _messages(llm[-1].attributes, "output")
        answer = outputs[0][1] if outputs else None
        meta["answer_span_id"] = llm[-1].span_id
    response_id = next(
        (r for s in reversed(llm) if isinstance(r := s.attributes.get("gen_ai.response.id"), str)), None
    )
    if response_id and len(response_id) <= 256:  # the exporter names the evaluated response by it
        meta["response_id"] = response_id
    retrievers = [s for s in spans if _is_retriever(s)]
    contexts = [d for s in retrievers for d in _documents(s)]
    meta["retriever_span_ids"] = [s.span_id for s in retrievers]
    values: dict[str, Any] = {"id": trace_id, "meta": meta}
    if isinstance(question, str):
        values["question"] = question
    if retrievers:
        values["contexts"] = [c for c in contexts if isinstance(c, str)]
    if isinstance(answer, str):
        values["answer"] = answer
    for name in ("question", "answer"):
        if len(values.get(name) or "") > MAX_VALUE_CHARS:
            return values, f"trace {trace_id}: its {name} is over {MAX_VALUE_CHARS:,} characters"
    if any(len(c) > MAX_VALUE_CHARS for c in values.get("contexts", [])):
        return values, f"trace {trace_id}: a retrieved document is over {MAX_VALUE_CHARS:,} characters"
    if "answer" not in values:
        return values, (
            f"trace {trace_id}: no answer found (no output.value on the root span {root.name!r} and no LLM "
            "span with an output message)"
        )
    if not retrievers:
        return values, (
            f"trace {trace_id}: no retriever span (openinference.span.kind=RETRIEVER or "
            "gen_ai.operation.name=retrieval), so there are no retrieved contexts to check the answer against"
        )
    return values, None


def trace_rows(source: str | os.PathLike[str], *, since_ns: int | None = None) -> list[Row]:
    """One dataset row per trace, in the order traces first appear.

    ``source`` is an OTLP JSON file, or ``phoenix:http://HOST:PORT[/PROJECT]`` for the spans a running
    Phoenix server holds (see :mod:`ragmetrics.traces.phoenix`). ``since_ns`` (unix nanoseconds): a
    Phoenix server sends only the traces whose root starts then or later (and the ones that window
    cuts, whole); a file is read whole (:func:`~ragmetrics.traces.select.select_traces` applies the
    window to either).
    """
    if isinstance(source, str) and source.startswith("phoenix:"):
        from ragmetrics.traces.phoenix import read_phoenix

        return rows_from_spans(read_phoenix(source, since_ns=since_ns), source)
    return rows_from_spans(read_otlp_json(source), source)


def rows_from_spans(items: Iterable[TraceSpan | str], source: str | os.PathLike[str]) -> list[Row]:
    """Spans (and problem strings, each kept as an invalid row) grouped by trace, one row per trace."""
    traces: dict[str, list[TraceSpan]] = {}
    problems: list[str] = []
    count = 0
    for item in items:
        if isinstance(item, str):
            problems.append(item)
            continue
        count += 1
        if count > MAX_SPANS:
            fix = (
                "read a window of it with --since" if str(source).startswith("phoenix:") else "split the file"
            )
            raise ConfigError(f"--traces: {source} holds more than {MAX_SPANS:,} spans; {fix}")
        if not item.trace_id:
            problems.append(f"a span named {item.name!r} has no traceId; skipped")
            continue
        traces.setdefault(item.trace_id, []).append(item)
    rows: list[Row] = []
    for trace_id, spans in traces.items():
        values, problem = trace_sample(trace_id, spans)
        source_meta = {"trace_id": trace_id, **values.get("meta", {})}
        if problem is not None:
            rows.append(Row(len(rows), None, problem, source=source_meta))
        else:
            rows.append(Row(len(rows), values, source=source_meta))
    for problem in problems:
        rows.append(Row(len(rows), None, problem))
    return rows
