"""The ``ragmetrics`` command line: the parser of every command, and :func:`main`, which runs one.

Each command lives in its own module (``run_eval``, ``run_estimate``, ``run_generate``, ``run_tests``,
``calibrate``, ``run_fake_server``), whose ``add_<name>_command(commands)`` registers it with its
handler (a function taking the parsed arguments and returning the exit code). Exit codes, for every
command: 0 success; 1 a check failed; 2 usage error; 130 interrupted; 141 stdout's reader went away.
Only ``argparse`` and the flag modules are imported at module level, so ``ragmetrics --help`` answers at
once; each handler imports what it needs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from ragmetrics._aio import own_process
from ragmetrics.cli._args import EXIT_FAIL, EXIT_OK, EXIT_PIPE, EXIT_USAGE
from ragmetrics.cli._test_flags import TEST_EPILOG
from ragmetrics.cli.calibrate import add_calibrate_command
from ragmetrics.cli.run_estimate import add_estimate_command
from ragmetrics.cli.run_eval import add_eval_command
from ragmetrics.cli.run_fake_server import add_fake_server_command
from ragmetrics.cli.run_generate import add_generate_command
from ragmetrics.cli.run_tests import add_test_command

__all__ = ["EXIT_FAIL", "EXIT_OK", "EXIT_PIPE", "EXIT_USAGE", "main", "program"]

_SUITE_ALLOW_FLAGS = (
    ("judge_url", "allow_judge_url"),
    ("cache", "allow_suite_cache"),
    ("settings", "allow_suite_settings"),
)


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("ragmetrics")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            found = "unknown"
        parser.exit(message=f"ragmetrics {found}\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragmetrics",
        description="Evaluate RAG and LLM outputs; gate CI on quality, cost and latency.",
        epilog=TEST_EPILOG,
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    add_eval_command(commands)
    add_estimate_command(commands)
    add_generate_command(commands)
    add_test_command(commands)
    add_calibrate_command(commands)
    add_fake_server_command(commands)
    return parser


def program() -> int:
    """The ``ragmetrics`` program (its console script, ``python -m ragmetrics``).

    :func:`main` on ``sys.argv``, in a process of its own: that lets ``eval`` hold the garbage collector
    through its start-up (:func:`ragmetrics._aio.collector_held`).
    """
    own_process()
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from ragmetrics.settings import run_defaults

    try:
        with run_defaults(**_run_defaults(args)):
            code = int(args.handler(args))
        sys.stdout.flush()  # a reader that went away shows here, not as "Exception ignored" at exit
        return code
    except KeyboardInterrupt:
        print("ragmetrics: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()


def _run_defaults(args: argparse.Namespace) -> dict[str, Any]:
    """The command's flags that judges and suites built in the user's own code follow too.

    ``--max-attempts`` / ``--timeout`` are every judge's defaults while the command runs (eval cases and
    suites build their own judges), and ``ragmetrics test``'s ``--allow-*`` flags let the suites that eval
    files load themselves name what the suite files given may (see :func:`ragmetrics.settings.run_defaults`).
    """
    return {
        "max_attempts": getattr(args, "max_attempts", None),
        "timeout_s": getattr(args, "timeout", None),
        "suite_allow": [name for name, flag in _SUITE_ALLOW_FLAGS if getattr(args, flag, False)],
    }


def _reader_gone() -> int:
    """Stop quietly when stdout's reader has gone (``ragmetrics eval --json | head -1``).

    Returns 141 (128 + SIGPIPE), the status a shell reports for ``cat``, ``yes`` or ``grep`` stopped the
    same way: 0 would claim every result was printed and hide a failed gate, 1 would read as a failed
    gate. Further output goes to the null device, so the interpreter's final flush raises nothing.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass
    return EXIT_PIPE


if __name__ == "__main__":
    sys.exit(program())
