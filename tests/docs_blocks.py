"""The code blocks of README.md and of every docs/ page, for the tests that run them.

A Python block marked ``<!-- docs-test -->`` runs as written; ``<!-- docs-test: skip WHY -->`` says
why it cannot (a key), and still compiles; ``<!-- docs-path -->`` runs in its page's path test, after
the blocks before it (a file it reads). ``print(...)  # TEXT`` promises the line TEXT in the output.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"<!-- docs-test -->\n```python\n(.*?)```", re.DOTALL)
ANY_BLOCK = re.compile(
    r"(<!-- docs-(?:test|path)(?::\s*skip\s+(.*?))?\s*-->\n)?```python\n(.*?)```", re.DOTALL
)


def page_text(name: str) -> str:
    """The text of ``README.md`` or of ``docs/NAME``."""
    path = ROOT / name if name == "README.md" else ROOT / "docs" / name
    return path.read_text(encoding="utf-8")


def blocks() -> list[tuple[str, str]]:
    """Every runnable block: (page name, code)."""
    return [(p.name, code) for p in PAGES for code in BLOCK.findall(p.read_text(encoding="utf-8"))]


def all_blocks() -> list[tuple[str, bool, str | None, str]]:
    """Every Python block: (page name, marked, skip reason or None, code)."""
    return [
        (p.name, bool(m), reason or None, code)
        for p in PAGES
        for m, reason, code in ANY_BLOCK.findall(p.read_text(encoding="utf-8"))
    ]


def expected_lines(code: str) -> list[str]:
    """`print(...)  # 0.5 False` at the top level promises that line of output."""
    return [
        m.group(1).strip()
        for line in code.splitlines()
        if not line.startswith((" ", "\t")) or line.lstrip().startswith("print(")
        for m in [re.search(r"^\s*print\(.*\)\s+#\s*(.+)$", line)]
        if m
    ]


def check_output(code: str, stdout: str) -> None:
    """Every promised line appears in ``stdout``, in order."""
    out = [line.strip() for line in stdout.splitlines()]
    pos = 0
    for want in expected_lines(code):
        while pos < len(out) and out[pos] != want:
            pos += 1
        assert pos < len(out), f"expected a line {want!r} in the output:\n{stdout}"
        pos += 1
