"""Where the LangChain adapter finds a run's question and answer: strings, messages, dicts, LLM results.

No LangChain import: messages are recognised by shape (``content`` and a ``type`` string), so this
works whatever the installed ``langchain_core`` version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ANSWER_KEYS", "QUESTION_KEYS", "answer_from", "generation_text", "message_text", "question_from"]

QUESTION_KEYS = ("question", "input", "query")
"""Input keys searched for the question, in order (then ``messages``)."""
ANSWER_KEYS = ("answer", "output", "result")
"""Output keys searched for the answer, in order (then ``messages``)."""


def message_text(message: Any) -> str | None:
    """The text of a LangChain message (string content, or the text blocks of a content list)."""
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b if isinstance(b, str) else b.get("text", "")
            for b in content
            if isinstance(b, str) or (isinstance(b, Mapping) and b.get("type") == "text")
        ]
        return "".join(parts)
    return None


def _is_message(value: Any) -> bool:
    return hasattr(value, "content") and hasattr(value, "type") and isinstance(value.type, str)


def _last_message(messages: Any, types: tuple[str, ...]) -> str | None:
    if hasattr(messages, "to_messages") and callable(messages.to_messages):  # a PromptValue
        messages = messages.to_messages()
    if isinstance(messages, (list, tuple)) and messages and all(_is_message(m) for m in messages):
        for m in reversed(messages):
            if m.type in types:
                return message_text(m)
    return None


def question_from(value: Any, keys: Sequence[str]) -> str | None:
    """The question in a run's input, or None."""
    if isinstance(value, str):
        return value
    if _is_message(value):
        return message_text(value)
    if isinstance(value, Mapping):
        for key in (*keys, "messages"):
            if key in value and not isinstance(value[key], Mapping):
                found = question_from(value[key], keys)
                if found is not None:
                    return found
        return None
    return _last_message(value, ("human",))


def answer_from(value: Any, keys: Sequence[str]) -> str | None:
    """The answer in a run's output, or None."""
    if isinstance(value, str):
        return value
    if _is_message(value):
        return message_text(value)
    if isinstance(value, Mapping):
        for key in (*keys, "messages"):
            if key in value and not isinstance(value[key], Mapping):
                found = answer_from(value[key], keys)
                if found is not None:
                    return found
        return None
    return _last_message(value, ("ai",))


def generation_text(response: Any) -> str | None:
    """The text of an LLM or chat model call's first generation, or None."""
    generations = getattr(response, "generations", None)
    if not generations or not generations[0]:
        return None
    first = generations[0][0]
    message = getattr(first, "message", None)
    text = message_text(message) if message is not None else None
    return text if text else getattr(first, "text", None)
