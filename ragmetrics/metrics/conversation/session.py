"""The conversation-level metrics: one judge call per conversation each, every quote verified.

:class:`KnowledgeRetention` (assistant turns that contradict or ignore what the user stated earlier),
:class:`ConversationCompleteness` (each request of the user and the message that answered it) and
:class:`TaskCompletion` (an agent's trajectory against the goal). Each sends the conversation as one
transcript (:mod:`ragmetrics.metrics.conversation.judgements`), checks every index and quote of the
reply against the message it names, re-asks once naming what failed, and scores only what checks out;
``details["judge_health"]`` counts the spans and quotes found as the claim metrics' does. The shared
shape (judge, result, ``*_sync`` twins) is :class:`ConversationJudgementMetric`.
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
from ragmetrics.judge.offline.conversation import asks_something
from ragmetrics.metrics._judged import JudgeHolder
from ragmetrics.metrics.base import check_threshold, passed_at
from ragmetrics.metrics.claims.verification import Health, checked
from ragmetrics.metrics.conversation.judgements import (
    REASK_VERSION,
    SYSTEM_VERSION,
    Task,
    judgement_request,
    quote_problem,
)
from ragmetrics.metrics.conversation.schemas import (
    CompletenessJudgement,
    KnowledgeRetentionJudgement,
    TaskCompletionJudgement,
    completeness_model,
)
from ragmetrics.prompting import load_prompt
from ragmetrics.sample import Conversation
from ragmetrics.score import MetricResult, Status, Usage, failure_from
from ragmetrics.text import estimate_tokens

__all__ = [
    "DEFAULT_MAX_CONVERSATION_TOKENS",
    "ConversationCompleteness",
    "ConversationJudgementMetric",
    "KnowledgeRetention",
    "TaskCompletion",
]

DEFAULT_MAX_CONVERSATION_TOKENS = 100_000
"""Estimated prompt tokens of one conversation-level request; a longer conversation is ``invalid_input``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Scored:
    """A judgement's score on one conversation, before the base adds the pass mark, usage and health."""

    score: float | None
    reasoning: str = ""
    status: Status = "ok"
    message: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    health: Health = Health()


def _quoted(text: str, limit: int = 60) -> str:
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

    # -- what a subclass defines --------------------------------------------------------------------
    def _without_call(self, conversation: Conversation) -> _Scored | None:
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

    def _scored(self, value: Any, conversation: Conversation, left: tuple[str, ...]) -> _Scored:
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
            return self._result(_Scored(score=None, status="invalid_input", message=str(exc)), started)
        if request is None:
            done = self._without_call(conversation)
            assert done is not None  # noqa: S101 - request() returns None only then
            return self._result(done, started)
        try:
            reply = await judge.complete(request)
        except JudgeError as exc:
            fields = failure_from(exc, metric=self.name).result_fields()
            failed = _Scored(score=None, status=fields["status"], message=fields["message"])
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
        scored = _Scored(
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

    def _result(self, scored: _Scored, started: float, *, usage: Usage | None = None) -> MetricResult:
        info = self.judge.info
        reasoning, score = scored.reasoning, scored.score
        if info.heuristic and reasoning:
            reasoning = f"[offline heuristic judge] {reasoning}"
        if scored.status != "ok" and not reasoning:
            reasoning = f"No score: {scored.message}" if score is None else (scored.message or "")
        return MetricResult(
            name=self.name,
            score=score,
            passed=passed_at(score, self.threshold),
            threshold=self.threshold,
            status=scored.status,
            message=scored.message,
            reasoning=reasoning,
            details=scored.details,
            usage=usage or Usage(),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            judge=info,
            signature=self._signature(),
        )


def _not_reading(n: int, what: str, found: str, details: dict[str, Any], health: Health) -> _Scored:
    """No score: every item the judge gave cites a message that does not hold its quote."""
    return _Scored(
        score=None,
        status="judge_output_invalid",
        message=(
            f"none of the {n} {what}{'s' if n != 1 else ''} the judge gave checks out against the messages "
            f"it cites, even after a re-ask naming them: the judge is not reading the {found}"
        ),
        details=details,
        health=health,
    )


# -- knowledge retention --------------------------------------------------------------------------------


class KnowledgeRetention(ConversationJudgementMetric):
    """Share of assistant turns that keep to what the user stated earlier.

    One judge call per conversation lists the assistant messages that contradict or ignore an earlier
    user statement: per finding the assistant message (the conflicting claim quoted from it) and the
    earlier user message (the statement quoted from it). A finding counts only when both quotes are
    found in the messages they cite (after at most one re-ask); the others are reported, not counted.
    Score: the assistant turns (messages with text) with no counted finding, over all of them. No
    assistant turn after a user message: 1.0 with status ``no_claims``, no call. Every finding cited
    but none found: no score (``judge_output_invalid``).
    """

    name = "knowledge_retention"
    task = "retention"
    response_model = KnowledgeRetentionJudgement

    def _without_call(self, conversation: Conversation) -> _Scored | None:
        if any(t.question is not None and t.question.content.strip() for t in conversation.turns()):
            return None
        return _Scored(
            score=1.0,
            status="no_claims",
            message="no assistant turn follows a user message",
            reasoning="No assistant turn follows a user message, so no turn can go against what the user "
            "said.",
            details={"turns": len(conversation.turns()), "findings": []},
        )

    def _checks(self, value: KnowledgeRetentionJudgement, c: Conversation) -> list[tuple[str | None, ...]]:
        return [
            (
                quote_problem(c, f.message, f.claim, {"assistant"}, f"finding {k}'s claim"),
                quote_problem(
                    c, f.user_message, f.user_quote, {"user"}, f"finding {k}'s user quote", before=f.message
                ),
            )
            for k, f in enumerate(value.findings)
        ]

    def _problems(self, value: Any, conversation: Conversation) -> list[str]:
        return [p for pair in self._checks(value, conversation) for p in pair if p is not None]

    def _scored(self, value: Any, conversation: Conversation, left: tuple[str, ...]) -> _Scored:
        judged: KnowledgeRetentionJudgement = value
        checks = self._checks(judged, conversation)
        turns = [t.index for t in conversation.turns()]
        findings: list[dict[str, Any]] = []
        for f, (claim_problem, user_problem) in zip(judged.findings, checks, strict=True):
            findings.append(
                {
                    "message": f.message,
                    "claim": f.claim,
                    "user_message": f.user_message,
                    "user_quote": f.user_quote,
                    "kind": f.kind,
                    "reason": f.reason,
                    "verified": claim_problem is None and user_problem is None,
                    "problems": [p for p in (claim_problem, user_problem) if p is not None],
                }
            )
        health = Health(
            spans=len(checks),
            spans_found=sum(c is None for c, _ in checks),
            quotes=len(checks),
            quotes_found=sum(u is None for _, u in checks),
        )
        counted = [f for f in findings if f["verified"]]
        if findings and not counted:
            details = {"turns": len(turns), "conflicted": [], "findings": findings}
            return _not_reading(len(findings), "finding", "conversation", details, health)
        conflicted = sorted({f["message"] for f in counted})
        kept = len(turns) - len(conflicted)
        score = kept / len(turns) if turns else 1.0
        details = {"turns": len(turns), "conflicted": conflicted, "findings": findings}
        if not counted:
            reasoning = f"All {len(turns)} assistant turn(s) keep to what the user stated."
        else:
            first = counted[0]
            reasoning = (
                f"{kept} of {len(turns)} assistant turn(s) keep to what the user stated; message "
                f"{first['message']} {first['kind']} message {first['user_message']} "
                f"({_quoted(first['claim'])} against {_quoted(first['user_quote'])})"
                + (f" and {len(counted) - 1} more finding(s)." if len(counted) > 1 else ".")
            )
        if len(counted) < len(findings):
            reasoning += f" {len(findings) - len(counted)} finding(s) not found in the messages they cite."
        return _Scored(score=score, reasoning=reasoning, details=details, health=health)


# -- conversation completeness ------------------------------------------------------------------------


class ConversationCompleteness(ConversationJudgementMetric):
    """Share of the user's requests that an assistant message answered.

    One judge call per conversation lists each thing the user asked for (quoted from the user message
    that asks it) and the later assistant message that answered it (quoted from it), or none. A request
    counts only when its quote is found in its user message; it is answered only when the answer's
    quote is found in a later assistant message (after at most one re-ask). Score: answered requests
    over counted requests. No request (or no user text): 1.0 with status ``no_claims`` and a reason;
    but when a user message plainly asks something (a sentence ending in ``?``) the schema asks for at
    least one request, so an empty reply is a judge failure, not ``no_claims``. Requests cited but none
    found: no score (``judge_output_invalid``).
    """

    name = "conversation_completeness"
    task = "completeness"
    response_model = CompletenessJudgement

    def _without_call(self, conversation: Conversation) -> _Scored | None:
        if any(m.role == "user" and m.content.strip() for m in conversation.messages):
            return None
        return _no_requests("the conversation has no user message with text", [])

    def _response_model(self, conversation: Conversation) -> type[BaseModel]:
        asks = any(m.role == "user" and asks_something(m.content) for m in conversation.messages)
        return completeness_model(1 if asks else 0)

    def _checks(self, value: CompletenessJudgement, c: Conversation) -> list[tuple[str | None, str | None]]:
        out: list[tuple[str | None, str | None]] = []
        for k, r in enumerate(value.requests):
            asked = quote_problem(c, r.message, r.request, {"user"}, f"request {k}")
            answered = None
            if r.answered_by is not None:
                answered = quote_problem(
                    c, r.answered_by, r.answer_quote, {"assistant"}, f"request {k}'s answer", after=r.message
                )
            out.append((asked, answered))
        return out

    def _problems(self, value: Any, conversation: Conversation) -> list[str]:
        return [p for pair in self._checks(value, conversation) for p in pair if p is not None]

    def _scored(self, value: Any, conversation: Conversation, left: tuple[str, ...]) -> _Scored:
        judged: CompletenessJudgement = value
        checks = self._checks(judged, conversation)
        requests: list[dict[str, Any]] = []
        for r, (asked, answered) in zip(judged.requests, checks, strict=True):
            requests.append(
                {
                    "message": r.message,
                    "request": r.request,
                    "answered_by": r.answered_by,
                    "answer_quote": r.answer_quote,
                    "reason": r.reason,
                    "verified": asked is None,
                    "answered": r.answered_by is not None and answered is None,
                    "problems": [p for p in (asked, answered) if p is not None],
                }
            )
        claimed = [
            (r, a) for r, (_, a) in zip(judged.requests, checks, strict=True) if r.answered_by is not None
        ]
        health = Health(
            spans=len(checks),
            spans_found=sum(a is None for a, _ in checks),
            quotes=len(claimed),
            quotes_found=sum(a is None for _, a in claimed),
        )
        if not requests:
            return _no_requests("the judge found no request of the user in the conversation", [], health)
        counted = [r for r in requests if r["verified"]]
        if not counted:
            details = {"requests": requests, "answered": 0, "counted": 0}
            return _not_reading(len(requests), "request", "user's messages", details, health)
        done = [r for r in counted if r["answered"]]
        unanswered = [r for r in counted if not r["answered"]]
        reasoning = f"{len(done)} of {len(counted)} request(s) of the user answered"
        if unanswered:
            reasoning += "; unanswered: " + ", ".join(
                f"{_quoted(r['request'])} (message {r['message']})" for r in unanswered[:3]
            )
        reasoning += "."
        if len(counted) < len(requests):
            reasoning += f" {len(requests) - len(counted)} request(s) not found in the messages they cite."
        return _Scored(
            score=len(done) / len(counted),
            reasoning=reasoning,
            details={"requests": requests, "answered": len(done), "counted": len(counted)},
            health=health,
        )


_NOTHING_CHECKED = Health()


def _no_requests(why: str, requests: list[dict[str, Any]], health: Health = _NOTHING_CHECKED) -> _Scored:
    return _Scored(
        score=1.0,
        status="no_claims",
        message=why,
        reasoning=f"No request to answer ({why}), so none is left unanswered.",
        details={"requests": requests, "answered": 0, "counted": 0},
        health=health,
    )


# -- task completion --------------------------------------------------------------------------------------

_VERDICT_SCORES = {"completed": 1.0, "partially": 0.5, "not": 0.0}
_VERDICT_WORDS = {"completed": "achieved", "partially": "partially achieved", "not": "not achieved"}


class TaskCompletion(ConversationJudgementMetric):
    """Whether an agent achieved the user's goal: 1 completed, 0.5 partially, 0 not.

    The goal is the conversation's ``goal`` when given, else the first user message. One judge call
    per conversation returns the verdict with evidence quoted from the trajectory (assistant messages
    and tool results), each quote checked against the message it cites. A reply whose quotes are not
    found is re-asked once; a ``completed`` or ``partially`` verdict still left with no quote found is
    no score (``judge_output_invalid``): a success the trajectory does not show is not scored. Quotes not
    found beside found ones are reported, not counted. A conversation with no assistant text and no
    tool result scores 0 with no call.
    """

    name = "task_completion"
    task = "task"
    response_model = TaskCompletionJudgement

    def _goal_and_source(self, conversation: Conversation) -> tuple[str, str]:
        if conversation.goal is not None and conversation.goal.strip():
            return conversation.goal, "goal"
        for i, m in enumerate(conversation.messages):
            if m.role == "user" and m.content.strip():
                return m.content, f"messages[{i}]"
        raise InvalidInputError(
            "goal",
            "a non-empty string when the conversation has no user message with text",
            row=conversation.id,
            detail="task_completion judges the trajectory against the goal, else the first user message",
        )

    def _goal(self, conversation: Conversation) -> str | None:
        return self._goal_and_source(conversation)[0]

    def _without_call(self, conversation: Conversation) -> _Scored | None:
        if any(m.content.strip() and m.role in ("assistant", "tool") for m in conversation.messages):
            return None
        goal, source = self._goal_and_source(conversation)
        return _Scored(
            score=0.0,
            reasoning="The assistant never answered and no tool returned anything: the goal is not achieved.",
            details={"verdict": "not", "goal": goal, "goal_source": source, "evidence": []},
        )

    def _checks(self, value: TaskCompletionJudgement, c: Conversation) -> list[str | None]:
        return [
            quote_problem(c, e.message, e.quote, {"assistant", "tool"}, f"evidence {k}")
            for k, e in enumerate(value.evidence)
        ]

    def _problems(self, value: Any, conversation: Conversation) -> list[str]:
        judged: TaskCompletionJudgement = value
        problems = [p for p in self._checks(judged, conversation) if p is not None]
        if judged.verdict != "not" and not judged.evidence:
            problems.append(
                f"the '{judged.verdict}' verdict quotes no evidence: quote the messages that show it"
            )
        return problems

    def _scored(self, value: Any, conversation: Conversation, left: tuple[str, ...]) -> _Scored:
        judged: TaskCompletionJudgement = value
        goal, source = self._goal_and_source(conversation)
        checks = self._checks(judged, conversation)
        evidence: list[dict[str, Any]] = [
            {"message": e.message, "quote": e.quote, "verified": p is None, "problem": p}
            for e, p in zip(judged.evidence, checks, strict=True)
        ]
        health = Health(quotes=len(checks), quotes_found=sum(p is None for p in checks))
        details = {"verdict": judged.verdict, "goal": goal, "goal_source": source, "evidence": evidence}
        found = [e for e in evidence if e["verified"]]
        if judged.verdict != "not" and not found:
            return _Scored(
                score=None,
                status="judge_output_invalid",
                message=(
                    f"the judge's '{judged.verdict}' verdict quotes nothing found in the trajectory, even "
                    "after a re-ask naming its quotes: a success the messages do not show is not scored"
                ),
                details=details,
                health=health,
            )
        where = "the goal" if source == "goal" else f"the goal ({source})"
        reasoning = f"The judge finds {where} {_VERDICT_WORDS[judged.verdict]}"
        reasoning += f": {judged.reason}" if judged.reason else "."
        if found:
            reasoning += f" Evidence: {_quoted(found[0]['quote'])} (message {found[0]['message']})."
        if len(found) < len(evidence):
            reasoning += f" {len(evidence) - len(found)} quote(s) not found in the messages they cite."
        return _Scored(
            score=_VERDICT_SCORES[judged.verdict], reasoning=reasoning, details=details, health=health
        )
