"""README examples marked `<!-- readme-test -->` run as written, and print what their comments say."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"<!-- readme-test -->\n```python\n(.*?)```", re.DOTALL)
ANY_BLOCK = re.compile(r"(<!-- readme-test(?::\s*skip\s+(.*?))?\s*-->\n)?```python\n(.*?)```", re.DOTALL)
TOP_LEVEL_AWAIT = """
import ast, asyncio, inspect, sys
code = compile(sys.argv[1], "<README>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if inspect.iscoroutine(result):
    asyncio.run(result)
"""
"""Runs a block as Jupyter, IPython and ``python -m asyncio`` do: a top-level ``await`` is allowed."""


def blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def all_blocks() -> list[tuple[bool, str | None, str]]:
    """Every Python block: (marked, skip reason or None, code)."""
    return [
        (bool(m), reason or None, code) for m, reason, code in ANY_BLOCK.findall(README.read_text("utf-8"))
    ]


def test_every_python_block_is_tested_or_says_why_not():
    unmarked = [code.splitlines()[0] for marked, _, code in all_blocks() if not marked]
    assert not unmarked, (
        f"mark these README blocks <!-- readme-test --> or <!-- readme-test: skip WHY -->: {unmarked}"
    )
    assert all(reason.strip() for marked, reason, _ in all_blocks() if marked and reason is not None)


@pytest.mark.parametrize("index", range(len(all_blocks())))
def test_readme_block_is_valid_python(index):
    """Blocks skipped for want of a key still compile (top-level ``await`` allowed, as in Jupyter)."""
    _, _, code = all_blocks()[index]
    compile(code, "<README>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def expected_lines(code: str) -> list[str]:
    """`print(...)  # 0.5 False` at the top level promises that line of output."""
    return [
        m.group(1).strip()
        for line in code.splitlines()
        if not line.startswith((" ", "\t")) or line.lstrip().startswith("print(")
        for m in [re.search(r"^\s*print\(.*\)\s+#\s*(.+)$", line)]
        if m
    ]


def test_readme_has_runnable_examples():
    assert len(blocks()) >= 2


@pytest.mark.parametrize("index", range(len(blocks())))
def test_readme_example_runs(index, tmp_path):
    code = blocks()[index]
    runner = ["-c", TOP_LEVEL_AWAIT, code] if "await " in code else ["-c", code]
    proc = subprocess.run(
        [sys.executable, *runner], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = [line.strip() for line in proc.stdout.splitlines()]
    pos = 0
    for want in expected_lines(code):
        while pos < len(out) and out[pos] != want:
            pos += 1
        assert pos < len(out), f"expected a line {want!r} in the output:\n{proc.stdout}"
        pos += 1
