"""Result records: what a metric returns, with the evidence behind every score, and failure as data.

A score is a float in [0, 1] or ``None``; when it is ``None`` the ``status`` and ``message`` say why.
Nothing here is ever NaN. Wherever ragmetrics keeps going after something raised (a bad row, a metric
or judge that fails, a sample that times out or is skipped for the budget, an eval case that raises),
:func:`failure_from` turns the exception into the one failure record, :class:`ErrorRecord`; a metric
result, an eval case result and a suite case take their fields from it. The two run-level errors only
a runner raises, :class:`SampleTimeoutError` and :class:`BudgetExceededError`, are defined here so the
status table is in one place.
"""

from __future__ import annotations

import asyncio
import math
import traceback as tb
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragmetrics.errors import (
    STATUSES,
    InvalidInputError,
    JudgeError,
    NoScoreError,
    RagMetricsError,
    Status,
    shorten,
)

__all__ = [
    "STATUSES",
    "BudgetExceededError",
    "ClaimRecord",
    "ErrorRecord",
    "JudgeInfo",
    "MetricResult",
    "SampleTimeoutError",
    "Status",
    "Usage",
    "Verdict",
    "failure_from",
    "format_traceback",
    "spent_by",
]

Verdict = Literal["supported", "contradicted", "not_found"]


class Usage(BaseModel):
    """LLM usage behind one result (or summed over many).

    ``calls`` counts every HTTP attempt, whatever came of it: ``calls - reasks - retries`` requests
    were sent for the first time (``succeeded`` of them got a usable reply in the end, ``failed`` never
    did), ``reasks`` re-sent after an invalid reply, ``retries`` re-sent after a transient failure or a
    truncated reply; so ``calls = succeeded + failed + reasks + retries``. Tokens and cost are what
    the provider reported for the attempts it answered, including replies that were thrown away;
    ``unmetered`` attempts (timed out, refused, an error status) have no token count and so no cost
    here; ``estimated`` attempts (answered without a usage or with an implausible one) count
    ragmetrics' own token estimate instead of the provider's figure.
    """

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    """HTTP requests actually sent (first attempts, re-asks and retries)."""
    succeeded: int = 0
    """Requests that ended with a usable reply (at most one per request, whatever it took)."""
    reasks: int = 0
    """Of ``calls``: requests re-sent because the previous reply failed validation."""
    retries: int = 0
    """Of ``calls``: requests re-sent after a 429, 5xx, timeout, dropped connection or truncated reply."""
    unmetered: int = 0
    """Of ``calls``: attempts the provider reported no usage for (timed out, an error status)."""
    estimated: int = 0
    """Of ``calls``: attempts answered without a usage, or whose reported usage was implausible (NaN,
    negative, far above the request's size); their tokens and cost are ragmetrics' estimate."""
    downgraded: int = 0
    """Of ``succeeded``: requests answered in a weaker structured-output form than a strict tool call
    (``mode="auto"`` only), because the server refused that request's schema or, earlier, the form."""
    cached_calls: int = 0
    """Requests answered from the judge cache (stored by an earlier run), not sent."""
    shared_calls: int = 0
    """Requests answered by an identical request of the same run (in flight or done), not sent."""
    prompt_tokens: int = 0
    """Prompt (input) tokens billed, over every answered attempt."""
    completion_tokens: int = 0
    """Completion (output) tokens billed, over every answered attempt."""
    cost_usd: float = 0.0
    """Cost in US dollars from the price table; 0 for cached answers and the offline judge."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            calls=self.calls + other.calls,
            succeeded=self.succeeded + other.succeeded,
            reasks=self.reasks + other.reasks,
            retries=self.retries + other.retries,
            unmetered=self.unmetered + other.unmetered,
            estimated=self.estimated + other.estimated,
            downgraded=self.downgraded + other.downgraded,
            cached_calls=self.cached_calls + other.cached_calls,
            shared_calls=self.shared_calls + other.shared_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )

    @property
    def requests(self) -> int:
        """Requests sent for the first time (``calls`` less re-asks and retries)."""
        return self.calls - self.reasks - self.retries

    @property
    def failed(self) -> int:
        """Requests that never got a usable reply (``requests - succeeded``)."""
        return max(0, self.requests - self.succeeded)

    def describe(self) -> str:
        """``12 LLM calls (8 succeeded, 1 failed, 2 re-asks, 1 retry; 1 unmetered)`` for summaries."""
        text = f"{self.calls} LLM call{'s' if self.calls != 1 else ''}"
        if self.reasks or self.retries or self.failed:
            parts = [f"{self.succeeded} succeeded", f"{self.failed} failed"]
            parts.append(f"{self.reasks} re-ask{'s' if self.reasks != 1 else ''}")
            parts.append(f"{self.retries} retr{'ies' if self.retries != 1 else 'y'}")
            text += f" ({', '.join(parts)}"
            text += f"; {self.unmetered} unmetered)" if self.unmetered else ")"
        elif self.unmetered:
            text += f" ({self.unmetered} unmetered)"
        if self.estimated:
            text += (
                f" ({self.estimated} with tokens estimated: missing or implausible usage, priced at "
                "ragmetrics' estimate)"
            )
        if self.downgraded:
            text += (
                f" ({self.downgraded} request{'s' if self.downgraded != 1 else ''} in a weaker "
                "structured-output form than a strict tool call: the server refused the schema)"
            )
        return text


def spent_by(exc: BaseException) -> Usage:
    """What a failed call cost: a :class:`~ragmetrics.errors.JudgeError`'s usage, else zero usage."""
    usage = getattr(exc, "usage", None)
    return usage if isinstance(usage, Usage) else Usage()


class JudgeInfo(BaseModel):
    """Who judged: enough to reproduce the call (never an API key)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    """``openai``, ``anthropic``, ``azure``, ``gemini``, ``bedrock``, ``vertex``, ``offline``, or what a
    user's own judge calls itself."""
    model: str
    """The model name as sent to the provider."""
    base_url: str | None = None
    """The API base URL for OpenAI-compatible servers; None for the provider's default."""
    temperature: float | None = 0.0
    """Sampling temperature sent with every call; None when the provider's SDK takes none (the
    Anthropic SDK from 2.0 on has no ``temperature`` parameter, so the model's default applies)."""
    seed: int | None = None
    """Sampling seed, where the provider takes one."""
    max_tokens: int = 2048
    """Completion token limit of the first attempt."""
    heuristic: bool = False
    """True for the offline judge: its verdicts come from lexical heuristics, not a model."""

    @property
    def temperature_text(self) -> str:
        """The temperature as signatures and reports show it: ``0``, ``0.7`` or ``not sent``."""
        return "not sent" if self.temperature is None else f"{self.temperature:g}"

    @property
    def spec(self) -> str:
        """The spec string that names this judge (``openai:gpt-4o-mini@http://...``)."""
        if self.provider == "offline":
            return "offline+semantic" if "minilm" in self.model else "offline"
        url = f"@{self.base_url}" if self.base_url else ""
        return f"{self.provider}:{self.model}{url}"


class ClaimRecord(BaseModel):
    """One claim of the answer, with its verdict and the evidence for it."""

    model_config = ConfigDict(extra="forbid")

    text: str
    """The claim, self-contained, in the answer's language."""
    span: str = ""
    """The part of the answer it came from."""
    span_found: bool | None = None
    """Whether the span was found in the text the claim was split from (the answer, or the reference
    for reference claims), normalised, fuzzy ratio >= 0.9; None where it was not checked. A claim
    whose span was not found is left out of the score (and counted in ``details["judge_health"]``)."""
    relevance: Literal["direct", "supporting", "off_topic"] | None = None
    """How the claim bears on the question (relevancy)."""
    verdict: Verdict | None = None
    """Whether the contexts support, contradict or do not mention it (faithfulness, groundedness)."""
    context_index: int | None = None
    """Index into the sample's contexts of the passage that decides the verdict."""
    evidence: str = ""
    """A verbatim quote from that passage."""
    evidence_verified: bool | None = None
    """Whether the quote was found in the cited passage (normalised, fuzzy ratio >= 0.9)."""
    judge_verdict: Verdict | None = None
    """The judge's own verdict when it is not the one counted: a ``supported`` or ``contradicted``
    verdict whose quote was not found in the cited context counts as ``not_found`` (``verdict``), and
    the judge's word is kept here. None when the verdict counted is the judge's."""
    reason: str = ""
    """The judge's one-line reason."""
    support: float | None = None
    """The heuristic (offline) judge's probability that the claim is supported; None for LLM judges."""


def _finite_unit(value: float | None) -> float | None:
    if value is None:
        return None
    if math.isnan(value) or math.isinf(value):
        raise ValueError("a score must be a finite number; use status to say why there is none")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"a score must lie in [0, 1], got {value}")
    return float(value)


class MetricResult(BaseModel):
    """What one metric says about one sample."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """The metric's snake_case name (``faithfulness``)."""
    score: float | None
    """The score in [0, 1], full precision; None when ``status`` says there is none."""
    passed: bool | None = None
    """``score >= threshold`` when a threshold is set and there is a score; else None."""
    threshold: float | None = None
    """The pass mark, if any."""
    status: Status = "ok"
    """``ok`` or why there is no score."""
    message: str | None = None
    """Human-readable detail for a non-ok status."""
    reasoning: str = ""
    """How the score came about, in a sentence or two."""
    claims: list[ClaimRecord] = Field(default_factory=list)
    """The claims with their verdicts, evidence and reasons."""
    supported_rate: float | None = None
    """Share of claims supported by the contexts."""
    contradicted_rate: float | None = None
    """Share of claims contradicted by the contexts."""
    unverifiable_rate: float | None = None
    """Share of claims the contexts do not mention."""
    details: dict[str, object] = Field(default_factory=dict)
    """Metric-specific extras (answer-level relevance, chunks verified, ...)."""
    usage: Usage = Field(default_factory=Usage)
    """LLM calls, tokens and cost spent on this result."""
    latency_ms: float = 0.0
    """Wall time spent producing this result."""
    judge: JudgeInfo | None = None
    """The judge that produced it."""
    signature: str = ""
    """What produced the score: metric, prompt versions and hashes, judge, package version."""

    _check_score = field_validator("score", "supported_rate", "contradicted_rate", "unverifiable_rate")(
        classmethod(lambda cls, v: _finite_unit(v))
    )

    @property
    def reason(self) -> str:
        """Alias of ``reasoning``."""
        return self.reasoning

    @property
    def ok(self) -> bool:
        """True when there is a score."""
        return self.score is not None


class BudgetExceededError(RagMetricsError):
    """A sample was not run because its estimated cost would exceed ``max_cost_usd``."""


class SampleTimeoutError(RagMetricsError):
    """A sample did not finish within ``timeout_per_sample_s``."""


class ErrorRecord(BaseModel):
    """Why a metric (or a whole row, or an eval case) has no score: the one failure record type."""

    model_config = ConfigDict(extra="forbid")

    metric: str | None = None
    """The metric that failed; None when the whole row failed (bad input, skipped for budget)."""
    status: str
    """A result status (``invalid_input``, ``timeout``, ``rate_limited``, ``provider_error``,
    ``judge_output_invalid``, ``truncated``), ``error`` (the metric raised) or ``skipped`` (budget)."""
    message: str
    """What failed and why, in words."""
    type: str
    """The exception class name (``JudgeError``, ``InvalidInputError``, ``NoScoreError``...)."""
    traceback: str | None = None
    """The formatted traceback, for unexpected exceptions."""
    row: int | None = None
    """The dataset row (0-based)."""
    field: str | None = None
    """The input field at fault, for bad input."""
    usage: Usage = Field(default_factory=Usage)
    """What the failed calls cost when no metric result carries it (a metric that raised a
    ``JudgeError``, calls cut off by the sample's timeout); already in the record's ``usage``."""

    @property
    def summary(self) -> str:
        """``ExceptionType: first line of the message`` (cut to 300 characters), for one-line reports."""
        lines = self.message.strip().splitlines()
        if not lines or self.message == self.type:  # the exception had no message
            return self.type
        return f"{self.type}: {shorten(lines[0], 300)}"

    def result_fields(self) -> dict[str, Any]:
        """The fields a :class:`~ragmetrics.score.MetricResult` without a score takes from this failure.

        ``status`` is a result status (an ``error`` or ``skipped`` failure is a ``provider_error``
        result), with ``message`` and the ``usage`` spent: ``MetricResult(name=..., score=None,
        **record.result_fields())``.
        """
        status: Status = self.status if self.status in STATUSES else "provider_error"  # type: ignore[assignment]
        return {"status": status, "message": self.message, "usage": self.usage}


def format_traceback(exc: BaseException, *, hide: Sequence[str] = ()) -> str:
    """The traceback of ``exc`` as text; with ``hide``, only the user's frames of ``exc`` itself.

    Args:
        exc: The exception.
        hide: File name endings (``os.path.join("ragmetrics", "regression", "cases.py")``) of frames
            that are machinery, not the user's code. When given, those frames and importlib's are left
            out (all are kept if every one would go) and chained exceptions are not shown; when empty,
            the full traceback, chained exceptions included.
    """
    if not hide:
        return "".join(tb.format_exception(type(exc), exc, exc.__traceback__))
    frames = tb.extract_tb(exc.__traceback__)
    kept = [
        f
        for f in frames
        if "importlib._bootstrap" not in f.filename and not any(f.filename.endswith(h) for h in hide)
    ]
    lines = ["Traceback (most recent call last):\n", *tb.format_list(kept or frames)]
    lines += tb.format_exception_only(type(exc), exc)
    return "".join(lines)


def _status(exc: BaseException) -> str:
    if isinstance(exc, InvalidInputError):
        return "invalid_input"
    if isinstance(exc, (JudgeError, NoScoreError)):
        return str(exc.status)
    if isinstance(exc, (SampleTimeoutError, asyncio.TimeoutError, TimeoutError)):
        return "timeout"
    if isinstance(exc, BudgetExceededError):
        return "skipped"
    return "error"


def failure_from(
    exc: BaseException,
    *,
    metric: str | None = None,
    row: int | None = None,
    usage: Usage | None = None,
    traceback: bool | None = None,
    hide: Sequence[str] = (),
) -> ErrorRecord:
    """Turn an exception into the failure record: status, message, type, traceback and usage spent.

    Args:
        exc: What was raised (or built to describe a missing score).
        metric: The metric that failed; None when the whole row (or case) failed.
        row: The dataset row; an :class:`~ragmetrics.errors.InvalidInputError` naming its row wins.
        usage: What the failure spent; None: what the exception carries (a ``JudgeError``'s usage),
            else nothing.
        traceback: Whether to keep the traceback; None (the default): only for an unexpected
            exception (status ``error``), not for a judge failure, bad input, a timeout or a skip.
        hide: File name endings of frames left out of the traceback (see :func:`format_traceback`).

    Returns:
        The record. Its status is a result status, ``error`` (an unexpected exception) or ``skipped``.
    """
    status = _status(exc)
    field_name = None
    if isinstance(exc, InvalidInputError):
        field_name = exc.field
        if isinstance(exc.row, int):
            row = exc.row
    keep = status == "error" if traceback is None else traceback
    message = str(exc) or type(exc).__name__
    if status == "error" and metric is not None:
        message = f"metric '{metric}' raised {type(exc).__name__}: {shorten(message, 500)}"
    return ErrorRecord(
        usage=spent_by(exc) if usage is None else usage,
        metric=metric,
        status=status,
        message=message,
        type=type(exc).__name__,
        traceback=format_traceback(exc, hide=hide) if keep else None,
        row=row,
        field=field_name,
    )
