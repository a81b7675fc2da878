"""What the subcommands check before doing any work: argparse value types and output paths.

A value type raises ``argparse.ArgumentTypeError``, which argparse turns into its one-line usage error
and exit code 2; :func:`output_problem` says what is wrong with a path the command would write, so
that ``ragmetrics eval`` and ``ragmetrics test`` refuse it before the first LLM call, not after them.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "EXIT_BATCH",
    "EXIT_FAIL",
    "EXIT_JUDGE",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_PIPE",
    "EXIT_USAGE",
    "add_batch_flags",
    "batch_from_flags",
    "count",
    "judge_health_min",
    "judge_options",
    "non_negative_float",
    "output_problem",
    "positive_float",
    "positive_int",
    "price_option",
    "price_pair",
    "unit_float",
]

# The exit codes of every command (the table in ``ragmetrics eval --help`` and docs/cli.md), written once
EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_PENDING = 3  # provider batches still running after --max-wait
EXIT_BATCH = 4  # the provider's batch API failed or the batch ledger is damaged
EXIT_JUDGE = 5  # a judge is not reading its inputs or failed its canaries
EXIT_PIPE = 141  # 128 + SIGPIPE: stdout's reader went away (`... | head -1`)


def unit_float(text: str) -> float:
    """A number in [0, 1] (``nan`` is refused: no score is ever compared true against it)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0 (``nan`` and ``inf`` are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0.0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (``0``, ``nan`` and ``inf`` are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def _whole(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {value}")
    return value


def price_pair(text: str) -> tuple[float, float]:
    """``IN,OUT``: USD per million input and output tokens, two finite numbers >= 0."""
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(
            f"expected IN,OUT (USD per million tokens, e.g. 0.8,4), got {text!r}"
        )
    return non_negative_float(parts[0].strip()), non_negative_float(parts[1].strip())


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    return _whole(text, 1)


def count(text: str) -> int:
    """A whole number >= 0."""
    return _whole(text, 0)


def _writable_dir(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def output_problem(
    path: str, flag: str, suffixes: Sequence[str], *, create_folders: bool = False
) -> str | None:
    """What is wrong with writing ``path`` (given as ``flag``), or None when it can be written.

    Args:
        path: The path as given on the command line.
        flag: The option naming it, for the message (``--out``).
        suffixes: The file name endings the writer knows (``.jsonl``, ``.csv``); empty for a folder.
        create_folders: Missing parent folders will be created, so the nearest existing one must be
            a writable folder; otherwise the parent itself must exist and be writable.
    """
    target = Path(path)
    if suffixes and target.suffix.lower() not in suffixes:
        names = ", ".join(suffixes[:-1]) + " or " + suffixes[-1] if len(suffixes) > 1 else suffixes[0]
        return f"{flag}: use a {names} file name, got {path}"
    if not suffixes and target.exists() and not target.is_dir():
        return f"{flag}: {path} exists and is not a folder"
    if suffixes and target.is_dir():
        return f"{flag}: {path} is a folder; give a file name"
    parent = target if not suffixes else target.parent  # as given, for the messages
    if create_folders or not suffixes:
        while not parent.absolute().exists() and parent.absolute().parent != parent.absolute():
            parent = parent.parent
    if not parent.absolute().exists():
        return f"{flag}: folder {parent} does not exist; create it first"
    if not parent.absolute().is_dir():
        return f"{flag}: {parent} is not a folder"
    if not _writable_dir(parent) or (target.is_file() and not os.access(target, os.W_OK)):
        return f"{flag}: cannot write {path} (no write permission in {parent})"
    return None


def add_batch_flags(parser: argparse.ArgumentParser) -> None:
    """``--batch`` and its companions, for ``ragmetrics eval`` and ``ragmetrics generate``."""
    group = parser.add_argument_group(
        "provider batch APIs",
        "send the judge requests through the OpenAI Batch API or Anthropic Message Batches at half price; "
        "results come back within the providers' 24 h window (often minutes), so leave the run waiting "
        "or stop it and collect later with --resume",
    )
    group.add_argument("--batch", action="store_true", help="judge through the provider's batch API")
    group.add_argument(
        "--resume",
        action="store_true",
        help="with --batch: continue the unfinished batches of an earlier run instead of refusing to start",
    )
    group.add_argument(
        "--batch-dir",
        metavar="DIR",
        help="with --batch: the folder that remembers the batches (default: batches/ in the cache folder)",
    )
    group.add_argument(
        "--poll-interval",
        type=non_negative_float,
        metavar="SECONDS",
        help="with --batch: seconds between polls of a running batch (default 60)",
    )
    group.add_argument(
        "--max-wait",
        type=non_negative_float,
        metavar="SECONDS",
        help="with --batch: stop waiting after SECONDS (exit 3; run again with --resume to collect)",
    )


def batch_from_flags(args: argparse.Namespace) -> dict[str, object] | None:
    """The ``batch=`` options the flags ask for, or None for a real-time run.

    Raises:
        ValueError: A batch flag without ``--batch`` (the message names it).
    """
    given = [
        flag
        for flag, value in (
            ("--resume", args.resume),
            ("--batch-dir", args.batch_dir),
            ("--poll-interval", args.poll_interval),
            ("--max-wait", args.max_wait),
        )
        if value not in (None, False)
    ]
    if not args.batch:
        if given:
            raise ValueError(f"{', '.join(given)} only apply with --batch")
        return None
    options: dict[str, object] = {"resume": bool(args.resume)}
    if not (args.quiet or args.json):
        options["notify"] = lambda message: print(f"ragmetrics: {message}", file=sys.stderr, flush=True)
    if args.batch_dir:
        options["directory"] = args.batch_dir
    if args.poll_interval is not None:
        options["poll_interval_s"] = args.poll_interval
    if args.max_wait is not None:
        options["max_wait_s"] = args.max_wait
    return options


def price_option(args: argparse.Namespace, spec: Any) -> dict[str, Any]:
    """``prices=`` for the judge: the price table with ``--price-per-mtok`` for its model, if given."""
    from ragmetrics.judge.pricing import load_prices
    from ragmetrics.settings import parse_judge_spec, prices_file

    if args.price_per_mtok is None or not isinstance(spec, str):
        return {}
    settings, table = parse_judge_spec(spec), load_prices(prices_file())
    table.setdefault(settings.provider, {})[settings.model] = args.price_per_mtok
    return {"prices": table}


def judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """Judge settings from the flags: requests in flight, attempts per request, request timeout."""
    options: dict[str, Any] = {"max_concurrency": args.judge_concurrency or max(16, args.concurrency)}
    if args.max_attempts is not None:
        options["max_attempts"] = args.max_attempts
    if args.timeout is not None:
        options["timeout_s"] = args.timeout
    if getattr(args, "judge_server", None):
        options["server"] = args.judge_server
    return options


def judge_health_min(args: argparse.Namespace) -> float:
    """The judge gate's threshold: ``--judge-health-min``, else the pipeline's default."""
    from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN

    return JUDGE_HEALTH_MIN if args.judge_health_min is None else float(args.judge_health_min)
