"""Conversation records in, :class:`~ragmetrics.sample.Conversation` out: OpenAI, RAGAS and DeepEval forms.

:func:`conversation_format` tells a conversation record from a sample row (a ``messages`` key, a RAGAS
``user_input`` that is a list of messages, a DeepEval ``turns`` list); :func:`read_conversation` converts
one record. Each reader maps the other tool's fields onto the chat format and leaves every check to
``Conversation.from_fields``; an error that names ``messages[i]`` also says where that message came from
in the record (``turns[3]``, ``user_input[5]``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from ragmetrics._check import check_field, check_one_of
from ragmetrics.errors import InvalidInputError
from ragmetrics.sample import Conversation

__all__ = [
    "ConversationFormat",
    "conversation_format",
    "from_deepeval",
    "from_openai",
    "from_ragas",
    "read_conversation",
]

ConversationFormat = Literal["openai", "ragas", "deepeval"]
_RAGAS_ROLES = {"human": "user", "ai": "assistant", "tool": "tool"}
_DEEPEVAL_ROLES = ("user", "assistant")


def conversation_format(record: Mapping[str, Any]) -> ConversationFormat | None:
    """Which conversation form ``record`` is in, or None for a sample row.

    ``messages`` (any value): OpenAI's chat format; ``user_input`` holding a list: a RAGAS multi-turn
    sample (a string there is a single-turn sample's question); ``turns`` holding a list: a DeepEval
    conversational test case.
    """
    if "messages" in record:
        return "openai"
    if isinstance(record.get("user_input"), (list, tuple)):
        return "ragas"
    if isinstance(record.get("turns"), (list, tuple)):
        return "deepeval"
    return None


def read_conversation(record: Mapping[str, Any], *, row: int | str | None = None) -> Conversation:
    """Convert one record in any of the three forms.

    Raises:
        InvalidInputError: The record is in none of them, or a reader refuses it (see each reader).
    """
    found = conversation_format(record)
    if found is None:
        keys = ", ".join(sorted(map(str, record))) or "none"
        raise InvalidInputError(
            "messages",
            "present in a conversation record (or RAGAS user_input, or DeepEval turns, as a list)",
            row=row,
            detail=f"keys found: {keys}",
        )
    reader: Callable[..., Conversation] = {
        "openai": from_openai,
        "ragas": from_ragas,
        "deepeval": from_deepeval,
    }[found]
    return reader(record, row=row)


def from_openai(record: Mapping[str, Any], *, row: int | str | None = None) -> Conversation:
    """``{"id", "messages": [...], "expected_tool_calls", "goal", "meta"}``: the chat format as logged.

    The messages are read by ``Conversation.from_fields`` as they are; other keys are ignored.
    """
    return Conversation.from_fields(
        messages=record.get("messages"),
        id=record.get("id"),
        expected_tool_calls=record.get("expected_tool_calls"),
        goal=record.get("goal"),
        meta=record.get("meta"),
        row=row,
    )


def from_ragas(record: Mapping[str, Any], *, row: int | str | None = None) -> Conversation:
    """A RAGAS ``MultiTurnSample`` (as ``EvaluationDataset.to_jsonl`` writes it) as a conversation.

    Mapping: ``user_input`` -> messages, one for one (``type`` human/ai/tool -> role user/assistant/tool,
    ``content`` as it is, an ai message's ``tool_calls`` ``{"name", "args"}`` -> calls with ids
    ``call_<message>_<k>`` made up here, since RAGAS has none; each tool message answers the oldest call
    not answered yet). ``reference_tool_calls`` -> ``expected_tool_calls`` for the whole conversation.
    ``reference`` -> ``goal``: RAGAS's agent goal accuracy reads it as the outcome the user wanted, and a
    conversation has no better field for it (it is not one turn's reference answer). ``reference_topics``,
    ``rubrics`` and any ``id`` -> ``meta`` and ``id``; message ``metadata`` is dropped.

    Raises:
        InvalidInputError: A message is no mapping, has another ``type``, or is a tool message with no
            call left to answer; or ``Conversation.from_fields`` refuses the result (``messages[i]`` is
            ``user_input[i]``).
    """
    items = check_field(record.get("user_input"), "user_input", Sequence, "a list of messages", row=row)
    messages: list[dict[str, Any]] = []
    pending: list[str] = []
    for i, raw in enumerate(items):
        at = f"user_input[{i}]"
        item = check_field(raw, at, Mapping, 'a message {"type": ..., "content": ...}', row=row)
        kind = check_one_of(item.get("type"), f"{at}.type", tuple(_RAGAS_ROLES), row=row)
        message: dict[str, Any] = {"role": _RAGAS_ROLES[kind], "content": item.get("content")}
        if kind == "ai" and item.get("tool_calls") is not None:
            calls = check_field(
                item["tool_calls"], f"{at}.tool_calls", Sequence, "a list of tool calls", row=row
            )
            message["tool_calls"] = [
                _ragas_call(c, f"{at}.tool_calls[{k}]", f"call_{i}_{k}", row) for k, c in enumerate(calls)
            ]
            pending += [c["id"] for c in message["tool_calls"]]
        if kind == "tool":
            if not pending:
                raise InvalidInputError(
                    at,
                    "a tool message after an ai message's tool_calls",
                    row=row,
                    detail="every earlier call has its result already; drop this message or add the call",
                )
            message["tool_call_id"] = pending.pop(0)
        messages.append(message)
    expected = record.get("reference_tool_calls")
    if expected is not None:
        calls = check_field(expected, "reference_tool_calls", Sequence, "a list of tool calls", row=row)
        expected = [_ragas_call(c, f"reference_tool_calls[{k}]", None, row) for k, c in enumerate(calls)]
    meta = {key: record[key] for key in ("reference_topics", "rubrics") if record.get(key) is not None}
    origin = [f"user_input[{i}]" for i in range(len(messages))]
    return _built(
        messages,
        origin,
        row,
        id=record.get("id"),
        expected_tool_calls=expected,
        goal=record.get("reference"),
        meta=meta or None,
    )


def _ragas_call(raw: object, field: str, call_id: str | None, row: int | str | None) -> dict[str, Any]:
    call = check_field(raw, field, Mapping, 'a tool call {"name": ..., "args": {...}}', row=row)
    made = {"name": call.get("name"), "arguments": call.get("args", {})}
    return made if call_id is None else {**made, "id": call_id}


def from_deepeval(record: Mapping[str, Any], *, row: int | str | None = None) -> Conversation:
    """A DeepEval ``ConversationalTestCase`` as a conversation.

    Mapping: each of ``turns`` (``role`` user/assistant, ``content``) -> a message; an assistant turn's
    ``retrieval_context`` -> that message's ``contexts``; its ``tools_called`` (``name``,
    ``input_parameters``, ``output``) -> an assistant message making those calls (ids ``call_<turn>_<k>``
    made up here), then one ``tool`` message per call with its ``output`` (JSON text unless a string; no
    message when it is None), then the turn's text. ``scenario`` and ``expected_outcome`` -> ``goal``:
    the expected outcome alone when it is the only one, else ``"<scenario> Expected outcome: <outcome>"``.
    ``name``, ``user_description``, ``chatbot_role``, ``context``, ``additional_metadata``, ``comments``
    and ``tags`` -> ``meta``.

    Raises:
        InvalidInputError: A turn is no mapping or has another ``role``, a call is no mapping, or
            ``Conversation.from_fields`` refuses the result (the message says which turn it came from).
    """
    turns = check_field(record.get("turns"), "turns", Sequence, "a list of turns", row=row)
    messages: list[dict[str, Any]] = []
    origin: list[str] = []
    for i, raw in enumerate(turns):
        at = f"turns[{i}]"
        turn = check_field(raw, at, Mapping, 'a turn {"role": ..., "content": ...}', row=row)
        role = check_one_of(turn.get("role"), f"{at}.role", _DEEPEVAL_ROLES, row=row)
        tools = turn.get("tools_called")
        if role == "assistant" and tools:
            listed = check_field(tools, f"{at}.tools_called", Sequence, "a list of tool calls", row=row)
            calls = []
            for k, c in enumerate(listed):
                call = check_field(
                    c, f"{at}.tools_called[{k}]", Mapping, 'a tool call {"name", ...}', row=row
                )
                calls.append((f"call_{i}_{k}", call))
            made = [
                {"id": cid, "name": c.get("name"), "arguments": c.get("input_parameters") or {}}
                for cid, c in calls
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": made})
            origin.append(f"{at}.tools_called")
            for k, (cid, call) in enumerate(calls):
                output = call.get("output")
                if output is not None:
                    text = (
                        output
                        if isinstance(output, str)
                        else json.dumps(output, ensure_ascii=False, default=str)
                    )
                    messages.append({"role": "tool", "tool_call_id": cid, "content": text})
                    origin.append(f"{at}.tools_called[{k}].output")
            content = turn.get("content")
            if content is None or (isinstance(content, str) and not content.strip()):
                continue  # the turn only called tools
        message: dict[str, Any] = {"role": role, "content": turn.get("content")}
        if turn.get("retrieval_context") is not None:
            message["contexts"] = turn["retrieval_context"]
        messages.append(message)
        origin.append(at)
    meta_keys = (
        "name",
        "user_description",
        "chatbot_role",
        "context",
        "additional_metadata",
        "comments",
        "tags",
    )
    meta = {key: record[key] for key in meta_keys if record.get(key) is not None}
    return _built(
        messages, origin, row, id=record.get("id"), goal=_deepeval_goal(record, row), meta=meta or None
    )


def _deepeval_goal(record: Mapping[str, Any], row: int | str | None) -> str | None:
    scenario = check_field(
        record.get("scenario"), "scenario", str, "a string or None", row=row, optional=True
    )
    outcome = check_field(
        record.get("expected_outcome"), "expected_outcome", str, "a string or None", row=row, optional=True
    )
    if scenario and outcome:
        return f"{scenario} Expected outcome: {outcome}"
    return outcome or scenario or None


def _built(
    messages: list[dict[str, Any]], origin: list[str], row: int | str | None, **fields: Any
) -> Conversation:
    """``Conversation.from_fields``; an error on ``messages[i]`` says which part of the record it was."""
    try:
        return Conversation.from_fields(messages=messages, row=row, **fields)
    except InvalidInputError as exc:
        if exc.field.startswith("messages["):
            index = int(exc.field[len("messages[") :].split("]", 1)[0])
            if index < len(origin):
                exc.args = (f"{exc.args[0]} (messages[{index}] was read from {origin[index]})",)
        raise
