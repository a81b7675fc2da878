"""``ragmetrics test``: run eval cases and suite files, gate on bounds and on regressions.

Discovers the eval cases (see :mod:`ragmetrics.regression.cases`), runs them with the cases of any
YAML/JSON suite file given, prints a table, and compares the results with a saved snapshot. Usage
problems are one line on stderr and exit code 2, found before any case runs. Its flags are in
:mod:`ragmetrics.cli._test_flags`; what it imports beyond them is imported when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmetrics.cli._args import EXIT_FAIL, EXIT_JUDGE, EXIT_OK, EXIT_USAGE, judge_health_min, output_problem
from ragmetrics.cli._test_flags import test_parser
from ragmetrics.errors import ConfigError, SnapshotError, printable

if TYPE_CHECKING:
    from ragmetrics.regression.case_gate import GateResult
    from ragmetrics.regression.case_result import CaseResult
    from ragmetrics.regression.snapshot import EvalRegression, Snapshot

__all__ = ["add_test_command", "cmd_test"]


class _UsageError(Exception):
    """A problem the user can fix; printed as one line, exit code 2."""


@dataclass
class _Plan:
    """What a run will do, checked before any case runs."""

    store: EvalRegression
    baseline: Snapshot | None
    thresholds: dict[str, float | None]
    collection: Any
    """The eval files' cases, load errors and files (:class:`ragmetrics.regression.cases.Collection`)."""
    selected: list[Any]
    suites: list[str]
    filters: dict[str, Any] = field(default_factory=dict)


def add_test_command(commands: Any) -> None:
    """Register ``ragmetrics test`` (its flags: :mod:`ragmetrics.cli._test_flags`)."""
    test_parser(commands).set_defaults(handler=cmd_test)


def cmd_test(args: argparse.Namespace) -> int:
    """Run ``ragmetrics test``; returns the exit code."""
    try:
        plan = _plan(args)
    except _UsageError as exc:
        return _usage_error(str(exc))
    start = time.perf_counter()
    results = _run(args, plan)
    if not results:
        files = len(plan.collection.files)
        what = "selected" if plan.collection.cases or plan.suites else f"found in {files} eval file(s)"
        return _usage_error(f"no eval cases {what} (paths: {' '.join(args.paths)})")
    duration = time.perf_counter() - start
    code = _print_results(args, results, duration)
    from ragmetrics.regression.snapshot import Snapshot

    current = Snapshot.from_results(args.save or "current", results)
    gate = _compare(args, plan.baseline, current, plan.thresholds) if plan.baseline is not None else None
    if gate is not None and args.fail_on_regression and gate.failed and code == EXIT_OK:
        code = EXIT_FAIL
    try:
        _write(args, plan.store, current, results, gate, code=code, duration=duration)
    except (OSError, SnapshotError) as exc:
        return _usage_error(str(exc))
    return code


def _usage_error(message: str) -> int:
    print(f"ragmetrics test: error: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE


def _plan(args: argparse.Namespace) -> _Plan:
    """Check the flags, the output paths and the snapshots, then collect and select the cases.

    Raises:
        _UsageError: What the user must fix; nothing has run yet (a case may call an LLM).
    """
    from ragmetrics.regression import cases
    from ragmetrics.regression.snapshot import EvalRegression
    from ragmetrics.regression.suite_cases import is_suite_file

    if args.fail_on_regression and not args.compare:
        raise _UsageError("--fail-on-regression needs --compare NAME")
    _check_outputs(args)
    store = EvalRegression(args.snapshot_dir)
    thresholds = dict(args.regression_threshold)
    try:
        baseline = _baseline(args, store, thresholds)
        cases.select_cases([], keyword=args.keyword)  # a malformed -k fails before any file is imported
        if os.getcwd() not in sys.path:  # like `python -m`: eval files may import the project from the cwd
            sys.path.insert(0, os.getcwd())
        suites = [p for p in args.paths if is_suite_file(p)]
        python_paths = [p for p in args.paths if p not in suites]
        collection = (
            cases.collect_cases(python_paths)
            if python_paths
            else cases.Collection(cases=[], errors=[], files=[])
        )
        filters = {
            "keyword": args.keyword,
            "tags": [t for group in args.tags for t in group],
            "exclude_tags": [t for group in args.exclude_tags for t in group],
        }
        selected = cases.select_cases(collection.cases, **filters)
    except (ConfigError, SnapshotError) as exc:
        raise _UsageError(str(exc)) from None
    return _Plan(
        store=store,
        baseline=baseline,
        thresholds=thresholds,
        collection=collection,
        selected=selected,
        suites=suites,
        filters=filters,
    )


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse an output path that cannot be written, before any case runs."""
    outputs: list[tuple[str | None, str, tuple[str, ...]]] = [
        (args.junit_xml, "--junit-xml", (".xml",)),
        (args.json_path, "--json", (".json",)),
    ]
    outputs += [(args.snapshot_dir, "--snapshot-dir", ())] if args.save else []
    for path, flag, suffixes in outputs:
        problem = output_problem(path, flag, suffixes, create_folders=True) if path else None
        if problem:
            raise _UsageError(problem)


def _baseline(
    args: argparse.Namespace, store: EvalRegression, thresholds: dict[str, float | None]
) -> Snapshot | None:
    """The snapshot ``--compare`` names (None without it), with ``--regression-threshold`` checked."""
    from ragmetrics.regression.case_gate import known_metrics

    if args.save:
        store.path_for(args.save)  # a bad name fails now, not after the run
    baseline = store.load_snapshot(args.compare) if args.compare else None
    if baseline is not None:
        known = known_metrics(baseline)
        unknown = sorted(set(thresholds) - known)
        if unknown:
            raise ConfigError(
                f"--regression-threshold for unknown metric(s) {unknown}; known: {sorted(known)}"
            )
    elif thresholds:
        raise ConfigError("--regression-threshold needs --compare NAME")
    return baseline


def _run(args: argparse.Namespace, plan: _Plan) -> list[CaseResult]:
    """Run the selected cases, then the suite files' cases; an eval file that failed to load is an error."""
    from ragmetrics.regression import cases
    from ragmetrics.regression.suite_cases import run_suite_file

    gate_min = None if args.no_judge_gate else judge_health_min(args)
    results = [cases.error_result(e) for e in plan.collection.errors]
    results += cases.run_cases_sync(
        plan.selected,
        threshold=args.threshold,
        concurrency=args.concurrency,
        warm=args.warm_latency,
        judge_health_min=gate_min,
    )
    for suite_path in plan.suites:
        results += run_suite_file(
            suite_path,
            concurrency=args.concurrency,
            judge_health_min=gate_min,
            canaries=args.canaries,
            allow_judge_url=args.allow_judge_url or None,
            allow_suite_cache=args.allow_suite_cache or None,
            allow_suite_settings=args.allow_suite_settings or None,
            **plan.filters,
        )
    return results


def _print_results(args: argparse.Namespace, results: list[CaseResult], duration: float) -> int:
    """Print the canaries' messages and the table; return the exit code of the cases alone."""
    from ragmetrics.regression.render import render_case_table

    for message in dict.fromkeys(v.message for r in results for v in r.violations if v.bound == "canaries"):
        print(printable(f"ragmetrics test: {message}", multiline=True), file=sys.stderr)  # reported first
    print(render_case_table(results, fmt=args.format, duration_s=duration), end="")
    code = EXIT_OK if all(r.passed for r in results) else EXIT_FAIL
    if any(v.bound in ("judge_health_min", "canaries") for r in results for v in r.violations):
        code = EXIT_JUDGE  # as `ragmetrics eval`: a judge that is not reading is reported first
    return code


def _compare(
    args: argparse.Namespace, baseline: Snapshot, current: Snapshot, thresholds: dict[str, float | None]
) -> GateResult:
    """Compare ``current`` with ``baseline`` and print the differences and what is gated."""
    from ragmetrics.regression.case_gate import gate_run
    from ragmetrics.regression.render import render_diff

    filtered = bool(args.keyword or args.tags or args.exclude_tags)
    gate = gate_run(
        baseline,
        current,
        thresholds,
        alpha=args.alpha,
        allow_missing=args.allow_missing_cases or filtered,
    )
    print()
    print(render_diff(gate.diff, fmt=args.format, require_significance=gate.require_significance), end="")
    if gate.regressions and not args.fail_on_regression:
        print("(not gating: add --fail-on-regression to fail the run on these)")
    if gate.missing:
        print(printable(gate.missing_message()) + ("" if args.fail_on_regression else " (not gating)"))
    return gate


def _write(
    args: argparse.Namespace,
    store: EvalRegression,
    current: Snapshot,
    results: list[CaseResult],
    gate: GateResult | None,
    *,
    code: int,
    duration: float,
) -> None:
    """Save the snapshot (``--save``) and write ``--json`` and ``--junit-xml``."""
    from ragmetrics.regression.render import render_junit_xml
    from ragmetrics.regression.snapshot import write_atomic

    gated = gate.regressions if gate is not None and args.fail_on_regression else []
    if args.save:
        store.save_snapshot(args.save, current)
        print(printable(f"\nSaved snapshot '{args.save}' to {store.path_for(args.save)}", multiline=True))
    if args.json_path:
        payload = {
            "format": "ragmetrics-test-run",
            "schema_version": 1,
            "exit_code": code,
            "duration_s": duration,
            "summary": {k: sum(r.outcome == k for r in results) for k in ("passed", "failed", "error")},
            "cases": [r.model_dump(mode="json") for r in results],
            "comparison": gate.diff.model_dump(mode="json") if gate is not None else None,
            "regressions": None if gate is None else gate.payload(gated=bool(args.fail_on_regression)),
        }
        write_atomic(args.json_path, json.dumps(payload, indent=2) + "\n")
    if args.junit_xml:
        junit = render_junit_xml(
            results,
            duration_s=duration,
            regressions=gated,
            require_significance=args.alpha is not None,
            missing=gate.missing if gate is not None and args.fail_on_regression else (),
        )
        write_atomic(args.junit_xml, junit)
