"""Spans grouped by trace, each trace one sample to score: which attributes are question, answer, contexts.

The readers (:mod:`.otlp` for files, :mod:`.phoenix`) give spans; spans are grouped by trace id and a
trace becomes one sample (:func:`trace_sample` says which OpenInference and GenAI attributes and span
events give the question, the answer and the contexts, and what ``meta`` keeps).

A trace with no retriever span, no answer, a value over :data:`MAX_VALUE_CHARS`, a span id that appears
twice, or spans on a line that could not be read is an ``invalid_input`` row that says why (an empty
context list would score its answer as unsupported, which nobody measured). A retrieved document
recorded without its text makes the metrics that need contexts ``invalid_input`` on that trace, naming
the missing attribute; the others (relevancy) score. Nothing stops the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ragmetrics.errors import shorten
from ragmetrics.observe.spans import TraceSpan, _kept

__all__ = ["MAX_SPANS", "MAX_VALUE_CHARS", "trace_sample"]

MAX_VALUE_CHARS = 1_000_000
"""A question, answer or document longer than this makes its trace invalid_input (never truncated)."""
MAX_SPANS = 2_000_000
"""Spans read from one file at most; more is a ConfigError (split the file)."""

_QUESTION_KEYS = ("question", "query", "input", "text")
_ANSWER_KEYS = ("answer", "output", "result", "content", "text")
_DOCUMENTS = "retrieval.documents."
_HOW_TO_RECORD = (
    "the metrics that check the answer against the contexts need each document's text: record it "
    '(OpenInference: retrieval.documents.N.document.content; GenAI conventions: a "content" in each '
    "gen_ai.retrieval.documents entry, which instrumentations write when content capture is on, e.g. "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)"
)


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


def _is_index(text: str) -> bool:
    """ASCII digits only (``int`` refuses superscripts, which ``isdigit`` allows)."""
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit()


def _indexed(attributes: Mapping[str, Any], prefix: str, suffix: str) -> list[tuple[int, Any]]:
    found = []
    for key, value in attributes.items():
        if key.startswith(prefix) and key.endswith(suffix):
            middle = key[len(prefix) : len(key) - len(suffix)]
            if _is_index(middle):
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


def _documents(span: TraceSpan) -> tuple[list[str], str | None]:
    """A retriever span's document texts in order, and what is missing when a document has no text."""
    fields: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        number, _, rest = key[len(_DOCUMENTS) :].partition(".document.")
        if key.startswith(_DOCUMENTS) and rest and _is_index(number):
            fields.setdefault(int(number), {})[rest] = value
    docs: list[str] = []
    for index in sorted(fields):  # OpenInference: retrieval.documents.N.document.{content,id,score,...}
        content = fields[index].get("content")
        if not isinstance(content, str):
            got = "is missing" if content is None else f"is a {type(content).__name__}, not text"
            has = shorten(", ".join(f"document.{k}" for k in sorted(fields[index])), 160)
            name = f"{_DOCUMENTS}{index}.document.content"
            return docs, f"document {index} has no text ({name} {got}; it has {has})"
        docs.append(content)
    raw = span.attributes.get("gen_ai.retrieval.documents")
    if fields or raw is None:
        return docs, None
    items = raw  # GenAI: a JSON string on a span, or a structured list
    if isinstance(raw, str):
        try:
            items = json.loads(raw)
        except (ValueError, RecursionError):
            return docs, "gen_ai.retrieval.documents is not JSON"
    if not isinstance(items, list):
        return docs, f"gen_ai.retrieval.documents is a {type(items).__name__}, not a list of documents"
    for i, item in enumerate(items):
        if isinstance(item, Mapping) and isinstance(item.get("content"), str):
            docs.append(item["content"])
        elif isinstance(item, str):
            docs.append(item)
        elif isinstance(item, Mapping):
            has = shorten(", ".join(map(str, item)), 160)
            return (
                docs,
                f'document {i} has no text (gen_ai.retrieval.documents[{i}] has no "content"; it has {has})',
            )
        else:
            return docs, f"gen_ai.retrieval.documents[{i}] is a {type(item).__name__}, not a document"
    return docs, None


def _iso(ns: int) -> str | None:
    if ns <= 0:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat()


def trace_sample(trace_id: str, spans: list[TraceSpan]) -> tuple[dict[str, Any], str | None]:
    """A trace's sample fields (and ``meta``), and the problem that makes it unscorable, if any.

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
      order (``retrieval.documents.N.document.content``; GenAI: ``gen_ai.retrieval.documents``, a list, as
      JSON or structured, of strings or of ``{"content"}``).

    A document recorded without its text leaves ``meta["contexts_problem"]`` saying which attribute is
    missing: the metrics that need the contexts fail on that trace, the others score.
    """
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
    contexts: list[str] = []
    for retriever in retrievers:
        docs, missing = _documents(retriever)
        contexts += docs
        if missing is not None and "contexts_problem" not in meta:
            meta["contexts_problem"] = (
                f"trace {trace_id}: retriever span {retriever.name!r} ({retriever.span_id}): {missing}; "
                + _HOW_TO_RECORD
            )
    meta["retriever_span_ids"] = [s.span_id for s in retrievers]
    values: dict[str, Any] = {"id": trace_id, "meta": meta}
    if isinstance(question, str):
        values["question"] = question
    if retrievers:
        values["contexts"] = contexts
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
