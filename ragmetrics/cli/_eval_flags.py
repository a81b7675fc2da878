"""The flags of ``ragmetrics eval`` and ``ragmetrics estimate`` (handlers: ``run_eval``, ``run_estimate``).

Kept apart from :mod:`ragmetrics.cli.run_eval` so that module holds what the commands do, this one
what they take; the help texts and defaults are the user-facing contract of both commands.
"""

from __future__ import annotations

import argparse
from typing import Any

from ragmetrics.cli._args import (
    add_batch_flags,
    count,
    non_negative_float,
    positive_float,
    positive_int,
    price_pair,
    unit_float,
)
from ragmetrics.cli._eval_gates import MetricValues, metric_values
from ragmetrics.cli.trace_flags import add_trace_flags
from ragmetrics.settings import SERVER_KINDS

__all__ = [
    "DEFAULT_METRICS",
    "ESTIMATE_EPILOG",
    "EVAL_EPILOG",
    "common_flags",
    "estimate_parser",
    "eval_parser",
]

DEFAULT_METRICS = "faithfulness,relevancy,groundedness"
EVAL_EPILOG = (
    "exit codes: 0 done, 1 a quality gate failed (a metric scored no sample, more samples went unscored "
    "than --max-unscored allows, or a metric's mean is below --fail-under), 2 usage error "
    "(missing file, bad column, unknown metric or judge, missing API key, unwritable output path), "
    "3 provider batches still running after --max-wait (run again with --resume), "
    "4 --batch: the provider's batch API failed or the batch ledger is damaged (the message says what "
    "to do), "
    "5 the judge is not reading its inputs (its claims' spans and quotes are not in the texts it was "
    "given: below --judge-health-min, or it failed its canaries)"
)
ESTIMATE_EPILOG = (
    "exit codes: 0 done, 2 usage error (missing file, bad column, unknown metric or judge, missing API key)"
)


def common_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "data", nargs="?", metavar="DATA", help="a .jsonl, .json, .csv or .parquet file of rows"
    )
    parser.add_argument("--example", action="store_true", help="use the bundled example dataset")
    parser.add_argument(
        "--example-conversations",
        action="store_true",
        help="use the bundled example conversations (chats and tool-calling agents, scored turn by turn)",
    )
    parser.add_argument(
        "--metrics",
        default=DEFAULT_METRICS,
        metavar="NAMES",
        help=f"comma-separated metric names or import paths package.module:attr (default {DEFAULT_METRICS})",
    )
    parser.add_argument(
        "--judge",
        metavar="SPEC",
        help="openai:MODEL, anthropic:MODEL, openai:MODEL@http://host:port/v1, azure:DEPLOYMENT@URL, "
        "gemini:MODEL, bedrock:MODEL, vertex:MODEL or offline (default: from the environment)",
    )
    parser.add_argument(
        "--price-per-mtok",
        type=price_pair,
        metavar="IN,OUT",
        help="the judge model's price in USD per million input,output tokens (for a model the table lacks)",
    )
    parser.add_argument(
        "--columns",
        metavar="FIELD=COL,...",
        default="",
        help="column names, e.g. question=query,answer=response,contexts=docs",
    )
    parser.add_argument("--limit", type=positive_int, metavar="N", help="score only the first N rows")
    parser.add_argument(
        "--max-cost", type=non_negative_float, metavar="USD", help="stop launching samples past this cost"
    )
    parser.add_argument(
        "--max-calls",
        type=count,
        metavar="N",
        help="send at most N judge calls in the run (retries and re-asks included); the rows past it are "
        "skipped. Also the consent --max-cost needs for a model the price table lacks",
    )
    parser.add_argument(
        "--encoding",
        metavar="NAME",
        help="the file's text encoding, e.g. cp1252 or latin-1 (default UTF-8; a byte order mark wins)",
    )
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the judge cache")
    _conversation_flags(parser)


def _conversation_flags(parser: argparse.ArgumentParser) -> None:
    """How conversations (rows with ``messages``) are read: one sample per assistant turn."""
    parser.add_argument(
        "--retrieval-tools",
        metavar="NAMES",
        help="conversations: the comma-separated tool names whose results are a turn's evidence "
        "(default: every tool's)",
    )
    parser.add_argument(
        "--history-budget-tokens",
        type=count,
        metavar="N",
        help="conversations: estimated tokens of earlier messages sent with each turn; the oldest are cut "
        "first (default 2000)",
    )


def eval_parser(commands: Any) -> argparse.ArgumentParser:
    """The ``ragmetrics eval`` parser with all its flags (its handler is set by the caller)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "eval",
        help="score a dataset of question/answer/contexts rows",
        description="Score every row with the RAG metrics, print a summary and the worst samples, "
        "and optionally write the records and an HTML report.",
        epilog=EVAL_EPILOG,
    )
    common_flags(parser)
    parser.add_argument("--out", metavar="PATH", help="write the records to PATH (.jsonl or .csv)")
    parser.add_argument("--report", metavar="PATH", help="write a self-contained HTML report to PATH (.html)")
    _request_flags(parser)
    _gate_flags(parser)
    parser.add_argument("--worst", type=count, default=3, metavar="N", help="worst samples to show (3)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no tables")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON (for machines)")
    add_trace_flags(parser)
    add_batch_flags(parser)
    return parser


def _request_flags(parser: argparse.ArgumentParser) -> None:
    """Samples and judge requests in flight, attempts per request, the reply timeout."""
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=16,
        metavar="N",
        help="samples in flight (16); also raises the judge's requests in flight to N when N > 16",
    )
    parser.add_argument(
        "--judge-concurrency",
        type=positive_int,
        metavar="N",
        help="LLM requests in flight at once, over all samples (default: the larger of 16 and --concurrency)",
    )
    parser.add_argument(
        "--max-attempts",
        type=positive_int,
        metavar="N",
        help="attempts per LLM request on 429, 5xx, timeouts and connection errors (default 6)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        metavar="SECONDS",
        help="seconds to wait for each judge reply (default 60; raise it for slow local models)",
    )
    parser.add_argument(
        "--sample-timeout",
        type=positive_float,
        metavar="SECONDS",
        help="wall time per sample, all its metrics and calls: past it, what is unfinished ends with "
        "status timeout (its calls counted) and the run goes on (default: none)",
    )
    parser.add_argument(
        "--judge-server",
        choices=SERVER_KINDS,
        metavar="KIND",
        help="what serves an OpenAI-compatible judge: openai (a hosted API), or a local llama-cpp-python, "
        "llama.cpp, ollama, vllm or lmstudio server, which gets a schema it enforces while decoding and "
        "bounded replies (default auto: asked of the server's GET /models)",
    )


def _gate_flags(parser: argparse.ArgumentParser) -> None:
    """The pass marks and the gates the exit code follows (scores, unscored samples, the judge)."""
    parser.add_argument(
        "--threshold",
        type=metric_values,
        default=MetricValues(0.5),
        metavar="SCORE|METRIC=SCORE,...",
        help="pass mark for pass rates: one for every metric (default 0.5) or per metric "
        "(faithfulness=0.8,relevancy=0.6; 0.5,faithfulness=0.8 sets the others too)",
    )
    parser.add_argument(
        "--fail-under",
        type=metric_values,
        metavar="SCORE|METRIC=SCORE,...",
        help="exit 1 when a metric's mean is below SCORE (or its own: faithfulness=0.8,relevancy=0.6)",
    )
    parser.add_argument(
        "--junit-xml",
        metavar="PATH",
        help="also write JUnit XML: a testcase per metric, failing as the gates",
    )
    parser.add_argument(
        "--max-unscored",
        default="0",
        metavar="LIMIT",
        help="samples per metric that may go without a score before the run exits 1: a count (3), "
        "a share (0.1) or a percentage (10%%); default 0, none. A metric scoring no sample always fails",
    )
    parser.add_argument(
        "--judge-health-min",
        type=unit_float,
        default=None,
        metavar="SHARE",
        help="exit 5 when a judge's reading rate (the lower of the shares of its claim spans found in the "
        "answers and of its quotes found in the contexts) is below SHARE (default 0.5)",
    )
    parser.add_argument(
        "--no-judge-gate",
        action="store_true",
        help="do not fail the run on the judge's health or its canaries",
    )
    parser.add_argument(
        "--canaries",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="put known-answer probes to each judge first (on by default; at most 4 cached calls per "
        "judge, 0 for the offline judge); a judge failing them exits 5. --no-canaries leaves them out",
    )


def estimate_parser(commands: Any) -> argparse.ArgumentParser:
    """The ``ragmetrics estimate`` parser with all its flags (its handler is set by the caller)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "estimate",
        help="predict the calls, tokens and cost of an eval run, calling nothing",
        description="Predict LLM calls, tokens and cost of `ragmetrics eval` on the same data.",
        epilog=ESTIMATE_EPILOG,
    )
    common_flags(parser)
    parser.add_argument("--json", action="store_true", help="print the estimate as JSON")
    parser.add_argument(
        "--canaries",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="count the canaries' calls (on by default, as eval; --no-canaries as eval --no-canaries)",
    )
    return parser
