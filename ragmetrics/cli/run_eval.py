"""``ragmetrics eval`` and ``ragmetrics estimate``: score a file of question/answer/contexts rows.

Everything a person can act on (a missing file, a bad column, an unknown metric or judge spec, a
missing API key, an output path that cannot be written) is one line on stderr and exit code 2, never a
traceback, and is found before the first LLM call. Everything printed passes through
:func:`~ragmetrics._terminal.printable`, so text from the data cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from itertools import islice
from pathlib import Path
from typing import Any, TextIO

from ragmetrics._terminal import printable
from ragmetrics.cli._args import (
    add_batch_flags,
    batch_from_flags,
    count,
    non_negative_float,
    output_problem,
    positive_float,
    positive_int,
    unit_float,
)
from ragmetrics.errors import BatchPendingError, ConfigError

__all__ = ["add_estimate_command", "add_eval_command", "cmd_estimate", "cmd_eval"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
DEFAULT_METRICS = "faithfulness,relevancy,groundedness"
_EPILOG = (
    "exit codes: 0 done, 1 a quality gate failed (a metric scored no sample, more samples went unscored "
    "than --max-unscored allows, or a metric's mean is below --fail-under), 2 usage error "
    "(missing file, bad column, unknown metric or judge, missing API key, unwritable output path), "
    "3 provider batches still running after --max-wait (run again with --resume)"
)
EXIT_PENDING = 3
_ESTIMATE_EPILOG = (
    "exit codes: 0 done, 2 usage error (missing file, bad column, unknown metric or judge, missing API key)"
)
_OUT_SUFFIXES = (".jsonl", ".ndjson", ".csv")
_REPORT_SUFFIXES = (".html", ".htm")


class _UsageError(Exception):
    """A problem the user can fix; printed as one line, exit code 2."""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", nargs="?", metavar="DATA", help="a .jsonl, .json or .csv file of rows")
    parser.add_argument("--example", action="store_true", help="use the bundled example dataset")
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
        "--columns",
        metavar="FIELD=COL,...",
        default="",
        help="column names, e.g. question=query,answer=response,contexts=docs",
    )
    parser.add_argument("--limit", type=positive_int, metavar="N", help="score only the first N rows")
    parser.add_argument(
        "--encoding",
        metavar="NAME",
        help="the file's text encoding, e.g. cp1252 or latin-1 (default UTF-8; a byte order mark wins)",
    )
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the judge cache")


def add_eval_command(commands: Any) -> None:
    """Register ``ragmetrics eval``."""
    parser = commands.add_parser(
        "eval",
        help="score a dataset of question/answer/contexts rows",
        description="Score every row with the RAG metrics, print a summary and the worst samples, "
        "and optionally write the records and an HTML report.",
        epilog=_EPILOG,
    )
    _common(parser)
    parser.add_argument("--out", metavar="PATH", help="write the records to PATH (.jsonl or .csv)")
    parser.add_argument("--report", metavar="PATH", help="write a self-contained HTML report to PATH (.html)")
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
        "--max-cost", type=non_negative_float, metavar="USD", help="stop launching samples past this cost"
    )
    parser.add_argument(
        "--threshold",
        type=unit_float,
        default=0.5,
        metavar="SCORE",
        help="pass mark of every metric, for pass rates (default 0.5)",
    )
    parser.add_argument(
        "--fail-under", type=unit_float, metavar="SCORE", help="exit 1 when any metric's mean is below SCORE"
    )
    parser.add_argument(
        "--max-unscored",
        default="0",
        metavar="LIMIT",
        help="samples per metric that may go without a score before the run exits 1: a count (3), "
        "a share (0.1) or a percentage (10%%); default 0, none. A metric scoring no sample always fails",
    )
    parser.add_argument("--worst", type=count, default=3, metavar="N", help="worst samples to show (3)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no tables")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON (for machines)")
    add_batch_flags(parser)
    parser.set_defaults(handler=cmd_eval)


def add_estimate_command(commands: Any) -> None:
    """Register ``ragmetrics estimate``."""
    parser = commands.add_parser(
        "estimate",
        help="predict the calls, tokens and cost of an eval run, calling nothing",
        description="Predict LLM calls, tokens and cost of `ragmetrics eval` on the same data.",
        epilog=_ESTIMATE_EPILOG,
    )
    _common(parser)
    parser.add_argument("--json", action="store_true", help="print the estimate as JSON")
    parser.set_defaults(handler=cmd_estimate)


# -- building blocks ----------------------------------------------------------------------------------
def _data_path(args: argparse.Namespace) -> Path:
    if args.example:
        from importlib import resources

        return Path(str(resources.files("ragmetrics") / "data" / "example.jsonl"))
    if not args.data:
        raise _UsageError("give a DATA file (.jsonl, .json or .csv) or --example")
    path = Path(args.data)
    if not path.is_file():
        raise _UsageError(f"no such file: {path}")
    if path.suffix.lower() not in (".jsonl", ".ndjson", ".json", ".csv"):
        raise _UsageError(f"{path}: unsupported file type '{path.suffix}'; use .jsonl, .json or .csv")
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
    from ragmetrics.settings import api_key_for, default_judge_spec, parse_judge_spec

    spec = args.judge or default_judge_spec()
    try:
        settings = parse_judge_spec(spec)
        if needs_key and settings.provider != "offline":
            api_key_for(settings)
    except ConfigError as exc:
        raise _UsageError(str(exc)) from None
    return spec


def _estimate_judge(spec: str, *, cache: bool) -> Any:
    """The judge an estimate prices with: a provider judge built without its API key (never called)."""
    from ragmetrics.settings import parse_judge_spec

    if parse_judge_spec(spec).provider == "offline":
        return spec
    from ragmetrics.judge import make_judge, resolve_judge

    return resolve_judge(make_judge(spec, require_key=False), cache=cache)


def _metrics(
    args: argparse.Namespace, spec: Any, threshold: float | None, options: dict[str, Any] | None = None
) -> list[Any]:
    from ragmetrics.metrics import metric_from_name

    options = options or {}
    names = [n.strip() for n in args.metrics.split(",") if n.strip()]
    if not names:
        raise _UsageError("--metrics: give at least one metric name")
    try:
        return [
            metric_from_name(name, llm=spec, threshold=threshold, cache=not args.no_cache, **options)
            for name in names
        ]
    except ConfigError as exc:
        raise _UsageError(str(exc)) from None


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
    except ConfigError as exc:
        raise _UsageError(str(exc)) from None


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _summary_table(report: Any) -> str:
    header = ["metric", "mean", "95% CI", "pass rate", "scored", "statuses"]
    rows = []
    for agg in report.aggregates.values():
        ci = f"[{_fmt(agg.ci_low)}, {_fmt(agg.ci_high)}]" if agg.ci_low is not None else "-"
        rate = f"{agg.pass_rate:.0%}" if agg.pass_rate is not None else "-"
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(agg.statuses.items()) if k != "ok") or "all ok"
        rows.append([agg.name, _fmt(agg.mean), ci, rate, f"{agg.count}/{agg.total}", statuses])
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    table = [header, *rows]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``...`` when something was cut."""
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _worst(records: Sequence[Any], n: int) -> str:
    scored = [r for r in records if r.mean_score is not None]
    scored.sort(key=lambda r: r.mean_score)
    out = []
    for r in scored[:n]:
        question = (r.sample.question or "") if r.sample else ""
        out.append(
            f"#{r.index} {printable(r.id)}  mean {r.mean_score:.3f}  "
            + "  ".join(f"{printable(k)} {_fmt(v)}" for k, v in r.scores.items())
        )
        if question:
            out.append(f"    Q: {printable(_clip(question, 110))}")
        seen = set()
        for result in r.results.values():
            for claim in result.claims:
                if claim.verdict in ("contradicted", "not_found") and claim.text not in seen:
                    seen.add(claim.text)
                    line = f"    {claim.verdict.upper()}: {printable(_clip(claim.text, 100))}"
                    if claim.evidence:
                        evidence = printable(_clip(claim.evidence, 100))
                        line += f'\n      context {claim.context_index}: "{evidence}"'
                    out.append(line)
    failed = [r for r in records if r.errors]
    if failed:
        out.append(
            f"{len(failed)} record(s) carry errors, e.g. #{failed[0].index}: "
            f"{printable(_clip(failed[0].errors[0].message, 160))}"
        )
    return "\n".join(out)


def _say(text: str, *, file: TextIO | None = None, json: bool = False) -> None:
    """Print ``text`` with control characters escaped (as JSON escapes when it is JSON)."""
    print(printable(text, multiline=True, json=json), file=file if file is not None else sys.stdout)


def _check_outputs(args: argparse.Namespace, data: Path) -> None:
    """Refuse an output path that cannot be written, before anything is scored."""
    for path, flag, suffixes in (
        (args.out, "--out", _OUT_SUFFIXES),
        (args.report, "--report", _REPORT_SUFFIXES),
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
    metrics = _metrics(args, spec, args.threshold, _judge_options(args))
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
            progress=False if (args.quiet or args.json) else None,
            batch=batch if batch is not None else False,
        )
        results = pipeline.run(data)
    except ConfigError as exc:
        raise _UsageError(str(exc)) from None
    except BatchPendingError as exc:
        _say(f"ragmetrics eval: {exc}", file=sys.stderr)
        return EXIT_PENDING
    report = results.summary()
    if args.out:
        if Path(args.out).suffix.lower() == ".csv":
            results.to_csv(args.out)
        else:
            results.to_jsonl(args.out)
    if args.report:
        from ragmetrics.report import write_html_report

        write_html_report(report, args.report, title=path.name)
    stats = report.run
    if args.json:
        _say(report.model_dump_json(exclude={"records"}, indent=2), json=True)
    elif not args.quiet:
        _say("")
        _say(_summary_table(report))
        usage = stats.usage
        tokens = usage.prompt_tokens + usage.completion_tokens
        _say(
            f"\n{stats.samples} samples, {usage.describe()}, {tokens} "
            f"tokens, ${usage.cost_usd:.4f}, cache hits {stats.cache.hits}, "
            f"{stats.cache.shared} shared, {stats.wall_time_s:.1f} s"
        )
        worst = _worst(results, args.worst)
        if worst:
            _say("\nWorst samples:\n" + worst)
        for name, target in (("records", args.out), ("report", args.report)):
            if target:
                _say(f"\nWrote the {name} to {target}")
    return _gates(args, report, max_unscored)


def _judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """Judge settings from the flags: requests in flight, attempts per request, request timeout."""
    options: dict[str, Any] = {"max_concurrency": args.judge_concurrency or max(16, args.concurrency)}
    if args.max_attempts is not None:
        options["max_attempts"] = args.max_attempts
    if args.timeout is not None:
        options["timeout_s"] = args.timeout
    return options


def _max_unscored(text: str) -> Any:
    from ragmetrics.pipeline.gate import UnscoredLimit

    try:
        return UnscoredLimit.of(text)
    except ConfigError as exc:
        raise _UsageError(f"--max-unscored: {str(exc).removeprefix('max_unscored: ')}") from None


def _gates(args: argparse.Namespace, report: Any, max_unscored: Any) -> int:
    """Exit 1, with one line each on stderr, when samples went unscored or a mean is below --fail-under."""
    from ragmetrics.pipeline.gate import check_unscored, unscored_message

    code = EXIT_OK
    failures = check_unscored(report, max_unscored=max_unscored)
    if failures:
        _say(f"ragmetrics eval: {unscored_message(failures)}", file=sys.stderr)
        code = EXIT_FAIL
    if args.fail_under is not None:  # a metric with no mean is reported above, as unscored
        low = [a.name for a in report.aggregates.values() if a.mean is not None and a.mean < args.fail_under]
        if low:
            _say(f"ragmetrics eval: below --fail-under {args.fail_under}: {', '.join(low)}", file=sys.stderr)
            code = EXIT_FAIL
    return code


def cmd_estimate(args: argparse.Namespace) -> int:
    """Run ``ragmetrics estimate``; returns the exit code."""
    try:
        path = _data_path(args)
        spec = _judge_spec(args, needs_key=False)  # an estimate calls nothing, so it needs no key
        metrics = _metrics(args, _estimate_judge(spec, cache=not args.no_cache), None)
        data = _dataset(path, _columns(args.columns), args.limit, args.encoding)
        from ragmetrics.pipeline import EvaluationPipeline

        try:
            estimate = EvaluationPipeline(metrics=metrics).estimate(data, check_cache=not args.no_cache)
        except ConfigError as exc:
            raise _UsageError(str(exc)) from None
    except _UsageError as exc:
        _say(f"ragmetrics estimate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        _say(json.dumps(estimate.model_dump(), indent=2), json=True)
    else:
        _say(f"judge: {spec}")
        _say(str(estimate))
    return EXIT_OK
