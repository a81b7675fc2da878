"""Comparing two snapshots: per-case, per-metric deltas, regression verdicts and significance.

For each case in both snapshots and each metric (``score``, ``cost_usd``, ``latency_ms`` and the named
metrics), ``change = current - baseline`` and ``relative = change / baseline``. A relative threshold
(defaults: score -0.02, cost_usd +0.10, latency_ms +0.20) gates it in the metric's bad direction,
above a noise floor (``min_change``, 20 ms for latency). A quality value that went missing is a
regression; a case on one side only is listed apart. With at least 5 paired samples a delta also gets
a sign-flip permutation p-value and a bootstrap 95% interval (seeded); with fewer, ``stat_note`` says
so. A ``score`` drop explained by named metrics of the same case is counted once (``same_as``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from ragmetrics._check import check_int, check_number
from ragmetrics.errors import ConfigError
from ragmetrics.regression.snapshot_schema import CORE_METRICS, Snapshot, SnapshotResult

__all__ = [
    "CORE_METRICS",
    "DEFAULT_MIN_CHANGE",
    "DEFAULT_THRESHOLDS",
    "JUDGE_HEALTH_DROP",
    "LOWER_IS_BETTER",
    "MIN_PAIRS",
    "Delta",
    "Diff",
    "JudgeHealthDrop",
    "SignatureChange",
    "compare_snapshots",
    "paired_test",
]

DEFAULT_THRESHOLDS: dict[str, float | None] = {"score": -0.02, "cost_usd": 0.10, "latency_ms": 0.20}
"""Allowed relative change per metric: score may drop 2%, cost rise 10%, latency rise 20%."""
DEFAULT_MIN_CHANGE: dict[str, float] = {"latency_ms": 20.0}
"""Absolute changes at most this large never regress (timer and scheduling noise); other metrics 0."""
LOWER_IS_BETTER = frozenset({"cost_usd", "latency_ms"})
"""Metrics where a rise is bad."""
MIN_PAIRS = 5
"""Fewest paired samples for which a p-value and confidence interval are computed."""
_EPS = 1e-9  # absorbs float rounding, so a change exactly at the threshold is not a regression


class SignatureChange(BaseModel):
    """A case whose score signature (metric, prompts, judge) differs between the snapshots."""

    case_name: str
    """The case."""
    baseline: str | None
    """The baseline's signature."""
    current: str | None
    """The current signature."""


class JudgeHealthDrop(BaseModel):
    """A judge of a case that finds fewer of its spans or quotes than in the baseline (not gated)."""

    case_name: str
    """The case."""
    judge: str
    """The judge's spec."""
    baseline: float
    """The baseline's reading rate (the lower of the shares of spans and quotes found)."""
    current: float
    """The current reading rate."""
    describe: str
    """The current figures: ``spans found 3/15 (20%), quotes found 0/9 (0%), 12 verification re-asks``."""


JUDGE_HEALTH_DROP = 0.05
"""A judge's reading rate falling by more than this (absolute) is noted in the diff."""


class Delta(BaseModel):
    """The change of one metric of one case between two snapshots."""

    case_name: str
    """The case."""
    metric: str
    """``score``, ``cost_usd``, ``latency_ms`` or a named quality metric."""
    baseline: float | None
    """The baseline value; None when the baseline has none."""
    current: float | None
    """The current value; None when the current run has none."""
    change: float | None
    """``current - baseline`` in the metric's unit."""
    relative: float | None
    """``change / baseline``; None when either value is missing or the baseline is 0 and current is not."""
    threshold: float | None
    """The tolerance applied, signed by direction (negative for quality); None when not gated."""
    higher_is_better: bool
    """True for quality metrics, False for cost and latency."""
    regressed: bool
    """True when the change is beyond the tolerance in the bad direction."""
    n_pairs: int = 0
    """How many samples were paired for the significance test."""
    p_value: float | None = None
    """Two-sided paired permutation p-value for ``mean(current_i - baseline_i) != 0``."""
    ci: tuple[float, float] | None = None
    """95% bootstrap confidence interval of the paired mean change."""
    significant: bool | None = None
    """``p_value < alpha``; None when there are too few paired samples."""
    note: str | None = None
    """Why a value is missing or how a zero baseline was treated."""
    stat_note: str | None = None
    """Why there is no p-value or CI (too few paired samples); None when they were computed."""
    same_as: list[str] = Field(default_factory=list)
    """For a regressed ``score``: the named metrics of the case that regressed with it. Such a score
    regression repeats theirs and is not counted again."""


class Diff(BaseModel):
    """What ``compare`` returns: every delta, plus cases and signatures found on one side only."""

    baseline_name: str
    """The baseline snapshot."""
    current_name: str
    """The current snapshot."""
    thresholds: dict[str, float | None]
    """The tolerances used, after merging the caller's with the defaults."""
    min_change: dict[str, float] = Field(default_factory=dict)
    """The absolute noise floors used, after merging the caller's with the defaults."""
    alpha: float
    """Significance level for ``significant``."""
    deltas: list[Delta] = Field(default_factory=list)
    """One per (case, metric) present in at least one of the two snapshots' common cases."""
    only_in_baseline: list[str] = Field(default_factory=list)
    """Cases the current snapshot lacks."""
    only_in_current: list[str] = Field(default_factory=list)
    """Cases the baseline lacks."""
    signature_changes: list[SignatureChange] = Field(default_factory=list)
    """Cases scored by something else now (compare their numbers with care)."""
    judge_health_drops: list[JudgeHealthDrop] = Field(default_factory=list)
    """Judges that read less of their inputs than in the baseline (by more than 5 points)."""

    @property
    def has_regressions(self) -> bool:
        """True when any delta regressed beyond its threshold."""
        return any(d.regressed for d in self.deltas)

    def regressions(self, *, require_significance: bool = False) -> list[Delta]:
        """The regressed deltas, each drop once, minus (with ``require_significance``) the insignificant.

        With ``require_significance`` a delta tested and found not significant is left out; one
        without a p-value (too few paired samples, see ``stat_note``) still counts: the threshold
        rule decides it. A ``score`` regression that repeats regressions of the case's named metrics
        (``same_as``) is left out.
        """
        return [
            d
            for d in self.deltas
            if d.regressed and not d.same_as and not (require_significance and d.significant is False)
        ]

    def exit_code(self, *, require_significance: bool = False) -> int:
        """1 when there are regressions (as ``regressions`` counts them), else 0."""
        return 1 if self.regressions(require_significance=require_significance) else 0


def _resolve_thresholds(
    thresholds: Mapping[str, float | None] | None, known: set[str]
) -> dict[str, float | None]:
    merged = dict(DEFAULT_THRESHOLDS)
    for key, value in (thresholds or {}).items():
        if key not in known:
            raise ConfigError(f"threshold for unknown metric {key!r}; known: {', '.join(sorted(known))}")
        merged[key] = check_number(value, f"threshold for {key!r}", "compare", optional=True)
    return merged


def _values(result: SnapshotResult, metric: str) -> tuple[float | None, dict[str, float]]:
    if metric in CORE_METRICS:
        value = getattr(result, metric)
        per = {s.id: getattr(s, metric) for s in result.samples}
    else:
        value = result.metrics.get(metric)
        per = {s.id: s.scores.get(metric) for s in result.samples}
    return value, {k: v for k, v in per.items() if v is not None}


def _delta(
    case: str,
    metric: str,
    b: SnapshotResult,
    c: SnapshotResult,
    limit: float | None,
    floor: float,
    **test: Any,
) -> Delta:
    higher = metric not in LOWER_IS_BETTER
    base, base_per = _values(b, metric)
    cur, cur_per = _values(c, metric)
    signed = None if limit is None else (-abs(limit) if higher else abs(limit))
    change = relative = note = None
    regressed = False
    if base is not None and cur is not None:
        change = cur - base
        if base != 0:
            relative = change / abs(base)
        elif cur == 0:
            relative = 0.0
        else:
            note = "baseline is 0: no relative change; any move in the bad direction regresses"
        bad = (change < 0) if higher else (change > 0)
        if signed is not None and abs(change) > floor:
            regressed = (
                bad
                if relative is None
                else (relative < signed - _EPS if higher else relative > signed + _EPS)
            )
    elif base is not None:
        note = "no value in the current run"
        regressed = higher and signed is not None
    else:
        note = "no value in the baseline"
    if signed is None:
        note = "not gated (threshold None)" if note is None else f"{note}; not gated (threshold None)"
    pairs = sorted(set(base_per) & set(cur_per))
    delta = Delta(
        case_name=case,
        metric=metric,
        baseline=base,
        current=cur,
        change=change,
        relative=relative,
        threshold=signed,
        higher_is_better=higher,
        regressed=regressed,
        n_pairs=len(pairs),
        note=note,
    )
    if len(pairs) < MIN_PAIRS:
        delta.stat_note = (
            f"p-value needs at least {MIN_PAIRS} paired samples; this comparison has {len(pairs)}"
        )
    else:
        diffs = [cur_per[k] - base_per[k] for k in pairs]
        p_value, ci = paired_test(diffs, resamples=test["resamples"], seed=test["seed"])
        delta.p_value, delta.ci, delta.significant = p_value, ci, p_value < test["alpha"]
    return delta


def compare_snapshots(
    baseline: Snapshot,
    current: Snapshot,
    thresholds: Mapping[str, float | None] | None = None,
    *,
    min_change: Mapping[str, float] | None = None,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
) -> Diff:
    """Compare two snapshots metric by metric (see the module docstring for how deltas are computed).

    Raises:
        ConfigError: A threshold names an unknown metric or is not a number; ``alpha`` is not in
            (0, 1); ``resamples`` is below 100.
    """
    check_number(alpha, "alpha", "compare", low=0.0, high=1.0, low_open=True, high_open=True)
    check_int(resamples, "resamples", "compare", minimum=100)
    known = {m for snap in (baseline, current) for r in snap.results for m in r.metrics} | set(
        DEFAULT_THRESHOLDS
    )
    limits = _resolve_thresholds(thresholds, known)
    floors = dict(DEFAULT_MIN_CHANGE)
    for key, value in (min_change or {}).items():
        if key not in known:
            raise ConfigError(f"min_change for unknown metric {key!r}; known: {', '.join(sorted(known))}")
        floors[key] = check_number(
            value, f"min_change[{key!r}]", "compare", low=0.0, expected="a finite number >= 0"
        )
    cur_names = {r.name for r in current.results}
    base_names = {r.name for r in baseline.results}
    diff = Diff(
        baseline_name=baseline.name,
        current_name=current.name,
        thresholds=limits,
        min_change=floors,
        alpha=float(alpha),
        only_in_baseline=[r.name for r in baseline.results if r.name not in cur_names],
        only_in_current=[r.name for r in current.results if r.name not in base_names],
    )
    for b in baseline.results:
        c = current.result(b.name)
        if c is None:
            continue
        if b.signature != c.signature and (b.signature or c.signature):
            diff.signature_changes.append(
                SignatureChange(case_name=b.name, baseline=b.signature, current=c.signature)
            )
        diff.judge_health_drops += _health_drops(b, c)
        extra = sorted(set(b.metrics) | set(c.metrics))
        case_deltas = []
        for metric in [*CORE_METRICS, *extra]:
            limit = limits.get(metric, limits["score"])
            floor = floors.get(metric, 0.0)
            delta = _delta(b.name, metric, b, c, limit, floor, alpha=alpha, resamples=resamples, seed=seed)
            if delta.baseline is None and delta.current is None:
                continue
            case_deltas.append(delta)
        named = [d.metric for d in case_deltas if d.regressed and d.metric not in CORE_METRICS]
        for delta in case_deltas:
            if delta.metric == "score" and delta.regressed and named:
                delta.same_as = named
        diff.deltas.extend(case_deltas)
    return diff


def _health_drops(baseline: SnapshotResult, current: SnapshotResult) -> list[JudgeHealthDrop]:
    """The judges of a case whose reading rate fell by more than :data:`JUDGE_HEALTH_DROP`."""
    drops = []
    for spec, now in current.judge_health.items():
        before = baseline.judge_health.get(spec)
        if before is None or before.reading_rate is None or now.reading_rate is None:
            continue
        if before.reading_rate - now.reading_rate > JUDGE_HEALTH_DROP + _EPS:
            drops.append(
                JudgeHealthDrop(
                    case_name=current.name,
                    judge=spec,
                    baseline=before.reading_rate,
                    current=now.reading_rate,
                    describe=now.describe(),
                )
            )
    return drops


def paired_test(
    diffs: list[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, tuple[float, float]]:
    """Two-sided p-value and 95% CI for the mean of paired differences.

    The p-value comes from a sign-flip permutation test (under "no change" each difference is as
    likely positive as negative): ``(1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + resamples)`` over
    random sign vectors ``s``. The interval is the 2.5th and 97.5th percentiles of the means of
    ``resamples`` paired bootstrap resamples. Both use ``numpy.random.default_rng(seed)``.
    """
    import numpy as np

    d = np.asarray(diffs, dtype=float)
    n = d.size
    observed = abs(float(d.mean()))
    rng = np.random.default_rng(seed)
    chunk = max(1, min(resamples, 1_000_000 // max(n, 1)))
    extreme = 0
    boot = np.empty(resamples)
    done = 0
    while done < resamples:
        k = min(chunk, resamples - done)
        signs = rng.integers(0, 2, size=(k, n), dtype=np.int8) * 2 - 1
        flipped = np.abs((signs * d).mean(axis=1))
        extreme += int(np.count_nonzero(flipped >= observed - 1e-12))
        boot[done : done + k] = d[rng.integers(0, n, size=(k, n))].mean(axis=1)
        done += k
    low, high = np.quantile(boot, [0.025, 0.975])
    return (extreme + 1) / (resamples + 1), (float(low), float(high))
