"""The handlers' sync forms inside a running event loop, as a Jupyter kernel runs a cell (issue 23).

A kernel runs each cell's sync code on the thread of its running loop: ``chain.invoke(...)`` then
``handler.close()`` there must wait for the scores, as ``evaluate_sync`` does, instead of raising.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_blocks import blocks, expected_lines

ROOT = Path(__file__).resolve().parents[2]
IN_A_RUNNING_LOOP = """
import asyncio, sys
async def cell():  # the block's sync code runs on the loop's thread while the loop runs, as in a kernel
    asyncio.get_running_loop()
    exec(compile(sys.argv[1], "<docs>", "exec"), {"__name__": "__main__"})
asyncio.run(cell())
"""


def _block(marker: str) -> str:
    [code] = [b for _, b in blocks() if marker in b]
    return code


def _check_output(code: str, stdout: str) -> None:
    out = [line.strip() for line in stdout.splitlines()]
    wants = expected_lines(code)
    assert wants
    pos = 0
    for want in wants:
        while pos < len(out) and out[pos] != want:
            pos += 1
        assert pos < len(out), f"expected a line {want!r} in the output:\n{stdout}"
        pos += 1


@pytest.mark.parametrize("marker", ["RagMetricsCallbackHandler(", "RagMetricsEventHandler("])
def test_the_readme_handler_blocks_run_inside_a_running_event_loop(marker: str, tmp_path: Path) -> None:
    pytest.importorskip("langchain_core" if "Callback" in marker else "llama_index.core")
    code = _block(marker)
    proc = subprocess.run(
        [sys.executable, "-c", IN_A_RUNNING_LOOP, code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_output(code, proc.stdout)


@pytest.mark.parametrize("marker", ["RagMetricsCallbackHandler(", "RagMetricsEventHandler("])
async def test_close_and_flush_sync_wait_for_the_scores_inside_a_pytest_asyncio_test(marker: str) -> None:
    pytest.importorskip("langchain_core" if "Callback" in marker else "llama_index.core")
    asyncio.get_running_loop()  # this test body runs on the thread of a running loop
    code = _block(marker).replace("handler.close()", "handler.flush_sync(timeout=60)")
    out = io.StringIO()
    scope: dict[str, object] = {"__name__": "__main__"}
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<docs>", "exec"), scope)
    _check_output(code, out.getvalue())
    handler = scope["handler"]
    assert [r.status for r in handler.close(timeout=60)] == ["ok"]  # type: ignore[attr-defined]
    assert handler.pending == 0  # type: ignore[attr-defined]


def test_the_readme_handler_blocks_run_in_a_real_jupyter_kernel(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = [nbformat.v4.new_code_cell(f"import sys; sys.path.insert(0, {str(ROOT)!r})")]
    codes = [_block("RagMetricsCallbackHandler("), _block("RagMetricsEventHandler(")]
    cells += [nbformat.v4.new_code_cell(code) for code in codes]
    notebook = nbformat.v4.new_notebook(cells=cells)
    nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    for code, cell in zip(codes, notebook.cells[1:], strict=True):
        stdout = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
        assert not [o for o in cell.outputs if o.get("output_type") == "error"], cell.outputs
        _check_output(code, stdout)
