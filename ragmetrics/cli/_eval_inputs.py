"""What ``ragmetrics eval`` and ``ragmetrics estimate`` both read: the data, the judge, the metrics.

Each building block checks one input before the first LLM call and raises :class:`UsageError` with a
one-line message the command prints with exit code 2; :func:`say` prints with control characters
escaped, so text from the data cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import sys
from itertools import islice
from pathlib import Path
from typing import Any, TextIO

from ragmetrics.cli._eval_gates import MetricValues
from ragmetrics.errors import ConfigError, MissingDependencyError, printable

__all__ = [
    "UsageError",
    "build_metrics",
    "column_map",
    "data_path",
    "judge_spec",
    "load_dataset",
    "say",
    "turn_options",
]


class UsageError(Exception):
    """A problem the user can fix; printed as one line, exit code 2."""


def data_path(args: argparse.Namespace) -> Path:
    """The file (or Phoenix server) to read: ``DATA``, an ``--example...`` or ``--traces``, checked."""
    if getattr(args, "example_conversations", False):
        if args.data or args.example or getattr(args, "traces", None):
            raise UsageError("give DATA, --example, --example-conversations or --traces, not more than one")
        from importlib import resources

        return Path(str(resources.files("ragmetrics") / "data" / "example_conversations.jsonl"))
    if getattr(args, "traces", None):
        if args.data or args.example:
            raise UsageError("give DATA, --example or --traces, not more than one")
        path = Path(args.traces)
        if args.traces.startswith("phoenix:"):
            return path  # a server, read by trace_data
        if not path.is_file():
            raise UsageError(f"--traces: no such file: {path}")
        return path
    if args.example:
        from importlib import resources

        return Path(str(resources.files("ragmetrics") / "data" / "example.jsonl"))
    if not args.data:
        raise UsageError("give a DATA file (.jsonl, .json, .csv or .parquet) or --example")
    path = Path(args.data)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    if path.suffix.lower() not in (".jsonl", ".ndjson", ".json", ".csv", ".parquet"):
        raise UsageError(
            f"{path}: unsupported file type '{path.suffix}'; use .jsonl, .json, .csv or .parquet"
        )
    return path


def column_map(text: str) -> dict[str, str]:
    """``--columns FIELD=COLUMN,...`` as a mapping of field to column name."""
    columns = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        field, sep, column = part.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise UsageError(f"--columns: expected FIELD=COLUMN, got {part!r}")
        columns[field.strip()] = column.strip()
    return columns


def judge_spec(args: argparse.Namespace, *, needs_key: bool = True) -> str:
    """The judge spec to use; checks it parses and, if it will be called, that it has a key."""
    from ragmetrics.settings import api_key_for, default_judge_spec, missing_key_message, parse_judge_spec

    spec = args.judge or default_judge_spec()
    try:
        settings = parse_judge_spec(spec)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    try:
        if needs_key and settings.provider != "offline":
            api_key_for(settings)
    except ConfigError:
        raise UsageError(missing_key_message(settings, command_line=True)) from None
    return spec


def build_metrics(
    args: argparse.Namespace, spec: Any, threshold: MetricValues | None, options: dict[str, Any] | None = None
) -> list[Any]:
    """The ``--metrics`` judged by ``spec``, with ``--threshold`` and ``--fail-under`` naming only them."""
    from ragmetrics.metrics import metric_from_name
    from ragmetrics.metrics.aliases import canonical_metric_name

    options = options or {}
    thresholds = threshold or MetricValues()
    names = [n.strip() for n in args.metrics.split(",") if n.strip()]
    if not names:
        raise UsageError("--metrics: give at least one metric name")
    try:
        metrics = [
            metric_from_name(
                name,
                llm=spec,
                threshold=thresholds.of(canonical_metric_name(name)),
                cache=not args.no_cache,
                **options,
            )
            for name in names
        ]
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    run = [getattr(m, "name", "") for m in metrics]
    for flag, values in (("--threshold", threshold), ("--fail-under", getattr(args, "fail_under", None))):
        unknown = values.unknown(run) if values is not None else []
        if unknown:
            raise UsageError(f"{flag}: {', '.join(unknown)} is not among the metrics run ({', '.join(run)})")
    return metrics


def turn_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--retrieval-tools`` and ``--history-budget-tokens`` as pipeline options (how turns are read)."""
    from ragmetrics.metrics.conversation.turns import DEFAULT_HISTORY_BUDGET_TOKENS

    tools = args.retrieval_tools
    names = None if tools is None else [n.strip() for n in tools.split(",") if n.strip()]
    budget = args.history_budget_tokens
    return {
        "retrieval_tools": names,
        "history_budget_tokens": DEFAULT_HISTORY_BUDGET_TOKENS if budget is None else budget,
    }


def load_dataset(
    path: Path,
    columns: dict[str, str],
    limit: int | None,
    encoding: str | None = None,
    turns: dict[str, Any] | None = None,
) -> Any:
    """The rows to score, with ``--columns`` checked against the first (all, or the first ``limit``).

    ``turns`` (:func:`turn_options`) says how conversations are read: ``limit`` counts their turns.
    """
    from ragmetrics.pipeline.dataset import Dataset, TurnOptions

    try:
        ds = Dataset(path, columns=columns, required=("answer",), encoding=encoding)
        if turns is not None:
            ds = ds.with_turns(
                TurnOptions.of(turns["retrieval_tools"], turns["history_budget_tokens"], "eval")
            )
        first = next(iter(ds.rows()), None)
        for field, column in columns.items():
            if first is not None and isinstance(first.values, dict) and field not in first.values:
                raise UsageError(
                    f"--columns: column {column!r} (for {field}) is not in the first row of {path}"
                )
        if limit is None:
            return ds
        # the rows as read: an unreadable one keeps its problem, so its error record says what it is
        return list(islice(ds.sample_rows(), limit))
    except (ConfigError, MissingDependencyError) as exc:
        raise UsageError(str(exc)) from None


def say(text: str, *, file: TextIO | None = None, json: bool = False) -> None:
    """Print ``text`` with control characters escaped (as JSON escapes when it is JSON)."""
    print(printable(text, multiline=True, json=json), file=file if file is not None else sys.stdout)
