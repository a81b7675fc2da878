"""YAML/JSON suites run by ``ragmetrics test``: each suite case becomes one eval case result.

A suite file is loaded with :meth:`~ragmetrics.regression.suite.Suite.from_file`, its cases' recorded
outputs scored with :func:`~ragmetrics.regression.suite.run_suite`, and each case reported as a
:class:`~ragmetrics.regression.case_result.CaseResult` named ``<file>::<case id>``, so suites share the
table, JUnit, ``--json`` and snapshots with Python eval cases. The score is the mean of the
evaluators' scores, ``metrics`` holds each one's (``contains_2`` for a second of a type); a case that
scored nothing, whose judge did not read its inputs or failed the canaries, fails saying why. A file
that cannot be loaded is one ``error`` result naming the file and the field.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragmetrics._aio import run_sync
from ragmetrics.errors import ConfigError, shorten
from ragmetrics.pipeline.canaries import CanaryResult, canary_message
from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN, HealthTally
from ragmetrics.regression.case_result import CaseResult, Violation, judge_violations
from ragmetrics.regression.cases import select_cases
from ragmetrics.regression.suite import CaseOutcome, Suite, run_suite
from ragmetrics.score import MetricResult

__all__ = ["SUITE_SUFFIXES", "is_suite_file", "run_suite_file"]

SUITE_SUFFIXES = (".yaml", ".yml", ".json")
"""Files ``ragmetrics test`` runs as suites when named on the command line."""


def is_suite_file(path: str | os.PathLike[str]) -> bool:
    """True for an existing ``.yaml``/``.yml``/``.json`` file."""
    return Path(path).suffix.lower() in SUITE_SUFFIXES and Path(path).is_file()


@dataclass(frozen=True, slots=True)
class _Selectable:
    """What ``ragmetrics.regression.cases.select_cases`` reads from a case: its id and tags."""

    id: str
    meta: _Tags = field(default_factory=lambda: _Tags())


@dataclass(frozen=True, slots=True)
class _Tags:
    tags: list[str] = field(default_factory=list)


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def _metric_names(results: Sequence[MetricResult]) -> list[str]:
    names: list[str] = []
    for result in results:
        base = result.name if result.name not in ("score", "cost_usd", "latency_ms") else f"{result.name}_"
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.append(name)
    return names


def _why_not(name: str, result: MetricResult) -> str:
    if result.score is None:
        message = f": {shorten(result.message, 200)}" if result.message else ""
        return f"{name}: no score ({result.status}){message}"
    limit = f" (threshold {result.threshold:g})" if result.threshold is not None else ""
    reason = f": {shorten(result.reasoning, 200)}" if result.reasoning else ""
    return f"{name}: score {result.score:.4g} did not pass{limit}{reason}"


def _canary_violations(results: Sequence[MetricResult], failed: dict[str, CanaryResult]) -> list[Violation]:
    specs = dict.fromkeys(r.judge.spec for r in results if r.judge is not None and r.judge.spec in failed)
    return [
        Violation(bound="canaries", limit=1.0, value=None, excess=None, message=canary_message([failed[s]]))
        for s in specs
    ]


def _case_result(
    name: str, outcome: CaseOutcome, judge_health_min: float | None, failed: dict[str, CanaryResult]
) -> CaseResult:
    results = outcome.results
    tally = HealthTally()
    tally.add(results)
    health = tally.result()
    violations = judge_violations(health, judge_health_min)
    violations += [] if judge_health_min is None else _canary_violations(results, failed)
    names = _metric_names(results)
    metrics = {n: r.score for n, r in zip(names, results, strict=True)}
    scored = [r.score for r in results if r.score is not None]
    calls = sum(r.usage.calls for r in results)
    latencies = [r.latency_ms for r in results if r.latency_ms]
    problems = [_why_not(n, r) for n, r in zip(names, results, strict=True) if r.passed is not True]
    if results and not scored:
        statuses = ", ".join(sorted({r.status for r in results}))
        problems.insert(0, f"nothing scored: 0 of {len(results)} evaluators produced a score ({statuses})")
    if outcome.passing == "any" and not outcome.passed:
        problems.insert(0, "passing: any, and none of the evaluators passed")
    details: dict[str, str] = {"passing": outcome.passing}
    if outcome.output is not None:
        details["output"] = shorten(outcome.output, 300)
    if outcome.errors:
        return CaseResult(
            name=name,
            outcome="error",
            error="; ".join(outcome.errors),
            problems=problems,
            violations=violations,
            metrics=metrics,
            details=details,
            judge_health=health,
        )
    return CaseResult(
        name=name,
        outcome="passed" if outcome.passed and not violations else "failed",
        score=sum(scored) / len(scored) if scored else None,
        cost_usd=sum(r.usage.cost_usd for r in results) if calls else None,
        latency_ms=max(latencies) if latencies else None,
        problems=[] if outcome.passed else problems,
        violations=violations,
        metrics=metrics,
        details=details,
        judge_health=health,
    )


def run_suite_file(
    path: str | os.PathLike[str],
    *,
    keyword: str | None = None,
    tags: Iterable[str] = (),
    exclude_tags: Iterable[str] = (),
    concurrency: int = 8,
    allow_judge_url: bool | None = None,
    allow_suite_cache: bool | None = None,
    allow_suite_settings: bool | None = None,
    judge_health_min: float | None = JUDGE_HEALTH_MIN,
    canaries: bool = True,
) -> list[CaseResult]:
    """Load and run one suite file; one result per selected case (or one error for a bad file).

    Args:
        path: The ``.yaml``/``.yml``/``.json`` suite.
        keyword: ``-k`` expression, matched against ``<file>::<case id>``.
        tags: Keep cases with any of these tags; suite cases have none, so giving tags skips them.
        exclude_tags: Drop cases with any of these tags (no suite case has one).
        concurrency: Evaluations in flight at once.
        allow_judge_url: Let the file name any judge host (None: as ``RAGMETRICS_SUITE_ALLOW`` says);
            see :mod:`ragmetrics.regression.suite_trust`.
        allow_suite_cache: Let the file name cache folders outside your cache folder.
        allow_suite_settings: Let the file set cost settings outside the sane ranges.
        judge_health_min: The judge gate per case (None: off, the canaries' verdict included); see
            :func:`~ragmetrics.regression.case_result.judge_violations`.
        canaries: Put the known-answer probes to the suite's judges first (``run_suite``'s option);
            a case judged by a judge that failed them fails.

    Raises:
        ConfigError: The ``-k`` expression is malformed.
    """
    file = Path(path)
    shown = _display(file)
    try:
        suite = Suite.from_file(
            file,
            allow_judge_url=allow_judge_url,
            allow_suite_cache=allow_suite_cache,
            allow_suite_settings=allow_suite_settings,
        )
    except ConfigError as exc:
        return [CaseResult(name=shown, outcome="error", error=f"ConfigError: {exc}")]
    wanted = {
        c.id
        for c in select_cases(
            [_Selectable(id=f"{shown}::{case.id}") for case in suite.cases],  # type: ignore[misc]
            keyword=keyword,
            tags=tags,
            exclude_tags=exclude_tags,
        )
    }
    chosen = tuple(case for case in suite.cases if f"{shown}::{case.id}" in wanted)
    if not chosen:
        return []
    subset = Suite(cases=chosen, name=suite.name, description=suite.description, source=suite.source)
    outcome = run_sync(run_suite(subset, max_concurrency=concurrency, progress=False, canaries=canaries))
    failed = {c.judge: c for c in outcome.canaries if c.failed}
    return [
        _case_result(f"{shown}::{case.id}", case_outcome, judge_health_min, failed)
        for case, case_outcome in zip(chosen, outcome.cases, strict=True)
    ]
