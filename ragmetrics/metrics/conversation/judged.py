"""The shape every conversation-level metric shares: one checked judge request per conversation.

:class:`ConversationJudgementMetric` holds the judge (as the claim metrics do), builds the one
request (:func:`~ragmetrics.metrics.conversation.judgements.judgement_request`), checks every index
and quote of the reply against the messages, re-asks once naming what failed
(:func:`~ragmetrics.metrics.claims.verification.checked`), and turns a subclass's
:class:`JudgementScore` into the result, with ``details["judge_health"]`` and the ``*_sync`` twins.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from ragmetrics import __version__
from ragmetrics._aio import run_sync
from ragmetrics._check import check_field, check_int
from ragmetrics.errors import InvalidInputError, JudgeError, NoScoreError
from ragmetrics.judge import Judge, JudgeRequest
from ragmetrics.metrics._judged import JudgeHolder, judged_result
from ragmetrics.metrics.base import Needs, check_threshold
from ragmetrics.metrics.claims.verification import Health, checked
from ragmetrics.metrics.conversation.judgements import (
    REASK_VERSION,
    SYSTEM_VERSION,
    Task,
    judgement_request,
)
from ragmetrics.prompting import load_prompt
from ragmetrics.sample import Conversation, Sample
from ragmetrics.score import MetricResult, Status, Usage, failure_from
from ragmetrics.text import estimate_tokens

__all__ = [
    "DEFAULT_MAX_CONVERSATION_TOKENS",
    "ConversationJudgementMetric",
    "JudgementScore",
    "not_reading",
    "quoted",
]

DEFAULT_MAX_CONVERSATION_TOKENS = 100_000
"""Estimated prompt tokens of one conversation-level request; a longer conversation is ``invalid_input``."""
_NEEDS = Needs(answer=False, judge=True, shares_judge=True, conversation=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgementScore:
    """A judgement's score on one conversation, before the base adds the pass mark, usage and health."""

    score: float | None
    reasoning: str = ""
    status: Status = "ok"
    message: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    health: Health = Health()


def quoted(text: str, limit: int = 60) -> str:
    """``text`` quoted for a reasoning line, cut to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


class ConversationJudgementMetric(JudgeHolder):
    """Base of the conversation-level metrics: one request per conversation, checked, re-asked once."""

    name: ClassVar[str] = "conversation_judgement"
    """Snake_case name used in reports, config files and the CLI."""
    task: ClassVar[Task] = "retention"
    """Which judgement: the prompt ``conversation/<task>.v1`` and the judge task ``conversation.<task>``."""
    response_model: ClassVar[type[BaseModel]] = BaseModel

    def __init__(
        self,
        llm: str | Judge | Any | None = None,
        *,
        threshold: float | None = None,
        cache: bool | str | Path = True,
        max_conversation_tokens: int = DEFAULT_MAX_CONVERSATION_TOKENS,
        **judge_options: Any,
    ) -> None:
        """Configure the metric.

        Args:
            llm: A judge spec (``openai:gpt-4o-mini``, ``offline``...), an async SDK client, a Judge
                object, or None for the default judge; as for the claim metrics.
            threshold: Optional pass mark in [0, 1]; ``passed`` is ``score >= threshold``.
            cache: True for the default disk cache, a folder path, or False for none.
            max_conversation_tokens: Estimated tokens of the one request; a longer conversation gets
                ``invalid_input`` (nothing is cut: what the user said first matters as much as the rest).
            **judge_options: Judge settings (temperature, timeout_s...), ``api_key``, ``base_url``, ``model``.

        Raises:
            ConfigError: Bad threshold or token limit, or a malformed spec (checked at once).
        """
        self.threshold = check_threshold(threshold, type(self).__name__)
        self.max_conversation_tokens = check_int(
            max_conversation_tokens, "max_conversation_tokens", type(self).__name__, minimum=256
        )
        self._init_judge(type(self).__name__, llm, cache, judge_options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(llm={self._judge_spec()!r}, threshold={self.threshold})"

    @property
    def needs(self) -> Needs:
        """A whole conversation, and a judge the pipeline may share with the claim metrics."""
        return _NEEDS

    async def evaluate_sample(
        self, sample: Sample, *, repeat: int = 0, conversation: Conversation | None = None
    ) -> MetricResult:
        """Score the conversation of a pipeline's conversation record (``sample`` stands for it).

        Raises:
            InvalidInputError: No conversation is given (the row is a single answer).
        """
        if conversation is None:
            raise InvalidInputError(
                "messages",
                "a conversation (a record with messages)",
                row=sample.id,
                detail=f"{self.name} scores whole conversations, and this row is a single answer",
            )
        return await self.evaluate(conversation, repeat=repeat)

    # -- what a subclass defines --------------------------------------------------------------------
    def _without_call(self, conversation: Conversation) -> JudgementScore | None:
        """The result when there is nothing to ask the judge (no call is made), else None."""
        return None

    def _goal(self, conversation: Conversation) -> str | None:
        return None

    def _response_model(self, conversation: Conversation) -> type[BaseModel]:
        """The response schema of the request on ``conversation``."""
        return self.response_model

    def _problems(self, value: Any, conversation: Conversation) -> list[str]:
        """What in the reply does not check out (an index of the wrong message, a quote not found)."""
        raise NotImplementedError

    def _scored(self, value: Any, conversation: Conversation, left: tuple[str, ...]) -> JudgementScore:
        """The score from the kept reply; ``left``: its problems after the re-ask."""
        raise NotImplementedError

    # -- the calls ------------------------------------------------------------------------------------
    def request(self, conversation: Conversation, repeat: int = 0) -> JudgeRequest[Any] | None:
        """The one request this metric makes on ``conversation``; None when no call is needed.

        Raises:
            InvalidInputError: The conversation has no goal to judge against (task completion), or its
                request is over ``max_conversation_tokens``.
        """
        if self._without_call(conversation) is not None:
            return None
        model = self._response_model(conversation)
        request = judgement_request(
            self.task, conversation, model, goal=self._goal(conversation), repeat=repeat
        )
        tokens = sum(estimate_tokens(m.content) for m in request.messages)
        if tokens > self.max_conversation_tokens:
            raise InvalidInputError(
                "messages",
                f"at most about {self.max_conversation_tokens:,} tokens for {self.name}",
                row=conversation.id,
                detail=f"the transcript is about {tokens:,} tokens; raise max_conversation_tokens or "
                "score a shorter part of the conversation",
            )
        return request

    async def evaluate(self, conversation: Conversation, *, repeat: int = 0) -> MetricResult:
        """Score one conversation: one judge call (none when there is nothing to judge).

        At most one re-ask follows, when the reply's indices or quotes do not check out. Judge
        failures and bad input become a result with a status, never an exception.

        Raises:
            InvalidInputError: ``conversation`` is not a :class:`~ragmetrics.sample.Conversation`.
        """
        started = time.perf_counter()
        check_field(conversation, "conversation", Conversation, "a Conversation", detail=self.name)
        judge = self.judge
        try:
            request = self.request(conversation, repeat)
        except InvalidInputError as exc:
            return self._result(JudgementScore(score=None, status="invalid_input", message=str(exc)), started)
        if request is None:
            done = self._without_call(conversation)
            assert done is not None  # noqa: S101 - request() returns None only then
            return self._result(done, started)
        try:
            reply = await judge.complete(request)
        except JudgeError as exc:
            fields = failure_from(exc, metric=self.name).result_fields()
            failed = JudgementScore(score=None, status=fields["status"], message=fields["message"])
            return self._result(failed, started, usage=fields["usage"])
        kept = await checked(
            judge, request, reply, lambda v: self._problems(v, conversation), reask_prompt=REASK_VERSION
        )
        scored = self._scored(kept.reply.value, conversation, kept.problems)
        health = Health(
            spans=scored.health.spans,
            spans_found=scored.health.spans_found,
            quotes=scored.health.quotes,
            quotes_found=scored.health.quotes_found,
            reasks=int(kept.reasked),
            not_found=kept.problems,
        )
        scored = JudgementScore(
            score=scored.score,
            reasoning=scored.reasoning,
            status=scored.status,
            message=scored.message,
            details={**scored.details, "judge_health": health.as_details()},
        )
        return self._result(scored, started, usage=reply.usage + kept.usage)

    async def score(self, conversation: Conversation) -> float:
        """Score one conversation: a float in [0, 1].

        Raises:
            InvalidInputError: ``conversation`` is not a Conversation.
            NoScoreError: No score (bad input, a judge failure, a reply that does not check out).
        """
        result = await self.evaluate(conversation)
        if result.score is None:
            raise NoScoreError(self.name, result.status, result.message or "")
        return result.score

    def evaluate_sync(self, conversation: Conversation) -> MetricResult:
        """Blocking twin of :meth:`evaluate` (works inside a running event loop too)."""
        return run_sync(self._closing(self.evaluate(conversation)))

    def score_sync(self, conversation: Conversation) -> float:
        """Blocking twin of :meth:`score`."""
        return run_sync(self._closing(self.score(conversation)))

    # -- the one place a judgement becomes a result -----------------------------------------------------
    def _signature(self) -> str:
        prompts = [load_prompt(p) for p in (SYSTEM_VERSION, f"conversation/{self.task}.v1", REASK_VERSION)]
        info = self.judge.info
        return (
            f"{self.name}|prompts={','.join(p.short for p in prompts)}|judge={info.spec}"
            f"|temperature={info.temperature_text}|ragmetrics={__version__}"
        )

    def _result(self, scored: JudgementScore, started: float, *, usage: Usage | None = None) -> MetricResult:
        return judged_result(self, scored, started, usage)


def not_reading(n: int, what: str, found: str, details: dict[str, Any], health: Health) -> JudgementScore:
    """No score: every item the judge gave cites a message that does not hold its quote."""
    return JudgementScore(
        score=None,
        status="judge_output_invalid",
        message=(
            f"none of the {n} {what}{'s' if n != 1 else ''} the judge gave checks out against the messages "
            f"it cites, even after a re-ask naming them: the judge is not reading the {found}"
        ),
        details=details,
        health=health,
    )
