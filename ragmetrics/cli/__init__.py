"""The ``ragmetrics`` command: ``eval``, ``estimate`` and ``test`` (``app``; eval in ``run_eval``)."""

from __future__ import annotations

from ragmetrics.cli.app import main

__all__ = ["main"]
