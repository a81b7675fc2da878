"""Results of an untrusted judge: every result it produced says so, on the result itself.

A judge is *untrusted* in a run when the run's judge gate is on (``judge_health_min`` is not None) and
the judge failed its canaries or read too little of its inputs (:mod:`ragmetrics.pipeline.judge_health`).
Each result of that judge that carried a score gets status ``judge_untrusted``, no score, ``passed``
False (None without a pass mark) and a message naming the judge and why; the judge's own score is kept
for inspection in ``details["judge_score"]``. The record's ``scores``, ``errors`` and ``mean_score``
follow, so every view built from records (aggregates, ``to_pandas``, the notebook view, ``--json``,
JUnit, the report) shows it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ragmetrics.pipeline.canaries import CanaryResult
from ragmetrics.pipeline.judge_health import JudgeHealth, judge_gate
from ragmetrics.pipeline.records import ErrorRecord, EvaluationResult

__all__ = ["UNTRUSTED", "mark_untrusted", "untrusted_judges"]

UNTRUSTED = "judge_untrusted"
"""The status of a result whose judge failed the run's judge gate or its canaries."""


def untrusted_judges(
    health: Mapping[str, JudgeHealth], minimum: float | None, canaries: Iterable[CanaryResult] = ()
) -> dict[str, str]:
    """Judge spec -> why it is not trusted (empty when the gate is off or every judge passed)."""
    if minimum is None:
        return {}
    why: dict[str, str] = {}
    for canary in canaries:
        if canary.failed:
            why[canary.judge] = f"failed its canaries (known-answer probes: {canary.describe()})"
    for h in judge_gate(health, minimum):
        reading = f"is not reading its inputs (reading rate {h.reading_rate:.0%} < {minimum:.0%})"
        why[h.judge] = f"{why[h.judge]} and {reading}" if h.judge in why else reading
    return why


def mark_untrusted(record: EvaluationResult, why: Mapping[str, str]) -> bool:
    """Set aside the scores in ``record`` that an untrusted judge gave; True when anything changed."""
    if not why:
        return False
    changed = False
    for name, result in record.results.items():
        spec = result.judge.spec if result.judge is not None else ""
        if spec not in why or result.score is None:
            continue
        score = result.score
        message = (
            f"the judge {spec} {why[spec]}: its score {score:.3f} is set aside "
            "(details['judge_score']), not counted"
        )
        result.details["judge_score"] = score
        result.score = None
        result.passed = False if result.threshold is not None else None  # no pass mark: nothing passed
        result.status = "judge_untrusted"
        result.message = message
        record.scores[name] = None
        record.errors.append(
            ErrorRecord(metric=name, status=UNTRUSTED, message=message, type="JudgeUntrusted")
        )
        changed = True
    if changed:
        got = [s for s in record.scores.values() if s is not None]
        record.mean_score = math.fsum(got) / len(got) if got else None
    return changed
