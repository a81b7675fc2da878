"""The flags of ``ragmetrics test`` (its handler is in ``run_tests``).

Kept apart from :mod:`ragmetrics.cli.run_tests` so that module holds what the command does, this one
what it takes; the help texts and defaults are the user-facing contract of the command.
"""

from __future__ import annotations

import argparse
from typing import Any

from ragmetrics.cli._args import positive_float, positive_int, unit_float

__all__ = ["TEST_EPILOG", "test_parser"]

TEST_EPILOG = (
    "exit codes: 0 all passed, 1 a case failed or errored (or a regression with --fail-on-regression), "
    "2 usage error, 5 a case's judge is not reading its inputs (its claims' spans and quotes are not in "
    "the texts it was given: below --judge-health-min, or it failed its canaries)"
)


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


def test_parser(commands: Any) -> argparse.ArgumentParser:
    """The ``ragmetrics test`` parser with all its flags (its handler is set by the caller)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "test",
        help="run eval cases; gate on bounds and on regressions against a snapshot",
        description="Discover eval cases (files eval_*.py / *_eval.py under folders, and any file given) "
        "and run them, with the cases of any YAML/JSON suite file given (their recorded outputs are "
        "scored); print a table and exit non-zero when any fails.",
        epilog=TEST_EPILOG,
    )
    _selection_flags(parser)
    _judge_flags(parser)
    parser.add_argument("--junit-xml", metavar="PATH", help="also write JUnit XML for CI systems")
    parser.add_argument("--json", dest="json_path", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--format", choices=["text", "markdown"], default="text", help="table format (default text)"
    )
    _snapshot_flags(parser)
    return parser


def _selection_flags(parser: argparse.ArgumentParser) -> None:
    """What to run: the paths, the tag and keyword filters, the default bound."""
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


def _judge_flags(parser: argparse.ArgumentParser) -> None:
    """How the cases' judges run: concurrency, attempts, timeout, what suites may name, the judge gate."""
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
    _trust_flags(parser)
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


def _trust_flags(parser: argparse.ArgumentParser) -> None:
    """``--allow-*``: what suite files may name beyond the defaults."""
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


def _snapshot_flags(parser: argparse.ArgumentParser) -> None:
    """Saving the results as a snapshot and gating on the regressions against one."""
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
