"""The ``ragmetrics`` command: one module per command (``run_eval``, ``run_tests``, ...), run by ``app``."""

from __future__ import annotations

from ragmetrics.cli.app import main, program

__all__ = ["main", "program"]
