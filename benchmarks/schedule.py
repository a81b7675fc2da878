"""Schedule efficiency at 300 ms a call: wall time of ``evaluate()`` against the ideal schedule.

The fake server runs in its own process and answers every call after 300 ms. ``evaluate_sync`` scores
``--samples`` generated rows (faithfulness, relevancy, groundedness: 2 sequential calls a sample) with
the judge's default 16 requests in flight, canaries on (the default), cache off; the SDK imports are
warmed by a one-row run first, so what is measured is the schedule. The ideal is every slot busy from
the first call to the last: ``calls / 16 x 0.3 s`` (the canaries' calls included). A short run
(``--short``, 20 samples) shows what the canaries cost at the start. Medians of ``--runs``. Writes
``benchmarks/results/schedule.json``; ``--src`` measures another checkout.

    python benchmarks/schedule.py
    python benchmarks/schedule.py --src /tmp/before --label before
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "schedule.json"
LATENCY_S = 0.3
IN_FLIGHT = 16

CHILD = r"""
import json, sys, time
sys.path.insert(0, {here!r})
from pipeline_throughput import rows
import ragmetrics
n, runs, url = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
METRICS = ["faithfulness", "relevancy", "groundedness"]
spec = f"openai:fake-model@{{url}}"
ragmetrics.evaluate_sync(rows(1, offset=10**6), metrics=["faithfulness"], llm=spec, progress=False,
                         canaries=False, cache=False)  # imports warmed: the schedule is what is timed
out = []
for r in range(runs):
    t = time.perf_counter()
    res = ragmetrics.evaluate_sync(rows(n, offset=r * n), metrics=METRICS, llm=spec, progress=False,
                                   cache=False)
    out.append({{"wall_s": time.perf_counter() - t, "calls": res.stats.usage.calls,
                "scored": sum(r.faithfulness is not None for r in res)}})  # 0: its judge fails the canaries
print(json.dumps(out))
"""


def measure(n: int, runs: int, url: str, env: dict[str, str], src: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(here=str(HERE)), str(n), str(runs), url],
        cwd=src,  # python -c puts the working directory first on sys.path
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{n} samples failed:\n{done.stderr[-3000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    for r in got:
        r["ideal_s"] = r["calls"] / IN_FLIGHT * LATENCY_S
        r["efficiency"] = round(r["ideal_s"] / r["wall_s"], 3)
        r["wall_s"] = round(r["wall_s"], 3)
    return {
        "samples": n,
        "wall_s_median": statistics.median(r["wall_s"] for r in got),
        "efficiency_median": statistics.median(r["efficiency"] for r in got),
        "runs": got,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--short", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--label", default="now")
    parser.add_argument("--src", type=Path, help="another checkout of ragmetrics to measure")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    env = dict(os.environ, OPENAI_API_KEY="sk-benchmark-dummy")
    src = (args.src or HERE.parent).resolve()
    env["PYTHONPATH"] = str(src)
    sys.path.insert(0, str(HERE))
    from pipeline_throughput import ServerProcess

    with ServerProcess() as srv:
        srv.set_latency(LATENCY_S)
        result = {
            "python": sys.version.split()[0],
            "cores": os.cpu_count(),
            "short": measure(args.short, max(args.runs, 5), srv.base_url, env, src),
            "long": measure(args.samples, args.runs, srv.base_url, env, src),
        }
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results[args.label] = result
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print("| run | short: samples, wall s | long: samples, wall s, ideal s, efficiency |")
    print("|---|---|---|")
    for label, r in results.items():
        s, g = r["short"], r["long"]
        ideal = statistics.median(x["ideal_s"] for x in g["runs"])
        print(
            f"| {label} | {s['samples']:,}, {s['wall_s_median']:.2f} | {g['samples']:,}, "
            f"{g['wall_s_median']:.2f}, {ideal:.2f}, {g['efficiency_median']:.3f} |"
        )


if __name__ == "__main__":
    main()
