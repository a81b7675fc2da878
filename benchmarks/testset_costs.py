"""What a test set costs through the fake LLM server: calls and tokens per accepted item (issue 24).

Documents: the distinct contexts of a seeded sample of ../shared/data/faithfulness_dev.jsonl records, one
document per context. ``ragmetrics.generate`` runs with the real openai SDK and instructor against
``FakeLLMServer`` (the default answerer: the generation prompt is answered by the extractive generator,
claims by the offline judge), no cache, so the server counts what a first run sends. Reported: requests by
task, calls / prompt tokens / completion tokens per accepted item, the share of candidates rejected and
why, near-duplicates removed, the kind mix asked vs written; and the same run against
``FakeLLMServer(answer="schema")`` (a judge that does not read its inputs), which must write no item.
Goal: at most 3 calls per accepted item. A second corpus has the shape PEERS.md measured RAGAS's
``TestsetGenerator`` and DeepEval's ``Synthesizer`` on (12 documents of 400-1,500 characters, size 10):
12 such contexts of the same file, seeded, so the per-item figures sit beside theirs.

    python benchmarks/testset_costs.py                 # 60 records, 30 items
    python benchmarks/testset_costs.py --size 10 --records 20
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
DATA = next(
    (
        p / "shared" / "data" / "faithfulness_dev.jsonl"
        for p in HERE.parents
        if (p / "shared" / "data").is_dir()
    ),
    HERE.parent.parent / "shared" / "data" / "faithfulness_dev.jsonl",
)


def documents(records: int, seed: int) -> list:
    from ragmetrics.testset import Document

    rows = [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = random.Random(seed).sample(rows, min(records, len(rows)))
    seen: dict[str, str] = {}
    for row in rows:
        for j, ctx in enumerate(row["contexts"]):
            if ctx.strip() and ctx not in seen.values():
                seen[f"{row['id']}/{j}"] = ctx
    return [Document(id=k, text=v) for k, v in seen.items()]


def peer_documents(seed: int, n: int = 12) -> list:
    """``n`` distinct contexts of 400-1,500 characters (the documents PEERS.md's runs had)."""
    from ragmetrics.testset import Document

    rows = [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines() if x.strip()]
    texts = sorted({c for row in rows for c in row["contexts"] if 400 <= len(c) <= 1500})
    return [Document(id=f"peer{i}", text=t) for i, t in enumerate(random.Random(seed).sample(texts, n))]


def run(answer: str, docs: list, size: int, seed: int) -> dict:
    from ragmetrics.testing import FakeLLMServer
    from ragmetrics.testset import generate_sync

    with FakeLLMServer(answer=answer) as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        start = time.perf_counter()
        ts = generate_sync(docs, size=size, llm=spec, cache=False, seed=seed, concurrency=8)
        wall = time.perf_counter() - start
        by_task = Counter(r.task or "?" for r in srv.requests)
        total = srv.calls.total()
    rep = ts.report
    n = max(1, rep.written)
    return {
        "answer": answer,
        "written": rep.written,
        "requested": size,
        "candidates": rep.candidates,
        "server_requests": total,
        "requests_by_task": dict(by_task),
        "calls_per_item": total / n if rep.written else None,
        "prompt_tokens_per_item": rep.usage.prompt_tokens / n if rep.written else None,
        "completion_tokens_per_item": rep.usage.completion_tokens / n if rep.written else None,
        "reject_share": rep.rejected / max(1, rep.candidates),
        "rejects": rep.rejects,
        "duplicates_removed": rep.rejects.get("near_duplicate", 0),
        "kinds_requested": rep.kinds_requested,
        "kinds": rep.kinds,
        "documents_covered": f"{rep.documents_covered}/{rep.documents_total}",
        "cost_usd": rep.usage.cost_usd,
        "wall_s": wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=60)
    ap.add_argument("--size", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE / "results" / "testset_costs.json"))
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-fake")
    docs = documents(args.records, args.seed)
    results = {
        "documents": len(docs),
        "runs": [run(a, docs, args.size, args.seed) for a in ("offline", "schema")],
        "peer_shape": {"documents": 12, **run("offline", peer_documents(args.seed), 10, args.seed)},
    }
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
