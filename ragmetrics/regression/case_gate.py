"""The regression gate of an eval case run, shared by ``ragmetrics test`` and the pytest plugin.

Both compare the run with a saved snapshot through :func:`gate_run`, so they reach the same verdict
on the same cases: the same thresholds, the same dedupe (one drop counted once per case and metric),
the same significance rule.

Latency is not gated by default here: a case's latency on a shared CI machine moves by more than any
useful tolerance from run to run (first-call warm-up, scheduling), so an unchanged run would flap.
Opt in with a latency threshold (``--regression-threshold latency_ms=0.5``); the noise floor of
:data:`~ragmetrics.regression.compare.DEFAULT_MIN_CHANGE` still applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmetrics.regression.compare import DEFAULT_THRESHOLDS, Delta, Diff, compare_snapshots
from ragmetrics.regression.render import regression_message
from ragmetrics.regression.snapshot import Snapshot

__all__ = ["RUN_THRESHOLDS", "GateResult", "gate_run", "known_metrics"]

RUN_THRESHOLDS: dict[str, float | None] = {**DEFAULT_THRESHOLDS, "latency_ms": None}
"""Defaults for case runs: the library's, with latency reported but not gated (opt in with a value)."""


@dataclass(frozen=True, slots=True)
class GateResult:
    """A comparison and what it counts."""

    diff: Diff
    """Every delta."""
    regressions: list[Delta]
    """The regressions that count (deduplicated; with significance, minus those found not significant)."""
    require_significance: bool
    """Whether ``--alpha`` was given."""
    missing: list[str] = field(default_factory=list)
    """Cases of the baseline this run does not have (renamed or deleted): each fails a gating run,
    unless allowed (``--allow-missing-cases``)."""

    @property
    def failed(self) -> bool:
        """Whether a gating run fails: a counted regression, or a baseline case gone."""
        return bool(self.regressions or self.missing)

    def missing_message(self) -> str:
        """One line naming the vanished cases and how to allow them."""
        names = ", ".join(self.missing[:10]) + (", ..." if len(self.missing) > 10 else "")
        count = len(self.missing)
        return (
            f"{count} case{'s' if count != 1 else ''} of snapshot '{self.diff.baseline_name}' "
            f"did not run: {names} (renamed or deleted? save a new baseline, or allow it with "
            "--allow-missing-cases)"
        )

    def payload(self, *, gated: bool) -> dict[str, Any]:
        """The counted regressions for ``--json``, one entry per case and metric.

        Args:
            gated: Whether they fail the run (``--fail-on-regression``).
        """
        by_p = self.require_significance
        return {
            "count": len(self.regressions),
            "gated": gated,
            "missing_cases": list(self.missing),
            "items": [
                {
                    "case": d.case_name,
                    "metric": d.metric,
                    "baseline": d.baseline,
                    "current": d.current,
                    "relative": d.relative,
                    "threshold": d.threshold,
                    "p_value": d.p_value,
                    "decided_by": "p-value" if d.p_value is not None and by_p else "threshold",
                    "message": regression_message(d, self.require_significance),
                }
                for d in self.regressions
            ],
        }


def known_metrics(baseline: Snapshot) -> set[str]:
    """Metric names a ``--regression-threshold`` may name against ``baseline``."""
    return set(DEFAULT_THRESHOLDS) | {m for r in baseline.results for m in r.metrics}


def gate_run(
    baseline: Snapshot,
    current: Snapshot,
    thresholds: Mapping[str, float | None] | None = None,
    *,
    alpha: float | None = None,
    allow_missing: bool = False,
) -> GateResult:
    """Compare a case run with its baseline under the case-run defaults (:data:`RUN_THRESHOLDS`).

    Args:
        baseline: The saved snapshot.
        current: This run.
        thresholds: The user's tolerances, over :data:`RUN_THRESHOLDS`.
        alpha: When given, a regression backed by at least ``MIN_PAIRS`` paired samples counts only
            when its p-value is below it; one with fewer pairs is decided by the threshold rule.
        allow_missing: Whether baseline cases this run lacks are allowed (else :attr:`GateResult.missing`).

    Raises:
        ConfigError: A threshold names an unknown metric or is not a number; ``alpha`` is out of range.
    """
    merged = {**RUN_THRESHOLDS, **(thresholds or {})}
    significance = alpha is not None
    diff = compare_snapshots(baseline, current, merged, alpha=alpha if alpha is not None else 0.05)
    return GateResult(
        diff=diff,
        regressions=diff.regressions(require_significance=significance),
        require_significance=significance,
        missing=[] if allow_missing else list(diff.only_in_baseline),
    )
