"""The conversation-level judge requests: the transcript as data, the prompts, and checking the quotes.

A conversation is sent as one transcript: each message a ``<role index="i">`` block (its text escaped,
so a message cannot close its block or open another; an assistant's tool calls in a ``calls``
attribute, a tool result's tool in ``name``), inside ``<messages>``. :func:`judgement_request` builds
the one request of a judgement (``conversation/<task>.v1`` with ``conversation/system.v1``);
:func:`read_transcript` reads a rendered transcript back (the fake LLM server answers by reading it).
:func:`quote_problem` checks that an index names a message of the right role and that a quote is in
that message, with the claim quotes' normaliser and fuzzy rule
(:func:`~ragmetrics.metrics.claims.engine.quote_found`).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Collection
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from ragmetrics.judge import JudgeRequest, Message
from ragmetrics.metrics.claims.engine import quote_found
from ragmetrics.prompting import Raw, escape, load_prompt, render
from ragmetrics.sample import Conversation

__all__ = [
    "LOGIC_VERSION",
    "REASK_VERSION",
    "SYSTEM_VERSION",
    "Task",
    "judgement_request",
    "message_variables",
    "quote_problem",
    "read_transcript",
    "transcript",
]

SYSTEM_VERSION = "conversation/system.v1"
REASK_VERSION = "conversation/reask.v1"
"""The re-ask that follows a reply whose indices or quotes do not check out."""
LOGIC_VERSION = "1"
"""Version of the logic reading the replies; part of the cache key."""

Task = Literal["retention", "completeness", "task"]
_T = TypeVar("_T", bound=BaseModel)

_MESSAGE = re.compile(
    r'<(?P<role>system|user|assistant|tool) index="(?P<i>\d+)"(?P<attrs>[^>]*)>(?P<body>.*?)</(?P=role)>',
    re.DOTALL,
)


def _calls(conversation: Conversation, index: int) -> str:
    message = conversation.messages[index]
    return ", ".join(
        f"{c.name}({json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)})" for c in message.tool_calls
    )


def transcript(conversation: Conversation) -> Raw:
    """The messages as ``<role index="i">`` blocks, one per line, their text escaped."""
    names = {c.id: c.name for _, c in conversation.tool_calls() if c.id is not None}
    lines = []
    for i, m in enumerate(conversation.messages):
        attrs = ""
        calls = _calls(conversation, i)
        if calls:
            attrs += f' calls="{html.escape(calls, quote=True)}"'
        if m.role == "tool" and m.tool_call_id in names:
            attrs += f' name="{html.escape(names[m.tool_call_id], quote=True)}"'
        lines.append(f'<{m.role} index="{i}"{attrs}>{escape(m.content)}</{m.role}>')
    return Raw("\n".join(lines))


def message_variables(conversation: Conversation) -> list[dict[str, Any]]:
    """The messages as the offline judge reads them: ``{"index", "role", "content"}`` each."""
    return [{"index": i, "role": m.role, "content": m.content} for i, m in enumerate(conversation.messages)]


def read_transcript(text: str) -> list[dict[str, Any]]:
    """The messages of a rendered transcript, as :func:`message_variables` gives them (text unescaped)."""
    return [
        {"index": int(m["i"]), "role": m["role"], "content": html.unescape(m["body"])}
        for m in _MESSAGE.finditer(text)
    ]


def judgement_request(
    task: Task,
    conversation: Conversation,
    response_model: type[_T],
    *,
    goal: str | None = None,
    repeat: int = 0,
) -> JudgeRequest[_T]:
    """The one request of a conversation-level judgement (``goal`` only for ``task``)."""
    system = load_prompt(SYSTEM_VERSION)
    prompt = load_prompt(f"conversation/{task}.v1")
    values: dict[str, str | Raw | None] = {"messages": transcript(conversation)}
    variables: dict[str, Any] = {"messages": message_variables(conversation)}
    if task == "task":
        values["goal"] = goal
        variables["goal"] = goal
    return JudgeRequest(
        task=f"conversation.{task}",
        prompts=(system, prompt),
        messages=(
            Message(role="system", content=system.text.strip()),
            Message(role="user", content=render(prompt, **values)),
        ),
        response_model=response_model,
        variables=variables,
        version=LOGIC_VERSION,
        repeat=repeat,
    )


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit // 2 - 2] + " ... " + text[-(limit // 2 - 3) :]


def quote_problem(
    conversation: Conversation,
    index: int | None,
    quote: str,
    roles: Collection[str],
    what: str,
    *,
    before: int | None = None,
    after: int | None = None,
) -> str | None:
    """Why ``quote`` from message ``index`` does not check out, or None when it does.

    The index must name a message whose role is in ``roles`` (and, if given, come before ``before`` or
    after ``after``); the quote must be found in that message's text (:func:`quote_found`). ``what``
    names the quote in the problem line (``finding 0's claim``).
    """
    n = len(conversation.messages)
    wanted = " or ".join(sorted(roles))
    if index is None or not 0 <= index < n:
        return f"{what}: message {index} does not exist (indices 0..{n - 1})"
    role = conversation.messages[index].role
    if role not in roles:
        return f"{what}: message {index} is a {role} message, not a {wanted} message"
    if before is not None and index >= before:
        return f"{what}: message {index} is not before message {before}"
    if after is not None and index <= after:
        return f"{what}: message {index} is not after message {after}"
    if not quote_found(quote, conversation.messages[index].content):
        return f"{what}: the quote {_clip(quote)!r} is not in message {index}"
    return None
