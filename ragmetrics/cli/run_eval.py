"""``ragmetrics eval``: score a file of question/answer/contexts rows, print and gate the results.

Everything a person can act on (a missing file, a bad column, an unknown metric or judge spec, a
missing API key, an output path that cannot be written) is one line on stderr and exit code 2, never a
traceback, and is found before the first LLM call (the checks: :mod:`ragmetrics.cli._eval_inputs`).
Everything printed passes through :func:`~ragmetrics.errors.printable`, so text from the data
cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics._aio import collector_held
from ragmetrics.cli._args import (
    EXIT_BATCH,
    EXIT_FAIL,
    EXIT_JUDGE,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_USAGE,
    batch_from_flags,
    judge_health_min,
    judge_options,
    output_problem,
    price_option,
)
from ragmetrics.cli._eval_flags import eval_parser
from ragmetrics.cli._eval_gates import gate_exit_code
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
from ragmetrics.cli._eval_text import (
    conversation_table,
    offline_note,
    summary_table,
    worst_heading,
    worst_samples,
)
from ragmetrics.cli.trace_flags import finish_traces, trace_data
from ragmetrics.errors import BatchPendingError, CacheError, ConfigError, JudgeError, MissingDependencyError

if TYPE_CHECKING:
    from ragmetrics.pipeline import EvaluationResults

__all__ = ["add_eval_command", "cmd_eval"]

_OUT_SUFFIXES = (".jsonl", ".ndjson", ".csv")
_REPORT_SUFFIXES = (".html", ".htm")


def add_eval_command(commands: Any) -> None:
    """Register ``ragmetrics eval`` (its flags: :mod:`ragmetrics.cli._eval_flags`)."""
    eval_parser(commands).set_defaults(handler=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    """Run ``ragmetrics eval``; returns the exit code."""
    try:
        with collector_held():  # until the first judge call or record: see ragmetrics._aio.collector_held
            return _eval(args)
    except UsageError as exc:
        say(f"ragmetrics eval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _eval(args: argparse.Namespace) -> int:
    path = data_path(args)
    _check_outputs(args, path)
    try:
        batch = batch_from_flags(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    spec = judge_spec(args)
    max_unscored = _max_unscored(args.max_unscored)
    metrics = build_metrics(args, spec, args.threshold, {**judge_options(args), **price_option(args, spec)})
    data, cursor, done = _rows(args, path)
    if done:
        say(done)
        return EXIT_OK
    _banner(args, spec, metrics, batch)
    results = _run(args, metrics, data, batch)
    if isinstance(results, int):
        return results
    report = results.summary()
    _write_files(args, results, report, path)
    try:
        after, export_failed = finish_traces(args, cursor, results)
    except MissingDependencyError as exc:
        raise UsageError(str(exc)) from None
    for line in after:
        say(line, file=sys.stderr if args.json else None)
    if args.json:
        say(report.model_dump_json(exclude={"records"}, indent=2), json=True)
    elif not args.quiet:
        _print_summary(args, results, report)
    code = _gates(args, report, max_unscored)
    if export_failed:
        say(f"ragmetrics eval: {export_failed}", file=sys.stderr)
        return code or EXIT_FAIL
    return code


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
            raise UsageError(problem)
        bundled = args.example or args.example_conversations
        if not bundled and Path(path).absolute().resolve() == data.absolute().resolve():
            raise UsageError(f"{flag}: {path} is the input file; write the results elsewhere")


def _rows(args: argparse.Namespace, path: Path) -> tuple[Any, Any, str | None]:
    """The rows to score, the ``--incremental`` cursor, and the line to print when there is nothing new."""
    if not getattr(args, "traces", None):
        turns = turn_options(args)
        return load_dataset(path, column_map(args.columns), args.limit, args.encoding, turns), None, None
    try:
        return trace_data(args)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _banner(args: argparse.Namespace, spec: str, metrics: list[Any], batch: Any) -> None:
    """Say which judge scores the run (on stderr with ``--json``); nothing with ``--quiet``."""
    from ragmetrics.metrics.base import needs_of

    notice = sys.stderr if args.json else sys.stdout
    judged = any(needs_of(m).judge for m in metrics)
    if args.quiet or not judged:
        pass  # --quiet prints no banner; a run of only non-judged evaluators has no judge to name
    elif spec == "offline" and not args.judge:
        say(
            "ragmetrics: no judge configured, so scoring with the offline heuristic judge (lexical "
            "overlap, not an LLM). Set OPENAI_API_KEY or ANTHROPIC_API_KEY, set RAGMETRICS_JUDGE, or pass "
            "--judge SPEC (openai:gpt-4o-mini, azure:DEPLOYMENT@URL, gemini:MODEL, bedrock:MODEL, ...); "
            "--judge offline keeps the heuristic without this notice.",
            file=notice,
        )
    elif spec == "offline":
        say(
            "ragmetrics: scoring with the offline heuristic judge (lexical overlap, not an LLM).", file=notice
        )
    else:
        how = " through its batch API (half price; waits for the batches)" if batch is not None else ""
        say(f"ragmetrics: judging with {spec}{how}.", file=notice)


def _run(args: argparse.Namespace, metrics: list[Any], data: Any, batch: Any) -> EvaluationResults | int:
    """Score ``data``; the results, or the exit code of a run stopped by its batches."""
    from ragmetrics.pipeline import EvaluationPipeline

    try:
        pipeline = EvaluationPipeline(
            metrics=metrics,
            concurrency=args.concurrency,
            max_cost_usd=args.max_cost,
            max_calls=args.max_calls,
            progress=False if (args.quiet or args.json) else None,
            batch=batch if batch is not None else False,
            judge_health_min=None if args.no_judge_gate else judge_health_min(args),
            canaries=args.canaries,
            timeout_per_sample_s=args.sample_timeout,
            **turn_options(args),
        )
        return pipeline.run(data)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except BatchPendingError as exc:
        say(f"ragmetrics eval: {exc}", file=sys.stderr)
        return EXIT_PENDING
    except (JudgeError, CacheError) as exc:
        if batch is None:
            raise
        say(f"ragmetrics eval: {exc}", file=sys.stderr)
        return EXIT_BATCH


def _write_files(args: argparse.Namespace, results: EvaluationResults, report: Any, path: Path) -> None:
    """Write ``--out`` (records, .csv or .jsonl) and ``--report`` (HTML)."""
    if args.out:
        if Path(args.out).suffix.lower() == ".csv":
            results.to_csv(args.out)
        else:
            results.to_jsonl(args.out)
    if args.report:
        from ragmetrics.report import write_html_report

        write_html_report(report, args.report, title=path.name)


def _print_summary(args: argparse.Namespace, results: EvaluationResults, report: Any) -> None:
    """The terminal summary: failed canaries first, the table, the run's figures, the worst samples."""
    say("")
    for canary in report.canaries:  # a judge failing them first: no score of it means anything
        if canary.failed:
            say(f"canaries, {canary.judge}: {canary.describe()}")
    say(summary_table(report))
    if report.conversations:
        say("\n" + conversation_table(report))
    say(_run_line(report.run))
    for health in report.judge_health.values():
        say(f"judge health, {health.judge}: {health.describe()}")
    for canary in report.canaries:
        if not canary.failed:
            say(f"canaries, {canary.judge}: {canary.describe()}")
    note = offline_note(report)  # what the offline judge misses, before any of its low scores
    if note:
        say("\n" + note)
    from ragmetrics.pipeline.records import RecordScan

    scan = RecordScan(results, args.worst)
    worst = worst_samples(scan)
    if worst:
        say(f"\n{worst_heading(scan.worst)}\n{worst}")
    for name, target in (("records", args.out), ("report", args.report)):
        if target:
            say(f"\nWrote the {name} to {target}")


def _run_line(stats: Any) -> str:
    """The run's samples, calls, tokens, cost, cache use and time, on one line after a blank one."""
    usage = stats.usage
    tokens = usage.prompt_tokens + usage.completion_tokens
    # a run that called no LLM and hit no cache (the offline judge) has no cache to speak of: its
    # shared requests (one answer for the metrics asking the same) saved nothing
    cache = (
        f"cache hits {stats.cache.hits}, {stats.cache.shared} shared, "
        if usage.calls or stats.cache.hits
        else ""
    )
    return (
        f"\n{stats.samples} samples, {usage.describe()}, {tokens} "
        f"tokens, ${usage.cost_usd:.4f}, {cache}{stats.wall_time_s:.1f} s"
    )


def _max_unscored(text: str) -> Any:
    from ragmetrics.pipeline.gate import UnscoredLimit

    try:
        return UnscoredLimit.of(text)
    except ConfigError as exc:
        raise UsageError(f"--max-unscored: {str(exc).removeprefix('max_unscored: ')}") from None


def _gates(args: argparse.Namespace, report: Any, max_unscored: Any) -> int:
    """The exit code of the gates (see :func:`ragmetrics.cli._eval_gates.gate_exit_code`).

    Failed canaries are reported first and exit 5, like the judge gate.
    """
    from ragmetrics.pipeline.canaries import canary_message

    failed_canaries = [] if args.no_judge_gate else [c for c in report.canaries if c.failed]
    if failed_canaries:  # reported first, with the judge gate: the judge is not judging
        say(f"ragmetrics eval: {canary_message(failed_canaries)}", file=sys.stderr)
    code = gate_exit_code(args, report, max_unscored, say=lambda line: say(line, file=sys.stderr))
    if failed_canaries:
        return EXIT_JUDGE
    return {"judge": EXIT_JUDGE, "gate": EXIT_FAIL}.get(code, EXIT_OK)
