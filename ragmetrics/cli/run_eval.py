"""``ragmetrics eval`` and ``ragmetrics estimate``: score a file of question/answer/contexts rows.

Everything a person can act on (a missing file, a bad column, an unknown metric or judge spec, a
missing API key, an output path that cannot be written) is one line on stderr and exit code 2, never a
traceback, and is found before the first LLM call. Everything printed passes through
:func:`~ragmetrics.errors.printable`, so text from the data cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import islice
from pathlib import Path
from typing import Any, TextIO

from ragmetrics.cli._args import (
    batch_from_flags,
    judge_options,
    output_problem,
    price_option,
)
from ragmetrics.cli._eval_flags import estimate_parser, eval_parser
from ragmetrics.cli._eval_gates import MetricValues, gate_exit_code
from ragmetrics.cli._eval_text import offline_note, summary_table, worst_heading, worst_samples
from ragmetrics.cli.trace_flags import finish_traces, trace_data
from ragmetrics.errors import (
    BatchPendingError,
    CacheError,
    ConfigError,
    JudgeError,
    MissingDependencyError,
    printable,
)

__all__ = ["add_estimate_command", "add_eval_command", "cmd_estimate", "cmd_eval"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_PENDING = 3
EXIT_BATCH = 4
EXIT_JUDGE = 5
_OUT_SUFFIXES = (".jsonl", ".ndjson", ".csv")
_REPORT_SUFFIXES = (".html", ".htm")


class _UsageError(Exception):
    """A problem the user can fix; printed as one line, exit code 2."""


def add_eval_command(commands: Any) -> None:
    """Register ``ragmetrics eval`` (its flags: :mod:`ragmetrics.cli._eval_flags`)."""
    eval_parser(commands).set_defaults(handler=cmd_eval)


def add_estimate_command(commands: Any) -> None:
    """Register ``ragmetrics estimate``."""
    estimate_parser(commands).set_defaults(handler=cmd_estimate)


# -- building blocks ----------------------------------------------------------------------------------
def _data_path(args: argparse.Namespace) -> Path:
    if getattr(args, "traces", None):
        if args.data or args.example:
            raise _UsageError("give DATA, --example or --traces, not more than one")
        path = Path(args.traces)
        if args.traces.startswith("phoenix:"):
            return path  # a server, read by trace_data
        if not path.is_file():
            raise _UsageError(f"--traces: no such file: {path}")
        return path
    if args.example:
        from importlib import resources

        return Path(str(resources.files("ragmetrics") / "data" / "example.jsonl"))
    if not args.data:
        raise _UsageError("give a DATA file (.jsonl, .json, .csv or .parquet) or --example")
    path = Path(args.data)
    if not path.is_file():
        raise _UsageError(f"no such file: {path}")
    if path.suffix.lower() not in (".jsonl", ".ndjson", ".json", ".csv", ".parquet"):
        raise _UsageError(
            f"{path}: unsupported file type '{path.suffix}'; use .jsonl, .json, .csv or .parquet"
        )
    return path


def _columns(text: str) -> dict[str, str]:
    columns = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        field, sep, column = part.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise _UsageError(f"--columns: expected FIELD=COLUMN, got {part!r}")
        columns[field.strip()] = column.strip()
    return columns


def _judge_spec(args: argparse.Namespace, *, needs_key: bool = True) -> str:
    """The judge spec to use; checks it parses and, if it will be called, that it has a key."""
    from ragmetrics.settings import api_key_for, default_judge_spec, missing_key_message, parse_judge_spec

    spec = args.judge or default_judge_spec()
    try:
        settings = parse_judge_spec(spec)
    except ConfigError as exc:
        raise _UsageError(str(exc)) from None
    try:
        if needs_key and settings.provider != "offline":
            api_key_for(settings)
    except ConfigError:
        raise _UsageError(missing_key_message(settings, command_line=True)) from None
    return spec


def _estimate_judge(spec: str, *, cache: bool, **prices: Any) -> Any:
    """The judge an estimate prices with: a provider judge built without its API key (never called)."""
    from ragmetrics.settings import parse_judge_spec

    if parse_judge_spec(spec).provider == "offline":
        return spec
    from ragmetrics.judge import make_judge, resolve_judge

    return resolve_judge(make_judge(spec, require_key=False, **prices), cache=cache)


def _metrics(
    args: argparse.Namespace, spec: Any, threshold: MetricValues | None, options: dict[str, Any] | None = None
) -> list[Any]:
    from ragmetrics.metrics import metric_from_name
    from ragmetrics.metrics.aliases import canonical_metric_name

    options = options or {}
    thresholds = threshold or MetricValues()
    names = [n.strip() for n in args.metrics.split(",") if n.strip()]
    if not names:
        raise _UsageError("--metrics: give at least one metric name")
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
        raise _UsageError(str(exc)) from None
    run = [getattr(m, "name", "") for m in metrics]
    for flag, values in (("--threshold", threshold), ("--fail-under", getattr(args, "fail_under", None))):
        unknown = values.unknown(run) if values is not None else []
        if unknown:
            raise _UsageError(f"{flag}: {', '.join(unknown)} is not among the metrics run ({', '.join(run)})")
    return metrics


def _dataset(path: Path, columns: dict[str, str], limit: int | None, encoding: str | None = None) -> Any:

    from ragmetrics.pipeline.dataset import Dataset

    try:
        ds = Dataset(path, columns=columns, required=("answer",), encoding=encoding)
        first = next(iter(ds.rows()), None)
        for field, column in columns.items():
            if first is not None and isinstance(first.values, dict) and field not in first.values:
                raise _UsageError(
                    f"--columns: column {column!r} (for {field}) is not in the first row of {path}"
                )
        if limit is None:
            return ds
        # the rows as read: an unreadable one keeps its problem, so its error record says what it is
        return list(islice(ds.rows(), limit))
    except (ConfigError, MissingDependencyError) as exc:
        raise _UsageError(str(exc)) from None


def _say(text: str, *, file: TextIO | None = None, json: bool = False) -> None:
    """Print ``text`` with control characters escaped (as JSON escapes when it is JSON)."""
    print(printable(text, multiline=True, json=json), file=file if file is not None else sys.stdout)


def _check_outputs(args: argparse.Namespace, data: Path) -> None:
    """Refuse an output path that cannot be written, before anything is scored."""
    for path, flag, suffixes in (
        (args.out, "--out", _OUT_SUFFIXES),
        (args.report, "--report", _REPORT_SUFFIXES),
        (args.junit_xml, "--junit-xml", (".xml",)),
    ):
        if not path:
            continue
        problem = output_problem(path, flag, suffixes)
        if problem:
            raise _UsageError(problem)
        if not args.example and Path(path).absolute().resolve() == data.absolute().resolve():
            raise _UsageError(f"{flag}: {path} is the input file; write the results elsewhere")


# -- commands -----------------------------------------------------------------------------------------
def cmd_eval(args: argparse.Namespace) -> int:
    """Run ``ragmetrics eval``; returns the exit code."""
    try:
        return _eval(args)
    except _UsageError as exc:
        _say(f"ragmetrics eval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _eval(args: argparse.Namespace) -> int:
    path = _data_path(args)
    _check_outputs(args, path)
    try:
        batch = batch_from_flags(args)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    spec = _judge_spec(args)
    max_unscored = _max_unscored(args.max_unscored)
    metrics = _metrics(args, spec, args.threshold, {**judge_options(args), **price_option(args, spec)})
    cursor = None
    if getattr(args, "traces", None):
        try:
            data, cursor, done = trace_data(args)
        except ConfigError as exc:
            raise _UsageError(str(exc)) from None
        if done:
            _say(done)
            return EXIT_OK
    else:
        data = _dataset(path, _columns(args.columns), args.limit, args.encoding)
    notice = sys.stderr if args.json else sys.stdout
    from ragmetrics.metrics.base import needs_of

    judged = any(needs_of(m).judge for m in metrics)
    if args.quiet or not judged:
        pass  # --quiet prints no banner; a run of only non-judged evaluators has no judge to name
    elif spec == "offline" and not args.judge:
        _say(
            "ragmetrics: no judge configured, so scoring with the offline heuristic judge (lexical "
            "overlap, not an LLM). Set OPENAI_API_KEY or ANTHROPIC_API_KEY, set RAGMETRICS_JUDGE, or pass "
            "--judge SPEC (openai:gpt-4o-mini, azure:DEPLOYMENT@URL, gemini:MODEL, bedrock:MODEL, ...); "
            "--judge offline keeps the heuristic without this notice.",
            file=notice,
        )
    elif spec == "offline":
        _say(
            "ragmetrics: scoring with the offline heuristic judge (lexical overlap, not an LLM).", file=notice
        )
    else:
        how = " through its batch API (half price; waits for the batches)" if batch is not None else ""
        _say(f"ragmetrics: judging with {spec}{how}.", file=notice)

    from ragmetrics.pipeline import EvaluationPipeline

    try:
        pipeline = EvaluationPipeline(
            metrics=metrics,
            concurrency=args.concurrency,
            max_cost_usd=args.max_cost,
            max_calls=args.max_calls,
            progress=False if (args.quiet or args.json) else None,
            batch=batch if batch is not None else False,
            judge_health_min=None if args.no_judge_gate else _judge_health_min(args),
            canaries=args.canaries,
        )
        results = pipeline.run(data)
    except ConfigError as exc:
        raise _UsageError(str(exc)) from None
    except BatchPendingError as exc:
        _say(f"ragmetrics eval: {exc}", file=sys.stderr)
        return EXIT_PENDING
    except (JudgeError, CacheError) as exc:
        if batch is None:
            raise
        _say(f"ragmetrics eval: {exc}", file=sys.stderr)
        return EXIT_BATCH
    report = results.summary()
    if args.out:
        if Path(args.out).suffix.lower() == ".csv":
            results.to_csv(args.out)
        else:
            results.to_jsonl(args.out)
    if args.report:
        from ragmetrics.report import write_html_report

        write_html_report(report, args.report, title=path.name)
    try:
        after, export_failed = finish_traces(args, cursor, results)
    except MissingDependencyError as exc:
        raise _UsageError(str(exc)) from None
    for line in after:
        _say(line, file=sys.stderr if args.json else None)
    stats = report.run
    if args.json:
        _say(report.model_dump_json(exclude={"records"}, indent=2), json=True)
    elif not args.quiet:
        _say("")
        for canary in report.canaries:  # a judge failing them first: no score of it means anything
            if canary.failed:
                _say(f"canaries, {canary.judge}: {canary.describe()}")
        _say(summary_table(report))
        usage = stats.usage
        tokens = usage.prompt_tokens + usage.completion_tokens
        # a run that called no LLM and hit no cache (the offline judge) has no cache to speak of: its
        # shared requests (one answer for the metrics asking the same) saved nothing
        cache = (
            f"cache hits {stats.cache.hits}, {stats.cache.shared} shared, "
            if usage.calls or stats.cache.hits
            else ""
        )
        _say(
            f"\n{stats.samples} samples, {usage.describe()}, {tokens} "
            f"tokens, ${usage.cost_usd:.4f}, {cache}{stats.wall_time_s:.1f} s"
        )
        for health in report.judge_health.values():
            _say(f"judge health, {health.judge}: {health.describe()}")
        for canary in report.canaries:
            if not canary.failed:
                _say(f"canaries, {canary.judge}: {canary.describe()}")
        note = offline_note(report)  # what the offline judge misses, before any of its low scores
        if note:
            _say("\n" + note)
        worst = worst_samples(results, args.worst)
        if worst:
            _say(f"\n{worst_heading(results, args.worst)}\n{worst}")
        for name, target in (("records", args.out), ("report", args.report)):
            if target:
                _say(f"\nWrote the {name} to {target}")
    code = _gates(args, report, max_unscored)
    if export_failed:
        _say(f"ragmetrics eval: {export_failed}", file=sys.stderr)
        return code or EXIT_FAIL
    return code


def _judge_health_min(args: argparse.Namespace) -> float:
    from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN

    return JUDGE_HEALTH_MIN if args.judge_health_min is None else float(args.judge_health_min)


def _max_unscored(text: str) -> Any:
    from ragmetrics.pipeline.gate import UnscoredLimit

    try:
        return UnscoredLimit.of(text)
    except ConfigError as exc:
        raise _UsageError(f"--max-unscored: {str(exc).removeprefix('max_unscored: ')}") from None


def _gates(args: argparse.Namespace, report: Any, max_unscored: Any) -> int:
    """The exit code of the gates (see :func:`ragmetrics.cli._eval_gates.gate_exit_code`).

    Failed canaries are reported first and exit 5, like the judge gate.
    """
    from ragmetrics.pipeline.canaries import canary_message

    failed_canaries = [] if args.no_judge_gate else [c for c in report.canaries if c.failed]
    if failed_canaries:  # reported first, with the judge gate: the judge is not judging
        _say(f"ragmetrics eval: {canary_message(failed_canaries)}", file=sys.stderr)
    code = gate_exit_code(args, report, max_unscored, say=lambda line: _say(line, file=sys.stderr))
    if failed_canaries:
        return EXIT_JUDGE
    return {"judge": EXIT_JUDGE, "gate": EXIT_FAIL}.get(code, EXIT_OK)


def cmd_estimate(args: argparse.Namespace) -> int:
    """Run ``ragmetrics estimate``; returns the exit code."""
    try:
        path = _data_path(args)
        spec = _judge_spec(args, needs_key=False)  # an estimate calls nothing, so it needs no key
        metrics = _metrics(
            args, _estimate_judge(spec, cache=not args.no_cache, **price_option(args, spec)), None
        )
        data = _dataset(path, _columns(args.columns), args.limit, args.encoding)
        from ragmetrics.pipeline import EvaluationPipeline

        try:
            estimate = EvaluationPipeline(metrics=metrics, canaries=args.canaries).estimate(
                data, check_cache=not args.no_cache
            )
        except ConfigError as exc:
            raise _UsageError(str(exc)) from None
    except _UsageError as exc:
        _say(f"ragmetrics estimate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    estimate.notes.extend(_consent_notes(args, estimate))
    if args.json:
        _say(json.dumps(estimate.model_dump(), indent=2), json=True)
    else:
        _say(f"judge: {spec}")
        _say(str(estimate))
    return EXIT_OK


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
