"""Server dialects of the fake LLM server: how far a real OpenAI-compatible server departs from OpenAI.

``openai`` (the default) accepts every form of structured output the fake server reads.
``llama-cpp`` answers as llama-cpp-python's server 0.3.x does: ``response_format`` of type
``json_schema`` fails with HTTP 500 (``Input should be 'text' or 'json_object'``);
``{"type": "json_object", "schema": ...}`` is accepted; ``tools`` get a tool call only when
``tool_choice`` names one (a missing one is HTTP 500), otherwise plain content; there is no
``/v1/messages`` route (HTTP 404); ``GET /v1/models`` lists ``owned_by: "me"`` with empty
``permissions``, as llama-cpp-python does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragmetrics._fake.wire import Call

__all__ = ["DIALECTS", "Rejection", "adapt", "llama_models", "reject"]

DIALECTS = ("openai", "llama-cpp")
"""The dialects a ``FakeLLMServer`` can speak."""

_LLAMA_FORMATS = ("text", "json_object")
_LLAMA_APP = "/usr/lib/python3/site-packages/llama_cpp/server/app.py"  # where the real traceback points


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejection:
    """A request the dialect refuses: the HTTP status and the exact JSON body the real server sends."""

    status: int
    body: Mapping[str, Any]


def llama_models(models: Sequence[str]) -> dict[str, Any]:
    """``GET /v1/models`` as llama-cpp-python's server answers it."""
    return {
        "object": "list",
        "data": [{"id": m, "object": "model", "owned_by": "me", "permissions": []} for m in models],
    }


def _llama_error(message: str) -> Rejection:
    return Rejection(
        status=500,
        body={"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}},
    )


def reject(dialect: str, endpoint: str, body: Mapping[str, Any]) -> Rejection | None:
    """How the dialect's server refuses this request, or None if it serves it."""
    if dialect != "llama-cpp":
        return None
    if endpoint == "messages":
        return Rejection(status=404, body={"detail": "Not Found"})
    if endpoint != "chat":
        return None
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping) and response_format.get("type") not in _LLAMA_FORMATS:
        error = {
            "type": "literal_error",
            "loc": ("body", "response_format", "type"),
            "msg": "Input should be 'text' or 'json_object'",
            "input": response_format.get("type"),
            "ctx": {"expected": "'text' or 'json_object'"},
        }
        return _llama_error(
            f"1 validation error:\n  {error!r}\n\n"
            f'  File "{_LLAMA_APP}", line 376, in create_chat_completion\n'
            "    POST /v1/chat/completions"
        )
    choice, tools = body.get("tool_choice"), body.get("tools")
    if isinstance(choice, Mapping) and isinstance(tools, list):
        name = (
            (choice.get("function") or {}).get("name")
            if isinstance(choice.get("function"), Mapping)
            else None
        )
        names = [(t.get("function") or {}).get("name") for t in tools if isinstance(t, Mapping)]
        if name not in names:
            return _llama_error(f"Tool choice '{name}' not found in tools.")
    return None


def adapt(dialect: str, body: Mapping[str, Any], call: Call) -> Call:
    """The call as the dialect's server treats it.

    llama-cpp ignores tools (or legacy functions) unless one is named, and answers in the content;
    a named tool's call is repeated as a legacy ``function_call``.
    """
    if dialect != "llama-cpp":
        return call
    named = {"tools": "tool_choice", "functions": "function_call"}.get(call.mode)
    if named is not None and not isinstance(body.get(named), Mapping):
        return replace(call, mode="json_object", tool=None)
    if call.mode == "tools":
        return replace(call, echo_function_call=True)
    return call
