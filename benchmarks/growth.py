"""Growth with the dataset: seconds per sample, peak memory and full garbage collections of ``evaluate()``.

Each size runs in a fresh interpreter (peak RSS is per process): ``evaluate_sync`` over generated
samples (``stream_memory.samples``: two short contexts, a two-sentence answer), faithfulness and
relevancy, progress, canaries and cache off, with the offline judge (``--judge offline``) or through
the loopback fake LLM server with the real openai SDK (``--judge fake``; its own process, no
latency). Recorded per size: wall seconds per sample, peak RSS, and the time spent in full (gen 2)
garbage collections (``gc.callbacks``). ``--mode stream`` consumes ``pipeline.stream`` instead, which
keeps no records, for comparison. Writes ``benchmarks/results/growth.json``.

    python benchmarks/growth.py --judge offline --sizes 1000,10000,100000
    python benchmarks/growth.py --judge fake --sizes 1000,10000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "growth.json"

CHILD = r"""
import asyncio, gc, json, resource, sys, time
sys.path.insert(0, {here!r})
from stream_memory import samples
import ragmetrics
from ragmetrics.pipeline import EvaluationPipeline
n, llm, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
full = [0.0, 0]
started = {{}}
def watch(phase, info):
    if phase == "start":
        started["t"] = time.perf_counter()
    elif info["generation"] == 2:
        full[0] += time.perf_counter() - started["t"]
        full[1] += 1
gc.callbacks.append(watch)
metrics = ["faithfulness", "relevancy"]
t0 = time.perf_counter()
if mode == "evaluate":
    result = ragmetrics.evaluate_sync(samples(n), metrics=metrics, llm=llm, progress=False, canaries=False,
                                      cache=False)
    done = len(result)
    mean = result.summary()["faithfulness"].mean
else:
    async def run():
        from ragmetrics import FaithfulnessMetric, RelevancyMetric
        pipe = EvaluationPipeline(metrics=[FaithfulnessMetric(llm=llm, cache=False),
                                           RelevancyMetric(llm=llm, cache=False)],
                                  progress=False, canaries=False)
        count = 0
        stream = pipe.stream(samples(n))
        async for _ in stream:
            count += 1
        return count, stream.summary()["faithfulness"].mean
    done, mean = asyncio.run(run())
wall = time.perf_counter() - t0
print(json.dumps({{"samples": done, "wall_s": round(wall, 3), "ms_per_sample": round(wall / n * 1000, 4),
                  "full_gc_s": round(full[0], 3), "full_gcs": full[1],
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  "faithfulness_mean": mean}}))
"""


def run_size(n: int, llm: str, mode: str, env: dict[str, str]) -> dict[str, Any]:
    code = CHILD.format(here=str(HERE))
    done = subprocess.run(
        [sys.executable, "-c", code, str(n), llm, mode], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"{n} samples failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", choices=("offline", "fake"), default="offline")
    parser.add_argument("--mode", choices=("evaluate", "stream"), default="evaluate")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--label", default="now")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    env = dict(os.environ, OPENAI_API_KEY="sk-benchmark-dummy")
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.judge == "fake":
        sys.path.insert(0, str(HERE))
        from pipeline_throughput import ServerProcess

        with ServerProcess() as srv:
            runs = {n: run_size(n, f"openai:fake-model@{srv.base_url}", args.mode, env) for n in sizes}
    else:
        runs = {n: run_size(n, "offline", args.mode, env) for n in sizes}
    first = runs[sizes[0]]["ms_per_sample"]
    for r in runs.values():
        r["vs_first_size"] = round(r["ms_per_sample"] / first, 3)
        r["full_gc_share"] = round(r["full_gc_s"] / r["wall_s"], 3) if r["wall_s"] else 0.0
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    key = f"{args.label}: {args.mode}, {args.judge} judge"
    results[key] = {"python": sys.version.split()[0], "cores": os.cpu_count(), "sizes": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print("| run | samples | ms / sample | vs first size | full GC share | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for n, r in runs.items():
        print(
            f"| {key} | {n:,} | {r['ms_per_sample']:.3f} | {r['vs_first_size']:.2f} | "
            f"{r['full_gc_share']:.0%} | {r['peak_rss_mb']:,.0f} |"
        )


if __name__ == "__main__":
    main()
