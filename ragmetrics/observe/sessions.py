"""Traces of one session as one conversation: turns in time order, tool spans as tool calls and results.

A trace whose spans carry a session id (OpenInference ``session.id``, GenAI ``gen_ai.conversation.id``)
is a turn of that session: its user message, its LLM spans' tool calls and its tool spans' results
(OpenInference ``TOOL``, GenAI ``execute_tool``), its answer with its retrieved documents as contexts.
``meta["message_spans"]`` maps each answer to its trace and root span, so each turn's record carries its
own ``trace_id`` / ``span_id`` for the exporters; :func:`session_summaries` gives the per-metric means
sent to the session. A session one of whose traces cannot be read is one ``invalid_input`` row naming
the trace, the span and the attribute (details: :func:`session_row`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ragmetrics.errors import shorten
from ragmetrics.observe.samples import (
    MAX_VALUE_CHARS,
    _indexed,
    _is_llm,
    _iso,
    _json_pick,
    _messages,
    trace_sample,
)
from ragmetrics.observe.spans import TraceSpan
from ragmetrics.pipeline.dataset import Row
from ragmetrics.sample import MAX_MESSAGES

__all__ = ["SESSION_KEYS", "session_of", "session_row", "session_summaries"]

SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
"""The span attributes that name a session: OpenInference's, then the GenAI conventions'."""
_QUESTION_KEYS = ("question", "query", "input", "text")


class _Unreadable(ValueError):
    """A trace of the session that cannot be read as a turn (the message says which span and why)."""


def session_of(spans: Iterable[TraceSpan]) -> tuple[str, str] | None:
    """The (attribute, session id) of a trace: the first span, by start, that names one; None if none."""
    for span in sorted(spans, key=lambda s: s.start_ns):
        for key in SESSION_KEYS:
            value = span.attributes.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                return key, str(value)
    return None


def _root(spans: list[TraceSpan]) -> TraceSpan:
    ids = {s.span_id for s in spans}
    return next((s for s in spans if not s.parent_id or s.parent_id not in ids), spans[0])


def _is_tool(span: TraceSpan) -> bool:
    return (
        span.attributes.get("openinference.span.kind") == "TOOL"
        or span.attributes.get("gen_ai.operation.name") == "execute_tool"
    )


def _user_text(root: TraceSpan, llm: list[TraceSpan]) -> str | None:
    """The user's message of a trace.

    The root's input (text, a JSON question, or a LangChain message list's last human message), else the
    last user message of the first LLM span that has one.
    """
    raw = root.attributes.get("input.value")
    value: Any = raw
    if isinstance(raw, str) and raw.lstrip().startswith(("{", "[")):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = raw
    if isinstance(value, list):  # a LangChain message list: [{"type": "human", "data": {"content"}}...]
        for item in reversed(value):
            body = item.get("data", item) if isinstance(item, Mapping) else None
            if isinstance(body, Mapping) and body.get("type", item.get("role")) in ("human", "user"):
                content = body.get("content")
                if isinstance(content, str):
                    return content
        value = None
    elif isinstance(value, Mapping):
        value = _json_pick(raw, _QUESTION_KEYS)
        value = None if value == raw else value
    if isinstance(value, str):
        return value
    for span in llm:
        users = [c for r, c in _messages(span.attributes, "input") if r == "user"]
        if users:
            return users[-1]
    return None


def _arguments(raw: Any, what: str) -> dict[str, Any]:
    """Tool-call arguments as a JSON object (a JSON text or a structured value).

    Raises:
        _Unreadable: Not a JSON object (``what`` names the span and the attribute).
    """
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError):
            raise _Unreadable(f"{what} is not JSON ({shorten(raw, 80)!r})") from None
    if not isinstance(value, Mapping):
        raise _Unreadable(f"{what} is not a JSON object (it is a {type(value).__name__})")
    return dict(value)


def _llm_calls(span: TraceSpan, trace_id: str) -> list[dict[str, Any]]:
    """The tool calls an LLM span's output message makes (OpenInference, or GenAI ``tool_call`` parts)."""
    prefix = "llm.output_messages.0.message.tool_calls."
    calls = []
    for k, name in _indexed(span.attributes, prefix, ".tool_call.function.name"):
        raw = span.attributes.get(f"{prefix}{k}.tool_call.function.arguments", "{}")
        what = f"trace {trace_id}: LLM span {span.name!r} ({span.span_id}): "
        what += f"{prefix}{k}.tool_call.function.arguments"
        call_id = span.attributes.get(f"{prefix}{k}.tool_call.id")
        calls.append({"id": call_id, "name": str(name), "arguments": _arguments(raw, what)})
    raw_output = span.attributes.get("gen_ai.output.messages")
    if not calls and isinstance(raw_output, (str, list)):
        try:
            items = json.loads(raw_output) if isinstance(raw_output, str) else raw_output
        except (ValueError, RecursionError):
            items = []
        for item in items if isinstance(items, list) else []:
            parts = item.get("parts") if isinstance(item, Mapping) else None
            for part in parts if isinstance(parts, list) else []:
                if isinstance(part, Mapping) and part.get("type") == "tool_call" and part.get("name"):
                    what = (
                        f"trace {trace_id}: LLM span {span.name!r} ({span.span_id}): a tool_call's arguments"
                    )
                    args = _arguments(part.get("arguments", {}), what)
                    calls.append({"id": part.get("id"), "name": str(part["name"]), "arguments": args})
    return calls


def _tool_result(span: TraceSpan, trace_id: str) -> tuple[str, str]:
    """A tool span's name and result text.

    Raises:
        _Unreadable: The span recorded no result.
    """
    name = span.attributes.get("gen_ai.tool.name") or span.attributes.get("tool.name") or span.name
    raw = span.attributes.get("gen_ai.tool.call.result", span.attributes.get("output.value"))
    result = _json_pick(raw, ("content", "output", "result", "text"))
    if isinstance(result, (Mapping, list)):
        result = json.dumps(result, ensure_ascii=False)
    elif isinstance(result, (int, float)) and not isinstance(result, bool):
        result = str(result)
    if not isinstance(result, str):
        raise _Unreadable(
            f"trace {trace_id}: tool span {span.name!r} ({span.span_id}) has no result (neither "
            "gen_ai.tool.call.result nor output.value), so its call cannot be checked; record the tool's "
            "output on its span"
        )
    return str(name), result


class _Session:
    """The messages of one session, read trace by trace."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.messages: list[dict[str, Any]] = []
        self.spans: dict[str, dict[str, Any]] = {}
        self.call_ids: set[str] = set()

    def _call_id(self, wanted: Any, span_id: str) -> str:
        call_id = str(wanted) if isinstance(wanted, (str, int)) and str(wanted) else span_id
        if call_id in self.call_ids:  # ids repeated across turns (scripted models): made unique
            call_id = f"{call_id}@{span_id}"
        self.call_ids.add(call_id)
        return call_id

    def add_trace(self, trace_id: str, spans: list[TraceSpan]) -> None:
        """One trace as a turn: user message, tool calls and results, the answer.

        Raises:
            _Unreadable: The trace cannot be read as a turn.
        """
        spans = sorted(spans, key=lambda s: s.start_ns)
        root = _root(spans)
        values, problem = trace_sample(trace_id, spans)
        if problem is not None and not self._only_no_retriever(values):
            raise _Unreadable(problem)
        if values["meta"].get("contexts_problem"):  # a document without its text: not scored on less
            raise _Unreadable(values["meta"]["contexts_problem"])
        llm = [s for s in spans if _is_llm(s)]
        question = _user_text(root, llm)
        if question is not None:
            if len(question) > MAX_VALUE_CHARS:
                raise _Unreadable(f"trace {trace_id}: its question is over {MAX_VALUE_CHARS:,} characters")
            self.messages.append({"role": "user", "content": question})
        pending: list[dict[str, Any]] = []  # calls made and not answered yet, in order
        for span in spans:
            if span is root:
                continue
            if _is_llm(span):
                calls = _llm_calls(span, trace_id)
                for call in calls:
                    call["id"] = self._call_id(call["id"], span.span_id)
                if calls:
                    self.messages.append({"role": "assistant", "content": "", "tool_calls": calls})
                    pending += calls
            elif _is_tool(span):
                self._tool(span, trace_id, pending)
        index = len(self.messages)
        contexts = values.get("contexts") or []
        self.messages.append({"role": "assistant", "content": values["answer"], "contexts": contexts})
        where: dict[str, Any] = {"trace_id": trace_id, "span_id": root.span_id, "root_name": root.name}
        if root.start_ns:
            where["start_time"] = _iso(root.start_ns)
        if isinstance(values["meta"].get("response_id"), str):
            where["response_id"] = values["meta"]["response_id"]
        self.spans[str(index)] = where

    @staticmethod
    def _only_no_retriever(values: Mapping[str, Any]) -> bool:
        """Whether the trace's one problem is that it has no retriever (normal for an agent's turn)."""
        texts = [values.get("question") or "", values.get("answer") or "", *values.get("contexts", [])]
        return (
            isinstance(values.get("answer"), str)
            and not values["meta"].get("retriever_span_ids")
            and all(len(t) <= MAX_VALUE_CHARS for t in texts)
        )

    def _tool(self, span: TraceSpan, trace_id: str, pending: list[dict[str, Any]]) -> None:
        name, result = _tool_result(span, trace_id)
        if len(result) > MAX_VALUE_CHARS:
            raise _Unreadable(
                f"trace {trace_id}: tool span {span.name!r} ({span.span_id}): its result is over "
                f"{MAX_VALUE_CHARS:,} characters"
            )
        wanted = span.attributes.get("gen_ai.tool.call.id", span.attributes.get("tool_call.id"))
        match = next((c for c in pending if wanted is not None and c["id"] == str(wanted)), None)
        match = match or next((c for c in pending if c["name"] == name), None)
        if match is None:  # no LLM span recorded the call: the tool span is the call
            for key in ("gen_ai.tool.call.arguments", "tool_call.function.arguments", "tool.parameters"):
                if key in span.attributes:
                    what = f"trace {trace_id}: tool span {span.name!r} ({span.span_id}): {key}"
                    arguments = _arguments(span.attributes[key], what)
                    break
            else:  # OpenInference records a tool's input as input.value: JSON, or the one argument's text
                raw = span.attributes.get("input.value")
                try:
                    parsed = json.loads(raw) if isinstance(raw, str) else None
                except (ValueError, RecursionError):
                    parsed = None
                arguments = dict(parsed) if isinstance(parsed, Mapping) else ({"input": raw} if raw else {})
            match = {"id": self._call_id(wanted, span.span_id), "name": name, "arguments": arguments}
            self.messages.append({"role": "assistant", "content": "", "tool_calls": [match]})
        else:
            pending.remove(match)
        self.messages.append({"role": "tool", "tool_call_id": match["id"], "name": name, "content": result})


def session_row(
    index: int,
    key: str,
    session_id: str,
    traces: list[tuple[str, list[TraceSpan]]],
    damaged: Mapping[str, str],
) -> Row:
    """One session's traces as one conversation row (or an ``invalid_input`` row saying which trace failed).

    ``traces``: (trace id, spans) pairs of the session, in any order; they are read by root start time.
    Per trace: the user message (the root's ``input.value``, else the last user message of its first LLM
    span with one); then in start order each LLM span's tool calls (an assistant message with
    ``tool_calls``: ``llm.output_messages.0.message.tool_calls.N.tool_call.*`` or GenAI ``tool_call``
    parts) and each
    tool span's result (a ``tool`` message answering the call of the same id, else of the same name; a
    tool span no LLM span called is its own call, its arguments from ``gen_ai.tool.call.arguments``,
    ``tool_call.function.arguments``, ``tool.parameters`` or ``input.value``); then the answer, as for a
    single trace, with the trace's retrieved documents as its ``contexts``. Refused (one
    ``invalid_input`` row): a tool span without a result, arguments that are not a JSON object, no
    answer, a value over ``MAX_VALUE_CHARS``, a retrieved document without its text, more than
    ``MAX_MESSAGES`` messages, a damaged trace.
    """
    ordered = sorted(traces, key=lambda pair: min(s.start_ns for s in pair[1]))
    first = _root(sorted(ordered[0][1], key=lambda s: s.start_ns))
    source: dict[str, Any] = {
        "session_id": session_id,
        "session_attribute": key,
        "trace_ids": [t for t, _ in ordered],
        "root_name": first.name,
        "start_time": _iso(first.start_ns),
        "start_time_unix_nano": first.start_ns,
        "attributes": {
            k: v
            for k, v in first.attributes.items()
            if k not in SESSION_KEYS
            and (isinstance(v, (int, float, bool)) or (isinstance(v, str) and len(v) <= 256))
        },
    }
    session = _Session(session_id)
    try:
        for trace_id, spans in ordered:
            if trace_id in damaged:
                raise _Unreadable(damaged[trace_id])
            session.add_trace(trace_id, spans)
            if len(session.messages) > MAX_MESSAGES:
                raise _Unreadable(
                    f"it holds more than {MAX_MESSAGES:,} messages by trace {trace_id}, the most one "
                    "conversation may hold (MAX_MESSAGES)"
                )
    except _Unreadable as exc:
        problem = f"session {session_id} ({key}): {exc}; the session was not scored"
        return Row(index, {"id": session_id}, problem, source=source)
    meta = {"session_id": session_id, "session_attribute": key, "message_spans": session.spans}
    conversation = {"id": session_id, "messages": session.messages, "meta": meta}
    return Row(index, {"id": session_id}, source=source, conversation=conversation)


def session_summaries(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Per session read from traces and per metric, the mean over its turns with a score.

    Each item: ``session_id``, ``session_attribute`` (``session.id`` or ``gen_ai.conversation.id``),
    ``metric``, ``mean`` (None when no turn has a score), ``scored`` and ``turns`` (how many turn
    records, scored or not).
    """
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        meta = record.sample.meta if record.sample is not None else {}
        session_id = meta.get("session_id")
        if not isinstance(session_id, str):
            continue
        entry = found.setdefault(
            session_id,
            {"attribute": meta.get("session_attribute") or SESSION_KEYS[0], "turns": 0, "scores": {}},
        )
        if meta.get("level") != "conversation":  # the conversation's own record is no turn
            entry["turns"] += 1
        for metric in record.scores:
            entry["scores"].setdefault(metric, []).append(record.scores.get(metric))
    summaries = []
    for session_id, entry in found.items():
        for metric, values in entry["scores"].items():
            got = [float(v) for v in values if v is not None]
            summaries.append(
                {
                    "session_id": session_id,
                    "session_attribute": entry["attribute"],
                    "metric": metric,
                    "mean": sum(got) / len(got) if got else None,
                    "scored": len(got),
                    "turns": entry["turns"],
                }
            )
    return summaries
