"""The code base stays lint-clean, formatted and type-checked (config in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the tools installed next to this interpreter (the `test` extra)
PATHS = ["ragmetrics", "tests", "benchmarks"]


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", *PATHS],
        ["ruff", "format", "--check", *PATHS],
        ["mypy", "ragmetrics"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_tool_passes(command: list[str]) -> None:
    executable = BIN / command[0]
    if not executable.exists():
        pytest.fail(f"{command[0]} is not installed next to {sys.executable}; install the `test` extra")
    proc = subprocess.run(
        [str(executable), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"`{' '.join(command)}` exited {proc.returncode}:\n{output}"
