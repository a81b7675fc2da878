"""The Anthropic side of the fake LLM server: Messages requests and replies, errors, model listings.

Messages (``POST /v1/messages``) is read as tools (answered with a ``tool_use`` content block),
structured outputs (``output_format``) or text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics._fake.wire import (
    COMMON_ERROR_TYPES,
    Answer,
    Call,
    embedded_schema,
    json_chars,
    named_tool,
    schema_call,
    text_of,
    tool_call,
)

__all__ = ["anthropic_error", "anthropic_message", "anthropic_models", "read_anthropic"]

_ERROR_TYPES: Mapping[int, str] = {
    **COMMON_ERROR_TYPES,
    413: "request_too_large",
    503: "overloaded_error",
    529: "overloaded_error",
}


def read_anthropic(body: Mapping[str, Any]) -> Call:
    """Read what a Messages request body asks for."""
    system = text_of(body.get("system"))
    chars = len(system)
    user_texts: list[str] = []
    for message in body.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        text = text_of(message.get("content"))
        chars += len(text)
        if message.get("role") == "user":
            user_texts.append(text)
    users = tuple(user_texts)
    tools = body.get("tools")
    if tools:
        chars += json_chars(tools)
        choice = body.get("tool_choice")
        name, schema = named_tool(tools, choice.get("name") if isinstance(choice, Mapping) else None, "")
        return tool_call(name, schema, users, chars)
    output_format = body.get("output_format")
    if isinstance(output_format, Mapping):  # Anthropic structured outputs
        chars += json_chars(output_format)
        return schema_call("json_schema", output_format.get("schema") or {}, users, chars)
    return schema_call("text", embedded_schema([system, *user_texts]), users, chars)


def anthropic_message(answer: Answer) -> dict[str, Any]:
    """A Messages reply: a ``tool_use`` block holding the answer's value in tool mode, else a text block.

    With no value (broken JSON, a model that ignored the tool) or raw content, the text goes in a text
    block instead.
    """
    stop = "end_turn"
    value, truncated = answer.value, answer.truncated
    if answer.call.mode == "tools" and not answer.raw_content and (value is not None or truncated):
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_fake{answer.seq}",
            "name": answer.call.tool,
            "input": value if isinstance(value, dict) and not truncated else {},
        }
        stop = "tool_use"
    else:
        block = {"type": "text", "text": answer.text}
    return {
        "id": f"msg_fake{answer.seq}",
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": [block],
        "stop_reason": "max_tokens" if truncated else stop,
        "stop_sequence": None,
        "usage": {"input_tokens": answer.prompt_tokens, "output_tokens": answer.completion_tokens},
    }


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """An error body in the Anthropic shape."""
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def anthropic_models(models: Sequence[str]) -> dict[str, Any]:
    """A model listing in the Anthropic shape."""
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2024-01-01T00:00:00Z"} for m in models
    ]
    return {
        "data": data,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }
