"""The conversation-level metrics: one judge call per conversation each, every quote verified.

:class:`KnowledgeRetention` (assistant turns that contradict or ignore what the user stated earlier),
:class:`ConversationCompleteness` (each request of the user and the message that answered it) and
:class:`TaskCompletion` (an agent's trajectory against the goal). Each sends the conversation as one
transcript (:mod:`ragmetrics.metrics.conversation.judgements`), checks every index and quote of the
reply against the message it names, re-asks once naming what failed, and scores only what checks out;
``details["judge_health"]`` counts the spans and quotes found as the claim metrics' does. The shared
shape (judge, result, ``*_sync`` twins) is
:class:`~ragmetrics.metrics.conversation.judged.ConversationJudgementMetric`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ragmetrics.errors import InvalidInputError
from ragmetrics.judge.offline.conversation import asks_something
from ragmetrics.metrics.claims.verification import Health
from ragmetrics.metrics.conversation.judged import (
    ConversationJudgementMetric,
    JudgementScore,
    not_reading,
    quoted,
)
from ragmetrics.metrics.conversation.judgements import quote_problem
from ragmetrics.metrics.conversation.schemas import (
    CompletenessJudgement,
    KnowledgeRetentionJudgement,
    TaskCompletionJudgement,
    completeness_model,
)
from ragmetrics.sample import Conversation

__all__ = ["ConversationCompleteness", "KnowledgeRetention", "TaskCompletion"]


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

    def _without_call(self, conversation: Conversation) -> JudgementScore | None:
        if any(t.question is not None and t.question.content.strip() for t in conversation.turns()):
            return None
        return JudgementScore(
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

    def _scored(self, value: Any, conversation: Conversation, left: tuple[str, ...]) -> JudgementScore:
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
            return not_reading(len(findings), "finding", "conversation", details, health)
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
                f"({quoted(first['claim'])} against {quoted(first['user_quote'])})"
                + (f" and {len(counted) - 1} more finding(s)." if len(counted) > 1 else ".")
            )
        if len(counted) < len(findings):
            reasoning += f" {len(findings) - len(counted)} finding(s) not found in the messages they cite."
        return JudgementScore(score=score, reasoning=reasoning, details=details, health=health)


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

    def _without_call(self, conversation: Conversation) -> JudgementScore | None:
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

    def _scored(self, value: Any, conversation: Conversation, left: tuple[str, ...]) -> JudgementScore:
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
            return not_reading(len(requests), "request", "user's messages", details, health)
        done = [r for r in counted if r["answered"]]
        unanswered = [r for r in counted if not r["answered"]]
        reasoning = f"{len(done)} of {len(counted)} request(s) of the user answered"
        if unanswered:
            reasoning += "; unanswered: " + ", ".join(
                f"{quoted(r['request'])} (message {r['message']})" for r in unanswered[:3]
            )
        reasoning += "."
        if len(counted) < len(requests):
            reasoning += f" {len(requests) - len(counted)} request(s) not found in the messages they cite."
        return JudgementScore(
            score=len(done) / len(counted),
            reasoning=reasoning,
            details={"requests": requests, "answered": len(done), "counted": len(counted)},
            health=health,
        )


_NOTHING_CHECKED = Health()


def _no_requests(
    why: str, requests: list[dict[str, Any]], health: Health = _NOTHING_CHECKED
) -> JudgementScore:
    return JudgementScore(
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

    def _without_call(self, conversation: Conversation) -> JudgementScore | None:
        if any(m.content.strip() and m.role in ("assistant", "tool") for m in conversation.messages):
            return None
        goal, source = self._goal_and_source(conversation)
        return JudgementScore(
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

    def _scored(self, value: Any, conversation: Conversation, left: tuple[str, ...]) -> JudgementScore:
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
            return JudgementScore(
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
            reasoning += f" Evidence: {quoted(found[0]['quote'])} (message {found[0]['message']})."
        if len(found) < len(evidence):
            reasoning += f" {len(evidence) - len(found)} quote(s) not found in the messages they cite."
        return JudgementScore(
            score=_VERDICT_SCORES[judged.verdict], reasoning=reasoning, details=details, health=health
        )
