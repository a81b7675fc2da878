"""README examples marked `<!-- readme-test -->` run as written, and print what their comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"<!-- readme-test -->\n```python\n(.*?)```", re.DOTALL)


def blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


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
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = [line.strip() for line in proc.stdout.splitlines()]
    pos = 0
    for want in expected_lines(code):
        while pos < len(out) and out[pos] != want:
            pos += 1
        assert pos < len(out), f"expected a line {want!r} in the output:\n{proc.stdout}"
        pos += 1
