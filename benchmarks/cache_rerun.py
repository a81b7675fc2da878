"""Re-running a finished dataset from the judge cache: time and calls (target: 1,000 samples < 3 s, 0 calls).

Run: ``python benchmarks/cache_rerun.py``. Fills a fresh cache with 1,000 samples x (faithfulness,
relevancy, groundedness) through the fake server (own process, 0 ms latency), then re-runs the same
dataset twice: in the same process with new metric objects (so nothing comes from memory: every reply
is read from disk), and in a fresh Python process (imports included). Writes
``benchmarks/results/cache_rerun.json`` and prints a markdown table row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline_throughput import ServerProcess, metrics, rows  # noqa: E402

from ragmetrics.pipeline import EvaluationPipeline  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

COLD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    sys.path.insert(0, sys.argv[3])
    from pipeline_throughput import metrics
    from ragmetrics.pipeline import EvaluationPipeline
    data = [json.loads(line) for line in open(sys.argv[4])]
    results = EvaluationPipeline(metrics=metrics(sys.argv[1], sys.argv[2], 32), concurrency=64).run(data)
    t1 = time.perf_counter()
    print(json.dumps({"total_s": t1 - t0, "calls": results.stats.usage.calls, "failed": results.stats.failed,
                      "hits": results.stats.cache.hits}))
""")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-dummy")
    data = rows(args.samples)
    out: dict[str, Any] = {"samples": args.samples, "cpus": os.cpu_count()}
    with ServerProcess(latency=0.0) as srv, tempfile.TemporaryDirectory() as tmp:
        spec = f"openai:fake-model@{srv.base_url}"
        cache = str(Path(tmp) / "cache")
        t0 = time.perf_counter()
        first = await EvaluationPipeline(metrics=metrics(spec, cache, 32), concurrency=64).evaluate(data)
        out["first_run_s"] = time.perf_counter() - t0
        out["first_run_calls"] = sum(srv.calls().values())
        srv.reset()

        times = []
        for _ in range(3):  # new metric objects each time: every reply is read back from disk
            t0 = time.perf_counter()
            again = await EvaluationPipeline(metrics=metrics(spec, cache, 32), concurrency=64).evaluate(data)
            times.append(time.perf_counter() - t0)
        out["rerun_s"] = min(times)
        out["rerun_all_s"] = [round(t, 3) for t in times]
        out["rerun_calls"] = sum(srv.calls().values())
        out["rerun_cache_hits"] = again.stats.cache.hits
        out["same_scores"] = [r.scores for r in again] == [r.scores for r in first]

        data_path = Path(tmp) / "data.jsonl"
        data_path.write_text("\n".join(json.dumps(r) for r in data), encoding="utf-8")
        script = Path(tmp) / "cold.py"
        script.write_text(COLD, encoding="utf-8")
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(script), spec, cache, str(Path(__file__).resolve().parent), str(data_path)],
            capture_output=True,
            text=True,
            check=True,
        )
        cold = json.loads(proc.stdout.strip().splitlines()[-1])
        out["cold_process_wall_s"] = time.perf_counter() - t0
        out["cold_process_run_s"] = cold["total_s"]
        out["cold_process_calls"] = cold["calls"] + sum(srv.calls().values())
    out["rerun_samples_per_s"] = args.samples / out["rerun_s"]
    out["target_met"] = out["rerun_s"] < 3.0 and out["rerun_calls"] == 0
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cache_rerun.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
    print(
        "| benchmark | samples | first run s | re-run s (same process) "
        "| re-run s (new process, with imports) "
        "| calls on re-run |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| cache re-run | {args.samples} | {out['first_run_s']:.2f} | {out['rerun_s']:.2f} | "
        f"{out['cold_process_wall_s']:.2f} | {out['rerun_calls'] + out['cold_process_calls']} |"
    )


if __name__ == "__main__":
    asyncio.run(main())
