"""``ragmetrics generate DOCS... --size N --out testset.jsonl``: a test set from the user's documents.

Usage problems (a missing document, a bad ``--mix``, an unknown judge, a missing key, a budget on an
unpriced model, a document or chunk file that is unreadable or over a cap of
:mod:`ragmetrics.testset.limits`) are one line on stderr and exit code 2, found before the first LLM
call. The output
is appended item by item, so a run that is killed is resumed by running the same command again;
``--fresh`` starts over. ``--estimate`` prints the predicted calls and cost and calls nothing.
``--batch`` (with eval's companions ``--resume``, ``--batch-dir``, ``--poll-interval``, ``--max-wait``)
sends the calls through the provider's batch API; a wait stopped by ``--max-wait`` exits 3.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragmetrics.cli._args import (
    EXIT_FAIL,
    EXIT_JUDGE,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_USAGE,
    add_batch_flags,
    batch_from_flags,
    non_negative_float,
    output_problem,
    positive_int,
)
from ragmetrics.errors import BatchPendingError, ConfigError, MissingDependencyError, printable

__all__ = ["add_generate_command", "cmd_generate"]

_EPILOG = (
    "exit codes: 0 the test set has --size items, 1 fewer items could be verified (see the rejects file), "
    "2 usage error (missing or unreadable document, a size cap passed, bad --mix, unknown judge, missing "
    "API key, unwritable output), "
    "3 provider batches still running after --max-wait (run again with --batch --resume), "
    "5 the verifier failed its canary or its quotes are not in the chunks (--no-judge-gate: no check)"
)


def _mix(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, weight = part.partition("=")
        try:
            out[name.strip()] = float(weight) if sep else 1.0
        except ValueError:
            raise argparse.ArgumentTypeError(f"--mix: {part!r} is not KIND=WEIGHT") from None
    return out


def add_generate_command(commands: Any) -> None:
    """Register ``ragmetrics generate``."""
    parser = commands.add_parser(
        "generate",
        help="write a test set of verified questions and references from documents",
        description="Chunk the documents, write questions of the kinds asked (an LLM judge, or the "
        "offline extractive generator with no key), verify every reference claim by claim against its "
        "chunks, and append the accepted items to --out (a rerun resumes).",
        epilog=_EPILOG,
    )
    _file_flags(parser)
    _generator_flags(parser)
    _run_flags(parser)
    add_batch_flags(parser)
    parser.set_defaults(handler=cmd_generate)


def _file_flags(parser: argparse.ArgumentParser) -> None:
    """The documents read and the files written."""
    parser.add_argument("documents", nargs="+", metavar="DOCS", help="files or folders (.txt .md .html .pdf)")
    parser.add_argument("--size", type=positive_int, default=20, metavar="N", help="items wanted (20)")
    parser.add_argument(
        "--out", required=True, metavar="PATH", help="the test set, JSONL (appended, resumed)"
    )
    parser.add_argument("--rejects", metavar="PATH", help="rejected candidates (default OUT.rejects.jsonl)")
    parser.add_argument("--report", metavar="PATH", help="write the report as JSON to PATH")


def _generator_flags(parser: argparse.ArgumentParser) -> None:
    """Who writes the questions, which kinds and styles, and how the documents are chunked."""
    parser.add_argument(
        "--judge",
        metavar="SPEC",
        help="the LLM that writes and verifies (openai:MODEL, anthropic:MODEL, openai:MODEL@URL, offline); "
        "default: from the environment, else offline",
    )
    parser.add_argument(
        "--generator",
        choices=("auto", "llm", "extractive"),
        default="auto",
        help="llm, extractive (questions built from the documents' sentences, no generation call), or "
        "auto: extractive with the offline judge, else llm",
    )
    parser.add_argument(
        "--mix",
        type=_mix,
        metavar="KIND=W,...",
        help="kind weights, e.g. single_hop=5,multi_hop=2,comparison=1,summary=1,unanswerable=1 (default)",
    )
    parser.add_argument(
        "--styles",
        default="plain",
        metavar="NAMES",
        help="question styles used in turn: plain, short, conversational, typos (default plain)",
    )
    parser.add_argument(
        "--chunk-tokens", type=positive_int, default=256, metavar="N", help="chunk size (256)"
    )
    parser.add_argument("--overlap", type=int, default=32, metavar="N", help="chunk overlap in tokens (32)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the chunk order and typos (0)")


def _run_flags(parser: argparse.ArgumentParser) -> None:
    """The run's budget, concurrency, cache, resumption, checks and output."""
    parser.add_argument("--max-cost", type=non_negative_float, metavar="USD", help="stop before this cost")
    parser.add_argument(
        "--max-candidates", type=positive_int, metavar="N", help="candidates tried at most (3 x --size)"
    )
    parser.add_argument("--concurrency", type=positive_int, default=8, metavar="N", help="in flight (8)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the judge cache")
    parser.add_argument("--fresh", action="store_true", help="discard --out and the rejects, start over")
    parser.add_argument(
        "--estimate", action="store_true", help="print the predicted calls and cost; call nothing"
    )
    parser.add_argument(
        "--no-judge-gate",
        action="store_true",
        help="no canary for the verifier and no check of its quotes (exit 5 when it fails them)",
    )
    parser.add_argument(
        "--allow-instructions",
        action="store_true",
        help="write items from chunks holding instruction-like text (marked); by default they are rejects",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no report")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def _usage(message: str) -> int:
    print(f"ragmetrics generate: error: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE


def cmd_generate(args: argparse.Namespace) -> int:
    """Run ``ragmetrics generate``."""
    from ragmetrics.settings import api_key_for, default_judge_spec, parse_judge_spec
    from ragmetrics.testset.generator import prepare

    for path, flag, suffixes in ((args.out, "--out", (".jsonl",)), (args.report, "--report", (".json",))):
        problem = output_problem(path, flag, suffixes, create_folders=True) if path else None
        if problem:
            return _usage(problem)
    try:
        batch = batch_from_flags(args)
    except ValueError as exc:
        return _usage(str(exc))
    spec = args.judge or default_judge_spec()
    styles = [s.strip() for s in args.styles.split(",") if s.strip()]
    try:
        settings = parse_judge_spec(spec)
        if settings.provider != "offline" and not args.estimate:
            api_key_for(settings)
        chunks = prepare(args.documents, chunk_tokens=args.chunk_tokens, overlap_tokens=args.overlap)
        if args.estimate:
            return _estimate(args, spec, chunks, styles)
        report = _generate(args, spec, chunks, styles, batch)
    except (ConfigError, MissingDependencyError) as exc:
        return _usage(str(exc))
    except BatchPendingError as exc:
        print(f"ragmetrics generate: {printable(str(exc))}", file=sys.stderr)
        print("ragmetrics generate: run the same command with --resume to collect them", file=sys.stderr)
        return EXIT_PENDING
    return _finish(args, report)


def _estimate(args: argparse.Namespace, spec: str, chunks: Any, styles: list[str]) -> int:
    """``--estimate``: print the predicted calls and cost of the slots the run would fill; call nothing."""
    from ragmetrics.judge import resolve_judge
    from ragmetrics.testset.budget import estimate_slots
    from ragmetrics.testset.slots import plan_slots

    slots = plan_slots(chunks, size=args.size, mix=args.mix, styles=styles, seed=args.seed)[: args.size]
    judge = resolve_judge(spec, cache=not args.no_cache, require_key=False)
    extractive = args.generator == "extractive" or (args.generator == "auto" and judge.info.heuristic)
    try:
        est = estimate_slots(judge, slots, extractive=extractive)
    finally:
        judge.close_disk()  # the estimate looked the cache up; nothing else will
    print(json.dumps(est.model_dump(mode="json"), indent=2) if args.json else str(est))
    return EXIT_OK


def _generate(args: argparse.Namespace, spec: str, chunks: Any, styles: list[str], batch: Any) -> Any:
    """Generate and verify the items, appended to ``--out``; returns the run's report."""
    from ragmetrics.testset.generator import generate_sync

    if spec == "offline" and not args.quiet:
        print(
            "ragmetrics generate: offline: the extractive generator builds questions from the documents' "
            "own sentences, verified by the heuristic judge (no LLM); pass --judge SPEC for an LLM.",
            file=sys.stderr,
        )
    testset = generate_sync(
        chunks,
        size=args.size,
        llm=spec,
        out=args.out,
        rejects=args.rejects,
        mix=args.mix,
        styles=styles,
        generator=args.generator,
        seed=args.seed,
        max_cost_usd=args.max_cost,
        max_candidates=args.max_candidates,
        concurrency=args.concurrency,
        cache=not args.no_cache,
        resume=not args.fresh,
        progress=False if args.quiet else None,
        batch=batch if batch is not None else False,
        judge_gate=not args.no_judge_gate,
        allow_instructions=args.allow_instructions,
    )
    return testset.report


def _finish(args: argparse.Namespace, report: Any) -> int:
    """Write ``--report``, print the report, the verifier's failures first among the errors; the exit code."""
    if args.report:
        Path(args.report).write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    if args.json:
        print(json.dumps(report.model_dump(mode="json"), indent=2))
    elif not args.quiet:
        print(printable(str(report), multiline=True))
    for line in report.judge_gate:  # the verifier is not trusted: first among the failures
        print(f"ragmetrics generate: {printable(line)}", file=sys.stderr)
    if report.judge_gate:
        return EXIT_JUDGE
    return EXIT_OK if report.written >= report.requested else EXIT_FAIL
