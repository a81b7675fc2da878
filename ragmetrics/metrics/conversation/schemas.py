"""Response schemas of the conversation-level judgements: what the judge returns, checked with pydantic.

One schema per judgement (knowledge retention, conversation completeness, task completion), written
as the claim schemas are (:class:`~ragmetrics.metrics.claims.schemas.LeanSchema`: no titles or
descriptions, every property required). Indices name messages of the conversation as sent; whether
each index names a message of the right role and each quote is in that message is checked after the
reply (:mod:`ragmetrics.metrics.conversation.judgements`), and a reply that fails is re-asked once.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragmetrics.judge.schema import JudgeQuote, JudgeText
from ragmetrics.metrics.claims.schemas import LeanSchema

__all__ = [
    "CompletenessJudgement",
    "KnowledgeRetentionJudgement",
    "RetentionFinding",
    "TaskCompletionJudgement",
    "TaskEvidence",
    "UserRequest",
]


class RetentionFinding(LeanSchema):
    """One assistant message that contradicts or ignores what the user stated earlier."""

    message: int
    """Index of the assistant message."""
    claim: JudgeQuote
    """The conflicting part of that assistant message, copied from it."""
    user_message: int
    """Index of the earlier user message it conflicts with."""
    user_quote: JudgeQuote
    """What the user stated, copied from that user message."""
    kind: Literal["contradicts", "ignores"]
    """Whether the assistant says something incompatible, or goes on as if it had not been said."""
    reason: JudgeText = ""
    """Why, in a sentence."""


class KnowledgeRetentionJudgement(LeanSchema):
    """Every conflict between an assistant message and what the user stated before it."""

    findings: list[RetentionFinding] = Field(default_factory=list)


class UserRequest(LeanSchema):
    """One thing the user asked for, and the assistant message that answered it (if any)."""

    message: int
    """Index of the user message that asks it."""
    request: JudgeQuote
    """The request, copied from that user message."""
    answered_by: int | None
    """Index of a later assistant message that answers it; None: none does."""
    answer_quote: JudgeQuote = ""
    """The answering part of that assistant message, copied from it ("" when unanswered)."""
    reason: JudgeText = ""
    """Why, in a sentence."""


class CompletenessJudgement(LeanSchema):
    """Every request of the user, in order, with the message that answered it."""

    requests: list[UserRequest] = Field(default_factory=list)


class TaskEvidence(LeanSchema):
    """One passage of the trajectory quoted as evidence."""

    message: int
    """Index of an assistant or tool message."""
    quote: JudgeQuote
    """A passage copied from that message."""


class TaskCompletionJudgement(LeanSchema):
    """Whether the assistant achieved the user's goal, with evidence from the trajectory."""

    verdict: Literal["completed", "partially", "not"]
    evidence: list[TaskEvidence] = Field(default_factory=list)
    reason: JudgeText = ""
