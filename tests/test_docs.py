"""The README and the documentation site: every Python block runs as written, and the site builds strictly."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ragmetrics
from tests.docs_blocks import PAGES, ROOT, all_blocks, blocks, check_output, page_text

TOP_LEVEL_AWAIT = """
import ast, asyncio, inspect, sys
code = compile(sys.argv[1], "<docs>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if inspect.iscoroutine(result):
    asyncio.run(result)
"""
"""Runs a block as Jupyter, IPython and ``python -m asyncio`` do: a top-level ``await`` is allowed."""


def test_every_python_block_is_tested_or_says_why_not():
    unmarked = [f"{page}: {code.splitlines()[0]}" for page, marked, _, code in all_blocks() if not marked]
    assert not unmarked, f"mark these blocks <!-- docs-test --> or <!-- docs-test: skip WHY -->: {unmarked}"
    assert all(reason.strip() for _, marked, reason, _ in all_blocks() if marked and reason is not None)


@pytest.mark.parametrize("index", range(len(all_blocks())))
def test_block_is_valid_python(index):
    """Blocks skipped for want of a key still compile (top-level ``await`` allowed, as in Jupyter)."""
    page, _, _, code = all_blocks()[index]
    compile(code, f"<{page}>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def test_the_docs_have_runnable_examples_on_most_pages():
    pages = {page for page, _ in blocks()}
    assert "README.md" in pages and len(pages) >= 10, pages


@pytest.mark.parametrize("index", range(len(blocks())), ids=[f"{p}-{i}" for i, (p, _) in enumerate(blocks())])
def test_block_runs_as_written(index, tmp_path):
    _, code = blocks()[index]
    runner = ["-c", TOP_LEVEL_AWAIT, code] if "await " in code else ["-c", code]
    proc = subprocess.run(
        [sys.executable, *runner], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    check_output(code, proc.stdout)


def test_the_readme_is_a_front_door():
    text = page_text("README.md")
    assert len(text.splitlines()) <= 200
    for marker in ("<!-- main-command -->", "<!-- test-command -->"):
        assert marker in text
    quick = re.search(r"## Quick start.*?```python\n(.*?)```", text, re.DOTALL)
    assert quick and len(quick.group(1).strip().splitlines()) <= 15
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", text))
    pages = {p.name for p in PAGES if p.parent.name == "docs"} - {"index.md"}
    assert pages <= linked, f"pages the README does not link to: {sorted(pages - linked)}"


def test_every_page_is_in_the_nav_and_every_public_name_in_the_reference():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES:
        if page.parent.name == "docs":
            assert f": {page.name}" in config, f"{page.name} is not in mkdocs.yml's nav"
    reference = page_text("reference.md")
    for name, module in ragmetrics._LAZY.items():  # type: ignore[attr-defined]
        assert f"::: {module}.{name}\n" in reference, f"{name} ({module}) is missing from docs/reference.md"


def test_the_home_page_is_the_readme_with_its_links_inside_the_site():
    assert page_text("index.md") == page_text("README.md").replace("](docs/", "](")


@pytest.mark.once
def test_mkdocs_builds_the_site_strictly(tmp_path: Path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:  # the test extra brings it, so CI always builds the site
        assert not os.environ.get("CI"), "mkdocs is missing from the CI environment: see the test extra"
        pytest.skip("mkdocs is not installed: pip install '.[docs]'")
    proc = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    page = (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8")
    assert "FaithfulnessMetric" in page and "evaluate_sync" in page


def test_the_getting_started_path_runs_in_order_in_one_folder(tmp_path: Path):
    """The newcomer's path: the CSV block saved, each ``ragmetrics`` command run, then the Python block."""
    text = page_text("getting-started.md")
    steps = re.findall(r"<!-- docs-(file: \S+|shell|path) -->\n```\w+\n(.*?)```", text, re.DOTALL)
    assert [kind.split(":")[0] for kind, _ in steps] == ["file", "shell", "path"]
    script = Path(sys.executable).parent / "ragmetrics"
    for kind, body in steps:
        if kind.startswith("file:"):
            (tmp_path / kind.split(":", 1)[1].strip()).write_text(body, encoding="utf-8")
        elif kind == "shell":
            for line in body.strip().splitlines():
                argv = line.split("#", 1)[0].split()
                assert argv[0] == "ragmetrics", line
                proc = subprocess.run(
                    [str(script), *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300
                )
                assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
                assert "offline heuristic judge" in proc.stdout + proc.stderr
                assert "It matches words, not meaning" in proc.stdout  # the note the page quotes
                assert "CONTRADICTED: The Eiffel Tower is 500 metres tall." in proc.stdout
        else:
            proc = subprocess.run(
                [sys.executable, "-c", body], cwd=tmp_path, capture_output=True, text=True, timeout=120
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            check_output(body, proc.stdout)
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "500 metres" in report and "330 metres" in report
    assert (tmp_path / "scores.csv").read_text(encoding="utf-8").startswith("index,id,question")
