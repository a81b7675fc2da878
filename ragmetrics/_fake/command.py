"""The command line of :class:`ragmetrics.testing.FakeLLMServer`: ``python -m ragmetrics.testing``.

``ragmetrics fake-server`` takes the same flags. The server prints its base URLs on one line each, then
serves until Ctrl-C (SIGINT) or SIGTERM, and exits 0. The caller passes the server class in, so that
these internals never import :mod:`ragmetrics.testing`, which imports them.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, Protocol

__all__ = ["Served", "add_arguments", "main", "serve"]


class Served(Protocol):
    """What :func:`serve` uses of :class:`ragmetrics.testing.FakeLLMServer`."""

    @property
    def latency(self) -> float | tuple[float, float]: ...
    @latency.setter
    def latency(self, value: float | tuple[float, float]) -> None: ...
    @property
    def url(self) -> str: ...
    @property
    def openai_base_url(self) -> str: ...
    @property
    def anthropic_base_url(self) -> str: ...
    @property
    def calls(self) -> Counter[str]: ...
    def start(self) -> Any: ...
    def stop(self) -> None: ...


def _latency(text: str) -> float | tuple[float, float]:
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected SECONDS or MIN,MAX, got {text!r}") from None
    if len(values) > 2 or any(not v >= 0 for v in values) or (len(values) == 2 and values[0] > values[1]):
        raise argparse.ArgumentTypeError(f"expected SECONDS >= 0 or MIN,MAX with MIN <= MAX, got {text!r}")
    return values[0] if len(values) == 1 else (values[0], values[1])


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in 0..65535, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's flags, shared by ``python -m ragmetrics.testing`` and ``ragmetrics fake-server``."""
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=_port, default=8000, metavar="N", help="port (default 8000; 0 picks a free one)"
    )
    parser.add_argument(
        "--answer",
        choices=["offline", "schema", "placeholder"],
        default="offline",
        help="offline: answer ragmetrics' prompts with the offline judge (default); schema: reply with "
        "an arbitrary instance of the request's JSON schema, as a constrained-decoding server does; "
        "placeholder: fill the schema with fixed placeholders, as a generic mock server does",
    )
    parser.add_argument(
        "--latency",
        type=_latency,
        default=0.0,
        metavar="SECONDS",
        help="delay of every reply: SECONDS, or MIN,MAX for a seeded uniform draw (default 0)",
    )
    parser.add_argument(
        "--dialect",
        choices=["openai", "llama-cpp"],
        default="openai",
        help="answer as OpenAI (default) or as llama-cpp-python's server 0.3.x",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the latency draws and schema answers")


def serve(
    args: argparse.Namespace, server_class: Callable[..., Served], *, stop: threading.Event | None = None
) -> int:
    """Run the server the flags describe until Ctrl-C, SIGTERM or ``stop``; returns the exit code.

    Args:
        args: The parsed flags (see :func:`add_arguments`).
        server_class: :class:`ragmetrics.testing.FakeLLMServer`.
        stop: Set it to stop the server (tests); None: only a signal stops it.
    """
    from ragmetrics.errors import ConfigError

    stop = stop or threading.Event()

    def _on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    try:
        server = server_class(
            host=args.host, port=args.port, seed=args.seed, answer=args.answer, dialect=args.dialect
        )
        server.latency = args.latency
        server.start()
    except (ConfigError, OSError) as exc:
        print(f"ragmetrics fake-server: error: {exc}", file=sys.stderr)
        return 2
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_term) if main_thread else None
    try:
        print(f"FakeLLMServer serving on {server.url} (answer={args.answer}, latency={args.latency})")
        print(f"  OpenAI base_url:    {server.openai_base_url}")
        print(f"  Anthropic base_url: {server.anthropic_base_url}")
        print("  judge spec:         " + f"openai:fake-model@{server.openai_base_url} (any API key)")
        print("Press Ctrl-C to stop.", flush=True)
        while not stop.wait(0.2):  # short waits, so Ctrl-C is seen at once on every platform
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    print(f"stopped after {server.calls.total()} request(s)", flush=True)
    return 0


def main(server_class: Callable[..., Served], argv: Sequence[str] | None = None) -> int:
    """``python -m ragmetrics.testing [--port N] [--answer offline|schema] [--latency S] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m ragmetrics.testing",
        description="Serve the fake OpenAI/Anthropic provider (FakeLLMServer) until Ctrl-C.",
    )
    add_arguments(parser)
    return serve(parser.parse_args(argv), server_class)
