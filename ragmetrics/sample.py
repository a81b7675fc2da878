"""The input records: a :class:`Sample` (one question, one answer, its contexts) and a :class:`Conversation`.

``Sample.from_fields`` and ``Conversation.from_fields`` are where untrusted input is checked; every
error names the field (``contexts[2]``, ``messages[3].tool_call_id``), the row when known, and what to
do. A conversation is chat messages (OpenAI roles, tool calls and their results by id) with optional
per-turn contexts, references and expected tool calls; :meth:`Conversation.turns` reads each assistant
message with text as a :class:`Turn`. :func:`check_text` is the one check that text is real Unicode: a
lone surrogate cannot be encoded, so it would break cache keys, requests and exports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics._check import (
    check_field,
    check_json_object,
    check_nesting,
    check_one_of,
    check_size,
)
from ragmetrics.errors import InvalidInputError

__all__ = [
    "MAX_CONVERSATION_CHARS",
    "MAX_MESSAGES",
    "ROLES",
    "Conversation",
    "Message",
    "Sample",
    "ToolCall",
    "Turn",
    "check_sample_text",
    "check_text",
]

_SURROGATE = re.compile("[\ud800-\udfff]")


class Sample(BaseModel):
    """One RAG interaction to score."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str | None = None
    """The user's question; ``None`` when the metric needs none (groundedness)."""
    answer: str = ""
    """The generated answer to judge."""
    contexts: tuple[str, ...] = ()
    """The retrieved passages the answer should rest on, in retrieval order."""
    reference: str | None = None
    """An optional reference (ground-truth) answer."""
    id: str | None = None
    """An optional identifier carried into results and reports."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Free-form metadata; metrics never read it."""

    @classmethod
    def from_fields(
        cls,
        *,
        question: object = None,
        answer: object = None,
        contexts: object = None,
        reference: object = None,
        id: object = None,  # noqa: A002 - the public field name
        meta: object = None,
        row: int | str | None = None,
        require_question: bool = False,
        require_answer: bool = True,
    ) -> Sample:
        """Check raw values and build a sample.

        Args:
            question: The question (str). Required when ``require_question``.
            answer: The answer (str). ``None`` is refused when ``require_answer``; ``""`` is allowed.
            contexts: A list or tuple of str, or None for no contexts. A bare string is refused.
            reference: An optional reference answer (str).
            id: An optional identifier (str or int).
            meta: An optional mapping of metadata.
            row: The dataset row, named in error messages.
            require_question: Whether an empty or missing question is an error.
            require_answer: Whether a missing answer is an error.

        Returns:
            The validated sample.

        Raises:
            InvalidInputError: A field has the wrong type, a required field is empty, or a text
                field holds a lone surrogate.
        """
        asked: str | None = check_field(question, "question", str, "a string", row=row, optional=True)
        if require_question and (asked is None or not asked.strip()):
            raise InvalidInputError(
                "question",
                "a non-empty string",
                question if question is not None else None,
                row=row,
                detail="this metric judges the answer against the question",
            )
        if answer is None:
            if require_answer:
                raise InvalidInputError(
                    "answer", 'a string (use "" for an empty answer)', row=row, detail="got None"
                )
            answer = ""
        answer = check_field(answer, "answer", str, "a string", row=row)
        ctx = _check_contexts(contexts, row)
        reference = check_field(reference, "reference", str, "a string or None", row=row, optional=True)
        id = check_field(id, "id", (str, int), "a string or an integer", row=row, optional=True)
        extra: Mapping[str, Any] | None = check_field(
            meta, "meta", Mapping, "a mapping", row=row, optional=True
        )
        sample = cls(
            question=asked,
            answer=answer,
            contexts=ctx,
            reference=reference,
            id=None if id is None else str(id),
            meta=dict(extra or {}),
        )
        return check_sample_text(sample, row)


def _string_contexts_detail(text: str) -> str:
    if text.lstrip().startswith("["):  # a list column read back from a CSV (pandas.read_csv) as its text
        return (
            "this text looks like a list saved as text (a CSV read back with pandas.read_csv?): parse it "
            "first (json.loads for a JSON list, ast.literal_eval for the Python lists DataFrame.to_csv "
            "writes), or pass the CSV file's path, which reads both forms"
        )
    return "wrap a single passage in a list: contexts=[text]"


def _check_contexts(contexts: object, row: int | str | None, field: str = "contexts") -> tuple[str, ...]:
    if contexts is None:
        return ()
    passages = check_field(
        contexts,
        field,
        Sequence,
        "a list of strings",
        row=row,
        detail=_string_contexts_detail(contexts) if isinstance(contexts, str) else None,
    )
    return tuple(
        check_field(item, f"{field}[{i}]", str, "a string", row=row) for i, item in enumerate(passages)
    )


def check_text(text: str, field: str, *, row: int | str | None = None) -> str:
    """Return ``text`` if it is valid Unicode (no lone surrogate).

    Raises:
        InvalidInputError: ``text`` holds a surrogate code point; the message names the field and
            the character position (and shows the code point escaped, never raw).
    """
    bad = _SURROGATE.search(text)
    if bad is None:
        return text
    code = ord(bad.group())
    raise InvalidInputError(
        field,
        "valid Unicode text",
        row=row,
        detail=f"a lone surrogate U+{code:04X} at character {bad.start()}, which no encoding can write "
        "(a JSON escape without its pair, or bytes decoded with errors='surrogateescape'); "
        "replace or drop it",
    )


def check_sample_text(sample: Sample, row: int | str | None = None) -> Sample:
    """Return ``sample`` if its text fields are valid Unicode (a Sample built directly skips from_fields).

    Raises:
        InvalidInputError: A field holds a lone surrogate (see :func:`check_text`), or ``meta`` nests
            deeper than ``MAX_NESTING`` levels.
    """
    check_nesting(sample.meta, "meta", row=row)
    for name in ("question", "answer", "reference", "id"):
        value = getattr(sample, name)
        if value is not None:
            check_text(value, name, row=row)
    for i, text in enumerate(sample.contexts):
        check_text(text, f"contexts[{i}]", row=row)
    return sample


# -- conversations ---------------------------------------------------------------------------------

MAX_MESSAGES = 10_000
"""The most messages one conversation may hold; a longer one is that record's ``invalid_input``."""
MAX_CONVERSATION_CHARS = 50_000_000
"""The most characters one conversation may hold in all (texts, contexts, references, tool arguments)."""
ROLES = ("system", "user", "assistant", "tool")
"""The message roles (OpenAI chat format)."""
_MESSAGE_KEYS = frozenset(
    {"role", "content", "tool_calls", "tool_call_id", "name", "contexts", "reference", "expected_tool_calls"}
)


class ToolCall(BaseModel):
    """One tool call: made by an assistant message, or expected of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """The tool (function) name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The arguments, parsed from the JSON text of ``function.arguments``; compared as JSON values."""
    id: str | None = None
    """The call's id, which a ``tool`` message's ``tool_call_id`` answers; None for an expected call."""


class Message(BaseModel):
    """One chat message (OpenAI roles), with the evidence and expectations of an assistant message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    """Who speaks: ``system``, ``user``, ``assistant`` or ``tool`` (a tool's result)."""
    content: str = ""
    """The text (text parts joined); ``""`` for an assistant message that only calls tools."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The tools an assistant message calls, in order."""
    tool_call_id: str | None = None
    """For a ``tool`` message: the id of the call it answers."""
    name: str | None = None
    """An optional speaker or tool name (carried, never judged)."""
    contexts: tuple[str, ...] = ()
    """For an assistant message: the passages retrieved for this turn, in retrieval order."""
    reference: str | None = None
    """For an assistant message: an optional reference answer to this turn."""
    expected_tool_calls: tuple[ToolCall, ...] | None = None
    """For an assistant message: the calls expected since the user's last message, up to and including
    this message's own (None: not given; ``()``: no call expected)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One assistant message with text, read as the answer to the user message before it."""

    index: int
    """The assistant message's index in ``Conversation.messages``."""
    number: int
    """The turn's position among the conversation's turns (0-based)."""
    message: Message
    """The assistant message (its ``content`` is the answer)."""
    question: Message | None
    """The last user message before it (None when there is none)."""
    question_index: int | None
    """That user message's index, or None."""
    history: tuple[Message, ...]
    """Every message before the answer, in order (system, user, assistant and tool messages)."""
    tool_calls: tuple[ToolCall, ...]
    """The calls made after the user message and before the answer (the answer's own calls excluded:
    their results come after it), in order."""
    tool_results: tuple[Message, ...]
    """The ``tool`` messages after the user message and before the answer, in order."""

    @property
    def answer(self) -> str:
        """The answer's text."""
        return self.message.content

    @property
    def contexts(self) -> tuple[str, ...]:
        """The passages retrieved for this turn."""
        return self.message.contexts

    @property
    def reference(self) -> str | None:
        """The turn's reference answer, if any."""
        return self.message.reference

    def result(self, call_id: str) -> Message | None:
        """The ``tool`` message answering the call ``call_id`` before the answer, or None."""
        return next((m for m in self.tool_results if m.tool_call_id == call_id), None)


class Conversation(BaseModel):
    """One conversation to score: chat messages, optional expected tool calls and the user's goal.

    Build it with :meth:`from_fields` (or :meth:`from_messages`), which checks everything; a
    conversation built directly skips those checks.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...]
    """The messages in order."""
    id: str | None = None
    """An optional identifier carried into results and reports."""
    expected_tool_calls: tuple[ToolCall, ...] | None = None
    """The calls expected over the whole conversation, in order (None: not given; ``()``: none)."""
    goal: str | None = None
    """What the user wanted (for task completion)."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Free-form metadata; metrics never read it."""

    @classmethod
    def from_messages(cls, messages: object, **fields: Any) -> Conversation:
        """:meth:`from_fields` with the messages first: ``Conversation.from_messages([...], id="c1")``."""
        return cls.from_fields(messages=messages, **fields)

    @classmethod
    def from_fields(
        cls,
        *,
        messages: object,
        id: object = None,  # noqa: A002 - the public field name
        expected_tool_calls: object = None,
        goal: object = None,
        meta: object = None,
        row: int | str | None = None,
    ) -> Conversation:
        """Check raw values (OpenAI chat format) and build a conversation.

        Args:
            messages: A list of messages: mappings with ``role``, ``content`` (a string, None, or a list
                of ``{"type": "text", "text": ...}`` parts), ``tool_calls`` (OpenAI's ``{"id",
                "function": {"name", "arguments"}}`` or ``{"id", "name", "arguments"}``, arguments as
                JSON text or a mapping), ``tool_call_id``, ``name``, and on assistant messages
                ``contexts``, ``reference`` and ``expected_tool_calls``; or :class:`Message` objects.
                Other keys (``refusal``, ``annotations``...) are ignored.
            id: An optional identifier (str or int).
            expected_tool_calls: The calls expected over the whole conversation (``{"name",
                "arguments"}``), or None. Not with per-message expected calls.
            goal: What the user wanted (str), or None.
            meta: An optional mapping of metadata.
            row: The dataset row, named in error messages.

        Raises:
            InvalidInputError: The message names the row, the field (``messages[3].tool_call_id``) and
                what to fix: an unknown role, a ``tool`` message answering no earlier call, an assistant
                message with neither text nor tool calls, arguments that are not a JSON object, a value
                nested too deep, a lone surrogate, more than :data:`MAX_MESSAGES` messages or
                :data:`MAX_CONVERSATION_CHARS` characters.
        """
        raw = check_field(messages, "messages", Sequence, "a list of messages", row=row)
        check_size(len(raw), MAX_MESSAGES, "messages", "messages", row=row, hint=_SPLIT_HINT)
        if not raw:
            raise InvalidInputError("messages", "a non-empty list of messages", row=row)
        reader = _MessageReader(row)
        parsed = tuple(reader.message(item, i) for i, item in enumerate(raw))
        expected = None
        if expected_tool_calls is not None:
            expected = _expected_calls(expected_tool_calls, "expected_tool_calls", row)
            per_message = next((i for i, m in enumerate(parsed) if m.expected_tool_calls is not None), None)
            if per_message is not None:
                raise InvalidInputError(
                    "expected_tool_calls",
                    "None when messages carry their own expected_tool_calls",
                    row=row,
                    detail=f"messages[{per_message}] has its own; give the expected calls for the whole "
                    "conversation or per assistant message, not both",
                )
            reader.count(
                sum(len(c.name) + len(_json_text(c.arguments)) for c in expected), "expected_tool_calls"
            )
        wanted: str | None = check_field(goal, "goal", str, "a string or None", row=row, optional=True)
        ident = check_field(id, "id", (str, int), "a string or an integer", row=row, optional=True)
        name: str | None = None if ident is None else str(ident)
        extra: Mapping[str, Any] | None = check_field(
            meta, "meta", Mapping, "a mapping", row=row, optional=True
        )
        check_nesting(extra, "meta", row=row)
        for field, text in (("goal", wanted), ("id", name)):
            if text is not None:
                reader.count(len(text), field)
                check_text(text, field, row=row)
        return cls(
            messages=parsed,
            id=name,
            expected_tool_calls=expected,
            goal=wanted,
            meta=dict(extra or {}),
        )

    def tool_calls(self) -> tuple[tuple[int, ToolCall], ...]:
        """Every call made, in order, with the index of the message that made it."""
        return tuple((i, c) for i, m in enumerate(self.messages) for c in m.tool_calls)

    def turns(self) -> tuple[Turn, ...]:
        """The assistant messages with text, each read as the answer to the last user message before it."""
        found: list[Turn] = []
        asked: int | None = None
        for i, message in enumerate(self.messages):
            if message.role == "user":
                asked = i
            if message.role != "assistant" or not message.content.strip():
                continue
            since = self.messages[(asked + 1 if asked is not None else 0) : i]
            found.append(
                Turn(
                    index=i,
                    number=len(found),
                    message=message,
                    question=None if asked is None else self.messages[asked],
                    question_index=asked,
                    history=self.messages[:i],
                    tool_calls=tuple(c for m in since for c in m.tool_calls),
                    tool_results=tuple(m for m in since if m.role == "tool"),
                )
            )
        return tuple(found)


_SPLIT_HINT = "split it into shorter conversations, or keep only the turns to score"


def _json_text(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def _tool_call(raw: object, field: str, row: int | str | None, *, expected: bool = False) -> ToolCall:
    """One call: OpenAI's ``{"id", "function": {"name", "arguments"}}``, ``{"name", "arguments"}``."""
    if isinstance(raw, ToolCall):
        raw = raw.model_dump()
    item: Mapping[str, Any] = check_field(
        raw, field, Mapping, 'a mapping {"name": ..., "arguments": {...}}', row=row
    )
    where = field
    body: Mapping[str, Any] = item
    if "function" in item:
        where = f"{field}.function"
        body = check_field(
            item["function"], where, Mapping, 'a mapping {"name": ..., "arguments": "..."}', row=row
        )
    name = check_field(body.get("name"), f"{where}.name", str, "a string (the tool's name)", row=row)
    if not name.strip():
        raise InvalidInputError(f"{where}.name", "a non-empty string (the tool's name)", row=row)
    arguments = check_json_object(body.get("arguments", {}), f"{where}.arguments", row=row)
    call_id = (
        None
        if expected
        else check_field(item.get("id"), f"{field}.id", str, "a string", row=row, optional=True)
    )
    check_text(name, f"{where}.name", row=row)
    check_text(_json_text(arguments), f"{where}.arguments", row=row)
    if call_id is not None:
        check_text(call_id, f"{field}.id", row=row)
    return ToolCall(name=name, arguments=arguments, id=call_id)


def _expected_calls(raw: object, field: str, row: int | str | None) -> tuple[ToolCall, ...]:
    calls = check_field(raw, field, Sequence, 'a list of {"name", "arguments"} mappings', row=row)
    return tuple(_tool_call(c, f"{field}[{k}]", row, expected=True) for k, c in enumerate(calls))


class _MessageReader:
    """Reads messages in order, keeping what later ones are checked against (call ids, the size)."""

    def __init__(self, row: int | str | None) -> None:
        self.row = row
        self.chars = 0
        self.calls: dict[str, int] = {}  # call id -> the message that made it
        self.answered: dict[str, int] = {}  # call id -> the tool message that answered it

    def count(self, chars: int, field: str) -> None:
        self.chars += chars
        check_size(
            self.chars,
            MAX_CONVERSATION_CHARS,
            "messages",
            "characters in all",
            row=self.row,
            hint=f"the limit is passed at {field}; {_SPLIT_HINT}",
            at_least=True,
        )

    def message(self, raw: object, i: int) -> Message:
        row = self.row
        at = f"messages[{i}]"
        if isinstance(raw, Message):
            raw = raw.model_dump(exclude_defaults=True)
        item: Mapping[str, Any] = check_field(
            raw, at, Mapping, 'a mapping {"role": ..., "content": ...}', row=row
        )
        if "context" in item and "contexts" not in item:
            raise InvalidInputError(f"{at}.context", "named 'contexts'", row=row, detail="rename the key")
        role = check_one_of(item.get("role"), f"{at}.role", ROLES, row=row)
        content = self._content(item.get("content"), f"{at}.content")
        calls = self._calls(item, i, role)
        call_id = self._answer(item, i, role)
        name = check_field(item.get("name"), f"{at}.name", str, "a string or None", row=row, optional=True)
        for key in ("contexts", "reference", "expected_tool_calls"):
            if item.get(key) is not None and role != "assistant":
                raise InvalidInputError(
                    f"{at}.{key}",
                    "given on assistant messages only",
                    row=row,
                    detail=f"this is a {role} message; move it to the assistant message that answers",
                )
        contexts = _check_contexts(item.get("contexts"), row, f"{at}.contexts")
        reference = check_field(
            item.get("reference"), f"{at}.reference", str, "a string or None", row=row, optional=True
        )
        expected = item.get("expected_tool_calls")
        expected_calls = (
            None if expected is None else _expected_calls(expected, f"{at}.expected_tool_calls", row)
        )
        if role == "assistant" and not content.strip() and not calls:
            raise InvalidInputError(
                f"{at}.content",
                "non-blank text when the message makes no tool_calls",
                row=row,
                detail="an assistant message with neither says nothing; drop it or give its text",
            )
        texts = {"content": content, "name": name, "reference": reference, "tool_call_id": call_id}
        size = sum(len(c.name) + len(_json_text(c.arguments)) for c in (*calls, *(expected_calls or ())))
        self.count(size + sum(len(t) for t in texts.values() if t) + sum(len(c) for c in contexts), at)
        for key, text in texts.items():
            if text is not None:
                check_text(text, f"{at}.{key}", row=row)
        for k, text in enumerate(contexts):
            check_text(text, f"{at}.contexts[{k}]", row=row)
        return Message(
            role=role,  # checked against ROLES
            content=content,
            tool_calls=calls,
            tool_call_id=call_id,
            name=name,
            contexts=contexts,
            reference=reference,
            expected_tool_calls=expected_calls,
        )

    def _content(self, value: object, field: str) -> str:
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        parts = check_field(value, field, Sequence, "a string, None or a list of text parts", row=self.row)
        texts = []
        for k, part in enumerate(parts):
            part_field = f"{field}[{k}]"
            part = check_field(
                part, part_field, Mapping, 'a text part {"type": "text", "text": ...}', row=self.row
            )
            check_one_of(
                part.get("type"),
                f"{part_field}.type",
                ("text",),
                row=self.row,
                detail="only text parts are read; give images and audio as text or leave them out",
            )
            texts.append(check_field(part.get("text"), f"{part_field}.text", str, "a string", row=self.row))
        return "".join(texts)

    def _calls(self, item: Mapping[str, Any], i: int, role: str) -> tuple[ToolCall, ...]:
        at = f"messages[{i}]"
        raw = item.get("tool_calls")
        if raw is None:
            return ()
        field = f"{at}.tool_calls"
        listed = check_field(raw, field, Sequence, "a list of tool calls", row=self.row)
        if listed and role != "assistant":
            raise InvalidInputError(
                field, "given on assistant messages only", row=self.row, detail=f"this is a {role} message"
            )
        calls = tuple(_tool_call(c, f"{field}[{k}]", self.row) for k, c in enumerate(listed))
        for k, call in enumerate(calls):
            if call.id is None:
                continue
            if call.id in self.calls:
                raise InvalidInputError(
                    f"{field}[{k}].id",
                    "an id no other call has",
                    call.id,
                    row=self.row,
                    detail=f"messages[{self.calls[call.id]}] made a call with this id; give each its own",
                )
            self.calls[call.id] = i
        return calls

    def _answer(self, item: Mapping[str, Any], i: int, role: str) -> str | None:
        field = f"messages[{i}].tool_call_id"
        value = item.get("tool_call_id")
        if role != "tool":
            if value is not None:
                raise InvalidInputError(
                    field, "given on tool messages only", row=self.row, detail=f"this is a {role} message"
                )
            return None
        fix = "a tool message answers the id of a call an earlier assistant message made"
        call_id: str = check_field(
            value, field, str, "the id of an earlier tool call", row=self.row, detail=fix
        )
        if call_id not in self.calls:
            raise InvalidInputError(
                field,
                "the id of an earlier tool call",
                call_id,
                row=self.row,
                detail=f"no earlier assistant message made a call with this id; {fix}",
            )
        if call_id in self.answered:
            raise InvalidInputError(
                field,
                "the id of a call not answered yet",
                call_id,
                row=self.row,
                detail=f"messages[{self.answered[call_id]}] answered it already; merge the two results",
            )
        self.answered[call_id] = i
        return call_id
