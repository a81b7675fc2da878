"""json_match on huge JSON (issue 22, item 14): a size cap before parsing, and a loop that keeps ticking.

An 8 MB array took 48 s and 1 GB and stalled the event loop 15.5 s despite the worker thread: parsing
and comparing hold the GIL in long C calls and build a tuple per key path. The probe runs in a fresh
interpreter under an address-space limit and counts heartbeats of a 10 ms ticker while it scores.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragmetrics.errors import ConfigError
from ragmetrics.metrics.evaluators.structured import MAX_PATHS, JsonMatchEvaluator

ROOT = Path(__file__).resolve().parents[2]
MEMORY = 700 * 1024**2


def probe(code: str) -> dict:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=240,
        preexec_fn=limit,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


HEARTBEAT = """
import asyncio, json, time
from ragmetrics.metrics.evaluators.structured import JsonMatchEvaluator

async def scored(prediction, reference):
    beats, gaps, stop = [], [], asyncio.Event()
    async def ticker():
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now
    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    result = await JsonMatchEvaluator().evaluate(prediction, reference)
    stop.set()
    await task
    return {"status": result.status, "score": result.score, "message": result.message,
            "beats": len(gaps), "max_gap": max(gaps)}
"""


def test_an_8_mb_array_is_invalid_input_before_parsing_and_the_loop_keeps_ticking() -> None:
    out = probe(
        HEARTBEAT
        + textwrap.dedent(
            """
        big = "[" + ",".join(str(i % 1000) for i in range(2_000_000)) + "]"   # 7.8 MB, 2,000,000 values
        near = "[" + ",".join(str(i % 997) for i in range(2_000_000)) + "]"
        quoted = json.dumps(["a,b" * 3] * 1000)   # commas inside strings are not values
        async def main():
            print(json.dumps({"big": await scored(big, near), "ref": await scored("[1]", big),
                              "quoted": await scored(quoted, quoted)}))
        asyncio.run(main())
        """
        )
    )
    big = out["big"]
    assert big["status"] == "invalid_input" and big["score"] is None
    assert "over the limit of 100,000 (max_paths)" in big["message"]
    assert big["max_gap"] < 2.0, big  # was 15.5 s
    assert out["ref"]["status"] == "invalid_input" and "expected value" in out["ref"]["message"]
    assert out["quoted"]["status"] == "ok" and out["quoted"]["score"] == 1.0


def test_values_up_to_the_cap_are_compared_with_the_loop_ticking_under_a_memory_limit() -> None:
    out = probe(
        HEARTBEAT
        + textwrap.dedent(
            f"""
        n = {MAX_PATHS} - 1
        a = "[" + ",".join(str(i % 1000) for i in range(n)) + "]"
        b = "[" + ",".join(str((i + 1) % 1000) for i in range(n)) + "]"   # every value differs
        async def main():
            print(json.dumps({{"r": await scored(a, b)}}))
        asyncio.run(main())
        """
        )
    )
    result = out["r"]
    assert result["status"] == "ok" and result["score"] == 0.0
    assert result["beats"] >= 1 and result["max_gap"] < 2.0, result


def test_max_paths_is_an_option() -> None:
    ev = JsonMatchEvaluator(max_paths=2)
    assert ev.evaluate_sync('{"a": 1, "b": 2}', '{"a": 1, "b": 2}').score == 1.0
    over = ev.evaluate_sync('{"a": 1, "b": 2, "c": 3}', '{"a": 1}')
    assert over.status == "invalid_input" and "max_paths" in (over.message or "")
    with pytest.raises(ConfigError):
        JsonMatchEvaluator(max_paths=0)
