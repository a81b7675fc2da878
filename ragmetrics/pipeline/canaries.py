"""Canaries: known-answer probes put to every LLM judge of a run before its scores are trusted.

The canary is one faithfulness sample whose answer has a supported, a contradicted and an unrelated
sentence. It is drawn from the run's own rows (:mod:`ragmetrics.pipeline.canary_draw`), so no judge,
cache or proxy can tell it apart; the bundled ``ragmetrics/data/canaries.json`` stands in when the
rows offer nothing. Each judge scores it through the run's caching judge (counted in the run's usage,
never in its scores). A judge *fails* when any of the three sentences comes back with the wrong
verdict; a judge that gives no reply gets no verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.judge.cache import CachingJudge
from ragmetrics.judge.retry import Failure
from ragmetrics.pipeline.canary_draw import CanaryDraw, CanaryProbe, bundled_draw, canary_data, probe_verdicts
from ragmetrics.sample import Sample
from ragmetrics.score import Usage

__all__ = [
    "CANARY_CALLS_MAX",
    "CanaryProbe",
    "CanaryResult",
    "canary_data",
    "canary_message",
    "canary_sample",
    "halt_local_judges",
    "run_canaries",
]

CANARY_CALLS_MAX = 4
"""Calls per run and judge at most: one extraction, one verification, a re-ask of each."""

NO_REPLY = frozenset({"timeout", "rate_limited", "provider_error"})
"""Statuses of a judge that did not answer: its canaries give no verdict (the run's gates say why)."""


class CanaryResult(BaseModel):
    """One judge on the canaries."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    """The judge's spec string."""
    passed: bool
    """Every probe got its known verdict."""
    probes: list[CanaryProbe] = Field(default_factory=list)
    """The probes, in the file's order."""
    usage: Usage = Field(default_factory=Usage)
    """What the canaries cost (counted in the run's usage, not in any record)."""
    message: str | None = None
    """Why the judge gave no usable reply, when it failed for good."""
    answered: bool = True
    """False: the judge gave no reply (timeout, refused key, server error), so no verdict either way."""
    source: str = "bundled"
    """Where the canary came from: ``drawn from the run's rows``, or ``bundled (<why>)``."""
    status: str | None = None
    """The canary's result status when it got no score (``truncated``, ``judge_output_invalid``, ...)."""

    @property
    def failed(self) -> bool:
        """The judge answered and got a probe wrong: what the gate fails on."""
        return self.answered and not self.passed

    @classmethod
    def of_error(cls, spec: str, draw: CanaryDraw, exc: BaseException) -> CanaryResult:
        """The result of a judge whose canary call failed for good (no reply: no verdict either way)."""
        from ragmetrics.score import spent_by

        return cls(
            judge=spec,
            passed=False,
            probes=probe_verdicts([], draw.probes),
            usage=spent_by(exc),
            message=str(exc)[:300],
            answered=getattr(exc, "status", None) not in NO_REPLY,
            source=draw.source,
            status=getattr(exc, "status", None),
        )

    def observed(self) -> str:
        """What the judge did wrong, in a user's words: rambling, invalid output, unread inputs, ..."""
        message = (self.message or "").lower()
        if self.status == "truncated":
            return "it rambles: its replies ran to the token limit without closing the JSON"
        if self.status == "timeout":
            return "it gave no reply within the timeout"
        if not self.answered:
            return "it gave no reply"
        if self.status == "judge_output_invalid" and "is not reading" in message:
            return "it does not read its inputs: the claims it extracted are not in the answer it was given"
        if self.status == "judge_output_invalid":
            return "its replies do not follow the schema (invalid JSON, missing or wrong fields)"
        if any(p.got is None for p in self.probes):
            return "it missed plain sentences of the answer (claims not extracted)"
        return "it gave wrong verdicts on plainly supported, contradicted and unrelated sentences"

    def describe(self) -> str:
        """``passed 3/3 (supported, contradicted, unrelated), 2 calls``."""
        calls = f"{self.usage.calls} call{'s' if self.usage.calls != 1 else ''}"
        if not self.answered:
            return f"no verdict (the judge did not answer: {self.message or 'no reply'}), {calls}"
        ok = sum(p.passed for p in self.probes)
        wrong = [f"{p.kind} -> {p.got or 'not extracted'}" for p in self.probes if not p.passed]
        how = "passed" if self.passed else "FAILED"
        return f"{how} {ok}/{len(self.probes)}" + (f" ({'; '.join(wrong)})" if wrong else "") + f", {calls}"


def canary_sample() -> Sample:
    """The bundled canary sample: the answer is the probes' sentences, in order."""
    return bundled_draw("asked for").sample


async def run_canaries(judges: Sequence[CachingJudge], draw: CanaryDraw | None = None) -> list[CanaryResult]:
    """Score the canary (``draw``; default the bundled one) through each judge; one result per judge."""
    from ragmetrics.metrics.claims.faithfulness import FaithfulnessMetric

    if draw is None:
        draw = bundled_draw("no rows given")
    sample = draw.sample
    out = []
    for judge in judges:
        metric = FaithfulnessMetric(llm="offline", cache=False)
        metric.use_judge(judge)
        try:
            result = await metric.evaluate_sample(sample)
        except Exception as exc:  # a judge failing for good fails its canaries; the run goes on
            out.append(CanaryResult.of_error(judge.info.spec, draw, exc))
            continue
        probes = probe_verdicts(result.claims, draw.probes)
        out.append(
            CanaryResult(
                judge=judge.info.spec,
                passed=all(p.passed for p in probes),
                probes=probes,
                usage=result.usage,
                message=result.message if result.score is None else None,
                answered=result.status not in NO_REPLY,
                source=draw.source,
                status=result.status if result.score is None else None,
            )
        )
    return out


def _provider(judge: Any) -> Any:
    """The adapter under a judge's wrappers (cache, metering)."""
    inner = judge
    while not hasattr(inner, "halt") and hasattr(inner, "inner"):
        inner = inner.inner
    return inner


async def any_local(judges: Sequence[CachingJudge]) -> bool:
    """Whether a local server serves any of ``judges`` (asking a server whose kind is not known yet).

    A local judge's canaries run before the dataset's first call, so a model that cannot follow the
    schema is named before the dataset is paid for in time; a hosted judge's run beside the first rows.
    """
    for judge in judges:
        detect = getattr(_provider(judge), "detect_local", None)
        if detect is not None and await detect():
            return True
    return False


def halt_local_judges(judges: Sequence[CachingJudge], results: Sequence[CanaryResult]) -> list[Any]:
    """Stop the run's calls to each local judge that did not pass its canaries; the judges halted.

    A local judge pays for a dataset in time: one that cannot follow the schema or read its inputs is
    named after the canaries (within a minute or so) instead of after hours of the dataset. Each later
    call to it fails at once, sending nothing, with status ``judge_untrusted`` and what was observed;
    the run lifts the halt when it ends (a judge may serve later runs).
    """
    halted = []
    for judge, result in zip(judges, results, strict=True):
        inner = _provider(judge)
        if result.passed or not getattr(inner, "local", False):
            continue
        inner.halt(
            Failure(
                status="judge_untrusted",
                transient=False,
                message=f"not sent: the local judge {result.judge} did not pass the run's canaries "
                f"({result.observed()}; {result.describe()}), so the run does not spend its time on it",
                hint=LOCAL_HINT,
            )
        )
        halted.append(inner)
    return halted


LOCAL_HINT = (
    "use a larger model (models of SmolLM2-135M's size only fill the schema); name the server kind "
    "(--judge-server, server=) if it was not detected, so its schema mode constrains the replies; "
    "--no-canaries or --no-judge-gate scores with it anyway"
)
"""What to try when a local judge does not pass its canaries."""


def canary_message(failing: Iterable[CanaryResult]) -> str:
    """One line per judge that failed its canaries, naming what it got wrong and what to check."""
    return "\n".join(
        f"the judge {r.judge} failed its canaries (known-answer probes): {r.observed()}; {r.describe()}. "
        "A judge that "
        "gets a plainly supported, contradicted or unrelated claim wrong does not judge the dataset "
        "either. Check the model name and base URL and that the model follows instructions; "
        "--no-canaries skips the probes, --no-judge-gate keeps the run's exit code."
        + (f" Its last error: {r.message}" if r.message else "")
        for r in failing
    )
