"""The ``ragmetrics`` command line: one subcommand per job, one handler function per subcommand.

``ragmetrics eval`` scores a dataset file and ``ragmetrics estimate`` predicts what that would cost
(both in :mod:`ragmetrics.cli.run_eval`); ``ragmetrics test`` runs eval cases (see
:mod:`ragmetrics.regression.cases`) and compares them with saved snapshots. Exit codes, for every
command: 0 success; 1 a case failed or errored, or a regression was found with
``--fail-on-regression`` (for ``eval``: a gate failed, see :mod:`ragmetrics.pipeline.gate`); 2 usage
error (bad flags, missing path, unknown snapshot).

Only ``argparse`` is imported at module level so ``ragmetrics --help`` answers at once; each handler
imports what it needs. A new command adds an ``_add_<name>_command(commands)`` function, called from
:func:`_build_parser`, that sets ``handler=_cmd_<name>`` (a function taking the parsed arguments and
returning the exit code).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ragmetrics.cli._args import output_problem, positive_float, positive_int, unit_float
from ragmetrics.cli.calibrate import add_calibrate_command
from ragmetrics.cli.run_eval import EXIT_JUDGE, add_estimate_command, add_eval_command
from ragmetrics.cli.run_eval import _judge_health_min as judge_health_min
from ragmetrics.cli.run_generate import add_generate_command
from ragmetrics.errors import ConfigError, SnapshotError, printable

__all__ = ["EXIT_FAIL", "EXIT_OK", "EXIT_PIPE", "EXIT_USAGE", "main"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_PIPE = 141  # 128 + SIGPIPE: stdout's reader went away (`... | head -1`)
_EXIT_CODES = (
    "exit codes: 0 all passed, 1 a case failed or errored (or a regression with --fail-on-regression), "
    "2 usage error, 5 a case's judge is not reading its inputs (its claims' spans and quotes are not in "
    "the texts it was given: below --judge-health-min, or it failed its canaries)"
)


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("ragmetrics")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            found = "unknown"
        parser.exit(message=f"ragmetrics {found}\n")


def _alpha(text: str) -> float:
    value = unit_float(text)
    if value in (0.0, 1.0):
        raise argparse.ArgumentTypeError(f"alpha must lie strictly between 0 and 1, got {text}")
    return value


def _tag_list(text: str) -> list[str]:
    tags = [t.strip() for t in text.split(",") if t.strip()]
    if not tags:
        raise argparse.ArgumentTypeError(f"expected comma-separated tags, got {text!r}")
    return tags


def _metric_threshold(text: str) -> tuple[str, float | None]:
    metric, sep, raw = text.partition("=")
    if not sep or not metric.strip():
        raise argparse.ArgumentTypeError(
            f"expected METRIC=VALUE (e.g. latency_ms=0.5 or cost_usd=none), got {text!r}"
        )
    if raw.strip().lower() in ("none", "off"):
        return metric.strip(), None
    try:
        return metric.strip(), float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'none' after '=', got {text!r}") from None


def _add_test_command(commands: Any) -> None:
    parser = commands.add_parser(
        "test",
        help="run eval cases; gate on bounds and on regressions against a snapshot",
        description="Discover eval cases (files eval_*.py / *_eval.py under folders, and any file given) "
        "and run them, with the cases of any YAML/JSON suite file given (their recorded outputs are "
        "scored); print a table and exit non-zero when any fails.",
        epilog=_EXIT_CODES,
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="folders to search, eval files to run, and YAML/JSON suite files (.yaml, .yml, .json)",
    )
    parser.add_argument(
        "--threshold", type=unit_float, metavar="SCORE", help="min_score for cases that set none"
    )
    parser.add_argument(
        "--tags",
        action="append",
        type=_tag_list,
        default=[],
        metavar="TAG[,TAG]",
        help="run only cases with any of these tags (repeatable)",
    )
    parser.add_argument(
        "--exclude-tags",
        action="append",
        type=_tag_list,
        default=[],
        metavar="TAG[,TAG]",
        help="skip cases with any of these tags (repeatable)",
    )
    parser.add_argument(
        "-k",
        dest="keyword",
        metavar="EXPR",
        help="run only cases whose id or tags match, e.g. 'qa and not slow'",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=8,
        metavar="N",
        help="async cases in flight at once (default 8); sync cases run one at a time",
    )
    parser.add_argument(
        "--max-attempts",
        type=positive_int,
        metavar="N",
        help="attempts per LLM request of the cases' judges on 429, 5xx, timeouts, connection errors (6)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        metavar="SECONDS",
        help="timeout of each LLM request of the cases' judges, in seconds (default 60)",
    )
    trust = parser.add_argument_group(
        "what suite files may name",
        "a YAML/JSON suite is data: by default it may send judge requests only to the providers' own hosts "
        "or a base URL you configured, keep caches in your cache folder, and set cost settings within sane "
        "ranges (RAGMETRICS_SUITE_ALLOW=judge_url,cache,settings does the same as these flags)",
    )
    trust.add_argument(
        "--allow-judge-url",
        action="store_true",
        help="let suite files send judge and embedding requests (with your API key) to any host they name",
    )
    trust.add_argument(
        "--allow-suite-cache",
        action="store_true",
        help="let suite files name cache folders outside your cache folder",
    )
    trust.add_argument(
        "--allow-suite-settings",
        action="store_true",
        help="let suite files set reasks, max_attempts, context_budget_tokens, timeouts, prices... "
        "outside the sane ranges",
    )
    parser.add_argument(
        "--judge-health-min",
        type=unit_float,
        default=None,
        metavar="SHARE",
        help="fail a case (exit 5) whose claim metrics' judge has a reading rate (the lower of the shares "
        "of its claim spans found in the answers and of its quotes found in the contexts) below SHARE "
        "(default 0.5)",
    )
    parser.add_argument(
        "--no-judge-gate",
        action="store_true",
        help="do not fail cases on their judge's health or its canaries",
    )
    parser.add_argument(
        "--canaries",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="put known-answer probes to each judge of the suite files first (on by default; at most 4 "
        "cached calls per judge; a case whose judge fails them fails, exit 5); eval cases' own "
        "evaluate() runs put them to their judges themselves",
    )
    parser.add_argument("--junit-xml", metavar="PATH", help="also write JUnit XML for CI systems")
    parser.add_argument("--json", dest="json_path", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--format", choices=["text", "markdown"], default="text", help="table format (default text)"
    )
    snap = parser.add_argument_group("snapshots")
    snap.add_argument("--save", metavar="NAME", help="save the results as snapshot NAME")
    snap.add_argument("--compare", metavar="NAME", help="compare the results with snapshot NAME")
    snap.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when --compare finds a regression (each is then a failing case in --junit-xml)",
    )
    snap.add_argument(
        "--allow-missing-cases",
        action="store_true",
        help="with --fail-on-regression, do not fail when cases of the baseline did not run (renamed, "
        "deleted; a filtered run (-k, --tags) never counts the cases it left out)",
    )
    snap.add_argument(
        "--alpha",
        type=_alpha,
        metavar="A",
        help="count a regression backed by per-sample data only when its p-value is below A",
    )
    snap.add_argument(
        "--regression-threshold",
        action="append",
        type=_metric_threshold,
        default=[],
        metavar="METRIC=VALUE",
        help="relative tolerance, e.g. score=-0.05, cost_usd=none; latency is gated only when given "
        "(latency_ms=0.5)",
    )
    snap.add_argument(
        "--warm-latency",
        action="store_true",
        help="run each case that reports no latency_ms twice and keep the second run, so its measured "
        "latency leaves out first-call warm-up (give it when saving and when comparing)",
    )
    snap.add_argument(
        "--snapshot-dir",
        default=".ragmetrics_evals",
        metavar="DIR",
        help="where snapshots live (default .ragmetrics_evals)",
    )
    parser.set_defaults(handler=_cmd_test)


def _add_fake_server_command(commands: Any) -> None:
    from ragmetrics._fake.command import add_arguments

    parser = commands.add_parser(
        "fake-server",
        help="serve the fake OpenAI/Anthropic provider (FakeLLMServer) until Ctrl-C",
        description="Serve ragmetrics.testing.FakeLLMServer (the same as python -m ragmetrics.testing): "
        "point your own pipeline's base_url at it to test it with the real SDKs and no key.",
    )
    add_arguments(parser)
    parser.set_defaults(handler=_cmd_fake_server)


def _cmd_fake_server(args: argparse.Namespace) -> int:
    from ragmetrics._fake.command import serve
    from ragmetrics.testing import FakeLLMServer

    return serve(args, FakeLLMServer)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragmetrics",
        description="Evaluate RAG and LLM outputs; gate CI on quality, cost and latency.",
        epilog=_EXIT_CODES,
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    add_eval_command(commands)
    add_estimate_command(commands)
    add_generate_command(commands)
    _add_test_command(commands)
    add_calibrate_command(commands)
    _add_fake_server_command(commands)
    return parser


def _usage_error(message: str) -> int:
    print(f"ragmetrics test: error: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE


def _cmd_test(args: argparse.Namespace) -> int:
    from ragmetrics.regression import cases
    from ragmetrics.regression.case_gate import GateResult, gate_run, known_metrics
    from ragmetrics.regression.render import render_case_table, render_diff, render_junit_xml
    from ragmetrics.regression.snapshot import (
        EvalRegression,
        Snapshot,
        write_atomic,
    )
    from ragmetrics.regression.suite_cases import is_suite_file, run_suite_file

    if args.fail_on_regression and not args.compare:
        return _usage_error("--fail-on-regression needs --compare NAME")
    outputs: list[tuple[str | None, str, tuple[str, ...]]] = [
        (args.junit_xml, "--junit-xml", (".xml",)),
        (args.json_path, "--json", (".json",)),
    ]
    outputs += [(args.snapshot_dir, "--snapshot-dir", ())] if args.save else []
    for path, flag, suffixes in outputs:  # before any case runs: a case may call an LLM
        problem = output_problem(path, flag, suffixes, create_folders=True) if path else None
        if problem:
            return _usage_error(problem)
    store = EvalRegression(args.snapshot_dir)
    thresholds = dict(args.regression_threshold)
    try:
        if args.save:
            store.path_for(args.save)
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
        return _usage_error(str(exc))

    start = time.perf_counter()
    gate_min = None if args.no_judge_gate else judge_health_min(args)
    results = [cases.error_result(e) for e in collection.errors]
    results += cases.run_cases_sync(
        selected,
        threshold=args.threshold,
        concurrency=args.concurrency,
        warm=args.warm_latency,
        judge_health_min=gate_min,
    )
    for suite_path in suites:
        results += run_suite_file(
            suite_path,
            concurrency=args.concurrency,
            judge_health_min=gate_min,
            canaries=args.canaries,
            **filters,
        )
    if not results:
        what = "selected" if collection.cases or suites else f"found in {len(collection.files)} eval file(s)"
        return _usage_error(f"no eval cases {what} (paths: {' '.join(args.paths)})")
    duration = time.perf_counter() - start
    for message in dict.fromkeys(v.message for r in results for v in r.violations if v.bound == "canaries"):
        print(printable(f"ragmetrics test: {message}", multiline=True), file=sys.stderr)  # reported first
    print(render_case_table(results, fmt=args.format, duration_s=duration), end="")
    code = EXIT_OK if all(r.passed for r in results) else EXIT_FAIL
    if any(v.bound in ("judge_health_min", "canaries") for r in results for v in r.violations):
        code = EXIT_JUDGE  # as `ragmetrics eval`: a judge that is not reading is reported first

    current = Snapshot.from_results(args.save or "current", results)
    gate: GateResult | None = None
    if baseline is not None:
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
        if args.fail_on_regression and gate.failed and code == EXIT_OK:
            code = EXIT_FAIL
    gated = gate.regressions if gate is not None and args.fail_on_regression else []
    try:
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
    except (OSError, SnapshotError) as exc:
        return _usage_error(str(exc))
    return code


@contextmanager
def _judge_defaults(args: argparse.Namespace) -> Iterator[None]:
    """``--max-attempts`` / ``--timeout`` as the judges' defaults while the command runs.

    Judges built in the user's own code (eval cases, suites) read them from the environment
    variables :data:`ragmetrics.settings.JUDGE_OPTION_VARIABLES` name; the old values come back after.
    The ``--allow-*`` flags of ``ragmetrics test`` are added to ``RAGMETRICS_SUITE_ALLOW`` the same
    way, so suites that eval files load themselves follow them too.
    """
    values: dict[str, str] = {
        "RAGMETRICS_MAX_ATTEMPTS": repr(getattr(args, "max_attempts", None)),
        "RAGMETRICS_TIMEOUT_S": repr(getattr(args, "timeout", None)),
    }
    values = {var: value for var, value in values.items() if value != "None"}
    allowed = [
        name
        for name, flag in (
            ("judge_url", "allow_judge_url"),
            ("cache", "allow_suite_cache"),
            ("settings", "allow_suite_settings"),
        )
        if getattr(args, flag, False)
    ]
    if allowed:
        given = [n for n in os.environ.get("RAGMETRICS_SUITE_ALLOW", "").split(",") if n.strip()]
        values["RAGMETRICS_SUITE_ALLOW"] = ",".join(dict.fromkeys([*given, *allowed]))
    saved = {var: os.environ.get(var) for var in values}
    try:
        for var, value in values.items():
            os.environ[var] = value
        yield
    finally:
        for var, old in saved.items():
            if old is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = old


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        with _judge_defaults(args):
            code = int(args.handler(args))
        sys.stdout.flush()  # a reader that went away shows here, not as "Exception ignored" at exit
        return code
    except KeyboardInterrupt:
        print("ragmetrics: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """Stop quietly when stdout's reader has gone (``ragmetrics eval --json | head -1``).

    Returns 141 (128 + SIGPIPE), the status a shell reports for ``cat``, ``yes`` or ``grep`` stopped the
    same way: 0 would claim every result was printed and hide a failed gate, 1 would read as a failed
    gate. Further output goes to the null device, so the interpreter's final flush raises nothing.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass
    return EXIT_PIPE


if __name__ == "__main__":
    sys.exit(main())
