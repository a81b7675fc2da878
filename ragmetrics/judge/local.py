"""Local judges (llama.cpp, llama-cpp-python, Ollama, vLLM, LM Studio): constrained, bounded, fast to fail.

A small model on a local server can ramble: at temperature 0 the same request gives the same
2,000-token reply, minutes each. So a judge that knows it talks to a local server (``server=`` or
detected from ``GET /models``, :func:`kind_from_models`) sends the schema in the form that server
enforces while decoding (:data:`LOCAL_FORMS`), with its strings and lists bounded
(:func:`bounded_schema`), and caps ``max_tokens`` at what a reply to that request can need
(:func:`reply_budget`). A reply cut at that cap is retried once with twice the room, never again;
a timeout is not re-sent (the server is still computing it). Pure functions: the OpenAI-compatible
adapter applies them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ragmetrics.text import tokens_for_chars

__all__ = [
    "LOCAL_FORMS",
    "LOCAL_IN_FLIGHT",
    "LOCAL_KINDS",
    "MAX_STRING_CHARS",
    "bounded_schema",
    "data_chars",
    "is_local",
    "kind_from_models",
    "reply_budget",
]

LOCAL_FORMS: Mapping[str, str] = {
    "llama-cpp-python": "tools",
    "llama.cpp": "json_schema",
    "ollama": "json_schema",
    "vllm": "json_schema",
    "lmstudio": "json_schema",
}
"""Server kind -> the wire form whose schema it turns into a decoding grammar. llama-cpp-python 0.3.x
builds its grammar from a named tool's parameters (and refuses ``json_schema`` with HTTP 500); on
SmolLM2-135M the named tool ran faster than its ``json_object`` + ``schema`` form, which puts the
schema in the prompt too (``benchmarks/local_judge.py``: 92 s and 25 calls against 103 s and 31 for
the bundled example). The others constrain ``json_schema`` (Ollama and LM Studio do not constrain
tool calls)."""

LOCAL_KINDS = frozenset(LOCAL_FORMS)
"""The server kinds that are local servers."""

LOCAL_IN_FLIGHT = 2
"""Requests a judge starts with in flight at a local server that decodes one or a few at a time
(all but vLLM): more would only queue there and time out. The limit climbs back towards
``max_concurrency`` as calls succeed, as after a rate limit."""

MAX_STRING_CHARS = 500
"""Longest string a bounded schema allows (a quote, a claim, a reason), whatever the inputs' length
(llama.cpp's grammar spells a bound out character by character)."""
MIN_STRING_CHARS = 80
MAX_LIST_ITEMS = 32
"""Most items a bounded schema's list may hold (claims of one answer)."""
MIN_LIST_ITEMS = 4
WORDS_PER_ITEM = 3
"""A listed item (a claim) takes at least this many words of the inputs."""
BUDGET_FLOOR_TOKENS = 64
TOKENS_PER_FREE_STRING = 32
"""What a reply's free-text field (a reason, a quote) is allowed on top of the inputs' size."""
ITEMS_COUNTED = 4
"""Items of a list counted in a schema's skeleton."""
INPUT_FACTOR = 3
"""A reply restates its inputs at most this many times over (claims and spans copy the answer)."""


def is_local(kind: str) -> bool:
    """Whether a server kind is a local server."""
    return kind in LOCAL_KINDS


def kind_from_models(body: Any) -> str:
    """The server kind that answered ``GET /models`` with ``body`` (``openai`` when nothing says local).

    llama.cpp's server lists ``owned_by: "llamacpp"``; vLLM ``"vllm"``; llama-cpp-python ``"me"`` with
    an empty ``permissions`` list; Ollama ``"library"`` (or ``"ollama"``); LM Studio
    ``"organization_owner"``.
    """
    data = body.get("data") if isinstance(body, Mapping) else None
    models = [m for m in data if isinstance(m, Mapping)] if isinstance(data, list) else []
    owners = {str(m.get("owned_by", "")).strip().lower() for m in models}
    if "llamacpp" in owners:
        return "llama.cpp"
    if "vllm" in owners:
        return "vllm"
    if "me" in owners and any(m.get("permissions") == [] for m in models):
        return "llama-cpp-python"
    if owners & {"library", "ollama"}:
        return "ollama"
    if "organization_owner" in owners:
        return "lmstudio"
    return "openai"


def _texts(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _texts(v)


def data_chars(variables: Mapping[str, Any], messages: Iterable[str]) -> tuple[int, int, int]:
    """(total characters, longest text, words) of a request's inputs: its variables, else its messages."""
    texts = list(_texts(variables)) or list(messages)
    return sum(map(len, texts)), max(map(len, texts), default=0), sum(len(t.split()) for t in texts)


def bounded_schema(schema: Mapping[str, Any], *, longest: int, words: int) -> dict[str, Any]:
    """``schema`` with every free string and list bounded, so a constrained decoder cannot ramble.

    A string (no enum) gets ``maxLength``: the longest input text, within
    [:data:`MIN_STRING_CHARS`, :data:`MAX_STRING_CHARS`] (a quote or claim is no longer than the text
    it comes from). A list gets ``maxItems``: how many values its items may take (indices need not
    repeat), else one item per :data:`WORDS_PER_ITEM` input words within
    [:data:`MIN_LIST_ITEMS`, :data:`MAX_LIST_ITEMS`].
    Bounds already present are kept. Pure: the input is not modified.
    """
    chars = max(MIN_STRING_CHARS, min(MAX_STRING_CHARS, longest))
    items = max(MIN_LIST_ITEMS, min(MAX_LIST_ITEMS, words // WORDS_PER_ITEM))

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, Mapping):
            return node
        out = {k: walk(v) for k, v in node.items()}
        if out.get("type") == "string" and "enum" not in out and "const" not in out:
            out.setdefault("maxLength", chars)
        if out.get("type") == "array":
            out.setdefault("maxItems", _distinct(out.get("items")) or items)
        return out

    bounded: dict[str, Any] = walk(schema)
    return bounded


def _distinct(items: Any) -> int:
    """How many distinct values a list's items may take (an index enum or range), 0 if unbounded."""
    if not isinstance(items, Mapping):
        return 0
    enum = items.get("enum")
    if isinstance(enum, list):
        return len(enum)
    low, high = items.get("minimum"), items.get("maximum")
    if items.get("type") == "integer" and isinstance(low, int) and isinstance(high, int) and high >= low:
        return high - low + 1
    return 0


def _skeleton_chars(node: Any, defs: Mapping[str, Any], depth: int = 0) -> tuple[int, int]:
    """(characters of the reply's fixed structure, free strings in it) for a schema node."""
    if depth > 32 or not isinstance(node, Mapping):
        return 0, 0
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _skeleton_chars(defs.get(ref.rsplit("/", 1)[-1], {}), defs, depth + 1)
    options = node.get("anyOf") or node.get("oneOf")
    if isinstance(options, list) and options:
        return max((_skeleton_chars(o, defs, depth + 1) for o in options), default=(0, 0))
    kind = node.get("type")
    if "enum" in node:
        return max((len(json.dumps(v)) for v in node["enum"]), default=4), 0
    if kind == "object":
        chars, strings = 2, 0
        for key, value in (node.get("properties") or {}).items():
            c, s = _skeleton_chars(value, defs, depth + 1)
            chars, strings = chars + len(key) + 4 + c, strings + s
        return chars, strings
    if kind == "array":
        c, s = _skeleton_chars(node.get("items", {}), defs, depth + 1)
        counted = min(ITEMS_COUNTED, int(node.get("maxItems", ITEMS_COUNTED)))
        counted = max(counted, int(node.get("minItems", 0)))  # a verdict per claim: every one counts
        return 2 + counted * (c + 1), 0 if s == 0 else counted * s
    if kind == "string":
        return 2, 1
    return 5, 0  # a number, a boolean or null


def reply_budget(schema: Mapping[str, Any], total_chars: int) -> int:
    """Completion tokens a reply to a request can need: its schema's skeleton, its inputs thrice, slack.

    A reply restates its inputs (claims and their spans copy the answer; verdicts quote the
    contexts); each free-text field gets :data:`TOKENS_PER_FREE_STRING` more. Measured
    (``benchmarks/local_judge.py --fake``: the fake server's reading answers, the bundled example,
    the seven claim metrics): the longest of 38 replies used half of its bound, the median 17%.
    """
    defs = schema.get("$defs") or {}
    chars, strings = _skeleton_chars(schema, defs if isinstance(defs, Mapping) else {})
    return (
        BUDGET_FLOOR_TOKENS
        + tokens_for_chars(chars)
        + strings * TOKENS_PER_FREE_STRING
        + INPUT_FACTOR * tokens_for_chars(total_chars)
    )
