"""Conversation rows as the pipeline scores them: one sample row per assistant turn with text.

:func:`turn_rows` expands each conversation row (``Row.conversation``) into one row per turn, read as
a sample by :func:`~ragmetrics.metrics.conversation.turns.turn_sample` (id ``CONV#turnN``), its
``meta`` naming the conversation, the turn, its message, the user's message it answers and where each
context came from; the row carries the turn's ``EvidenceMap``, so the record names the message each
claim cites. The first turn's ``meta["tool_calls"]`` holds the tool-call metrics (no judge) when calls
are expected. With conversation-level metrics, a conversation row (id ``CONV``) follows the turns.
Rows keep their index, shifted by the rows added before them. A conversation that cannot be read is
one refused row (naming ``messages[i]``), a turn that cannot be read that turn's row (their ``source``
names the conversation and turn); sample rows pass through.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ragmetrics._check import check_int
from ragmetrics.errors import InvalidInputError
from ragmetrics.metrics.conversation.tools import ToolCallAccuracy, ToolCallF1
from ragmetrics.metrics.conversation.turns import (
    DEFAULT_HISTORY_BUDGET_TOKENS,
    _tool_names,
    turn_sample,
)
from ragmetrics.pipeline._row import Row, to_conversation
from ragmetrics.sample import Conversation, Sample

__all__ = ["TurnOptions", "has_expected_calls", "turn_rows"]

TOOL_METRICS = (ToolCallAccuracy, ToolCallF1)
"""The tool-call metrics run on every conversation that expects calls (deterministic, no judge)."""


@dataclass(frozen=True, slots=True)
class TurnOptions:
    """How a conversation's turns are read: which tools' results are evidence, how much history is sent."""

    retrieval_tools: frozenset[str] | None = None
    """The tool names whose results are evidence; None: every tool's."""
    history_budget_tokens: int = DEFAULT_HISTORY_BUDGET_TOKENS
    """Estimated tokens of history per turn (the oldest messages are cut first)."""
    conversation_rows: bool = False
    """Whether each conversation also gets a conversation row after its turns (the run has
    conversation-level metrics)."""

    @classmethod
    def of(
        cls,
        retrieval_tools: Collection[str] | None,
        history_budget_tokens: int,
        owner: str,
        *,
        conversation_rows: bool = False,
    ) -> TurnOptions:
        """Checked options.

        Raises:
            ConfigError: Not a list of tool names, or not a non-negative integer budget.
        """
        budget = check_int(history_budget_tokens, "history_budget_tokens", owner, minimum=0)
        return cls(_tool_names(retrieval_tools), budget, bool(conversation_rows))


def has_expected_calls(conversation: Conversation) -> bool:
    """Whether calls are expected of the conversation (on the record or on an assistant message)."""
    return conversation.expected_tool_calls is not None or any(
        m.expected_tool_calls is not None for m in conversation.messages
    )


def _tool_results(conversation: Conversation) -> dict[str, Any]:
    """The tool-call metrics' score, reasoning and details, when calls are expected (else empty)."""
    if not has_expected_calls(conversation):
        return {}
    found = {}
    for metric in TOOL_METRICS:
        result = metric().evaluate_sync(conversation)
        found[result.name] = {
            "score": result.score,
            "status": result.status,
            "reasoning": result.reasoning,
            "details": dict(result.details),
        }
    return found


def _turn_meta(meta: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The conversation's ``meta`` as one turn's record has it.

    A ``message_spans`` map (message index -> the trace and span that message came from, set by
    :mod:`ragmetrics.observe.sessions`) gives the turn its own entry, not the whole map.
    """
    spans = meta.get("message_spans")
    if not isinstance(spans, Mapping):
        return dict(meta)
    own = spans.get(str(index))
    return {
        **{k: v for k, v in meta.items() if k != "message_spans"},
        **(own if isinstance(own, Mapping) else {}),
    }


def _turns(row: Row, start: int, options: TurnOptions) -> list[Row]:
    """One conversation row as its turn rows, numbered from ``start``."""
    ident = row.values.get("id") if isinstance(row.values, Mapping) else None
    named = {**(row.source or {}), "conversation_id": str(ident if ident is not None else row.index)}
    try:
        conversation = to_conversation(row)
    except InvalidInputError as exc:  # its record names the conversation, for the per-conversation view
        values = {"id": named["conversation_id"]}
        return [dataclasses.replace(row, index=start, values=values, source=named, refusal=exc)]
    if conversation.id is None:
        conversation = conversation.model_copy(update={"id": str(row.index)})
    name = str(conversation.id)
    turns = conversation.turns()
    if not turns:
        empty = InvalidInputError(
            "messages",
            "a conversation with an assistant message with text",
            row=row.index,
            detail="no assistant message has text, so no turn can be scored",
        )
        return [Row(start, {"id": name}, source={**named, "conversation_id": name}, refusal=empty)]
    tools = _tool_results(conversation)
    found = []
    for k, turn in enumerate(turns):
        turn_id = f"{name}#turn{turn.number}"
        try:
            sample, mapped = turn_sample(
                conversation,
                turn,
                retrieval_tools=options.retrieval_tools,
                history_budget_tokens=options.history_budget_tokens,
            )
        except InvalidInputError as exc:
            where = {"conversation_id": name, "turn": turn.number, "message_index": turn.index}
            found.append(Row(start + k, {"id": turn_id}, source=where, refusal=exc, level="turn"))
            continue
        meta: dict[str, Any] = {
            **_turn_meta(conversation.meta, turn.index),
            "conversation_id": name,
            "turn": turn.number,
            "message_index": turn.index,
            "user_message": turn.question.content if turn.question is not None else None,
            "sources": list(mapped.sources),
        }
        if k == 0 and tools:
            meta["tool_calls"] = tools
        # the first scored turn carries the conversation as plain JSON, once, for the HTML report's
        # transcript (records stay self-contained; no metric or prompt reads ``meta``)
        if all(r.refusal is not None for r in found):
            fields = {"role", "content", "tool_calls", "tool_call_id", "name", "contexts"}
            meta["messages"] = [
                m.model_dump(mode="json", include=fields, exclude_defaults=True)
                for m in conversation.messages
            ]
        found.append(Row(start + k, sample.model_copy(update={"meta": meta}), evidence=mapped, level="turn"))
    if options.conversation_rows:
        found.append(_conversation_row(conversation, name, start + len(found), len(turns)))
    return found


def _conversation_row(conversation: Conversation, name: str, index: int, turns: int) -> Row:
    """The row the conversation-level metrics score: its sample stands for the whole conversation.

    Its id is the conversation's; its question the goal (else the first user message), its answer the
    last assistant message with text; ``meta`` says ``level: conversation`` and how many turns it has.
    """
    first = next((m.content for m in conversation.messages if m.role == "user" and m.content.strip()), None)
    said = [m.content for m in conversation.messages if m.role == "assistant" and m.content.strip()]
    meta = {**conversation.meta, "conversation_id": name, "level": "conversation", "turns": turns}
    sample = Sample(question=conversation.goal or first, answer=said[-1], contexts=(), id=name, meta=meta)
    return Row(index, sample, level="conversation", session=conversation)


def turn_rows(rows: Iterable[Row], options: TurnOptions, *, shift: bool = True) -> Iterator[Row]:
    """The rows with every conversation row expanded into its turn rows.

    A row keeps its own index, shifted by the turn rows the conversations before it added (a
    conversation of ``n`` turns adds ``n - 1``): rows read from a source (numbered 0, 1, ...) come out
    numbered in order, and rows given already numbered (``ragmetrics eval --limit`` passes the first
    rows) keep their numbers when no conversation precedes them. ``shift=False`` (a Ray batch, whose
    rows carry their positions in the whole dataset and cannot know the turns of other batches): every
    turn row keeps its conversation's index, and the others keep theirs.
    """
    added = 0
    for row in rows:
        if row.conversation is None or row.problem is not None:
            yield row if added == 0 else dataclasses.replace(row, index=row.index + added)
            continue
        turns = _turns(row, row.index + added, options)
        if not shift:
            turns = [dataclasses.replace(turn, index=row.index) for turn in turns]
        yield from turns
        added += len(turns) - 1 if shift else 0
