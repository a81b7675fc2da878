"""The OpenAI side of the fake LLM server: Chat Completions requests and replies, errors, model listings.

Chat Completions (``POST /v1/chat/completions``) is read in every way instructor asks for structured
output: tools (``tools`` + ``tool_choice``), legacy ``functions``, ``response_format`` of type
``json_schema`` or ``json_object`` (with llama-cpp-python's ``schema`` beside the type, or the schema
in the prompt), and plain text (MD_JSON: the answer goes in a ```json fence).
"""

from __future__ import annotations

import time
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

__all__ = ["openai_completion", "openai_error", "openai_models", "read_openai"]

_ERROR_TYPES: Mapping[int, str] = {
    **COMMON_ERROR_TYPES,
    408: "timeout",
    409: "conflict",
    422: "invalid_request_error",
    503: "service_unavailable",
}


def read_openai(body: Mapping[str, Any]) -> Call:
    """Read what a Chat Completions request body asks for."""
    chars = 0
    user_texts: list[str] = []
    system_texts: list[str] = []
    for message in body.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        text = text_of(message.get("content"))
        chars += len(text)
        for call in message.get("tool_calls") or ():
            chars += len(str(call.get("function", {}).get("arguments", "")))
        role = message.get("role")
        if role == "user":
            user_texts.append(text)
        elif role in ("system", "developer"):
            system_texts.append(text)
    users = tuple(user_texts)
    tools, functions, response_format = body.get("tools"), body.get("functions"), body.get("response_format")
    if tools:
        chars += json_chars(tools)
        choice = body.get("tool_choice")
        chosen = choice.get("function", {}).get("name") if isinstance(choice, Mapping) else None
        name, schema = named_tool(tools, chosen, "function")
        return tool_call(name, schema, users, chars)
    if functions:
        chars += json_chars(functions)
        choice = body.get("function_call")
        name, schema = named_tool(functions, choice.get("name") if isinstance(choice, Mapping) else None, "")
        return tool_call(name, schema, users, chars, mode="functions")
    mode = "text"
    if isinstance(response_format, Mapping):
        chars += json_chars(response_format)
        if response_format.get("type") == "json_schema":
            spec = _mapping(response_format.get("json_schema"))
            schema = _mapping(spec.get("schema"))
            return schema_call("json_schema", schema, users, chars, name=spec.get("name"))
        if response_format.get("type") == "json_object":
            schema = _mapping(response_format.get("schema"))  # llama-cpp-python's form
            if schema:
                return schema_call("json_object", schema, users, chars)
            mode = "json_object"
    return schema_call(mode, embedded_schema(system_texts + user_texts), users, chars)


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else ``{}`` (a malformed field reads as absent)."""
    return value if isinstance(value, Mapping) else {}


def openai_completion(answer: Answer) -> dict[str, Any]:
    """A Chat Completions reply carrying the answer's text where the request's mode expects it."""
    call, text, seq = answer.call, answer.text, answer.seq
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    finish = "stop"
    if answer.raw_content:
        message["content"] = text
    elif call.mode == "tools":
        message["tool_calls"] = [
            {"id": f"call_fake{seq}", "type": "function", "function": {"name": call.tool, "arguments": text}}
        ]
        if call.echo_function_call:
            message["function_call"] = {"name": call.tool, "arguments": text}
        finish = "tool_calls"
    elif call.mode == "functions":
        message["function_call"] = {"name": call.tool, "arguments": text}
        finish = "function_call"
    elif call.mode == "text":
        message["content"] = f"```json\n{text}\n```"
    else:
        message["content"] = text
    return {
        "id": f"chatcmpl-fake{seq}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": answer.model,
        "system_fingerprint": "fake_llm_server",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "length" if answer.truncated else finish,
            }
        ],
        "usage": {
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
            "total_tokens": answer.prompt_tokens + answer.completion_tokens,
        },
    }


def openai_error(status: int, message: str) -> dict[str, Any]:
    """An error body in the OpenAI shape."""
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def openai_models(models: Sequence[str]) -> dict[str, Any]:
    """A model listing in the OpenAI shape."""
    return {
        "object": "list",
        "data": [{"id": m, "object": "model", "created": 0, "owned_by": "ragmetrics"} for m in models],
    }
