"""``ragmetrics estimate``: predict the calls, tokens and cost of ``ragmetrics eval``, calling nothing.

It reads the same data and takes the same judge, metric and budget flags as ``eval`` (checked by the
same building blocks, :mod:`ragmetrics.cli._eval_inputs`), and needs no API key: the judge is priced,
never called. Exit codes: 0 done, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ragmetrics.cli._args import EXIT_OK, EXIT_USAGE, price_option
from ragmetrics.cli._eval_flags import estimate_parser
from ragmetrics.cli._eval_inputs import (
    UsageError,
    build_metrics,
    column_map,
    data_path,
    judge_spec,
    load_dataset,
    say,
    turn_options,
)
from ragmetrics.errors import ConfigError

__all__ = ["add_estimate_command", "cmd_estimate"]


def add_estimate_command(commands: Any) -> None:
    """Register ``ragmetrics estimate`` (its flags: :mod:`ragmetrics.cli._eval_flags`)."""
    estimate_parser(commands).set_defaults(handler=cmd_estimate)


def cmd_estimate(args: argparse.Namespace) -> int:
    """Run ``ragmetrics estimate``; returns the exit code."""
    try:
        path = data_path(args)
        spec = judge_spec(args, needs_key=False)  # an estimate calls nothing, so it needs no key
        metrics = build_metrics(
            args, _estimate_judge(spec, cache=not args.no_cache, **price_option(args, spec)), None
        )
        turns = turn_options(args)
        data = load_dataset(path, column_map(args.columns), args.limit, args.encoding, turns)
        from ragmetrics.pipeline import EvaluationPipeline

        try:
            pipeline = EvaluationPipeline(metrics=metrics, canaries=args.canaries, **turns)
            estimate = pipeline.estimate(data, check_cache=not args.no_cache)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    except UsageError as exc:
        say(f"ragmetrics estimate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    estimate.notes.extend(_consent_notes(args, estimate))
    if args.json:
        say(json.dumps(estimate.model_dump(), indent=2), json=True)
    else:
        say(f"judge: {spec}")
        say(str(estimate))
    return EXIT_OK


def _estimate_judge(spec: str, *, cache: bool, **prices: Any) -> Any:
    """The judge an estimate prices with: a provider judge built without its API key (never called)."""
    from ragmetrics.settings import parse_judge_spec

    if parse_judge_spec(spec).provider == "offline":
        return spec
    from ragmetrics.judge import make_judge, resolve_judge

    return resolve_judge(make_judge(spec, require_key=False, **prices), cache=cache)


def _consent_notes(args: argparse.Namespace, estimate: Any) -> list[str]:
    """What holds the run's spending: the budget's consent per judge (priced, price given, call cap)."""
    notes: list[str] = []
    if args.max_calls is not None:
        notes.append(
            f"call cap: --max-calls {args.max_calls} (this run needs about {estimate.calls} calls; "
            "rows past the cap are skipped)"
        )
    if args.max_cost is None:
        return notes
    for spec, judge in estimate.judges.items():
        if args.price_per_mtok is not None:
            how = f"price given (--price-per-mtok {args.price_per_mtok[0]:g},{args.price_per_mtok[1]:g})"
        elif judge.priced:
            how = "priced (the price table names it)"
        elif args.max_calls is not None:
            how = (
                f"not priced: its calls count $0, so the call cap --max-calls {args.max_calls} holds the run"
            )
        else:
            how = "not priced: eval refuses to start (give --price-per-mtok IN,OUT or --max-calls N)"
        notes.append(f"budget --max-cost ${args.max_cost:g} for {spec}: {how}")
    return notes
