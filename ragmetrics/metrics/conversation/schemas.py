"""Response schemas of the conversation-level judgements: what the judge returns, checked with pydantic.

One schema per judgement (knowledge retention, conversation completeness, task completion), written
as the claim schemas are (:class:`~ragmetrics.metrics.claims.schemas.LeanSchema`: no titles or
descriptions, every property required). Indices name messages of the conversation as sent; whether
each index names a message of the right role and each quote is in that message is checked after the
reply (:mod:`ragmetrics.metrics.conversation.judgements`), and a reply that fails is re-asked once.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from ragmetrics.judge.schema import JudgeQuote, JudgeText
from ragmetrics.metrics.claims.schemas import LeanSchema

__all__ = [
    "CompletenessJudgement",
    "KnowledgeRetentionJudgement",
    "RetentionFinding",
    "TaskCompletionJudgement",
    "TaskEvidence",
    "UserRequest",
    "completeness_model",
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

    _min_requests: ClassVar[int] = 0
    """Requests the reply must hold (1 when a user message plainly asks something)."""

    requests: list[UserRequest] = Field(default_factory=list)

    @classmethod
    def _contract(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if cls._min_requests:
            schema["properties"]["requests"]["minItems"] = cls._min_requests
        return schema

    @model_validator(mode="after")
    def _enough_requests(self) -> CompletenessJudgement:
        if len(self.requests) < type(self)._min_requests:
            raise ValueError("no requests: the user asks something, so list each thing the user asks for")
        return self


@functools.lru_cache(maxsize=4)
def completeness_model(min_requests: int) -> type[CompletenessJudgement]:
    """The completeness schema for a conversation in which at least ``min_requests`` requests must be found.

    A conversation whose user plainly asks something (a sentence ending in ``?``) must not come back
    with no request: an empty list for it is a judge failure, not ``no_claims``.
    """
    if min_requests <= 0:
        return CompletenessJudgement
    return type(
        "CompletenessJudgement",
        (CompletenessJudgement,),
        {"_shape": (min_requests,), "_min_requests": min_requests},
    )


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
