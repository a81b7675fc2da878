"""``ragmetrics calibrate``: how well does each judge agree with a team's own labels?

Scores a labelled JSONL (or the bundled ExpertQA example) with every ``--judge`` and prints, per metric,
the judges side by side (see :mod:`ragmetrics.calibration`). Exit codes: 0 done; 1 a judge scored none
of the labelled rows of some metric (nothing to measure: the figures would be empty); 2 usage error
(missing file, a line that cannot be read, bad label or field, unknown metric or judge, missing API key,
unwritable output path).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragmetrics.cli._args import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    count,
    output_problem,
    positive_int,
    unit_float,
)
from ragmetrics.errors import ConfigError, printable

__all__ = ["add_calibrate_command", "cmd_calibrate"]

_EPILOG = (
    "exit codes: 0 done, 1 a judge scored no labelled row of some metric, 2 usage error (missing file, "
    "bad label, unknown metric or judge, missing API key, unwritable output path)"
)


def add_calibrate_command(commands: Any) -> None:
    """Register ``ragmetrics calibrate``."""
    parser = commands.add_parser(
        "calibrate",
        help="measure how well judges agree with human labels (pick a judge and a threshold)",
        description="Score human-labelled rows with each judge and report, per metric and judge: AUROC, "
        "balanced accuracy and Cohen's kappa at the pass mark, the pass mark that agrees best, bootstrap "
        "95%% intervals, the confusion matrix, and calls and dollars per label. Labels: ragmetrics' data "
        "format (label.faithful / label.relevant) or a plain JSONL with question, answer, contexts, label.",
        epilog=_EPILOG,
    )
    parser.add_argument("labels", nargs="?", metavar="LABELS", help="a .jsonl file of labelled rows")
    parser.add_argument(
        "--example", action="store_true", help="use the bundled labelled set (80 ExpertQA rows, MIT)"
    )
    parser.add_argument(
        "--metrics",
        default="faithfulness",
        metavar="NAMES",
        help="comma-separated metrics to calibrate (default: faithfulness)",
    )
    parser.add_argument(
        "--judge",
        action="append",
        default=[],
        metavar="SPEC",
        help="a judge to calibrate (repeatable): offline, openai:MODEL, openai:MODEL@URL, "
        "anthropic:MODEL...; default: the environment's judge",
    )
    parser.add_argument(
        "--threshold",
        type=unit_float,
        metavar="SCORE",
        help="pass mark for the gate figures (default: each metric's)",
    )
    parser.add_argument(
        "--bootstrap", type=count, default=1000, metavar="N", help="bootstrap resamples per interval (1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (0)")
    parser.add_argument("--concurrency", type=positive_int, default=8, metavar="N", help="rows in flight (8)")
    parser.add_argument(
        "--encoding",
        metavar="NAME",
        help="the labels file's encoding, e.g. cp1252 or latin-1 (default UTF-8; a byte order mark wins)",
    )
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the judge cache")
    parser.add_argument("--json", action="store_true", help="print the report as JSON (for machines)")
    parser.add_argument("--html", metavar="PATH", help="also write the report as a self-contained HTML page")
    parser.set_defaults(handler=cmd_calibrate)


def _statuses(statuses: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in statuses.items())


def _fail(message: str) -> int:
    print(f"ragmetrics calibrate: error: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Run ``ragmetrics calibrate``; returns the exit code."""
    from ragmetrics.settings import api_key_for, default_judge_spec, parse_judge_spec

    if bool(args.labels) == bool(args.example):
        return _fail("give a LABELS file or --example (not both)")
    if args.html:
        problem = output_problem(args.html, "--html", (".html", ".htm"))
        if problem:
            return _fail(problem)
    metrics = [n.strip() for n in args.metrics.split(",") if n.strip()]
    if not metrics:
        return _fail("--metrics: give at least one metric name")
    judges = args.judge or [default_judge_spec()]
    try:
        for spec in judges:
            settings = parse_judge_spec(spec)
            if settings.provider != "offline":
                api_key_for(settings)
    except ConfigError as exc:
        return _fail(str(exc))

    from ragmetrics.calibration import calibrate_sync, example_path

    try:
        report = calibrate_sync(
            example_path() if args.example else args.labels,
            metrics=metrics,
            judges=judges,
            threshold=args.threshold,
            bootstrap=args.bootstrap,
            seed=args.seed,
            cache=not args.no_cache,
            encoding=args.encoding,
            concurrency=args.concurrency,
        )
    except ConfigError as exc:
        return _fail(str(exc))
    return _print_report(args, report)


def _print_report(args: argparse.Namespace, report: Any) -> int:
    """Print the report (text or ``--json``), write ``--html``; exit 1 when a judge scored no labelled row."""
    if args.example:
        report.source = "the bundled ExpertQA example (80 rows, MIT)"
    if args.json:
        print(printable(report.model_dump_json(indent=2), multiline=True, json=True))
    else:
        print(report.to_text())
    if args.html:
        report.write_html(args.html)
        if not args.json:
            print()
            print(printable(f"Wrote the report to {args.html}"))
    empty = [
        f"{j.judge} scored no labelled row of {a.metric} ({_statuses(a.statuses)})"
        for j in report.judges
        for a in j.metrics.values()
        if a.scored == 0
    ]
    for line in empty:
        print(f"ragmetrics calibrate: {printable(line)}", file=sys.stderr)
    return EXIT_FAIL if empty else EXIT_OK
