"""Cost of running custom JavaScript in sandbox processes: in-process vs pooled worker vs fresh spawn.

Run: ``python benchmarks/custom_js.py [--evals 200] [--spawns 30]``. Writes
``benchmarks/results/custom_js.json`` and prints a markdown table.

Rows, all on the README's three-line check (``output.split('\\n').length <= 3``):

- ``in-process engine``: a fresh QuickJS context per evaluation in this process, the same harness and
  caps as the worker runs (the former design, which a script could stall or crash); the floor.
- ``pooled worker``: ``CustomEvaluator.evaluate`` one after another (the shipped path: a reused
  worker process, request and reply over a pipe, the result record built).
- ``pooled, 8 concurrent``: the same, 8 evaluations in flight (the pool runs up to ``POOL_SIZE``).
- ``fresh spawn``: a new worker process for every evaluation (``JsPool(max_jobs=1)``): interpreter
  start plus ``import quickjs`` plus the evaluation, the cost a spawn-per-call design would pay.

Figures are milliseconds per evaluation (median of individual timings, and wall time / count for the
concurrent row).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import quickjs

from ragmetrics.metrics.evaluators._js_pool import POOL_SIZE, JsPool
from ragmetrics.metrics.evaluators._js_worker import HARNESS
from ragmetrics.metrics.evaluators.factory import CustomEvaluator

SOURCE = "(output) => ({score: output.split('\\n').length <= 3 ? 1 : 0, details: 'At most three lines'})"
OUTPUT = "one\ntwo"


def in_process(n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        ctx = quickjs.Context()
        ctx.set_memory_limit(64 << 20)
        ctx.set_time_limit(5.0)
        ctx.set("__rm_source", json.dumps(SOURCE))
        ctx.set("__rm_output", json.dumps(OUTPUT))
        ctx.eval(HARNESS)
        while ctx.execute_pending_job():
            pass
        assert json.loads(ctx.eval("globalThis.__rm_result"))["value"]["score"] == 1
        del ctx
        times.append(time.perf_counter() - started)
    return times


async def pooled(n: int) -> list[float]:
    ev = CustomEvaluator(SOURCE)
    await ev.evaluate(OUTPUT)  # the worker is started
    times = []
    for _ in range(n):
        started = time.perf_counter()
        assert (await ev.evaluate(OUTPUT)).score == 1.0
        times.append(time.perf_counter() - started)
    return times


async def pooled_concurrent(n: int, in_flight: int = 8) -> float:
    ev = CustomEvaluator(SOURCE)
    gate = asyncio.Semaphore(in_flight)

    async def one() -> float | None:
        async with gate:
            return (await ev.evaluate(OUTPUT)).score

    await asyncio.gather(*(one() for _ in range(in_flight)))  # workers started
    started = time.perf_counter()
    scores = await asyncio.gather(*(one() for _ in range(n)))
    assert set(scores) == {1.0}
    return (time.perf_counter() - started) / n


def spawned(n: int) -> list[float]:
    pool = JsPool(size=1, max_jobs=1)
    request = {"op": "run", "source": SOURCE, "output": OUTPUT, "timeout": 5.0, "memory_bytes": 64 << 20}
    times = []
    try:
        for _ in range(n):
            started = time.perf_counter()
            assert pool.run(request).value["score"] == 1
            times.append(time.perf_counter() - started)
    finally:
        pool.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=200)
    parser.add_argument("--spawns", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "custom_js.json")
    args = parser.parse_args()

    def ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 2)

    n, spawns = args.evals, args.spawns
    concurrent_ms = round(asyncio.run(pooled_concurrent(n)) * 1000, 2)
    rows: list[dict[str, Any]] = [
        {"path": "in-process engine (former design)", "ms_per_eval": ms(in_process(n)), "n": n},
        {"path": "pooled worker", "ms_per_eval": ms(asyncio.run(pooled(n))), "n": n},
        {"path": "pooled, 8 concurrent (wall / count)", "ms_per_eval": concurrent_ms, "n": n},
        {"path": "fresh spawn per evaluation", "ms_per_eval": ms(spawned(spawns)), "n": spawns},
    ]
    report = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "pool_size": POOL_SIZE,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print("| path | ms per evaluation | n |\n|---|---:|---:|")
    for row in rows:
        print(f"| {row['path']} | {row['ms_per_eval']} | {row['n']} |")


if __name__ == "__main__":
    main()
