"""Do generated items tell a working RAG system from a broken one? Offline, no key (issue 24).

Documents: the distinct contexts of a seeded sample of ../shared/data/faithfulness_dev.jsonl records.
``ragmetrics.generate(llm="offline")`` writes the test set (extractive generator, offline verification).
Each item is then answered twice and scored with the offline judge:

* perfect system: ``answer`` = the item's reference, ``contexts`` = its own reference contexts;
* broken retriever: ``contexts`` = the reference contexts of an item from another document (a
  seeded derangement), ``answer`` = the first sentence of those contexts (what a system answers from
  what it retrieved).

The metrics (faithfulness, context_recall, answer_correctness) must separate the two: reported as the
mean of each, and the share of items where the perfect system scores higher (pairwise win rate).

    python benchmarks/testset_quality.py              # 80 records, 40 items
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

METRICS = ["faithfulness", "context_recall", "answer_correctness"]


def main() -> None:
    from testset_costs import documents

    from ragmetrics import evaluate_sync
    from ragmetrics.testset import generate_sync
    from ragmetrics.text import split_sentences

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=80)
    ap.add_argument("--size", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE / "results" / "testset_quality.json"))
    args = ap.parse_args()
    docs = documents(args.records, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        ts = generate_sync(docs, size=args.size, llm="offline", out=Path(tmp) / "t.jsonl", seed=args.seed)
    items = [i for i in ts.items if i.kind != "unanswerable"]
    rng = random.Random(args.seed)
    order = list(range(len(items)))
    while True:  # a derangement across documents: nobody keeps a context of its own document
        rng.shuffle(order)
        if all(set(items[i].source).isdisjoint(items[j].source) for i, j in enumerate(order)):
            break
    perfect = [
        {
            "question": it.question,
            "answer": it.reference,
            "contexts": it.reference_contexts,
            "reference": it.reference,
        }
        for it in items
    ]
    broken = []
    for i, j in enumerate(order):
        ctx = items[j].reference_contexts
        first = next((s for s in split_sentences(ctx[0]) if len(s.split()) >= 4), ctx[0][:200])
        broken.append(
            {"question": items[i].question, "answer": first, "contexts": ctx, "reference": items[i].reference}
        )
    scores = {}
    for name, rows in (("perfect", perfect), ("broken", broken)):
        res = evaluate_sync(rows, metrics=METRICS, llm="offline", progress=False)
        scores[name] = {m: [r.scores.get(m) for r in res] for m in METRICS}
    summary = {"items": len(items), "kinds": ts.report.kinds, "metrics": {}}
    for m in METRICS:
        p, b = scores["perfect"][m], scores["broken"][m]
        pairs = [(x, y) for x, y in zip(p, b, strict=True) if x is not None and y is not None]
        wins = sum(1.0 if x > y else 0.5 if x == y else 0.0 for x, y in pairs)
        summary["metrics"][m] = {
            "perfect_mean": sum(x for x, _ in pairs) / len(pairs),
            "broken_mean": sum(y for _, y in pairs) / len(pairs),
            "perfect_wins": wins / len(pairs),
            "scored": len(pairs),
        }
    Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
