"""One assistant turn as an ordinary sample: its evidence, its history, and where each context came from.

:func:`turn_evidence` gathers what a turn's answer may rest on, in this order: the turn's own
``contexts``, the results of the tool calls made for it (only the ``retrieval_tools`` when named),
then the user's messages of earlier turns (what the user stated is given; the question itself is not
evidence, so a first turn is judged as its sample alone). The history before the question is sent
as a transcript prepended to the question, so extraction resolves "it" and "and when?". History is
bounded by a token budget (:func:`~ragmetrics.text.estimate_tokens`): the oldest messages are cut
first, and the :class:`HistoryCut` says how many and how many tokens. :func:`turn_sample` turns it all
into a :class:`~ragmetrics.sample.Sample` the claim metrics score unchanged (2 calls per turn for the
three core metrics on one judge); the :class:`EvidenceMap` maps a verdict's ``context_index`` back to
the message it cites (``messages[4]``, ``messages[6].contexts[0]``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from ragmetrics._check import check_int
from ragmetrics.errors import ConfigError, InvalidInputError
from ragmetrics.sample import Conversation, Message, Sample, Turn
from ragmetrics.text import estimate_tokens

__all__ = [
    "DEFAULT_HISTORY_BUDGET_TOKENS",
    "Evidence",
    "EvidenceMap",
    "HistoryCut",
    "turn_evidence",
    "turn_sample",
]

DEFAULT_HISTORY_BUDGET_TOKENS = 2000
"""Estimated tokens of history (transcript lines, and the user's earlier messages as evidence) per turn."""

EvidenceKind = Literal["context", "tool_result", "user"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """One text a turn's answer may rest on, and the message it is in."""

    source: str
    """Where it is: ``messages[6].contexts[0]`` (a turn context), ``messages[2]`` (a tool result or a
    user message)."""
    message: int
    """The index of that message in ``Conversation.messages``."""
    kind: EvidenceKind
    """``context``, ``tool_result`` or ``user``."""
    text: str


@dataclass(frozen=True, slots=True)
class HistoryCut:
    """What the history budget left out of a turn: the oldest messages first."""

    budget_tokens: int
    messages_kept: int
    """Earlier messages sent (in the transcript, and as evidence for the user's)."""
    tokens_kept: int
    messages_cut: int
    """Earlier messages left out (the oldest ones)."""
    tokens_cut: int

    def as_details(self) -> dict[str, int]:
        """``details["history"]`` of a turn's results."""
        return {
            "messages_kept": self.messages_kept,
            "tokens_kept": self.tokens_kept,
            "messages_cut": self.messages_cut,
            "tokens_cut": self.tokens_cut,
            "budget_tokens": self.budget_tokens,
        }


@dataclass(frozen=True, slots=True)
class EvidenceMap:
    """A turn read as a sample: its question with the history, and its evidence in context order."""

    turn: Turn
    question: str
    """The user's question, after the bounded transcript of the history before it (if any)."""
    evidence: tuple[Evidence, ...]
    """The sample's contexts, in order: ``Sample.contexts[i]`` is ``evidence[i].text``."""
    history: HistoryCut

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """``(source, text)`` per context."""
        return tuple((e.source, e.text) for e in self.evidence)

    @property
    def sources(self) -> tuple[str, ...]:
        """Where each context came from (``messages[4]``), in context order."""
        return tuple(e.source for e in self.evidence)

    def source(self, context_index: int | None) -> str | None:
        """The message a verdict's ``context_index`` cites, or None (no index, or out of range)."""
        if context_index is None or not 0 <= context_index < len(self.evidence):
            return None
        return self.evidence[context_index].source

    def message_index(self, context_index: int | None) -> int | None:
        """The index in ``Conversation.messages`` of the message a ``context_index`` cites, or None."""
        if context_index is None or not 0 <= context_index < len(self.evidence):
            return None
        return self.evidence[context_index].message


def turn_evidence(
    conversation: Conversation,
    turn: Turn,
    *,
    retrieval_tools: Collection[str] | None = None,
    history_budget_tokens: int = DEFAULT_HISTORY_BUDGET_TOKENS,
) -> EvidenceMap:
    """What the answer of ``turn`` is judged against, and its question read in the light of the history.

    Args:
        conversation: The conversation the turn belongs to.
        turn: One of ``conversation.turns()``.
        retrieval_tools: The tool names whose results are evidence; None: every tool's.
        history_budget_tokens: Estimated tokens of history sent: each earlier user or assistant
            message with text costs its transcript line, and a user message also its text as
            evidence. The newest messages are kept, the oldest cut. The current question, the turn's
            contexts and its tool results are not history and are always sent.

    Returns:
        The evidence map (its ``question`` is what the judge reads as the question).

    Raises:
        InvalidInputError: No user message comes before the answer (``messages[i]`` names it).
        ConfigError: A bad budget or tool name list.
    """
    budget = check_int(history_budget_tokens, "history_budget_tokens", "turn_evidence", minimum=0)
    tools = _tool_names(retrieval_tools)
    asked = turn.question_index
    if asked is None or turn.question is None:
        raise InvalidInputError(
            f"messages[{turn.index}]",
            "an answer to a user message",
            row=conversation.id,
            detail="no user message comes before this assistant message, so it answers no question",
        )
    found = [
        Evidence(f"messages[{turn.index}].contexts[{j}]", turn.index, "context", text)
        for j, text in enumerate(turn.contexts)
    ]
    names = {c.id: c.name for _, c in conversation.tool_calls() if c.id is not None}
    for i in range(asked + 1, turn.index):
        message = conversation.messages[i]
        if message.role != "tool":
            continue
        name = names.get(message.tool_call_id or "") or message.name
        if tools is None or name in tools:
            found.append(Evidence(f"messages[{i}]", i, "tool_result", message.content))
    kept, cut = _bounded_history(conversation.messages[:asked], budget)
    # what the user stated in earlier turns is given; the question itself is not evidence for its answer
    # (as for a single sample: a first turn is judged exactly as that sample would be)
    found.extend(Evidence(f"messages[{i}]", i, "user", m.content) for i, m in kept if m.role == "user")
    history = HistoryCut(
        budget_tokens=budget,
        messages_kept=len(kept),
        tokens_kept=sum(_cost(m) for _, m in kept),
        messages_cut=len(cut),
        tokens_cut=sum(_cost(m) for _, m in cut),
    )
    return EvidenceMap(turn, _question(turn.question.content, kept, len(cut)), tuple(found), history)


def turn_sample(
    conversation: Conversation,
    turn: Turn,
    *,
    retrieval_tools: Collection[str] | None = None,
    history_budget_tokens: int = DEFAULT_HISTORY_BUDGET_TOKENS,
) -> tuple[Sample, EvidenceMap]:
    """The turn as an ordinary sample for the claim metrics, and the map from its contexts to messages.

    The sample's question is the bounded history transcript and the question; its contexts are the
    evidence texts (see :func:`turn_evidence`, whose arguments these are); its id is
    ``{conversation.id}#turn{n}``. A first turn has the user's question as it is (there is no history
    to prepend), so its extraction request is a single-turn row's.

    Raises:
        InvalidInputError: No user message comes before the answer.
    """
    mapped = turn_evidence(
        conversation, turn, retrieval_tools=retrieval_tools, history_budget_tokens=history_budget_tokens
    )
    name = f"{conversation.id}#turn{turn.number}" if conversation.id is not None else f"turn{turn.number}"
    sample = Sample(
        question=mapped.question,
        answer=turn.answer,
        contexts=tuple(e.text for e in mapped.evidence),
        reference=turn.reference,
        id=name,
    )
    return sample, mapped


# -- history ----------------------------------------------------------------------------------------


def _tool_names(value: Any) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Collection):
        raise ConfigError(
            f"retrieval_tools must be a list of tool names or None (every tool), got {type(value).__name__}"
        )
    bad = [v for v in value if not isinstance(v, str)]
    if bad:
        raise ConfigError(f"retrieval_tools must hold tool names (strings), got {bad[0]!r}")
    return frozenset(value)


def _line(message: Message) -> str:
    return f"{message.role}: {message.content.strip()}"


def _cost(message: Message) -> int:
    """Estimated tokens a history message costs: its transcript line, and a user's text as evidence."""
    line = estimate_tokens(_line(message))
    return line + estimate_tokens(message.content) if message.role == "user" else line


def _bounded_history(
    before: tuple[Message, ...], budget: int
) -> tuple[list[tuple[int, Message]], list[tuple[int, Message]]]:
    """The user and assistant messages with text before the question: (kept, cut), each oldest first.

    Kept are the newest that fit the budget together; once one does not fit, it and every older one
    are cut (a transcript with a hole in it would mislead more than a shorter one).
    """
    said = [(i, m) for i, m in enumerate(before) if m.role in ("user", "assistant") and m.content.strip()]
    used = 0
    split = len(said)
    while split > 0 and used + _cost(said[split - 1][1]) <= budget:
        split -= 1
        used += _cost(said[split][1])
    return said[split:], said[:split]


def _question(question: str, kept: list[tuple[int, Message]], cut: int) -> str:
    """The question as the judge reads it: after the transcript of the history kept, if any."""
    if not kept and not cut:
        return question
    lines = ["Earlier in the conversation (oldest first):"]
    if cut:
        lines.append(f"[{cut} earlier message{'s' if cut != 1 else ''} cut: over the history budget]")
    lines.extend(_line(m) for _, m in kept)
    return "\n".join(lines) + f"\n\nThe question now:\n{question}"
