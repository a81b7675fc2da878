"""Peak memory while streaming 100,000 small samples through the pipeline (target: bounded, flat RSS).

Run: ``python benchmarks/stream_memory.py`` (about 2-3 minutes on 2 cores). The dataset is a generator
(never a list), the judge is the offline judge (no network, answers in process), the metrics are
faithfulness and relevancy, and records are consumed as they arrive with ``pipeline.stream``. RSS is
sampled every 10,000 records; a bounded pipeline shows the same RSS at 20k and at 100k records.
Writes ``benchmarks/results/stream_memory.json`` and prints a markdown table row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragmetrics import FaithfulnessMetric, RelevancyMetric
from ragmetrics.pipeline import EvaluationPipeline

RESULTS = Path(__file__).resolve().parent / "results"


def rss_mb() -> float:
    """Current resident set size in MiB (Linux /proc; falls back to the peak elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return peak_mb()


def peak_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def samples(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {
            "id": f"s{i}",
            "question": f"What is item {i}?",
            "answer": f"Item {i} is blue. It weighs {i % 97} kg.",
            "contexts": [f"Item {i} is blue and round.", f"It weighs {i % 89} kg."],
        }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    pipeline = EvaluationPipeline(
        metrics=[FaithfulnessMetric(llm="offline"), RelevancyMetric(llm="offline")],
        concurrency=args.concurrency,
        progress=False,
    )
    start_rss = rss_mb()
    curve: list[tuple[int, float]] = []
    done = 0
    failed = 0
    t0 = time.perf_counter()
    run = pipeline.stream(samples(args.samples))
    async for record in run:
        done += 1
        failed += not record.ok
        if done % 10_000 == 0:
            curve.append((done, round(rss_mb(), 1)))
    wall = time.perf_counter() - t0
    summary = run.summary()
    out = {
        "samples": done,
        "failed": failed,
        "wall_s": wall,
        "samples_per_s": done / wall,
        "concurrency": args.concurrency,
        "rss_start_mb": round(start_rss, 1),
        "peak_rss_mb": round(peak_mb(), 1),
        "rss_curve_mb": curve,
        "rss_growth_after_20k_mb": round(curve[-1][1] - curve[1][1], 1) if len(curve) > 2 else None,
        "faithfulness_mean": summary["faithfulness"].mean,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "stream_memory.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
    print(
        "| benchmark | samples | wall s | samples/s | RSS at start MiB | peak RSS MiB "
        "| RSS growth 20k->end MiB |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| stream, offline judge | {done} | {wall:.1f} | {done / wall:.0f} | {out['rss_start_mb']} | "
        f"{out['peak_rss_mb']} | {out['rss_growth_after_20k_mb']} |"
    )


if __name__ == "__main__":
    asyncio.run(main())
