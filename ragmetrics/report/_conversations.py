"""The conversations in the HTML report's data: each conversation's transcript and its turns' rows.

A conversation's turn records (see :mod:`ragmetrics.pipeline._turn_rows`) name it in
``sample.meta["conversation_id"]`` (a refused turn in the record's ``extra``); its first scored turn
carries the whole conversation in ``meta["messages"]`` and, when calls were expected, the tool-call
metrics in ``meta["tool_calls"]``. :func:`conversations` gathers them by conversation, in the order
their first turns appear, for report.js's transcript view (assets/conversations.js).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragmetrics.pipeline.conversation_summary import conversation_meta
from ragmetrics.pipeline.records import EvaluationResult

__all__ = ["conversations", "source_of"]

_SOURCE = re.compile(r"messages\[(\d+)\](?:\.contexts\[(\d+)\])?")


def source_of(source: Any) -> list[int]:
    """``"messages[3]"`` as ``[3, -1]``, ``"messages[2].contexts[0]"`` as ``[2, 0]``; else ``[-1, -1]``."""
    found = _SOURCE.fullmatch(source) if isinstance(source, str) else None
    if found is None:
        return [-1, -1]
    return [int(found[1]), -1 if found[2] is None else int(found[2])]


def conversations(
    records: Sequence[EvaluationResult], strings: Callable[[str | None], int], plain: Callable[[Any], Any]
) -> list[list[Any]]:
    """The run's conversations, as positional arrays (empty when no record is a conversation's turn).

    Layout (text as indexes into the payload's ``strings``)::

        conversation = [id, [message] | null, [tool metric], [turn], refused row position | -1,
                        row position of its own record (conversation-level metrics) | -1]
        message      = [role, content, [tool call], tool_call_id, name, [context]]
        tool call    = [id, name, arguments as JSON text]
        tool metric  = [name, score | null, status, reasoning, details (plain JSON) | null]
        turn         = [row position, turn number, message index, [[message index, context index | -1]]]

    A turn's sources say, for each context of its sample, the message it came from (``-1`` for a
    context index: the message's content; ``[-1, -1]``: not known). The messages are null when no
    record carries them (records written before they were kept). A conversation that could not be
    read at all is one record, without turns: its row position is the last item.

    Args:
        records: The report's records, in the order of the payload's rows.
        strings: Interns a text (the payload's string table).
        plain: Turns free-form details into plain JSON.
    """
    found: dict[str, list[Any]] = {}
    for pos, record in enumerate(records):
        meta = conversation_meta(record)
        if not meta:
            continue
        name = meta["conversation_id"]
        conv = found.get(name)
        if conv is None:
            conv = found[name] = [name, None, [], [], -1, -1]
        if meta.get("level") == "conversation":  # its own record: the conversation-level metrics' scores
            conv[5] = pos
            continue
        if "turn" not in meta:  # the conversation itself was refused: its record says why
            conv[4] = pos
            continue
        if conv[1] is None and isinstance(meta.get("messages"), list):
            conv[1] = [_message(m, strings) for m in meta["messages"] if isinstance(m, Mapping)]
        if not conv[2] and isinstance(meta.get("tool_calls"), Mapping):
            conv[2] = [_tool_metric(k, v, strings, plain) for k, v in meta["tool_calls"].items()]
        sources = meta.get("sources")
        conv[3].append(
            [
                pos,
                _int(meta.get("turn")),
                _int(meta.get("message_index")),
                [source_of(s) for s in sources] if isinstance(sources, list) else [],
            ]
        )
    return list(found.values())


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None if value is None else str(value)


def _message(message: Mapping[str, Any], strings: Callable[[str | None], int]) -> list[Any]:
    calls = message.get("tool_calls")
    contexts = message.get("contexts")
    return [
        _text(message.get("role")) or "?",
        strings(_text(message.get("content"))),
        [_call(c) for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else [],
        _text(message.get("tool_call_id")),
        _text(message.get("name")),
        [strings(_text(c)) for c in contexts] if isinstance(contexts, list) else [],
    ]


def _call(call: Mapping[str, Any]) -> list[Any]:
    arguments = call.get("arguments", {})
    text = json.dumps(arguments, ensure_ascii=False, indent=2, sort_keys=True, default=str)
    return [_text(call.get("id")), _text(call.get("name")) or "?", text]


def _tool_metric(
    name: str, result: Any, strings: Callable[[str | None], int], plain: Callable[[Any], Any]
) -> list[Any]:
    if not isinstance(result, Mapping):
        return [str(name), None, "?", -1, None]
    score = result.get("score")
    details = result.get("details")
    return [
        str(name),
        round(score, 6) if isinstance(score, (int, float)) and math.isfinite(score) else None,
        _text(result.get("status")) or "?",
        strings(_text(result.get("reasoning"))),
        plain(details) if details else None,
    ]
