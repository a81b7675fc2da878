"""Metrics of a conversation: the claim metrics per turn, the tool-call and conversation-level metrics.

:func:`~ragmetrics.metrics.conversation.turn_claims.evaluate_turns` runs the claim metrics on every
assistant turn, each read as a sample by :func:`~ragmetrics.metrics.conversation.turns.turn_sample`
(its evidence: the turn's contexts, its tool results and the user's messages; its question: after a
bounded history). :class:`~ragmetrics.metrics.conversation.tools.ToolCallAccuracy` and
:class:`~ragmetrics.metrics.conversation.tools.ToolCallF1` compare the calls an agent made with the
calls expected of it (in order, and as multisets). The conversation-level metrics
(:mod:`~ragmetrics.metrics.conversation.session`; built-ins by name, ``CONVERSATION_METRICS``) judge
the whole conversation in one call each, every quote verified against the message it cites.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Loaded on first use, so a run of the claim metrics (which reads conversation turns through
# ``turns`` and ``tools``) does not import the conversation-level metrics before its first call.
_LAZY: dict[str, str] = {
    "ConversationJudgementMetric": "judged",
    "ConversationCompleteness": "session",
    "KnowledgeRetention": "session",
    "TaskCompletion": "session",
    "ToolCallAccuracy": "tools",
    "ToolCallF1": "tools",
    "json_equal": "tools",
    "ConversationClaims": "turn_claims",
    "TurnResult": "turn_claims",
    "evaluate_turns": "turn_claims",
    "share_claim_judges": "turn_claims",
    "DEFAULT_HISTORY_BUDGET_TOKENS": "turns",
    "Evidence": "turns",
    "EvidenceMap": "turns",
    "HistoryCut": "turns",
    "turn_evidence": "turns",
    "turn_sample": "turns",
}

# Spelled out (not built from _LAZY) so that linters see the TYPE_CHECKING imports below as re-exports.
__all__ = [
    "DEFAULT_HISTORY_BUDGET_TOKENS",
    "ConversationClaims",
    "ConversationCompleteness",
    "ConversationJudgementMetric",
    "Evidence",
    "EvidenceMap",
    "HistoryCut",
    "KnowledgeRetention",
    "TaskCompletion",
    "ToolCallAccuracy",
    "ToolCallF1",
    "TurnResult",
    "evaluate_turns",
    "json_equal",
    "share_claim_judges",
    "turn_evidence",
    "turn_sample",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from ragmetrics.metrics.conversation.judged import ConversationJudgementMetric
    from ragmetrics.metrics.conversation.session import (
        ConversationCompleteness,
        KnowledgeRetention,
        TaskCompletion,
    )
    from ragmetrics.metrics.conversation.tools import ToolCallAccuracy, ToolCallF1, json_equal
    from ragmetrics.metrics.conversation.turn_claims import (
        ConversationClaims,
        TurnResult,
        evaluate_turns,
        share_claim_judges,
    )
    from ragmetrics.metrics.conversation.turns import (
        DEFAULT_HISTORY_BUDGET_TOKENS,
        Evidence,
        EvidenceMap,
        HistoryCut,
        turn_evidence,
        turn_sample,
    )
