"""Judge health per judge on the bundled example: spans and quotes found, re-asks, calls, the gate.

Run: ``python benchmarks/judge_health.py [--smollm2-url URL | --llama-python PY | --no-smollm2]
[--smollm2-rows 3]``. Scores the example (12 rows) with the seven claim metrics (every other row
given a reference: its first context) through each judge that runs here: the offline judge,
``FakeLLMServer()`` (default mode: the offline judge behind real HTTP),
``FakeLLMServer(answer="schema")`` (schema-valid filler) and a generic schema filler
(``FakeLLMServer(answer="placeholder")``: placeholder values, the way mock API servers fill a schema).

SmolLM2-135M-Instruct through llama-cpp-python's server (the one at ``--smollm2-url``, else one
started from the interpreter ``--llama-python`` or ``RAGMETRICS_LLAMA_PYTHON`` names, see
``llama_local.py``) decodes a few tokens a second on a busy CPU, so it runs on the first
``--smollm2-rows`` rows with faithfulness and relevancy (the gate's measurement set), next to the
offline judge and the generic filler on the same rows; when it cannot run, the reason is recorded.
Writes ``benchmarks/results/judge_health.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from importlib import resources
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling module

from llama_local import SMOLLM2_OPTIONS, add_smollm2_arguments, smollm2

from ragmetrics.metrics import BUILTIN_METRICS
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN
from ragmetrics.testing import FakeLLMServer

RESULTS = Path(__file__).resolve().parent / "results"
NAMES = (
    "faithfulness",
    "relevancy",
    "groundedness",
    "context_recall",
    "context_precision",
    "context_relevancy",
    "answer_correctness",
)
SMALL_NAMES = ("faithfulness", "relevancy")
"""The metrics SmolLM2 is measured with (as the gate's default was measured)."""


def rows() -> list[dict[str, Any]]:
    text = resources.files("ragmetrics").joinpath("data/example.jsonl").read_text(encoding="utf-8")
    out = [json.loads(line) for line in text.splitlines() if line.strip()]
    for i, row in enumerate(out):
        if i % 2 == 0 and row.get("contexts"):
            row["reference"] = row["contexts"][0]
    return out


def health_row(
    label: str,
    spec: str,
    data: list[dict[str, Any]],
    names: tuple[str, ...],
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score ``data`` with ``names`` through ``spec`` (cache off); the judge's health and calls."""
    metrics = [BUILTIN_METRICS[n](llm=spec, cache=False, **(options or {})) for n in names]
    started = time.perf_counter()
    results = EvaluationPipeline(metrics, progress=False).run(data)
    seconds = time.perf_counter() - started
    summary = results.summary()
    health = summary.judge_health[spec]
    return {
        "judge": label,
        "metrics": list(names),
        "samples": health.samples,
        "spans": health.spans,
        "spans_found": health.spans_found,
        "span_rate": health.span_rate,
        "quotes": health.quotes,
        "quotes_found": health.quotes_found,
        "quote_rate": health.quote_rate,
        "reasks": health.reasks,
        "reading_rate": health.reading_rate,
        "gate_fails": health.low(JUDGE_HEALTH_MIN),
        "calls": summary.run.usage.calls,
        "means": {n: a.mean for n, a in summary.aggregates.items()},
        "statuses": {n: a.statuses for n, a in summary.aggregates.items()},
        "seconds": round(seconds, 2),
    }


def measure(label: str, mode: str, data: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, Any]:
    """One of the judges that always run here: offline, or the fake server in one of its modes."""
    answer: Literal["offline", "schema", "placeholder"] = (
        "placeholder" if mode == "generic" else "schema" if mode == "schema" else "offline"
    )
    with FakeLLMServer(answer=answer) as srv:
        spec = "offline" if mode == "offline" else f"openai:gpt-4o-mini@{srv.openai_base_url}"
        row = health_row(label, spec, data, names)
        row["calls"] = srv.calls.total()  # what the server received
        return row


def table(out: list[dict[str, Any]]) -> str:
    lines = [
        "| judge | rows / metrics | spans found | quotes found | re-asks | reading rate | gate | calls |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in out:
        rate = "-" if r["reading_rate"] is None else f"{r['reading_rate']:.2f}"
        lines.append(
            f"| {r['judge']} | {r['samples']} / {len(r['metrics'])} | {r['spans_found']}/{r['spans']} | "
            f"{r['quotes_found']}/{r['quotes']} | {r['reasks']} | {rate} | "
            f"{'fails' if r['gate_fails'] else 'passes'} | {r['calls']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_smollm2_arguments(parser)
    parser.add_argument("--smollm2-rows", type=int, default=3, help="example rows SmolLM2 scores")
    parser.add_argument("--out", type=Path, default=RESULTS / "judge_health.json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    os.environ.setdefault("OPENAI_API_KEY", "test")
    judges = [
        ("offline", "offline"),
        ("FakeLLMServer() default", "default"),
        ('FakeLLMServer(answer="schema")', "schema"),
        ("generic schema filler", "generic"),
    ]
    data = rows()
    out = [measure(label, mode, data, NAMES) for label, mode in judges]
    small = data[: args.smollm2_rows]
    with tempfile.TemporaryDirectory() as tmp, smollm2(args, Path(tmp) / "server.log") as (url, info):
        if url is not None:
            out.append(measure("offline (SmolLM2's rows)", "offline", small, SMALL_NAMES))
            out.append(measure("generic schema filler (SmolLM2's rows)", "generic", small, SMALL_NAMES))
            out.append(
                health_row(
                    "SmolLM2-135M-Instruct", f"openai:smollm2@{url}", small, SMALL_NAMES, SMOLLM2_OPTIONS
                )
            )
        else:
            print(f"SmolLM2 not run: {info['skipped']}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"gate_min": JUDGE_HEALTH_MIN, "judges": out, "smollm2": {**info, "options": SMOLLM2_OPTIONS}}
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    print(table(out))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
