"""What the OpenAI and Anthropic wire formats of the fake LLM server share.

A chat or messages request is read into a :class:`Call` (how structured output was asked for, the
schema's name and fields, the user texts, the characters the model reads); a reply is built from an
:class:`Answer` by ``openai_wire`` or ``anthropic_wire``. Token counts are estimates, as no tokenizer
files can be downloaded: ``ceil(characters / 4)`` (ragmetrics' one estimate,
:func:`ragmetrics.text.tokens_for_chars`), over everything the model reads (message texts, tool
calls and tool results in the history, and the tool or ``response_format`` JSON schema, which real
providers bill as prompt tokens) and over the text the reply carries (tool arguments or content).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COMMON_ERROR_TYPES",
    "Answer",
    "Call",
    "broken_json",
    "dumps",
    "embedded_schema",
    "json_chars",
    "named_tool",
    "schema_call",
    "text_of",
    "tool_call",
]

_COMPACT = (",", ":")
_SCHEMA_MARKER = "json_schema"

COMMON_ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}
"""Error types both providers name alike, by HTTP status."""


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON."""
    return json.dumps(value, separators=_COMPACT, ensure_ascii=False).encode("utf-8")


def json_chars(value: Any) -> int:
    """Characters of ``value`` as compact JSON (what a schema or tool list adds to the prompt)."""
    return len(json.dumps(value, separators=_COMPACT))


def broken_json(text: str) -> str:
    """``text`` cut in half and made syntactically invalid (``,,`` is never valid JSON)."""
    return text[: max(1, len(text) // 2)] + ",,}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """What a chat or messages request asks for, as far as the fake server cares."""

    mode: str
    """``tools``, ``functions``, ``json_schema``, ``json_object`` or ``text``."""
    schema: str | None
    """The response schema's name (tool, function or json_schema name, or schema title)."""
    tool: str | None
    """The tool or function name to answer with (tool modes only)."""
    user_texts: tuple[str, ...]
    """The text of each user message, in order."""
    prompt_chars: int
    """Characters the model reads: messages, history and schemas."""
    fields: frozenset[str] = frozenset()
    """The response schema's top-level property names (to recognise a schema without a name)."""
    json_schema: Mapping[str, Any] | None = None
    """The response schema itself, wherever the request carried it (None: no schema found)."""
    echo_function_call: bool = False
    """Repeat a tool call as a legacy ``function_call`` too (llama-cpp-python's server does)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """One answer to a chat or messages request, before it is put in a provider's reply shape."""

    call: Call
    """The request it answers."""
    model: str
    """The model name to echo."""
    text: str
    """The JSON text (or raw content) of the answer."""
    value: Any = None
    """The answer as a JSON value, when it is one (an Anthropic ``tool_use`` block carries it); None
    when the text is broken JSON or raw content."""
    raw_content: bool = False
    """Send ``text`` as the message content whatever the mode (a scripted ``content``)."""
    truncated: bool = False
    """The reply was cut off at the token limit (``length`` / ``max_tokens``)."""
    prompt_tokens: int
    """Estimated prompt (input) tokens."""
    completion_tokens: int
    """Estimated completion (output) tokens."""
    seq: int
    """A sequence number for the ids."""


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of text/tool blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping):
                if "text" in block:
                    parts.append(str(block["text"]))
                elif "input" in block:  # anthropic tool_use in the history
                    parts.append(json.dumps(block["input"], separators=_COMPACT))
                elif "content" in block:  # anthropic tool_result
                    parts.append(text_of(block["content"]))
        return "\n".join(parts)
    return json.dumps(content, separators=_COMPACT)


def embedded_schema(texts: Sequence[str]) -> Mapping[str, Any]:
    """The JSON schema embedded in a prompt (instructor's JSON and MD_JSON modes), or ``{}``."""
    decoder = json.JSONDecoder()
    for text in texts:
        start = text.find(_SCHEMA_MARKER)
        if start < 0:
            continue
        brace = text.find("{", start)
        tries = 0
        while brace >= 0 and tries < 20:
            tries += 1
            try:
                schema, _ = decoder.raw_decode(text, brace)
            except ValueError:
                brace = text.find("{", brace + 1)
                continue
            if isinstance(schema, dict) and ("properties" in schema or "title" in schema):
                return schema
            brace = text.find("{", brace + 1)
    return {}


def _fields(schema: Any) -> frozenset[str]:
    """The top-level property names of a JSON schema."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return frozenset(properties) if isinstance(properties, Mapping) else frozenset()


def _schema_or_none(schema: Any) -> Mapping[str, Any] | None:
    """``schema`` if it is a non-empty JSON object, else None."""
    return schema if isinstance(schema, Mapping) and schema else None


def named_tool(tools: list[Any], chosen: str | None, key: str) -> tuple[str | None, Mapping[str, Any]]:
    """The chosen tool's name and parameter schema (the first tool when none is forced)."""
    specs = [t.get(key, t) if key else t for t in tools if isinstance(t, Mapping)]
    for spec in specs:
        if chosen is None or spec.get("name") == chosen:
            schema = spec.get("parameters") or spec.get("input_schema") or {}
            return spec.get("name"), schema
    return chosen, {}


def tool_call(
    name: str | None, schema: Mapping[str, Any], users: tuple[str, ...], chars: int, *, mode: str = "tools"
) -> Call:
    """A request answered through a tool (or legacy function) called ``name``."""
    return Call(
        mode=mode,
        schema=name,
        tool=name,
        user_texts=users,
        prompt_chars=chars,
        fields=_fields(schema),
        json_schema=_schema_or_none(schema),
    )


def schema_call(
    mode: str, schema: Mapping[str, Any], users: tuple[str, ...], chars: int, *, name: str | None = None
) -> Call:
    """A request answered in the message content; the schema is named ``name``, else by its title."""
    return Call(
        mode=mode,
        schema=name or schema.get("title"),
        tool=None,
        user_texts=users,
        prompt_chars=chars,
        fields=_fields(schema),
        json_schema=_schema_or_none(schema),
    )
