"""The per-conversation view of a run: each conversation's turns, its mean per metric, its tool-call scores.

A conversation is scored one record per assistant turn (see :mod:`ragmetrics.pipeline._turn_rows`);
:class:`ConversationTally` gathers those records by ``sample.meta["conversation_id"]`` as they finish,
keeping only numbers, and gives one :class:`ConversationSummary` per conversation, in dataset order:
the turns' scores and statuses, the mean of each metric over the turns that have a score, and the
tool-call metrics (no judge) when the conversation expected calls. ``Report.conversations`` holds
them (``ragmetrics eval --json``); the CLI prints them as a table. :func:`turn_table` and
:func:`conversation_table` are ``to_pandas(level="turns")`` and ``level="conversations"``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.pipeline.conversations import conversation_format
from ragmetrics.pipeline.records import EvaluationResult

__all__ = [
    "ConversationSummary",
    "ConversationTally",
    "TurnScores",
    "conversation_meta",
    "conversation_table",
    "turn_table",
]


class TurnScores(BaseModel):
    """One assistant turn's scores, as its record has them."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """The turn's record id (``CONV#turnN``)."""
    turn: int
    """The turn's number in the conversation (0-based)."""
    message: int
    """The index of the assistant message in the conversation's ``messages``."""
    scores: dict[str, float | None] = Field(default_factory=dict)
    status: str = "ok"
    """``ok``, or the status of the record's first error."""


class ConversationSummary(BaseModel):
    """One conversation's turns and aggregates."""

    model_config = ConfigDict(extra="forbid")

    id: str
    turns: list[TurnScores] = Field(default_factory=list)
    """Its assistant turns' records, in turn order."""
    scores: dict[str, float | None] = Field(default_factory=dict)
    """Per metric, the mean over the turns with a score (None: no turn has one); a conversation-level
    metric's score is the conversation's."""
    mean_score: float | None = None
    """Mean of those means that exist."""
    tool_call_accuracy: float | None = None
    """Expected tool calls matched in order (None: no calls expected)."""
    tool_call_f1: float | None = None
    """Expected tool calls matched as a multiset (None: no calls expected)."""
    tool_calls: dict[str, str] = Field(default_factory=dict)
    """Per tool-call metric, its reasoning: what was matched, and each mismatch named."""
    status: str = "ok"
    """``ok``, or why the conversation could not be read at all (``invalid_input``: no turn was scored)."""
    message: str | None = None
    """What was wrong with it (names the message at fault: ``messages[3].tool_call_id``)."""


def _mean(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return math.fsum(got) / len(got) if got else None


_TURN_KEYS = frozenset({"conversation_id", "turn", "message_index"})


def conversation_meta(record: EvaluationResult) -> Mapping[str, Any]:
    """What a record says of its conversation and turn (empty for a record of a sample row).

    A turn's sample has them in its ``meta`` (with ``sources``), a conversation's own record its
    ``level`` and ``conversation_id``; a refused turn has just these keys in the record's ``extra``, a
    refused conversation its record as it came in (no ``turn``). The summary, the tables and the HTML
    report read records through this.
    """
    if record.sample is not None:
        meta = record.sample.meta
        whole = meta.get("level") == "conversation" and isinstance(meta.get("conversation_id"), str)
        return meta if whole or _TURN_KEYS | {"sources"} <= set(meta) else {}
    extra = record.extra
    if isinstance(extra.get("conversation_id"), str) and (
        set(extra) <= _TURN_KEYS or conversation_format(extra) is not None
    ):
        return extra
    return {}


class ConversationTally:
    """Records of conversation turns, gathered per conversation as they come in (any order)."""

    def __init__(self, metrics: Sequence[str]) -> None:
        self.metrics = list(metrics)
        self._turns: dict[str, list[tuple[int, TurnScores]]] = {}
        self._tools: dict[str, dict[str, Any]] = {}
        self._refused: dict[str, tuple[int, str, str]] = {}
        self._whole: dict[str, dict[str, float | None]] = {}  # the conversation-level metrics' scores

    def add(self, record: EvaluationResult) -> None:
        """Count one record in (a record that is not a conversation's turn is ignored)."""
        meta = conversation_meta(record)
        name = meta.get("conversation_id")
        if not isinstance(name, str):
            return
        if meta.get("level") == "conversation":  # the conversation's own record
            self._whole[name] = {m: record.scores[m] for m in self.metrics if m in record.scores}
            return
        if "turn" not in meta:  # the conversation itself was refused
            error = record.errors[0] if record.errors else None
            status, message = (error.status, error.message) if error else ("ok", "")
            self._refused[name] = (record.index, status, message)
            return
        turn = TurnScores(
            id=record.id,
            turn=int(meta.get("turn", 0)),
            message=int(meta.get("message_index", 0)),
            scores={m: record.scores.get(m) for m in self.metrics if m in record.scores},
            status=record.errors[0].status if record.errors else "ok",
        )
        self._turns.setdefault(name, []).append((record.index, turn))
        tools = meta.get("tool_calls")
        if isinstance(tools, dict):
            self._tools[name] = tools

    def result(self) -> list[ConversationSummary]:
        """One summary per conversation, in the order of their first record."""
        found = [
            (index, ConversationSummary(id=name, status=status, message=message))
            for name, (index, status, message) in self._refused.items()
        ]
        for name, turns in self._turns.items():
            ordered = [t for _, t in sorted(turns, key=lambda pair: pair[1].turn)]
            whole = self._whole.get(name, {})
            scores = {
                m: whole[m] if m in whole else _mean([t.scores.get(m) for t in ordered]) for m in self.metrics
            }
            tools = self._tools.get(name, {})
            found.append(
                (
                    min(i for i, _ in turns),
                    ConversationSummary(
                        id=name,
                        turns=ordered,
                        scores=scores,
                        mean_score=_mean(list(scores.values())),
                        tool_call_accuracy=tools.get("tool_call_accuracy", {}).get("score"),
                        tool_call_f1=tools.get("tool_call_f1", {}).get("score"),
                        tool_calls={k: str(v.get("reasoning", "")) for k, v in tools.items()},
                    ),
                )
            )
        return [summary for _, summary in sorted(found, key=lambda pair: pair[0])]


def turn_table(
    records: Iterable[EvaluationResult], metrics: Sequence[str], flat: Any
) -> list[dict[str, Any]]:
    """One row per conversation turn (``to_pandas(level="turns")``); records of sample rows are left out.

    Each row is the conversation, the turn and its message index, the user's message it answers, then
    ``flat(record)`` (the record's flat row: its id, question as the judge read it, answer, contexts,
    and a score, status and reason column per metric) with ``context_sources``: the message each
    context came from. A conversation refused whole is one row with no turn.
    """
    rows = []
    for record in records:
        meta = conversation_meta(record)
        name = meta.get("conversation_id")
        if not isinstance(name, str) or meta.get("level") == "conversation":
            continue
        sources = meta.get("sources")
        rows.append(
            {
                "conversation_id": name,
                "turn": meta.get("turn"),
                "message_index": meta.get("message_index"),
                "user_message": meta.get("user_message"),
                **flat(record),
                "context_sources": list(sources) if isinstance(sources, list) else None,
            }
        )
    return rows


def conversation_table(records: Iterable[EvaluationResult], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One row per conversation (``to_pandas(level="conversations")``), as :class:`ConversationSummary`.

    Columns: the conversation's id, its turns and how many have every metric scored, the mean of each
    metric over its turns, their mean, the tool-call scores, its status and what was wrong.
    """
    tally = ConversationTally(metrics)
    for record in records:
        tally.add(record)
    rows = []
    for summary in tally.result():
        scored = sum(all(v is not None for v in t.scores.values()) for t in summary.turns)
        rows.append(
            {
                "conversation_id": summary.id,
                "turns": len(summary.turns),
                "turns_scored": scored,
                **{m: summary.scores.get(m) for m in metrics},
                "mean_score": summary.mean_score,
                "tool_call_accuracy": summary.tool_call_accuracy,
                "tool_call_f1": summary.tool_call_f1,
                "status": summary.status,
                "message": summary.message,
            }
        )
    return rows
