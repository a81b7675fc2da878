"""A record's latency is its own time in its metrics, not the batch's wall time (issue 14)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ragmetrics import ExactMatchEvaluator
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.sample import Sample

BLOCK_S = 0.04


async def busy(sample: Sample) -> float:
    """Holds the event loop for BLOCK_S (CPU work, as the offline judge does), then waits a little."""
    time.sleep(BLOCK_S)
    await asyncio.sleep(0)
    return 1.0


async def waits(sample: Sample) -> dict[str, Any]:
    await asyncio.sleep(0.01 * int(sample.id or 0))
    return {"score": 0.5}


async def test_each_row_shows_its_own_latency_not_the_batch_wall_time() -> None:
    n = 8
    pipeline = EvaluationPipeline(metrics=[busy, ExactMatchEvaluator()], concurrency=n, progress=False)
    started = time.perf_counter()
    results = await pipeline.evaluate(answers=["x"] * n, references=["x"] * n, ids=[str(i) for i in range(n)])
    wall_ms = (time.perf_counter() - started) * 1000
    assert wall_ms >= n * BLOCK_S * 1000
    latencies = [r.latency_ms for r in results]
    # Every row's own work is one block; the batch is n blocks, which every row used to show.
    assert all(lat < wall_ms / 2 for lat in latencies), (latencies, wall_ms)
    assert all(lat >= BLOCK_S * 1000 * 0.9 for lat in latencies), latencies


async def test_a_row_that_waits_longer_shows_a_longer_latency() -> None:
    pipeline = EvaluationPipeline(metrics=[waits], concurrency=4, progress=False)
    results = await pipeline.evaluate(answers=["x"] * 4, ids=["0", "10", "20", "30"])
    latencies = [r.latency_ms for r in results]
    assert latencies == sorted(latencies) and latencies[-1] >= 300 > latencies[0] + 200
