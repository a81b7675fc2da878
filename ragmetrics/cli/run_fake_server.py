"""``ragmetrics fake-server``: serve the fake OpenAI/Anthropic provider until Ctrl-C.

The same as ``python -m ragmetrics.testing``: the flags and the server are in
:mod:`ragmetrics._fake.command`, imported when the command is registered and run.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_fake_server_command", "cmd_fake_server"]


def add_fake_server_command(commands: Any) -> None:
    """Register ``ragmetrics fake-server``."""
    from ragmetrics._fake.command import add_arguments

    parser = commands.add_parser(
        "fake-server",
        help="serve the fake OpenAI/Anthropic provider (FakeLLMServer) until Ctrl-C",
        description="Serve ragmetrics.testing.FakeLLMServer (the same as python -m ragmetrics.testing): "
        "point your own pipeline's base_url at it to test it with the real SDKs and no key.",
    )
    add_arguments(parser)
    parser.set_defaults(handler=cmd_fake_server)


def cmd_fake_server(args: argparse.Namespace) -> int:
    """Run ``ragmetrics fake-server``; returns the exit code."""
    from ragmetrics._fake.command import serve
    from ragmetrics.testing import FakeLLMServer

    return serve(args, FakeLLMServer)
