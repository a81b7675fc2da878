"""evaluate_ray on a local Ray cluster: throughput with 1, 2 and 4 workers under one shared rpm cap.

Run: ``python benchmarks/ray_scale.py`` (10,000 samples per setting, about 15 minutes on 2 cores), or
``python benchmarks/ray_scale.py --samples 2000`` (what ran for the table in the README, about 4
minutes). Writes ``benchmarks/results/ray_scale.json`` and prints markdown table rows.

Setup: the fake server in its own process (``pipeline_throughput.ServerProcess``, its cheap
deterministic judge) answers every call after 300 ms. Faithfulness, relevancy and groundedness share
one judge: 2 calls per sample. Each worker's judge keeps ``--max-concurrency`` requests in flight, and
every worker asks one :class:`~ragmetrics.integrations.ray.ClusterRateLimit` of ``--rpm`` requests a
minute. The ideal schedule is the tighter of the two bounds: ``calls / (rpm / 60)`` (the cap) and
``calls x latency / (workers x max_concurrency)`` (the workers' concurrency); efficiency = ideal /
actual wall time, which includes starting the workers (a few seconds each run) and the input's
numbering; ``sending_efficiency`` = ideal / the time from the first request granted to the last
(the workers started, before the last batch's results were gathered).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline_throughput import ServerProcess, rows  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def run(srv: ServerProcess, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    from ragmetrics.integrations.ray import ClusterRateLimit, evaluate_ray

    spec = f"openai:fake-model@{srv.base_url}"
    data = rows(args.samples, offset=workers * 1_000_000)  # new texts each run: no cache hits across runs
    limit = ClusterRateLimit(requests_per_minute=args.rpm)
    srv.reset()
    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        out = evaluate_ray(
            data,
            metrics=["faithfulness", "relevancy", "groundedness"],
            llm=spec,
            judge_options={
                "api_key": "sk-bench",
                "max_concurrency": args.max_concurrency,
                "backoff_initial_s": 0,
            },
            cache=cache,
            workers=workers,
            batch_size=args.batch_size,
            rate_limit=limit,
            concurrency=2 * args.max_concurrency,
        )
        frame = out.to_pandas()
        wall = time.perf_counter() - t0
    calls = sum(srv.calls().values())
    stats = limit.stats()
    cap_s = calls / (args.rpm / 60.0)
    concurrency_s = calls * args.latency / (workers * args.max_concurrency)
    ideal = max(cap_s, concurrency_s)
    return {
        "workers": workers,
        "samples": args.samples,
        "calls": calls,
        "wall_s": round(wall, 2),
        "samples_per_s": round(args.samples / wall, 2),
        "calls_per_s": round(calls / wall, 2),
        "ideal_s": round(ideal, 2),
        "bound": "rpm cap" if cap_s >= concurrency_s else "worker concurrency",
        "efficiency": round(ideal / wall, 3),
        "sending_s": round(stats["span_s"], 2),
        "sending_efficiency": round(ideal / stats["span_s"], 3) if stats["span_s"] else None,
        "failed": int((frame["faithfulness_status"] != "ok").sum()),
        "bucket_waited_s": round(stats["waited_s"], 1),
        "throttles": stats["throttles"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
    parser.add_argument("--rpm", type=float, default=6000.0, help="the shared cap (requests per minute)")
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--max-concurrency", type=int, default=16, help="requests in flight per worker")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    parser.add_argument("--out", type=Path, default=RESULTS / "ray_scale.json")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="ray")  # Ray's own
    import ray

    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    results = []
    try:
        with ServerProcess(latency=args.latency) as srv:
            for workers in (int(w) for w in args.workers.split(",")):
                result = run(srv, workers, args)
                results.append(result)
                print(json.dumps(result), flush=True)
    finally:
        ray.shutdown()
    report = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "ray": ray.__version__},
        "settings": {
            "samples": args.samples,
            "latency_s": args.latency,
            "rpm": args.rpm,
            "max_concurrency_per_worker": args.max_concurrency,
            "batch_size": args.batch_size,
            "ray_num_cpus": args.num_cpus,
            "metrics": ["faithfulness", "relevancy", "groundedness"],
        },
        "runs": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    header = (
        "workers",
        "samples",
        "wall s",
        "samples/s",
        "ideal s",
        "bound",
        "efficiency",
        "sending s",
        "sending eff.",
    )
    print("\n| " + " | ".join(header) + " |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['workers']} | {r['samples']:,} | {r['wall_s']:.1f} | {r['samples_per_s']:.1f} | "
            f"{r['ideal_s']:.1f} | {r['bound']} | {r['efficiency']:.2f} | {r['sending_s']:.1f} | "
            f"{r['sending_efficiency']:.2f} |"
        )


if __name__ == "__main__":
    main()
