"""Process start to the first judge request, ``ragmetrics eval`` and ``evaluate_sync``, OpenAI judge.

A fresh interpreter is spawned for each run; the loopback fake LLM server in this process stamps each
request as it arrives (``time.monotonic``, one clock for every process on Linux), so the figure is
spawn to the first request the judge sends (a canary, unless ``--no-canaries``). The bundled
example's 12 rows, the three core metrics, cache off. Two floors, scripts that only import openai and
instructor and send one structured request: through ``chat.completions.create`` (which loads the SDK's
``resources`` package, every API it has) and through the client's public ``post``, as ragmetrics does.
Medians of ``--runs`` (5). Also recorded: the child's own import timeline (``-X importtime``, top
modules) for one run. Writes ``benchmarks/results/first_request.json``.

    python benchmarks/first_request.py
    python benchmarks/first_request.py --src /tmp/before --label before
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXAMPLE = ROOT / "ragmetrics" / "data" / "example.jsonl"
OUT = HERE / "results" / "first_request.json"
METRICS = "faithfulness,relevancy,groundedness"

PYTHON_API = """
import sys, ragmetrics
rows = [__import__("json").loads(x) for x in open(sys.argv[1], encoding="utf-8") if x.strip()]
ragmetrics.evaluate_sync(rows, metrics=sys.argv[2].split(","), llm=sys.argv[3], progress=False,
                         cache=False, canaries=sys.argv[4] == "on")
"""


FLOOR = """
import asyncio, sys
import instructor, openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel
class Reply(BaseModel):
    answer: str
def through_create(raw):
    return instructor.from_openai(raw)
def through_post(raw):
    async def create(**body):
        return await raw.post("/chat/completions", body=body, cast_to=ChatCompletion)
    mode, provider = instructor.Mode.TOOLS, instructor.Provider.OPENAI
    patched = instructor.patch(create=create, mode=mode)
    return instructor.AsyncInstructor(client=raw, create=patched, mode=mode, provider=provider)
async def main():
    client = {WAY}(openai.AsyncOpenAI(base_url=sys.argv[1], api_key="x"))
    try:
        await client.chat.completions.create(model="gpt-4o-mini", response_model=Reply, max_retries=0,
                                             messages=[{"role": "user", "content": "hi"}])
    except Exception:
        pass
asyncio.run(main())
"""

FLOORS = {
    "floor": FLOOR.replace("{WAY}", "through_create"),
    "floor_post": FLOOR.replace("{WAY}", "through_post"),
}


def command(kind: str, spec: str, canaries: bool, work: Path) -> list[str]:
    if kind in FLOORS:  # the transport alone: import openai and instructor, send one structured request
        return [sys.executable, "-c", FLOORS[kind], spec.split("@", 1)[1]]
    if kind == "cli":
        cmd = [
            sys.executable,
            "-m",
            "ragmetrics",
            "eval",
            str(EXAMPLE),
            "--judge",
            spec,
            "--metrics",
            METRICS,
        ]
        cmd += ["--no-cache", "--out", str(work / "out.jsonl")] + ([] if canaries else ["--no-canaries"])
        return cmd
    return [sys.executable, "-c", PYTHON_API, str(EXAMPLE), METRICS, spec, "on" if canaries else "off"]


def one_run(kind: str, canaries: bool, env: dict[str, str], importtime: bool = False) -> dict[str, Any]:
    from ragmetrics.testing import FakeLLMServer

    with FakeLLMServer() as srv, tempfile.TemporaryDirectory() as tmp:
        cmd = command(kind, f"openai:gpt-4o-mini@{srv.openai_base_url}", canaries, Path(tmp))
        if importtime:
            cmd.insert(1, "-X")
            cmd.insert(2, "importtime")
        started = time.monotonic()
        # cwd: python -c and -m put it first on sys.path, so a checkout there would shadow --src
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=tmp)
        ended = time.monotonic()
        chats = sorted((r.received_at, r.body) for r in srv.requests if r.endpoint == "chat")
        probes = [p.received_at for p in srv.probes]
    if not chats:
        raise SystemExit(
            f"{kind}: no request reached the server (exit {done.returncode}):\n{done.stderr[-2000:]}"
        )
    out: dict[str, Any] = {
        "first_request_s": round(chats[0][0] - started, 3),
        "probe_s": round(probes[0] - started, 3) if probes else None,
        "exit_s": round(ended - started, 3),
        "exit_code": done.returncode,
    }
    if importtime:
        out["imports"] = top_imports(done.stderr)
    return out


def top_imports(stderr: str, n: int = 15) -> list[tuple[str, float]]:
    """The slowest top-level imports (cumulative seconds) of an ``-X importtime`` log."""
    found = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        if cumulative.isdigit() and not name.startswith(" ") and "." not in name.strip():
            found.append((name.strip(), round(int(cumulative) / 1e6, 3)))
    return sorted(found, key=lambda x: -x[1])[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--label", default="after")
    parser.add_argument("--src", type=Path, help="another checkout of ragmetrics to measure")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--ab",
        type=Path,
        nargs="+",
        help="checkouts to run in turns with the transport alone (use checkouts of one kind: a worktree "
        "in /tmp measured 0.04-0.08 s slower than the main checkout with the same code)",
    )
    args = parser.parse_args()
    if args.ab:
        return ab(args)
    env = dict(os.environ, OPENAI_API_KEY="sk-benchmark-dummy", RAGMETRICS_CACHE_DIR=tempfile.mkdtemp())
    if args.src:
        env["PYTHONPATH"] = str(args.src.resolve())
    result: dict[str, Any] = {"python": sys.version.split()[0], "cores": os.cpu_count(), "runs": args.runs}
    for kind in ("cli", "python"):
        for canaries in (True, False):
            runs = [one_run(kind, canaries, env) for _ in range(args.runs)]
            key = f"{kind}, canaries {'on' if canaries else 'off'}"
            result[key] = {
                "first_request_s_median": statistics.median(r["first_request_s"] for r in runs),
                "runs": runs,
            }
            print(key, json.dumps(result[key]["first_request_s_median"]), flush=True)
    for kind in FLOORS:
        runs = [one_run(kind, False, env) for _ in range(args.runs)]
        result[kind] = {
            "first_request_s_median": statistics.median(r["first_request_s"] for r in runs),
            "runs": runs,
        }
        print(kind, result[kind]["first_request_s_median"], flush=True)
    result["import_timeline"] = one_run("python", False, env, importtime=True)["imports"]
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results[args.label] = result
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)


def print_table(results: dict[str, Any]) -> None:
    print(
        "| run | CLI | CLI, no canaries | evaluate_sync | evaluate_sync, no canaries "
        "| transport alone, create | transport alone, post |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, r in results.items():
        if "medians" in r:
            continue
        cells = [
            r[k]["first_request_s_median"]
            for k in ("cli, canaries on", "cli, canaries off", "python, canaries on", "python, canaries off")
        ]
        floors = [f"{r[k]['first_request_s_median']:.2f} s" if k in r else "-" for k in FLOORS]
        print(f"| {label} | " + " | ".join([*(f"{c:.2f} s" for c in cells), *floors]) + " |")


def ab(args: argparse.Namespace) -> None:
    """The checkouts of ``--ab`` in turns, with the transport alone, canaries on: load hits all alike."""
    env = dict(os.environ, OPENAI_API_KEY="sk-benchmark-dummy", RAGMETRICS_CACHE_DIR=tempfile.mkdtemp())
    sources = {str(path): dict(env, PYTHONPATH=str(path.resolve())) for path in args.ab}
    got: dict[str, list[float]] = {}
    for _ in range(args.runs):
        for kind in FLOORS:
            got.setdefault(kind, []).append(one_run(kind, True, env)["first_request_s"])
        for kind in ("python", "cli"):
            for name, where in sources.items():
                got.setdefault(f"{kind}, {name}", []).append(one_run(kind, True, where)["first_request_s"])
    medians = {key: statistics.median(values) for key, values in got.items()}
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results[f"in turns: {args.label}"] = {"medians": medians, "runs": got}
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    for key, value in medians.items():
        print(f"{key}: {value:.3f} s ({value - medians['floor_post']:+.3f} s over the transport alone, post)")


if __name__ == "__main__":
    main()
