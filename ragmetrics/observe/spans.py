"""One span as the trace readers give it: ids, start, origin and the attributes a sample is built from.

The OTLP file reader (:mod:`.otlp`) and the Phoenix reader (:mod:`.phoenix`) both give :class:`TraceSpan`
values (and :class:`SpanProblem` for a trace some of whose spans could not be read); :mod:`.samples`
turns them into samples. OTLP ``AnyValue`` decoding, hex ids and GenAI messages recorded as span events
are read here, once for both readers.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SpanProblem", "TraceSpan", "event_messages", "keep_attribute"]

_KEPT = (
    "input.value",
    "output.value",
    "openinference.span.kind",
    "gen_ai.operation.name",
    "session.id",  # sessions and tool spans (see :mod:`.sessions`), kept whatever their length
    "tool.name",
    "tool.parameters",
    "tool_call.id",
    "tool_call.function.name",
    "tool_call.function.arguments",
)
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
    origin: str = ""
    """Where it was read (``traces.json line 3``), for messages; empty for a Phoenix span."""


@dataclass(frozen=True, slots=True)
class SpanProblem:
    """Spans of a trace that could not be read: the trace is incomplete, so it is not scored."""

    trace_id: str
    message: str


def _value(raw: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` as plain Python."""
    if not isinstance(raw, Mapping) or depth > 8:
        return None
    if "stringValue" in raw:
        return raw["stringValue"] if isinstance(raw["stringValue"], str) else None
    if "intValue" in raw:
        try:
            return int(raw["intValue"])
        except (TypeError, ValueError, OverflowError):  # 1e400 is a JSON number too
            return None
    if "doubleValue" in raw:  # NaN and infinities (JSON's NaN, 1e400) are no value: never NaN downstream
        number = raw["doubleValue"]
        usable = isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number)
        return number if usable else None
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


_HEX = re.compile(r"[0-9a-fA-F]{16}(?:[0-9a-fA-F]{16})?")
"""A span id (8 bytes) or trace id (16 bytes) as hex."""


def _hex_id(value: Any) -> str:
    """A trace or span id as lowercase hex: OTLP JSON writes hex; protobuf's JSON mapping writes base64."""
    if not isinstance(value, str) or not value:
        return ""
    text = value.strip()
    if _HEX.fullmatch(text):
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
