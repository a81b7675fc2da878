"""What an eval case's verdict is made of: reading its return value and checking it against its bounds.

:func:`judge_value` turns whatever a case returned into a :class:`CaseResult`: a dict of ``score``,
``cost_usd``, ``latency_ms``, ``metrics`` and ``samples``, or ``EvaluationResult``-like objects (mean
score, summed cost, median sample latency, per-metric means). A malformed value, a bound that cannot
be checked, a metric that scored none of the case's samples, or a judge that plainly did not read its
inputs (:mod:`ragmetrics.pipeline.judge_health`) fails the case with a message saying why. Nothing
passes by default.
"""

from __future__ import annotations

import difflib
import math
import statistics
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any, Literal, TypeGuard

from pydantic import BaseModel, Field, ValidationError

from ragmetrics.errors import shorten
from ragmetrics.pipeline.judge_health import (
    JUDGE_HEALTH_MIN,
    TEST_SWITCH,
    HealthTally,
    JudgeHealth,
    judge_gate,
    judge_gate_message,
)
from ragmetrics.regression.snapshot_schema import SampleScore, SnapshotResult

__all__ = ["CaseResult", "Violation", "judge_value", "judge_violations"]

_KNOWN_KEYS = ("score", "cost_usd", "latency_ms", "metrics", "samples")


class Violation(BaseModel):
    """A bound a case broke."""

    bound: Literal["min_score", "max_cost_usd", "max_latency_ms", "judge_health_min", "canaries"]
    """The bound (``judge_health_min``: a judge's reading rate; ``canaries``: its known-answer probes;
    both are the judge gate)."""
    limit: float
    """Its value."""
    value: float | None
    """What the case gave; None when it gave nothing to check."""
    excess: float | None
    """How far past the bound (always positive); None when there was no value."""
    message: str
    """What went wrong, in words."""


class CaseResult(BaseModel):
    """The verdict on one eval case (or on a file that failed to import)."""

    name: str
    """The case id, ``path::function``; the file for an import error."""
    outcome: Literal["passed", "failed", "error"]
    """``error``: raised or did not import; ``failed``: broke a bound or returned a malformed value."""
    score: float | None = None
    """The score the case returned."""
    cost_usd: float | None = None
    """The cost it reported."""
    latency_ms: float | None = None
    """The latency it reported, or the wall time measured when it reported none."""
    latency_measured: bool = False
    """True when ``latency_ms`` was measured by ragmetrics."""
    min_score: float | None = None
    """The effective min_score (the case's own, else the run's threshold)."""
    max_cost_usd: float | None = None
    """The case's max_cost_usd."""
    max_latency_ms: float | None = None
    """The case's max_latency_ms."""
    tags: list[str] = Field(default_factory=list)
    """The case's tags."""
    violations: list[Violation] = Field(default_factory=list)
    """Bounds broken."""
    problems: list[str] = Field(default_factory=list)
    """What was wrong with the returned value."""
    error: str | None = None
    """``ExceptionType: message`` when the case raised or its file did not import."""
    traceback: str | None = None
    """The formatted traceback of ``error``."""
    metrics: dict[str, float | None] = Field(default_factory=dict)
    """Named scores the case returned."""
    samples: list[SampleScore] = Field(default_factory=list)
    """Per-sample values the case returned (used by snapshot significance tests)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Other keys the case returned, and notes (unscored samples)."""
    judge_health: dict[str, JudgeHealth] = Field(default_factory=dict)
    """Per judge spec, over the case's results that ran claim metrics: spans and quotes found, re-asks."""

    @property
    def passed(self) -> bool:
        """True when the outcome is ``passed``."""
        return self.outcome == "passed"

    def reasons(self) -> list[str]:
        """Why the case did not pass, one line each (empty when it passed)."""
        return [*([self.error] if self.error else []), *self.problems, *(v.message for v in self.violations)]

    def describe(self) -> str:
        """A few lines: the case's values with their bounds, then every reason it failed."""
        parts = [
            f"score {_g(self.score)}"
            + (f" (min_score {_g(self.min_score)})" if self.min_score is not None else "")
        ]
        cost = "-" if self.cost_usd is None else f"${_g(self.cost_usd)}"
        parts.append(
            f"cost_usd {cost}" + (f" (max ${_g(self.max_cost_usd)})" if self.max_cost_usd is not None else "")
        )
        lat = (
            "-"
            if self.latency_ms is None
            else f"{_g(self.latency_ms)} ms" + (" measured" if self.latency_measured else "")
        )
        parts.append(
            f"latency {lat}"
            + (f" (max {_g(self.max_latency_ms)} ms)" if self.max_latency_ms is not None else "")
        )
        lines = [f"{self.name}: {self.outcome.upper()}"] + (
            ["  " + ", ".join(parts)] if self.outcome != "error" else []
        )
        lines += [f"  - {r}" for r in self.reasons()]
        if self.traceback:
            lines.append("  " + self.traceback.rstrip().replace("\n", "\n  "))
        return "\n".join(lines)

    def to_snapshot_result(self) -> SnapshotResult:
        """The record ``EvalRegression.save_snapshot`` stores for this case."""
        return SnapshotResult(
            name=self.name,
            score=self.score,
            cost_usd=self.cost_usd,
            latency_ms=self.latency_ms,
            metrics=self.metrics,
            samples=self.samples,
            outcome=self.outcome,
            judge_health=self.judge_health,
        )


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _number(name: str, value: object, low: float, high: float | None, problems: list[str]) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        problems.append(f"{name} must be a number, got {type(value).__name__} {shorten(value, 60)}")
        return None
    number = float(value)
    if not math.isfinite(number):
        problems.append(f"{name} must be a finite number, got {number}")
        return None
    if number < low or (high is not None and number > high):
        problems.append(
            f"{name} must be in [{low:g}, {high:g}], got {number}"
            if high is not None
            else f"{name} must be >= {low:g}, got {number}"
        )
        return None
    return number


def _from_mapping(value: Mapping[Any, Any], out: dict[str, Any], problems: list[str]) -> None:
    for key in value:
        if not isinstance(key, str):
            problems.append(f"returned dict has a non-string key {key!r}")
        elif key not in _KNOWN_KEYS:
            close = difflib.get_close_matches(key, _KNOWN_KEYS, n=1, cutoff=0.6)
            if close:
                problems.append(f"unknown key {key!r} in the returned dict (did you mean {close[0]!r}?)")
            else:
                out["details"][key] = value[key]
    out["score"] = _number("score", value.get("score"), 0.0, 1.0, problems)
    out["cost_usd"] = _number("cost_usd", value.get("cost_usd"), 0.0, None, problems)
    out["latency_ms"] = _number("latency_ms", value.get("latency_ms"), 0.0, None, problems)
    metrics = value.get("metrics") or {}
    if not isinstance(metrics, Mapping):
        problems.append(f"metrics must be a dict of name -> score, got {type(metrics).__name__}")
        metrics = {}
    try:
        record = SnapshotResult.model_validate(
            {"name": "case", "metrics": dict(metrics), "samples": value.get("samples") or []}
        )
    except ValidationError as exc:
        problems.extend(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
    else:
        out["metrics"], out["samples"] = record.metrics, record.samples
        worst = _worst_sample([s.model_dump() for s in record.samples], None)
        if worst:
            out["details"]["worst_sample"] = worst
        if record.samples and out["score"] is None and all(s.score is None for s in record.samples):
            if not any(v is not None for s in record.samples for v in s.scores.values()):
                problems.append(f"nothing scored: 0 of {len(record.samples)} samples has a score")
        unscored = [m for m, v in record.metrics.items() if v is None]
        if unscored:
            problems.append(
                f"nothing scored for metric(s) {', '.join(unscored)}: the case returned None for them"
            )


def _is_evaluation_result(value: object) -> bool:
    return not isinstance(value, Mapping) and hasattr(value, "mean_score")


def _sample_id(item: Any, index: int) -> str:
    candidates = (getattr(item, "id", None), getattr(item, "sample_id", None), getattr(item, "sample", None))
    for value in candidates[:2]:
        if value is not None:
            return str(value)
    sample_id = getattr(candidates[2], "id", None)
    return str(sample_id) if sample_id is not None else str(index)


def _failed_claim(item: Any) -> str | None:
    """The first claim of the sample's lowest-scoring metric that counted against it, in words."""
    results = getattr(item, "results", None)
    named = getattr(item, "scores", None)
    if not isinstance(results, Mapping) or not isinstance(named, Mapping):
        return None
    ranked = sorted(
        (m for m, v in named.items() if isinstance(v, Real) and m in results), key=lambda m: named[m]
    )
    for metric in ranked:
        claims = getattr(results[metric], "claims", None) or []
        order = ("contradicted", "not_found")
        bad = [c for c in claims if getattr(c, "verdict", None) in order]
        bad.sort(key=lambda c: order.index(c.verdict))
        bad += [c for c in claims if getattr(c, "relevance", None) == "off_topic"]
        if bad:
            claim = bad[0]
            what = claim.verdict.replace("_", " ") if claim.verdict else "off topic"
            why = f" ({shorten(claim.reason, 160)})" if getattr(claim, "reason", "") else ""
            return f"{metric} claim {shorten(claim.text, 160)!r} was {what}{why}"
    return None


def _worst_sample(samples: list[dict[str, Any]], items: Sequence[Any] | None) -> str | None:
    scored = [(s["score"], i) for i, s in enumerate(samples) if s.get("score") is not None]
    if not scored:
        return None
    score, index = min(scored)
    text = f"worst sample {shorten(samples[index]['id'], 80)!r} scored {_g(score)}"
    claim = _failed_claim(items[index]) if items is not None else None
    return f"{text}: {claim}" if claim else text


def _unscored_problems(items: Sequence[Any], metrics: Sequence[str]) -> list[str]:
    """A line per metric that scored none of the samples (the rule of ``ragmetrics.pipeline.gate``)."""
    from ragmetrics.pipeline.gate import unscored_failure, unscored_message

    failures = []
    for metric in metrics:
        statuses: dict[str, int] = {}
        example = None
        scored = total = 0
        for item in items:
            named = getattr(item, "scores", None) or {}
            if metric not in named:  # not this item's metric (a conversation-level metric on a turn)
                continue
            total += 1
            if named.get(metric) is not None:
                scored += 1
                continue
            status_of = getattr(item, "status_of", None)
            status = status_of(metric) if callable(status_of) else "missing"
            statuses[status] = statuses.get(status, 0) + 1
            for err in getattr(item, "errors", None) or []:
                if example is None and getattr(err, "metric", None) in (metric, None):
                    text = str(getattr(err, "message", "") or "")  # the status is said already
                    example = (
                        text.removeprefix(f"{metric}: no score ({getattr(err, 'status', '')}): ") or None
                    )
        failure = unscored_failure(
            metric, scored=scored, total=total, statuses=statuses, example=example, max_unscored=1.0
        )  # a share of 1.0: only a metric that scored nothing fails; partial gaps are a note
        if failure is not None:
            failures.append(failure)
    return [f"nothing scored: {unscored_message(failures)}"] if failures else []


def _from_evaluation_results(items: Sequence[Any], out: dict[str, Any], problems: list[str]) -> None:
    scores, costs, latencies, samples = [], [], [], []
    per_metric: dict[str, list[float]] = {}
    metric_names: dict[str, None] = {}
    health = HealthTally()
    for i, item in enumerate(items):
        results = getattr(item, "results", None)
        if isinstance(results, Mapping):
            health.add(results.values())
        score = _number(f"result {i} mean_score", getattr(item, "mean_score", None), 0.0, 1.0, problems)
        usage = getattr(item, "usage", None)
        cost = getattr(usage, "cost_usd", None) if usage is not None else getattr(item, "cost_usd", None)
        cost = _number(f"result {i} cost_usd", cost, 0.0, None, problems)
        latency = _number(f"result {i} latency_ms", getattr(item, "latency_ms", None), 0.0, None, problems)
        named = getattr(item, "scores", None)
        named = dict(named) if isinstance(named, Mapping) else {}
        for metric, value in named.items():
            metric_names.setdefault(str(metric))
            if isinstance(value, Real) and not isinstance(value, bool):
                per_metric.setdefault(str(metric), []).append(float(value))
        samples.append(
            {
                "id": _sample_id(item, i),
                "score": score,
                "cost_usd": cost,
                "latency_ms": latency,
                "scores": named,
            }
        )
        scores += [score] if score is not None else []
        costs += [cost] if cost is not None else []
        latencies += [latency] if latency is not None else []
    out["judge_health"] = health.result()
    out["score"] = sum(scores) / len(scores) if scores else None
    out["cost_usd"] = sum(costs) if costs else None
    out["latency_ms"] = statistics.median(latencies) if latencies else None
    if latencies:
        out["details"]["latency_max_ms"] = max(latencies)
    out["details"].update(samples=len(items), unscored_samples=len(items) - len(scores))
    worst = _worst_sample(samples, items)
    if worst:
        out["details"]["worst_sample"] = worst
    problems.extend(_unscored_problems(items, list(metric_names)))
    if not metric_names and not scores:
        problems.append(f"nothing scored: none of the {len(items)} results has a score")
    if len(scores) < len(items):
        out["details"]["note"] = (
            f"{len(items) - len(scores)} of {len(items)} samples had no score and are left out of the mean"
        )
    try:
        record = SnapshotResult.model_validate(
            {
                "name": "case",
                "samples": samples,
                "metrics": {m: sum(v) / len(v) for m, v in per_metric.items()},
            }
        )
    except ValidationError as exc:  # duplicate sample ids, bad per-metric scores, a metric named "score"
        problems.extend(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
    else:
        out["samples"], out["metrics"] = record.samples, record.metrics


def _is_sequence(value: object) -> TypeGuard[Sequence[Any]]:
    """A list, a tuple or the ``EvaluationResults`` of a run (a read-only sequence); not a string."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _observe(value: object) -> tuple[dict[str, Any], list[str]]:
    out: dict[str, Any] = {
        "score": None,
        "cost_usd": None,
        "latency_ms": None,
        "metrics": {},
        "samples": [],
        "details": {},
        "judge_health": {},
    }
    problems: list[str] = []
    if isinstance(value, Mapping):
        _from_mapping(value, out, problems)
    elif _is_evaluation_result(value):
        _from_evaluation_results([value], out, problems)
    elif _is_sequence(value) and value and all(_is_evaluation_result(v) for v in value):
        _from_evaluation_results(value, out, problems)
    else:
        hint = " (did you forget to return it?)" if value is None else ""
        problems.append(
            f"returned {type(value).__name__} {shorten(value, 80)}{hint}; an eval case must return a dict "
            "with any of score, cost_usd, latency_ms, or an EvaluationResult or a non-empty list of them"
        )
    return out, problems


def _violations(
    out: dict[str, Any], *, min_score: float | None, max_cost_usd: float | None, max_latency_ms: float | None
) -> list[Violation]:
    found = []
    score, cost, latency = out["score"], out["cost_usd"], out["latency_ms"]
    if min_score is not None and score is None:
        text = f"min_score {_g(min_score)} is set but the case returned no score"
        found.append(Violation(bound="min_score", limit=min_score, value=None, excess=None, message=text))
    elif min_score is not None and score < min_score:
        text = f"score {_g(score)} is below min_score {_g(min_score)} by {min_score - score:.3g}"
        if out["details"].get("worst_sample"):
            text += f"; {out['details']['worst_sample']}"
        found.append(
            Violation(bound="min_score", limit=min_score, value=score, excess=min_score - score, message=text)
        )
    if max_cost_usd is not None and cost is None:
        text = f"max_cost_usd ${_g(max_cost_usd)} is set but the case reported no cost_usd"
        found.append(
            Violation(bound="max_cost_usd", limit=max_cost_usd, value=None, excess=None, message=text)
        )
    elif max_cost_usd is not None and cost > max_cost_usd:
        over = cost - max_cost_usd
        pct = f" (+{over / max_cost_usd:.0%})" if max_cost_usd else ""
        text = f"cost_usd ${_g(cost)} exceeds max_cost_usd ${_g(max_cost_usd)} by ${over:.3g}{pct}"
        found.append(
            Violation(bound="max_cost_usd", limit=max_cost_usd, value=cost, excess=over, message=text)
        )
    if max_latency_ms is not None and latency is not None and latency > max_latency_ms:
        over = latency - max_latency_ms
        text = (
            f"latency {_g(latency)} ms exceeds max_latency_ms {_g(max_latency_ms)} ms by {over:.3g} ms "
            f"(+{over / max_latency_ms:.0%})"
        )
        found.append(
            Violation(bound="max_latency_ms", limit=max_latency_ms, value=latency, excess=over, message=text)
        )
    return found


def judge_violations(
    health: Mapping[str, JudgeHealth], minimum: float | None = JUDGE_HEALTH_MIN
) -> list[Violation]:
    """One ``judge_health_min`` violation per judge whose reading rate is below ``minimum`` (None: off)."""
    return [
        Violation(
            bound="judge_health_min",
            limit=float(minimum),
            value=h.reading_rate,
            excess=float(minimum) - (h.reading_rate or 0.0),
            message=judge_gate_message([h], float(minimum), TEST_SWITCH),
        )
        for h in judge_gate(health, minimum)
        if minimum is not None
    ]


def judge_value(
    value: object,
    *,
    name: str,
    elapsed_ms: float,
    min_score: float | None = None,
    max_cost_usd: float | None = None,
    max_latency_ms: float | None = None,
    tags: Sequence[str] = (),
    judge_health_min: float | None = JUDGE_HEALTH_MIN,
) -> CaseResult:
    """The verdict on the value a case returned.

    Args:
        value: What the case returned.
        name: The case id.
        elapsed_ms: Wall time of the call, used as latency when the value reports none.
        min_score: The effective min_score (the case's, else the run's threshold).
        max_cost_usd: The case's cost bound.
        max_latency_ms: The case's latency bound.
        tags: The case's tags, carried into the result.
        judge_health_min: The judge gate: a judge of the case's claim metrics whose reading rate is
            below this fails the case (None: off).
    """
    out, problems = _observe(value)
    measured = out["latency_ms"] is None
    if measured:
        out["latency_ms"] = elapsed_ms
    bounds = {"min_score": min_score, "max_cost_usd": max_cost_usd, "max_latency_ms": max_latency_ms}
    violations = judge_violations(out["judge_health"], judge_health_min)
    violations += [] if problems else _violations(out, **bounds)
    return CaseResult(
        name=name,
        outcome="failed" if problems or violations else "passed",
        latency_measured=measured,
        violations=violations,
        problems=problems,
        tags=list(tags),
        **out,
        **bounds,
    )
