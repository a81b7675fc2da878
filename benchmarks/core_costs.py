"""What the three RAG metrics cost per sample, and how long `import ragmetrics` takes.

Runs faithfulness, relevancy and groundedness together (one shared judge, as the pipeline does) over
a labelled JSONL file through the loopback fake LLM server, with the real openai SDK and instructor,
and counts what the server received: LLM calls, prompt and completion tokens (estimated by the server
as ceil(characters / 4), tool schema included). With ``--judge offline`` no server is used and the
offline judge's faithfulness is compared with the human labels (balanced accuracy at the threshold).

    python benchmarks/core_costs.py                       # fake server, all records
    python benchmarks/core_costs.py --judge offline       # offline judge quality
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ragmetrics.text import estimate_tokens as est_tokens  # the one estimate

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "faithfulness_dev.jsonl"


def load(path: Path, limit: int | None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:limit] if limit else rows


def import_time(runs: int = 7, code: str = "import ragmetrics") -> float:
    """Median wall time of `python -c CODE` in a fresh interpreter, and of `python -c pass`."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - started)
    baseline = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        baseline.append(time.perf_counter() - started)
    return statistics.median(times), statistics.median(baseline)


async def score_all(rows: list[dict], spec: str, concurrency: int) -> list[dict]:
    from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
    from ragmetrics.sample import Sample

    metrics = [
        FaithfulnessMetric(llm=spec, cache=False),
        RelevancyMetric(llm=spec, cache=False),
        GroundednessMetric(llm=spec, cache=False),
    ]
    shared = metrics[0].judge
    for m in metrics[1:]:
        m.use_judge(shared)
    gate = asyncio.Semaphore(concurrency)

    async def one(row: dict) -> dict:
        sample = Sample.from_fields(question=row["question"], answer=row["answer"], contexts=row["contexts"])
        async with gate:
            results = await asyncio.gather(*(m.evaluate_sample(sample) for m in metrics))
        return {
            "id": row["id"],
            "source": row["source"].split(":")[0],
            "label": row["label"]["faithful"],
            **{r.name: r.score for r in results},
            "calls": sum(r.usage.calls for r in results),
            "prompt_tokens": sum(r.usage.prompt_tokens for r in results),
            "completion_tokens": sum(r.usage.completion_tokens for r in results),
            "statuses": [r.status for r in results],
        }

    try:
        return await asyncio.gather(*(one(r) for r in rows))
    finally:
        await shared.aclose()


def per_sample(records: list[dict], key: str) -> float:
    return sum(r[key] for r in records) / max(1, len(records))


def balanced_accuracy(records: list[dict], threshold: float) -> float:
    pos = [r for r in records if r["label"]]
    neg = [r for r in records if not r["label"]]
    tpr = sum(r["faithfulness"] >= threshold for r in pos) / max(1, len(pos))
    tnr = sum(r["faithfulness"] < threshold for r in neg) / max(1, len(neg))
    return (tpr + tnr) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--judge", default="fake", help="'fake' (fake server, openai SDK) or 'offline'")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = load(args.data, args.limit)
    result: dict = {
        "data": str(args.data.name),
        "records": len(rows),
        "judge": args.judge,
        "python": sys.version.split()[0],
        "cores": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RAGMETRICS_CACHE_DIR"] = tmp
        if args.judge == "fake":
            from ragmetrics.testing import FakeLLMServer

            os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-dummy")
            with FakeLLMServer() as srv:
                started = time.perf_counter()
                records = asyncio.run(
                    score_all(rows, f"openai:gpt-4o-mini@{srv.openai_base_url}", args.concurrency)
                )
                wall = time.perf_counter() - started
                server_calls = srv.calls.total()
        else:
            started = time.perf_counter()
            records = asyncio.run(score_all(rows, args.judge, args.concurrency))
            wall = time.perf_counter() - started
            server_calls = 0
    lean = [
        r
        for r, row in zip(records, rows, strict=True)  # score_all returns one record per row
        if 800 <= sum(est_tokens(c) for c in row["contexts"]) <= 1200
        and 2 <= row["answer"].count(". ") + 1 <= 4
    ]
    imp, bare = import_time()
    imp_metrics, _ = import_time(
        code="from ragmetrics import FaithfulnessMetric, RelevancyMetric, "
        "GroundednessMetric, EvaluationPipeline"
    )
    result.update(
        {
            "wall_s": round(wall, 3),
            "calls_per_sample": per_sample(records, "calls"),
            "server_calls": server_calls,
            "prompt_tokens_per_sample": per_sample(records, "prompt_tokens"),
            "completion_tokens_per_sample": per_sample(records, "completion_tokens"),
            "lean_subset": {
                "n": len(lean),
                "prompt_tokens_per_sample": per_sample(lean, "prompt_tokens"),
                "calls_per_sample": per_sample(lean, "calls"),
            },
            "non_ok_statuses": sum(s != "ok" for r in records for s in r["statuses"]),
            "import_ragmetrics_s": round(imp, 3),
            "bare_python_s": round(bare, 3),
            "import_ragmetrics_minus_bare_s": round(imp - bare, 3),
            "import_metrics_and_pipeline_s": round(imp_metrics, 3),
        }
    )
    if all(r["label"] is not None for r in records):
        result["faithfulness_balanced_accuracy"] = {
            "threshold": args.threshold,
            "all": balanced_accuracy(records, args.threshold),
            **{
                src: balanced_accuracy([r for r in records if r["source"] == src], args.threshold)
                for src in sorted({r["source"] for r in records})
            },
        }
    out = args.out or HERE / "results" / f"core_costs_{args.judge}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print()
    print(
        "| judge | samples | LLM calls / sample | prompt tokens / sample | completion tokens / sample "
        "| prompt tokens / sample (~1k-token contexts, 3 sentences) | wall s | `import ragmetrics` s "
        "| import metrics + pipeline s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.judge} | {len(records)} | {result['calls_per_sample']:.2f} | "
        f"{result['prompt_tokens_per_sample']:.0f} | {result['completion_tokens_per_sample']:.0f} | "
        f"{result['lean_subset']['prompt_tokens_per_sample']:.0f} (n={len(lean)}) | {wall:.1f} | {imp:.2f} "
        f"| {imp_metrics:.2f} |"
    )


if __name__ == "__main__":
    main()
