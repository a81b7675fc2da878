"""Checking what the judge says against the text it was given: spans, quotes, one targeted re-ask.

A claim's ``span`` must be found in the text it was split from, and a ``supported`` or
``contradicted`` verdict's quote in the context it cites, both with
:func:`~ragmetrics.metrics.claims.engine.quote_found`. A reply that fails gets ONE re-ask naming what
was not found (counted in ``Usage.calls`` and ``Usage.reasks``); the reply with fewer failures is
kept, and what still fails is recorded (:class:`Checked`), never guessed or dropped. A judge that
reads its inputs passes on its first reply, at no extra call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from ragmetrics.errors import JudgeError
from ragmetrics.judge import Judge, JudgeReply, JudgeRequest, Message
from ragmetrics.metrics.claims.engine import quote_found
from ragmetrics.metrics.claims.schemas import ClaimExtraction, ClaimVerification
from ragmetrics.prompting import load_prompt, numbered_blocks, render
from ragmetrics.score import Usage, spent_by

__all__ = [
    "REASK_VERSION",
    "Checked",
    "Health",
    "as_reask",
    "checked",
    "quote_problems",
    "reask_request",
    "span_problems",
]

REASK_VERSION = "claims/reask.v1"
"""The targeted re-ask that follows a reply whose spans or quotes were not found."""

_T = TypeVar("_T", bound=BaseModel)


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit // 2 - 2] + " ... " + text[-(limit // 2 - 3) :]


def span_problems(extraction: ClaimExtraction, text: str, what: str) -> list[str]:
    """One line per claim whose span is not found in ``text`` (``what``: ``answer`` or ``reference``)."""
    return [
        f"claim {i} {_clip(c.text)!r}: its span {_clip(c.span)!r} is not in the {what}"
        for i, c in enumerate(extraction.claims)
        if not quote_found(c.span, text)
    ]


def quote_problems(result: ClaimVerification, chunk: Sequence[str]) -> list[str]:
    """One line per supported / contradicted verdict whose quote is not in the context it cites.

    ``chunk``: the contexts as the judge saw them in this request (its context indices point here).
    """
    out = []
    for v in result.verdicts:
        if v.verdict == "not_found":
            continue
        if v.context is None or not 0 <= v.context < len(chunk):
            out.append(f"claim {v.claim}: the {v.verdict} verdict cites no context")
        elif not quote_found(v.evidence, chunk[v.context]):
            out.append(f"claim {v.claim}: the quote {_clip(v.evidence)!r} is not in context {v.context}")
    return out


def reask_request(
    request: JudgeRequest[_T], value: BaseModel, problems: Sequence[str], *, prompt_id: str = REASK_VERSION
) -> JudgeRequest[_T]:
    """``request`` again, followed by the judge's reply and a message naming what was not found.

    ``prompt_id``: the re-ask prompt (a ``$problems`` placeholder); the claim metrics' by default.
    """
    prompt = load_prompt(prompt_id)
    reply = json.dumps(value.model_dump(mode="json", exclude={"repairs"}), ensure_ascii=False)
    return JudgeRequest(
        task=request.task,
        prompts=(*request.prompts, prompt),
        messages=(
            *request.messages,
            Message(role="assistant", content=reply),
            Message(role="user", content=render(prompt, problems=numbered_blocks("item", list(problems)))),
        ),
        response_model=request.response_model,
        variables=request.variables,
        context=request.context,
        version=request.version,
        max_tokens=request.max_tokens,
        repeat=request.repeat,
    )


def as_reask(usage: Usage) -> Usage:
    """A re-ask's usage as the re-ask of the request before it: its sends are re-asks, not requests."""
    sent = usage.calls - usage.reasks - usage.retries
    data: dict[str, Any] = usage.model_dump()
    data.update(reasks=usage.reasks + sent, succeeded=0)
    return Usage(**data)


@dataclass(frozen=True, slots=True)
class Checked:
    """A reply after its check (and at most one re-ask): what is kept, and what still fails."""

    reply: JudgeReply[Any]
    problems: tuple[str, ...]
    """What is still not found in the kept reply."""
    reasked: bool
    usage: Usage
    """What the re-ask cost (zero without one); the kept reply's own usage is not in here."""


async def checked(
    judge: Judge,
    request: JudgeRequest[_T],
    reply: JudgeReply[_T],
    problems_of: Callable[[Any], list[str]],
    *,
    reask_prompt: str = REASK_VERSION,
) -> Checked:
    """Check ``reply``; if anything is not found, re-ask once and keep the reply with fewer failures.

    A re-ask that fails (the judge errs, or never validates) keeps the first reply; its cost is kept.
    ``reask_prompt``: the re-ask prompt's id (the conversation judgements have their own).
    """
    problems = problems_of(reply.value)
    if not problems:
        return Checked(reply, (), False, Usage())
    try:
        again = await judge.complete(reask_request(request, reply.value, problems, prompt_id=reask_prompt))
    except JudgeError as exc:
        return Checked(reply, tuple(problems), True, as_reask(spent_by(exc)))
    left = problems_of(again.value)
    if len(left) <= len(problems):
        kept = JudgeReply(
            value=again.value, usage=reply.usage, latency_ms=reply.latency_ms, cached=reply.cached
        )
        return Checked(kept, tuple(left), True, as_reask(again.usage))
    return Checked(reply, tuple(problems), True, as_reask(again.usage))


@dataclass(frozen=True, slots=True)
class Health:
    """How far the judge's replies on one sample check out against the texts it was given."""

    spans: int = 0
    """Claims extracted (the answer's and, for a joint task, the reference's)."""
    spans_found: int = 0
    """Of them, claims whose span was found in their text."""
    quotes: int = 0
    """Supported and contradicted verdicts (each cites a context and quotes it)."""
    quotes_found: int = 0
    """Of them, verdicts whose quote was found in the cited context."""
    reasks: int = 0
    """Verification re-asks made (one at most per judge request)."""
    not_found: tuple[str, ...] = ()
    """What was still not found after the re-ask, one line each."""

    def __add__(self, other: Health) -> Health:
        return Health(
            self.spans + other.spans,
            self.spans_found + other.spans_found,
            self.quotes + other.quotes,
            self.quotes_found + other.quotes_found,
            self.reasks + other.reasks,
            self.not_found + other.not_found,
        )

    def as_details(self) -> dict[str, Any]:
        """``details["judge_health"]``: the counts, the shares (None when nothing was checked)."""
        return {
            "spans": self.spans,
            "spans_found": self.spans_found,
            "span_rate": self.spans_found / self.spans if self.spans else None,
            "quotes": self.quotes,
            "quotes_found": self.quotes_found,
            "quote_rate": self.quotes_found / self.quotes if self.quotes else None,
            "reasks": self.reasks,
            "not_found": list(self.not_found),
        }
