"""Canaries drawn from a run's rows: how often they catch a copycat judge, and fail a reading one.

Run: ``python benchmarks/canaries.py [--runs 200] [--rows 16]``. Each run is ``--rows`` rows drawn (seeded
by the run's number) from the human-labelled sets in ``../shared/data`` (faithfulness and relevancy dev
sets: BEGIN dialogues, ExpertQA long-form answers), or from the bundled example when those are missing.
For each run the canary is drawn from its rows as a pipeline run draws it
(:func:`ragmetrics.pipeline.canary_draw.draw_canary`) and put to each judge, as the run puts it:

- the offline judge, and ``FakeLLMServer()`` (its default mode: the offline judge behind real HTTP):
  reading judges, which must never fail (false alarms);
- ``FakeLLMServer(answer="copycat")``: extracts claims honestly, answers every verification supported
  with a random real quote of the cited context, and answers the bundled canary honestly (catch rate);
- ``FakeLLMServer(answer="schema")``: a schema filler (catch rate, for reference).

The bundled canary is put to the copycat once too: it passes it, which is the hole drawn canaries close.
Writes ``benchmarks/results/canaries.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

from ragmetrics.metrics.claims.faithfulness import FaithfulnessMetric
from ragmetrics.pipeline._metric_call import share_judges
from ragmetrics.pipeline.canaries import run_canaries
from ragmetrics.pipeline.canary_draw import CanaryDraw, bundled_draw, draw_canary
from ragmetrics.sample import Sample
from ragmetrics.testing import FakeLLMServer

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DATA = HERE.parent.parent / "shared" / "data"


def load_rows() -> tuple[list[Sample], str]:
    """The labelled rows with a question and contexts (or the bundled example), and where they came from."""
    files = [DATA / "faithfulness_dev.jsonl", DATA / "relevancy_dev.jsonl"]
    if not all(f.is_file() for f in files):
        text = (resources.files("ragmetrics") / "data" / "example.jsonl").read_text(encoding="utf-8")
        lines, source = text.splitlines(), "ragmetrics/data/example.jsonl"
    else:
        lines = [line for f in files for line in f.read_text(encoding="utf-8").splitlines()]
        source = "../shared/data/faithfulness_dev.jsonl + relevancy_dev.jsonl"
    rows = []
    for line in lines:
        if not line.strip():
            continue
        raw = json.loads(line)
        if raw.get("question") and raw.get("contexts"):
            rows.append(
                Sample(
                    id=str(raw["id"]),
                    question=raw["question"],
                    answer=raw["answer"],
                    contexts=raw["contexts"],
                )
            )
    return rows, source


async def put(draw: CanaryDraw, spec: str) -> bool:
    """Whether ``spec`` passes the canary ``draw`` (a judge that gave no reply counts as failing)."""
    judges = share_judges([FaithfulnessMetric(llm=spec, cache=False)])
    try:
        (result,) = await run_canaries(judges, draw)
    finally:
        for judge in judges:
            await judge.aclose()
    return result.passed


async def measure(runs: int, size: int) -> dict[str, Any]:
    rows, source = load_rows()
    draws = [draw_canary(random.Random(k).sample(rows, min(size, len(rows)))) for k in range(runs)]
    drawn = sum(d.source.startswith("drawn") for d in draws)
    kinds = {"number changed": 0, "negated": 0}
    for d in draws:
        changed = next(s for k, s in d.probes if k == "contradicted")
        kinds["negated" if " not " in f" {changed} " else "number changed"] += 1
    out: dict[str, Any] = {
        "data": source,
        "runs": runs,
        "rows_per_run": size,
        "drawn_from_rows": drawn,
        "bundled_fallbacks": runs - drawn,
        "contradicted_probe": kinds,
        "judges": {},
    }
    with (
        FakeLLMServer() as reading,
        FakeLLMServer(answer="copycat") as copycat,
        FakeLLMServer(answer="schema") as filler,
    ):
        judges = {
            "offline": "offline",
            "fake (reading)": f"openai:gpt-4o-mini@{reading.openai_base_url}",
            "copycat": f"openai:gpt-4o-mini@{copycat.openai_base_url}",
            "schema filler": f"openai:gpt-4o-mini@{filler.openai_base_url}",
        }
        for name, spec in judges.items():
            started = time.perf_counter()
            passed = [await put(d, spec) for d in draws]
            failed = [i for i, ok in enumerate(passed) if not ok]
            out["judges"][name] = {
                "runs": runs,
                "failed": len(failed),
                "fail_rate": len(failed) / runs,
                "failed_runs": failed[:20],
                "seconds": round(time.perf_counter() - started, 2),
            }
        out["bundled_canary_vs_copycat"] = {
            "passed": await put(bundled_draw("benchmark"), judges["copycat"]),
        }
    return out


def table(result: dict[str, Any]) -> str:
    lines = [
        "| judge | runs | canary failed | rate |",
        "|---|---|---|---|",
    ]
    for name, row in result["judges"].items():
        lines.append(f"| {name} | {row['runs']} | {row['failed']} | {row['fail_rate']:.1%} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rows", type=int, default=16)
    args = parser.parse_args()
    result = asyncio.run(measure(args.runs, args.rows))
    result["command"] = f"python benchmarks/canaries.py --runs {args.runs} --rows {args.rows}"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "canaries.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table(result))
    print(json.dumps({k: v for k, v in result.items() if k != "judges"}, indent=2))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
