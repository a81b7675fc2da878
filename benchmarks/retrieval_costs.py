"""What the seven RAG metrics cost per sample, alone and together, with and without a reference (issue 13).

Every metric combination of interest (each metric alone; faithfulness + relevancy + groundedness, the
three of today; the four retrieval and reference metrics; all seven) runs through ``EvaluationPipeline``
against the loopback fake LLM server with the real openai SDK and instructor, a fresh set of metrics
per combination and no cache carried over, so what the server counts is what a first run costs: LLM
calls, prompt and completion tokens (estimated by the server as ceil(characters / 4), tool schema
included) and wall time per sample. Issue 13's budget for all seven: at most 4 calls per sample with a
reference, 2 without, and at most twice the prompt tokens of the three of today. The rows leave out the
canaries (known-answer probes a run puts to its judge once, whatever its size: ``canaries=False``), so a
row is the metrics' own cost per sample; what the canaries cost a run is measured apart (``canaries``).

The samples are records of ../shared/data/faithfulness_dev.jsonl (a seeded sample keeping the sources'
mix). The data has no reference answers; "with a reference" gives each sample the leading sentences of
its first context, cut to about the answer's length (a plausible extractive gold answer of realistic
size). Without one, context recall and answer correctness give every row ``invalid_input`` (no call).
"Today" is ``results/retrieval_costs_before.json``: the three metrics on the code before issue 13
(main at a0fa6e3, same records and seed), written by this script with
``--combos "faithfulness,relevancy,groundedness,three RAG metrics" --out .../retrieval_costs_before.json``.

    python benchmarks/retrieval_costs.py                  # 100 records
    python benchmarks/retrieval_costs.py --limit 20
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = next(
    (
        p / "shared" / "data" / "faithfulness_dev.jsonl"
        for p in HERE.parents
        if (p / "shared" / "data").is_dir()
    ),
    HERE.parent.parent / "shared" / "data" / "faithfulness_dev.jsonl",
)
THREE = ("faithfulness", "relevancy", "groundedness")
FOUR = ("context_recall", "context_precision", "context_relevancy", "answer_correctness")
COMBOS: dict[str, tuple[str, ...]] = {
    **{name: (name,) for name in THREE + FOUR},
    "three RAG metrics": THREE,
    "four retrieval metrics": FOUR,
    "all seven": THREE + FOUR,
}
BUDGET = {"calls_with_reference": 4.0, "calls_without_reference": 2.0, "prompt_tokens_vs_three": 2.0}


def load(path: Path, limit: int | None, seed: int) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if limit:
        rows = random.Random(seed).sample(rows, min(limit, len(rows)))
    return rows


def reference_for(row: dict) -> str:
    """The leading sentences of the first context, about as long as the answer (at least one sentence)."""
    from ragmetrics.text import split_sentences

    out = ""
    for sentence in split_sentences(row["contexts"][0] if row["contexts"] else row["answer"]):
        if out and len(out) + len(sentence) > len(row["answer"]):
            break
        out = f"{out} {sentence}".strip()
    return out or row["answer"]


def samples(rows: list[dict], with_reference: bool) -> list[dict]:
    out = []
    for row in rows:
        sample = {
            "id": row["id"],
            "question": row["question"],
            "answer": row["answer"],
            "contexts": row["contexts"],
        }
        if with_reference:
            sample["reference"] = reference_for(row)
        out.append(sample)
    return out


def measure(
    srv: Any,
    spec: str,
    names: tuple[str, ...],
    data: list[dict],
    concurrency: int,
    canaries: bool = False,
) -> dict[str, Any]:
    from ragmetrics.metrics import metric_from_name
    from ragmetrics.pipeline import EvaluationPipeline

    srv.reset()
    metrics = [metric_from_name(n, llm=spec, cache=False) for n in names]
    pipeline = EvaluationPipeline(metrics=metrics, concurrency=concurrency, progress=False, canaries=canaries)
    started = time.perf_counter()
    results = pipeline.run(data)
    wall = time.perf_counter() - started
    n = len(data)
    statuses = Counter(f"{name}:{rec.status_of(name)}" for rec in results for name in names)
    return {
        "metrics": list(names),
        "samples": n,
        "calls_per_sample": round(srv.calls.total() / n, 3),
        "calls_by_task": dict(sorted(srv.calls.items())),
        "prompt_tokens_per_sample": round(srv.prompt_tokens / n, 1),
        "completion_tokens_per_sample": round(srv.completion_tokens / n, 1),
        "wall_ms_per_sample": round(1000 * wall / n, 2),
        "pipeline_calls": results.stats.usage.calls,
        "statuses": dict(sorted(statuses.items())),
        "canary_calls": sum(c.usage.calls for c in results.summary().canaries),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--limit", type=int, default=100, help="a seeded sample of this many records (0: all)"
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--combos", default=",".join(COMBOS), help="comma-separated names of COMBOS")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "retrieval_costs.json")
    parser.add_argument(
        "--before",
        type=Path,
        default=HERE / "results" / "retrieval_costs_before.json",
        help="a run of the three RAG metrics on the code before issue 13 (the budget's 'today')",
    )
    args = parser.parse_args(argv)
    from ragmetrics.testing import FakeLLMServer

    rows = load(args.data, args.limit or None, args.seed)
    wanted = [c.strip() for c in args.combos.split(",") if c.strip()]
    result: dict[str, Any] = {
        "data": args.data.name,
        "records": len(rows),
        "per_source": dict(sorted(Counter(r["source"].split(":")[0] for r in rows).items())),
        "seed": args.seed,
        "judge": "fake server (openai SDK, offline judge's answers)",
        "python": sys.version.split()[0],
        "cores": os.cpu_count(),
        "budget": BUDGET,
        "with_reference": {},
        "without_reference": {},
    }
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-dummy")
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as srv:
        os.environ["RAGMETRICS_CACHE_DIR"] = tmp
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        measure(srv, spec, ("faithfulness",), samples(rows[:2], True), 2)  # warm the SDK imports
        for key, with_ref in (("with_reference", True), ("without_reference", False)):
            data = samples(rows, with_ref)
            for combo in wanted:
                result[key][combo] = measure(srv, spec, COMBOS[combo], data, args.concurrency)
        # The canaries are a cost per run and judge, not per sample: one run with them, counted apart.
        with_canaries = measure(srv, spec, THREE, samples(rows, False), args.concurrency, canaries=True)
        result["canaries"] = {
            "calls_per_run": with_canaries["canary_calls"],
            "run_calls_with_them": with_canaries["pipeline_calls"],
            "run_calls_without_them": result["without_reference"]
            .get("three RAG metrics", {})
            .get("pipeline_calls"),
        }
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before.is_file() else None
    if before is not None and before.get("records") == result["records"] and before.get("seed") == args.seed:
        result["before"] = {
            "file": args.before.name,
            **{k: before[k].get("three RAG metrics") for k in ("with_reference", "without_reference")},
        }
    result["verdict"] = verdict(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    print()
    print(markdown(result))
    return result


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """Issue 13's budget against the measured figures (None where a combination was not run)."""
    out: dict[str, Any] = {}
    for key, limit in (("with_reference", 4.0), ("without_reference", 2.0)):
        seven = result[key].get("all seven")
        three = (result.get("before") or {}).get(key) or result[key].get("three RAG metrics")
        if seven is None:
            continue
        out[f"calls_{key}"] = {
            "measured": seven["calls_per_sample"],
            "budget": limit,
            "within": seven["calls_per_sample"] <= limit,
        }
        if three is not None and three["prompt_tokens_per_sample"]:
            ratio = seven["prompt_tokens_per_sample"] / three["prompt_tokens_per_sample"]
            out[f"prompt_tokens_ratio_{key}"] = {
                "measured": round(ratio, 3),
                "budget": 2.0,
                "within": ratio <= 2.0,
            }
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| metrics | reference | LLM calls / sample | prompt tokens / sample | completion tokens / sample "
        "| wall ms / sample |",
        "|---|---|---|---|---|---|",
    ]
    for key, label in (("with_reference", "yes"), ("without_reference", "no")):
        for combo, m in result[key].items():
            lines.append(
                f"| {combo} | {label} | {m['calls_per_sample']:.2f} | {m['prompt_tokens_per_sample']:.0f} | "
                f"{m['completion_tokens_per_sample']:.0f} | {m['wall_ms_per_sample']:.1f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
