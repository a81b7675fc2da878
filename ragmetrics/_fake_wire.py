"""Wire formats and HTTP plumbing of the fake LLM server: provider requests in, provider replies out.

This module owns the bytes :class:`ragmetrics.testing.FakeLLMServer` speaks, and nothing about
scripting, faults or counters:

- the loopback transport: a threaded HTTP/1.1 keep-alive server whose handler reads request bodies,
  writes each response in one send, can hang or drop a request, and whose open connections can all be
  closed at once (so that stopping never waits for a hanging request);
- OpenAI Chat Completions (``POST /v1/chat/completions``) in every way instructor asks for structured
  output: tools (``tools`` + ``tool_choice``), legacy ``functions``, ``response_format`` of type
  ``json_schema`` or ``json_object``, and plain text (MD_JSON: the answer goes in a ```json fence);
- Anthropic Messages (``POST /v1/messages``): tools (a ``tool_use`` content block), structured
  outputs (``output_format``) or text;
- OpenAI embeddings (``POST /v1/embeddings``, float or base64) and model listings (``GET /v1/models``);
- error bodies in each provider's shape.

Token counts are estimates, as no tokenizer files can be downloaded: ``ceil(characters / 4)``, over
everything the model reads (message texts, tool calls and tool results in the history, and the tool or
``response_format`` JSON schema, which real providers bill as prompt tokens) and over the text the
reply carries (tool arguments or content).
"""

from __future__ import annotations

import base64
import http.server
import json
import math
import re
import select
import socket
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BROKEN_EMBEDDINGS",
    "Call",
    "Handler",
    "LoopbackServer",
    "anthropic_message",
    "broken_json",
    "completion_body",
    "dumps",
    "embed",
    "embeddings_body",
    "error_body",
    "estimate_tokens",
    "models_body",
    "openai_completion",
    "read_call",
    "texts_of",
]

_COMPACT = (",", ":")
_SCHEMA_MARKER = "json_schema"
_WORD = re.compile(r"\w+")
_FLOAT32 = struct.Struct("<f")
_POLL = 0.05  # seconds between checks of a hanging request
BROKEN_EMBEDDINGS = b'{"object":"list","data":[{"embedding":[0.1,,'
"""A syntactically broken embeddings body."""


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

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        """Serve a GET request."""
        self.server.dispatch(self, "GET")

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        """Serve a POST request."""
        self.server.dispatch(self, "POST")

    def read_body(self) -> bytes:
        """The request body (``Content-Length`` or chunked)."""
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length))
        if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
            return b""
        chunks = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    def send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        """Write a JSON response, status line to body, in one send."""
        reason = self.responses.get(status, ("",))[0]
        lines = [
            f"HTTP/1.1 {status} {reason}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
        ]
        if headers:
            lines.extend(f"{name}: {value}" for name, value in headers.items())
        if self.close_connection:
            lines.append("Connection: close")
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

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


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON."""
    return json.dumps(value, separators=_COMPACT, ensure_ascii=False).encode("utf-8")


def broken_json(text: str) -> str:
    """``text`` cut in half and made syntactically invalid (``,,`` is never valid JSON)."""
    return text[: max(1, len(text) // 2)] + ",,}"


def texts_of(value: Any) -> list[str]:
    """The inputs of an embeddings request: a string, strings, or token-id lists (joined as text)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return [" ".join(map(str, value))]
    if isinstance(value, list):
        return [v if isinstance(v, str) else " ".join(map(str, v)) for v in value]
    return []


def estimate_tokens(chars: int) -> int:
    """Estimated tokens in ``chars`` characters of text: ``ceil(chars / 4)``."""
    return (chars + 3) // 4


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


def _text_of(content: Any) -> str:
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
                    parts.append(_text_of(block["content"]))
        return "\n".join(parts)
    return json.dumps(content, separators=_COMPACT)


def _embedded_schema(texts: Sequence[str]) -> Mapping[str, Any]:
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


def _named_tool(tools: list[Any], chosen: str | None, key: str) -> tuple[str | None, Mapping[str, Any]]:
    """The chosen tool's name and parameter schema (the first tool when none is forced)."""
    specs = [t.get(key, t) if key else t for t in tools if isinstance(t, Mapping)]
    for spec in specs:
        if chosen is None or spec.get("name") == chosen:
            schema = spec.get("parameters") or spec.get("input_schema") or {}
            return spec.get("name"), schema
    return chosen, {}


def _read_openai(body: Mapping[str, Any]) -> Call:
    chars = 0
    user_texts: list[str] = []
    system_texts: list[str] = []
    for message in body.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        text = _text_of(message.get("content"))
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
        chars += len(json.dumps(tools, separators=_COMPACT))
        choice = body.get("tool_choice")
        chosen = choice.get("function", {}).get("name") if isinstance(choice, Mapping) else None
        name, schema = _named_tool(tools, chosen, "function")
        return Call(
            mode="tools", schema=name, tool=name, user_texts=users, prompt_chars=chars, fields=_fields(schema)
        )
    if functions:
        chars += len(json.dumps(functions, separators=_COMPACT))
        choice = body.get("function_call")
        name, schema = _named_tool(functions, choice.get("name") if isinstance(choice, Mapping) else None, "")
        return Call(
            mode="functions",
            schema=name,
            tool=name,
            user_texts=users,
            prompt_chars=chars,
            fields=_fields(schema),
        )
    mode = "text"
    if isinstance(response_format, Mapping):
        chars += len(json.dumps(response_format, separators=_COMPACT))
        if response_format.get("type") == "json_schema":
            spec = response_format.get("json_schema") or {}
            schema = spec.get("schema") or {}
            name = spec.get("name") or schema.get("title")
            return Call(
                mode="json_schema",
                schema=name,
                tool=None,
                user_texts=users,
                prompt_chars=chars,
                fields=_fields(schema),
            )
        if response_format.get("type") == "json_object":
            mode = "json_object"
    schema = _embedded_schema(system_texts + user_texts)
    return Call(
        mode=mode,
        schema=schema.get("title"),
        tool=None,
        user_texts=users,
        prompt_chars=chars,
        fields=_fields(schema),
    )


def _read_anthropic(body: Mapping[str, Any]) -> Call:
    system = _text_of(body.get("system"))
    chars = len(system)
    user_texts: list[str] = []
    for message in body.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        text = _text_of(message.get("content"))
        chars += len(text)
        if message.get("role") == "user":
            user_texts.append(text)
    users = tuple(user_texts)
    tools = body.get("tools")
    if tools:
        chars += len(json.dumps(tools, separators=_COMPACT))
        choice = body.get("tool_choice")
        name, schema = _named_tool(tools, choice.get("name") if isinstance(choice, Mapping) else None, "")
        return Call(
            mode="tools", schema=name, tool=name, user_texts=users, prompt_chars=chars, fields=_fields(schema)
        )
    output_format = body.get("output_format")
    if isinstance(output_format, Mapping):  # Anthropic structured outputs
        chars += len(json.dumps(output_format, separators=_COMPACT))
        schema = output_format.get("schema") or {}
        mode = "json_schema"
    else:
        schema = _embedded_schema([system, *user_texts])
        mode = "text"
    return Call(
        mode=mode,
        schema=schema.get("title"),
        tool=None,
        user_texts=users,
        prompt_chars=chars,
        fields=_fields(schema),
    )


def read_call(endpoint: str, body: Mapping[str, Any]) -> Call:
    """Read what a ``chat`` (OpenAI) or ``messages`` (Anthropic) request body asks for."""
    return _read_anthropic(body) if endpoint == "messages" else _read_openai(body)


def openai_completion(
    *,
    call: Call,
    model: str,
    text: str,
    raw_content: bool,
    truncated: bool,
    prompt_tokens: int,
    completion_tokens: int,
    seq: int,
) -> dict[str, Any]:
    """A Chat Completions reply carrying ``text`` where the request's mode expects it.

    Args:
        call: The request it answers.
        model: The model name to echo.
        text: The JSON text (or raw content) of the answer.
        raw_content: Send ``text`` as the message content whatever the mode (a scripted ``content``).
        truncated: Finish with ``length``, as a reply cut off at the token limit.
        prompt_tokens: Estimated prompt tokens.
        completion_tokens: Estimated completion tokens.
        seq: A sequence number for the ids.
    """
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    finish = "stop"
    if raw_content:
        message["content"] = text
    elif call.mode == "tools":
        message["tool_calls"] = [
            {"id": f"call_fake{seq}", "type": "function", "function": {"name": call.tool, "arguments": text}}
        ]
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
        "model": model,
        "system_fingerprint": "fake_llm_server",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "length" if truncated else finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def anthropic_message(
    *,
    call: Call,
    model: str,
    text: str,
    value: Any,
    raw_content: bool,
    truncated: bool,
    prompt_tokens: int,
    completion_tokens: int,
    seq: int,
) -> dict[str, Any]:
    """A Messages reply: a ``tool_use`` block holding ``value`` in tool mode, else a text block.

    Args:
        call: The request it answers.
        model: The model name to echo.
        text: The answer's text (used for text blocks).
        value: The answer as a JSON object for a ``tool_use`` block; None sends ``text`` as a text
            block instead (a model that ignored the tool, e.g. with broken JSON).
        raw_content: Send ``text`` as a text block whatever the mode.
        truncated: Stop with ``max_tokens``, as a reply cut off at the token limit.
        prompt_tokens: Estimated input tokens.
        completion_tokens: Estimated output tokens.
        seq: A sequence number for the ids.
    """
    stop = "end_turn"
    if call.mode == "tools" and not raw_content and (value is not None or truncated):
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_fake{seq}",
            "name": call.tool,
            "input": value if isinstance(value, dict) and not truncated else {},
        }
        stop = "tool_use"
    else:
        block = {"type": "text", "text": text}
    return {
        "id": f"msg_fake{seq}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": "max_tokens" if truncated else stop,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens},
    }


def completion_body(endpoint: str, *, value: Any, **kwargs: Any) -> dict[str, Any]:
    """A Messages reply for the ``messages`` endpoint, else a Chat Completions reply (same arguments)."""
    if endpoint == "messages":
        return anthropic_message(value=value, **kwargs)
    return openai_completion(**kwargs)


_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout",
    409: "conflict",
    422: "invalid_request_error",
    429: "rate_limit_error",
    503: "service_unavailable",
}
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def error_body(endpoint: str, status: int, message: str) -> dict[str, Any]:
    """An error body in the shape of the provider behind ``endpoint`` (Anthropic for ``messages``)."""
    if endpoint == "messages":
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = _OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def embed(text: str, dim: int) -> list[float]:
    """A deterministic, L2-normalised embedding of ``text``.

    Lowercased word unigrams and bigrams are hashed (crc32, with a sign bit) into ``dim`` buckets, so
    texts sharing words are similar. Empty text hashes a fixed placeholder token.
    """
    words = _WORD.findall(text.lower()) or ["<empty>"]
    vector = [0.0] * dim
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    for gram in grams:
        h = zlib.crc32(gram.encode("utf-8"))
        vector[h % dim] += -1.0 if h & 0x80000000 else 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:  # every bucket cancelled out: fall back to one bucket
        vector[zlib.crc32(text.encode("utf-8")) % dim] = 1.0
        return vector
    return [v / norm for v in vector]


def embeddings_body(
    texts: Sequence[str], *, model: str, dim: int, encoding: str
) -> tuple[dict[str, Any], int]:
    """An embeddings reply for ``texts`` and its estimated prompt tokens.

    Args:
        texts: The inputs, in order.
        model: The model name to echo.
        dim: The embedding dimension.
        encoding: ``float`` or ``base64`` (little-endian float32, as the OpenAI SDK asks by default).
    """
    data = []
    for i, text in enumerate(texts):
        vector = embed(text, dim)
        if encoding == "base64":
            packed = b"".join(_FLOAT32.pack(v) for v in vector)
            item: Any = base64.b64encode(packed).decode("ascii")
        else:
            item = vector
        data.append({"object": "embedding", "index": i, "embedding": item})
    tokens = estimate_tokens(sum(len(t) for t in texts))
    body = {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    return body, tokens


def models_body(models: Sequence[str], *, anthropic: bool) -> dict[str, Any]:
    """A model listing in the OpenAI shape, or the Anthropic one when ``anthropic`` is true."""
    if anthropic:
        data = [
            {"type": "model", "id": m, "display_name": m, "created_at": "2024-01-01T00:00:00Z"}
            for m in models
        ]
        return {
            "data": data,
            "has_more": False,
            "first_id": models[0] if models else None,
            "last_id": models[-1] if models else None,
        }
    return {
        "object": "list",
        "data": [{"id": m, "object": "model", "created": 0, "owned_by": "ragmetrics"} for m in models],
    }
