"""Prompt tokens per sample by part (schema, instructions, data) for the claim metrics, and their verdicts.

The three core metrics (faithfulness, relevancy, groundedness; ``--metrics`` for others) score each data
set through the loopback fake LLM server's reading judge with the real openai SDK, cache and canaries
off. Every request the server received is split into its schema (the ``tools`` or ``response_format``
JSON, serialised as ``json.dumps`` writes it, as the peers' counting server did), its instructions (the
system message and the prompt template without its data) and its data (the rest of the user message).
Tokens are tiktoken's ``cl100k_base`` when its BPE file is on disk (llama-index ships one; no network),
else ragmetrics' own estimate, and the JSON says which. Each data set's verdicts, quotes and scores are
hashed, so two runs (``--label before`` from another checkout with ``--src``) show the same verdicts.

    python benchmarks/prompt_tokens.py --label after
    python benchmarks/prompt_tokens.py --label before --src /tmp/before   # git worktree add /tmp/before REV
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from string import Template
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data" / "faithfulness_dev.jsonl"
OUT = HERE / "results" / "prompt_tokens.json"
CORE = "faithfulness,relevancy,groundedness"


# -- the data sets ---------------------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def data_sets() -> dict[str, list[dict[str, Any]]]:
    """The bundled example; the peers' shape (3-sentence answers, 2-3 short contexts); the dev set."""
    example = ROOT / "ragmetrics" / "data" / "example.jsonl"
    rows = [json.loads(x) for x in example.read_text(encoding="utf-8").splitlines() if x.strip()]
    dev = [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines() if x.strip()]
    peer_shape = []
    for row in dev:  # the first 20 records with 3+ sentence answers and 2+ contexts, cut to that shape
        answer, contexts = _sentences(row["answer"]), [c for c in row["contexts"] if c.strip()]
        if len(answer) < 3 or len(contexts) < 2:
            continue
        cut = [" ".join(_sentences(c)[:2])[:400] for c in contexts[: 2 + len(peer_shape) % 2]]
        peer_shape.append(
            {"id": row["id"], "question": row["question"], "answer": " ".join(answer[:3]), "contexts": cut}
        )
        if len(peer_shape) == 20:
            break
    return {"example": rows, "peer_shape": peer_shape, "faithfulness_dev": dev}


# -- counting ---------------------------------------------------------------------------------------------


def tokenizer() -> tuple[str, Any]:
    """tiktoken's cl100k_base from a BPE file on disk, else ragmetrics' estimate."""
    try:
        import llama_index.core
        import tiktoken

        cache = Path(llama_index.core.__file__).parent / "_static" / "tiktoken_cache"
        if cache.is_dir():
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache))
        enc = tiktoken.get_encoding("cl100k_base")
        return "tiktoken cl100k_base", lambda text: len(enc.encode(text, disallowed_special=()))
    except Exception:  # no tiktoken or no BPE file offline: the package's own estimate
        from ragmetrics.text import estimate_tokens

        return "ragmetrics estimate (characters / 4)", estimate_tokens


def _templates() -> list[str]:
    """Every claim prompt file's text without its ``$placeholders`` (what is not data)."""
    from ragmetrics.prompting import prompt_root

    root = prompt_root() / "claims"
    return [Template(p.read_text(encoding="utf-8")).safe_substitute() for p in sorted(root.glob("*.md"))]


def _instructions(user: str, templates: list[str]) -> str:
    """The template a user message was rendered from, without its data (the longest one that fits)."""
    best = ""
    for text in templates:
        fixed = [part for part in re.split(r"\$\w+", text) if part.strip()]
        if fixed and all(part.strip() in user for part in fixed):
            candidate = "".join(fixed)
            best = max(best, candidate, key=len)
    return best


def split_request(body: dict[str, Any], count: Any, templates: list[str]) -> dict[str, int]:
    """A request's prompt tokens by part."""
    schema = body.get("tools") or body.get("response_format") or {}
    system = "".join(m["content"] for m in body["messages"] if m["role"] == "system")
    user = "".join(m["content"] for m in body["messages"] if m["role"] != "system")
    fixed = _instructions(user, templates)
    schema_t, system_t, user_t, fixed_t = count(json.dumps(schema)), count(system), count(user), count(fixed)
    return {"schema": schema_t, "instructions": system_t + fixed_t, "data": max(0, user_t - fixed_t)}


def _verdicts(records: list[dict[str, Any]]) -> str:
    """A hash of every result's status, score, claims, verdicts and quotes (the same verdicts)."""
    keep = []
    for rec in records:
        for name, res in sorted(rec["results"].items()):
            claims = [
                (c["text"], c["span"], c["verdict"], c["context_index"], c["evidence"], c["reason"])
                for c in res["claims"]
            ]
            keep.append((rec["id"], name, res["status"], res["score"], claims))
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()[:16]


def measure(name: str, rows: list[dict[str, Any]], metrics: str) -> dict[str, Any]:
    import ragmetrics
    from ragmetrics.testing import FakeLLMServer

    label, count = tokenizer()
    templates = _templates()
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-dummy")
    with FakeLLMServer() as srv:
        result = ragmetrics.evaluate_sync(
            rows,
            metrics=metrics.split(","),
            llm=f"openai:gpt-4o-mini@{srv.openai_base_url}",
            progress=False,
            canaries=False,
            cache=False,
        )
        bodies = [dict(r.body) for r in srv.requests if r.endpoint == "chat"]
    parts = {"schema": 0, "instructions": 0, "data": 0}
    by_schema: dict[str, dict[str, float]] = {}
    for body in bodies:
        split = split_request(body, count, templates)
        tool = (body.get("tools") or [{}])[0].get("function", {}).get("name", "other")
        entry = by_schema.setdefault(tool, {"calls": 0, "schema": 0, "instructions": 0, "data": 0})
        entry["calls"] += 1
        for key, value in split.items():
            parts[key] += value
            entry[key] += value
    n = len(rows)
    records = [r.model_dump(mode="json") for r in result]
    return {
        "samples": n,
        "tokenizer": label,
        "calls_per_sample": round(len(bodies) / n, 3),
        "prompt_tokens_per_sample": round(sum(parts.values()) / n, 1),
        "by_part_per_sample": {k: round(v / n, 1) for k, v in parts.items()},
        "by_request": {
            tool: {k: (v if k == "calls" else round(v / max(1, e["calls"]), 1)) for k, v in e.items()}
            for tool, e in sorted(by_schema.items())
        },
        "statuses": _statuses(records),
        "verdicts_sha": _verdicts(records),
        "data_set": name,
    }


def _statuses(records: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for rec in records:
        for res in rec["results"].values():
            out[res["status"]] = out.get(res["status"], 0) + 1
    return dict(sorted(out.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--metrics", default=CORE)
    parser.add_argument("--src", type=Path, help="another checkout of ragmetrics to measure")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sets = data_sets()
        print(json.dumps({name: measure(name, rows, args.metrics) for name, rows in sets.items()}))
        return
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = str(args.src.resolve())
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--metrics", args.metrics]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=args.src or ROOT)
    if done.returncode:
        sys.exit(f"the measurement failed:\n{done.stderr[-3000:]}")
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    where = args.src or ROOT
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "ragmetrics", "prompts"],
        cwd=where,
        capture_output=True,
        text=True,
    ).stdout.strip()
    revision = rev.stdout.strip() + (" with uncommitted changes" if dirty else "")
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    key = args.label if args.metrics == CORE else f"{args.label} ({args.metrics})"
    results[key] = {
        "revision": revision,
        "python": sys.version.split()[0],
        "metrics": args.metrics,
        **measured,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print("| run | data set | calls / sample | prompt tokens / sample | schema | instructions | data |")
    print("|---|---|---|---|---|---|---|")
    for label, run in results.items():
        for name in ("example", "peer_shape", "faithfulness_dev"):
            m = run[name]
            p = m["by_part_per_sample"]
            print(
                f"| {label} | {name} | {m['calls_per_sample']:.2f} | {m['prompt_tokens_per_sample']:,.0f} "
                f"| {p['schema']:,.0f} | {p['instructions']:,.0f} | {p['data']:,.0f} |"
            )


if __name__ == "__main__":
    main()
