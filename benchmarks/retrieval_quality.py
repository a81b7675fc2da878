"""How well the retrieval metrics tell a record's own contexts from contexts of other records (issue 13).

No human labels for retrieval exist in ../shared/data, so the benchmark makes its own, and they cannot
be gamed: each labelled record keeps its own contexts (relevant by construction: the answer was
written from them) and gets distractor contexts drawn from OTHER records of the same source (never a
record with the same question, never a text equal to one of its own), at shuffled positions (seeded).
A judge that calls everything relevant gets AUROC 0.5 and the MAP of a random order.

1. **Ranking** (all records, no reference): ``context_relevancy`` and ``context_precision`` run through
   ``EvaluationPipeline``; each context's score is read from ``details["contexts"]`` (relevancy: judged
   relevant, 1 or 0; precision: the number of claims the context supports, 0 = not relevant). Reported:
   AUROC of own against distractor contexts (pooled, ties count half) and the mean average precision of
   ranking each sample's contexts by that score (ties in retrieval order, which is random), per source,
   beside the MAP of the shuffled retrieval order itself (no judge).
2. **Rank awareness** (``context_precision``'s score): the same samples with the own contexts first and
   last; the mean score must be higher with them first.
3. **Recall** (faithful records only, the answer as the reference: its claims are supported by the
   contexts, by the human label): ``context_recall`` with 0, 1, 2... of the own contexts removed (the
   distractors stay); the mean recall must fall.

The lexical heuristic ``context_relevance`` called directly (no pipeline) is reported as a baseline.

    python benchmarks/retrieval_quality.py                                  # offline judge
    python benchmarks/retrieval_quality.py --llm openai:MODEL@http://localhost:11434/v1
    python benchmarks/retrieval_quality.py --llm fake --limit 20            # the fake server (smoke)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
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
)  # ../shared/data from the repository, found from a worktree one level deeper too
# The offline context relevance (moved from ragmetrics/judge/offline/retrieval.py): soft-score AUROC 0.82
# (BEGIN 0.72, ExpertQA 0.90). RELEVANT_SCORE was first 0.5, far too strict (a third of ExpertQA's own
# contexts and a tenth of BEGIN's reached it); at 0.25 about 62% / 28% of own contexts and 4% / 1% of
# distractors count as relevant. Half of BEGIN's own contexts share no content word with the question.
RANKED = ("context_relevancy", "context_precision")


# -- data ----------------------------------------------------------------------------------------------


def load(path: Path, limit: int | None, seed: int) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("contexts") and r.get("question")]
    if limit:  # a seeded sample that keeps the sources' mix
        rows = random.Random(seed).sample(rows, min(limit, len(rows)))
    return rows


def source(row: dict) -> str:
    return row["source"].split(":")[0]


def distractors(rows: list[dict], i: int, k: int, rng: random.Random) -> list[str]:
    """``k`` contexts of other records of the same source: not the same question, not an own text."""
    own, question = set(rows[i]["contexts"]), rows[i]["question"].strip().casefold()
    pool = [
        c
        for j, r in enumerate(rows)
        if j != i and source(r) == source(rows[i]) and r["question"].strip().casefold() != question
        for c in r["contexts"]
        if c not in own
    ]
    pool = sorted(set(pool))  # deterministic, each text once
    return rng.sample(pool, min(k, len(pool)))


def mixed(rows: list[dict], seed: int) -> list[dict]:
    """Each record's own contexts and as many distractors (at least 2), at shuffled positions."""
    rng = random.Random(seed)
    out = []
    for i, row in enumerate(rows):
        own = list(row["contexts"])
        others = distractors(rows, i, max(2, len(own)), rng)
        items = [(c, True) for c in own] + [(c, False) for c in others]
        rng.shuffle(items)
        out.append(
            {
                "id": row["id"],
                "source": source(row),
                "question": row["question"],
                "answer": row["answer"],
                "contexts": [c for c, _ in items],
                "own": [o for _, o in items],
            }
        )
    return out


def ordered(samples: list[dict], own_first: bool) -> list[dict]:
    """The same samples with the own contexts first (or last), each group in its shuffled order."""
    out = []
    for s in samples:
        pairs = sorted(zip(s["contexts"], s["own"], strict=True), key=lambda p: p[1] != own_first)
        out.append(
            {**s, "id": f"{s['id']}:{'first' if own_first else 'last'}", "contexts": [c for c, _ in pairs]}
        )
        out[-1]["own"] = [o for _, o in pairs]
    return out


def recall_samples(rows: list[dict], seed: int) -> list[dict]:
    """Faithful records, the answer as the reference, with 0..n of the n own contexts removed."""
    rng = random.Random(seed + 1)
    out = []
    for i, row in enumerate(rows):
        if row["label"].get("faithful") is not True:
            continue
        own = list(row["contexts"])
        others = distractors(rows, i, 2, rng)
        order = own[:]
        rng.shuffle(order)  # which own context goes first
        for removed in range(len(own) + 1):
            kept = order[removed:] + others
            rng.shuffle(kept)
            out.append(
                {
                    "id": f"{row['id']}:removed={removed}",
                    "record": row["id"],
                    "source": source(row),
                    "removed": removed,
                    "all_removed": removed == len(own),
                    "question": row["question"],
                    "answer": row["answer"],
                    "reference": row["answer"],
                    "contexts": kept,
                }
            )
    return out


# -- statistics ----------------------------------------------------------------------------------------


def auroc(pos: Sequence[float], neg: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties counting half (Mann-Whitney)."""
    if not pos or not neg:
        return None
    ranked = sorted([(s, 1) for s in pos] + [(s, 0) for s in neg])
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mid = (i + j + 1) / 2  # mean 1-based rank of the tie group
        rank_sum += mid * sum(lab for _, lab in ranked[i:j])
        i = j
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def average_precision(relevant_in_order: Sequence[bool]) -> float | None:
    """Mean of precision@k over the ranks k of the relevant items (None: nothing relevant)."""
    hits, total = 0, 0.0
    for k, rel in enumerate(relevant_in_order, 1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else None


def ranked_ap(own: Sequence[bool], scores: Sequence[float]) -> float | None:
    """AP of ranking by ``scores`` (highest first; ties keep retrieval order)."""
    order = sorted(range(len(own)), key=lambda k: (-scores[k], k))
    return average_precision([own[k] for k in order])


def mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(sum(vals) / len(vals), 4) if vals else None


def by_source(items: list[tuple[str, Any]], fn: Callable[[list[Any]], Any]) -> dict[str, Any]:
    groups: dict[str, list[Any]] = defaultdict(list)
    for src, x in items:
        groups[src].append(x)
    return {"all": fn([x for _, x in items]), **{s: fn(xs) for s, xs in sorted(groups.items())}}


def ranking_figures(samples: list[dict], scores: list[list[float] | None]) -> dict[str, Any]:
    """AUROC (pooled own vs distractor) and MAP per source; samples without scores are left out."""
    pairs = [(s["source"], (s, sc)) for s, sc in zip(samples, scores, strict=True) if sc is not None]

    def roc(group: list[tuple[dict, list[float]]]) -> float | None:
        pos = [x for s, sc in group for x, o in zip(sc, s["own"], strict=True) if o]
        neg = [x for s, sc in group for x, o in zip(sc, s["own"], strict=True) if not o]
        value = auroc(pos, neg)
        return None if value is None else round(value, 4)

    return {
        "scored_samples": len(pairs),
        "auroc": by_source(pairs, roc),
        "map": by_source(pairs, lambda g: mean([ranked_ap(s["own"], sc) for s, sc in g])),
    }


# -- running the metrics -------------------------------------------------------------------------------


@contextmanager
def judge_spec(llm: str) -> Iterator[tuple[str, Any]]:
    """The judge spec to use, and the fake server when ``llm`` is ``fake``."""
    if llm != "fake":
        yield llm, None
        return
    from ragmetrics.testing import FakeLLMServer

    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-dummy")
    with FakeLLMServer() as srv:
        yield f"openai:gpt-4o-mini@{srv.openai_base_url}", srv


def run(spec: str, names: Sequence[str], samples: list[dict], concurrency: int) -> tuple[list[Any], dict]:
    """Score ``samples`` with the named metrics through the pipeline; the records and the run's figures."""
    from ragmetrics.metrics import metric_from_name
    from ragmetrics.pipeline import EvaluationPipeline

    metrics = [metric_from_name(n, llm=spec, cache=False) for n in names]
    rows = [
        {k: s[k] for k in ("id", "question", "answer", "contexts", "reference") if s.get(k) is not None}
        for s in samples
    ]
    started = time.perf_counter()
    results = EvaluationPipeline(metrics=metrics, concurrency=concurrency, progress=False).run(rows)
    wall = time.perf_counter() - started
    usage = results.stats.usage
    statuses = Counter(
        f"{n}:{rec.status_of(n)}" for rec in results for n in names
    )  # every non-ok status is visible
    return list(results), {
        "samples": len(samples),
        "wall_s": round(wall, 2),
        "calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "statuses": dict(sorted(statuses.items())),
    }


def context_scores(record: Any, name: str, n: int) -> list[float] | None:
    """Per context (retrieval order), the judge's score from ``details["contexts"]`` (None: no result)."""
    result = record.results.get(name)
    if result is None or result.status != "ok":
        return None
    scores = [0.0] * n
    for entry in (result.details or {}).get("contexts") or []:
        k = entry.get("index")
        if isinstance(k, int) and 0 <= k < n:
            if name == "context_precision":
                scores[k] = float(len(set(entry.get("supports") or [])))
            else:
                scores[k] = 1.0 if entry.get("relevant") else 0.0
    return scores


def lexical_baseline(samples: list[dict]) -> dict[str, Any]:
    from ragmetrics.judge.offline.retrieval import RELEVANT_SCORE, context_relevance

    started = time.perf_counter()
    scores = [[context_relevance(s["question"], c)[1] for c in s["contexts"]] for s in samples]
    seconds = time.perf_counter() - started
    soft = ranking_figures(samples, scores)
    hard = ranking_figures(samples, [[float(x >= RELEVANT_SCORE) for x in sc] for sc in scores])
    n_contexts = sum(len(s["contexts"]) for s in samples)
    return {
        "soft_score": soft,
        "relevant_flag": hard,
        "ms_per_context": round(1000 * seconds / max(1, n_contexts), 3),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--llm", default="offline", help="a judge spec (offline, openai:MODEL@URL, ...) or 'fake'"
    )
    parser.add_argument("--limit", type=int, default=None, help="a seeded sample of this many records")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "retrieval_quality.json")
    args = parser.parse_args(argv)
    rows = load(args.data, args.limit, args.seed)
    samples = mixed(rows, args.seed)
    own = sum(sum(s["own"]) for s in samples)
    result: dict[str, Any] = {
        "data": args.data.name,
        "judge": args.llm,
        "seed": args.seed,
        "records": len(rows),
        "per_source": dict(sorted(Counter(s["source"] for s in samples).items())),
        "contexts": {"own": own, "distractors": sum(len(s["own"]) for s in samples) - own},
        "python": sys.version.split()[0],
    }
    result["retrieval_order_map"] = by_source(
        [(s["source"], s) for s in samples], lambda g: mean([average_precision(s["own"]) for s in g])
    )
    result["lexical_baseline"] = lexical_baseline(samples)
    with tempfile.TemporaryDirectory() as tmp, judge_spec(args.llm) as (spec, _srv):
        os.environ["RAGMETRICS_CACHE_DIR"] = tmp
        records, run_figures = run(spec, RANKED, samples, args.concurrency)
        for name in RANKED:
            scores = [
                context_scores(r, name, len(s["contexts"])) for r, s in zip(records, samples, strict=True)
            ]
            result[name] = ranking_figures(samples, scores)
        result["ranking_run"] = run_figures
        # rank awareness: context precision with the own contexts first, then last
        first, last = ordered(samples, True), ordered(samples, False)
        order_records, order_run = run(spec, ["context_precision"], first + last, args.concurrency)
        scores = [r.scores.get("context_precision") for r in order_records]
        result["context_precision"]["own_first_mean_score"] = mean(scores[: len(first)])
        result["context_precision"]["own_last_mean_score"] = mean(scores[len(first) :])
        result["order_run"] = order_run
        # recall as the supporting contexts are removed
        rsamples = recall_samples(rows, args.seed)
        recall_records, recall_run = run(spec, ["context_recall"], rsamples, args.concurrency)
        result["context_recall"] = recall_figures(rsamples, recall_records)
        result["recall_run"] = recall_run
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    print()
    print(markdown(result))
    return result


def recall_figures(samples: list[dict], records: list[Any]) -> dict[str, Any]:
    """Mean recall per number of own contexts removed (and with all removed), and how often it rose."""
    got = {s["id"]: r.scores.get("context_recall") for s, r in zip(samples, records, strict=True)}
    levels: dict[str, Any] = {}
    for removed in sorted({s["removed"] for s in samples}):
        group = [s for s in samples if s["removed"] == removed]
        levels[str(removed)] = {
            "n": len(group),
            "mean": by_source([(s["source"], got[s["id"]]) for s in group], mean),
        }
    every = [s for s in samples if s["all_removed"]]
    series: dict[str, list[float | None]] = defaultdict(list)
    for s in samples:
        series[s["record"]].append(got[s["id"]])
    steps = [
        (a, b)
        for xs in series.values()
        for a, b in zip(xs[:-1], xs[1:], strict=True)
        if a is not None and b is not None
    ]
    return {
        "same_records": same_records(samples, got),
        "removed": levels,
        "all_removed": {
            "n": len(every),
            "mean": by_source([(s["source"], got[s["id"]]) for s in every], mean),
        },
        "none_removed": levels.get("0"),
        "steps": len(steps),
        "steps_that_rose": sum(b > a for a, b in steps),
        "records": len(series),
        "unscored": sum(v is None for v in got.values()),
    }


LEVELS = 3
"""The removal series compares the same records: per source, those with at least this many own contexts
(or, where no record has that many, the most any has), at 0, 1, ... removed and with all removed."""


def same_records(samples: list[dict], got: dict[str, float | None]) -> dict[str, Any]:
    """Per source, mean recall of one fixed set of records as their own contexts are removed."""
    out: dict[str, Any] = {}
    for src in sorted({s["source"] for s in samples}):
        mine = [s for s in samples if s["source"] == src]
        n_own: dict[str, int] = {}
        for s in mine:
            n_own[s["record"]] = max(n_own.get(s["record"], 0), s["removed"])
        cap = min(LEVELS, max(n_own.values()))
        keep = {rec for rec, n in n_own.items() if n >= cap}
        series: dict[str, float | None] = {}
        for removed in range(cap):
            series[str(removed)] = mean(
                [got[s["id"]] for s in mine if s["record"] in keep and s["removed"] == removed]
            )
        series["all"] = mean([got[s["id"]] for s in mine if s["record"] in keep and s["all_removed"]])
        out[src] = {"records": len(keep), "min_own_contexts": cap, "mean_recall": series}
    return out


def markdown(r: dict[str, Any]) -> str:
    def f(x: float | None) -> str:
        return "–" if x is None else f"{x:.3f}"

    lines = [
        "| judge | metric | AUROC all | AUROC BEGIN | AUROC ExpertQA | MAP all | MAP BEGIN | MAP ExpertQA |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [(r["judge"], name, r[name]) for name in RANKED]
    rows.append(("(direct)", "lexical context_relevance soft score", r["lexical_baseline"]["soft_score"]))
    for judge, name, fig in rows:
        a, m = fig["auroc"], fig["map"]
        lines.append(
            f"| {judge} | {name} | {f(a['all'])} | {f(a.get('BEGIN'))} | {f(a.get('ExpertQA'))} | "
            f"{f(m['all'])} | {f(m.get('BEGIN'))} | {f(m.get('ExpertQA'))} |"
        )
    o = r["retrieval_order_map"]
    lines.append(
        f"| (none) | retrieval order (shuffled) | 0.500 | | | {f(o['all'])} | {f(o.get('BEGIN'))} | "
        f"{f(o.get('ExpertQA'))} |"
    )
    cp = r["context_precision"]
    lines += [
        "",
        f"context_precision mean score, own contexts first {f(cp['own_first_mean_score'])}, "
        f"last {f(cp['own_last_mean_score'])}",
        "",
        "| records (faithful, answer as reference) | own contexts removed: 0 | 1 | 2 | all |",
        "|---|---|---|---|---|",
    ]
    rec = r["context_recall"]
    for src, fig in rec["same_records"].items():
        m = fig["mean_recall"]
        lines.append(
            f"| {src}, {fig['records']} with >= {fig['min_own_contexts']} own | {f(m.get('0'))} | "
            f"{f(m.get('1'))} | {f(m.get('2'))} | {f(m['all'])} |"
        )
    lines.append(f"\nrecall rose in {rec['steps_that_rose']} of {rec['steps']} single removals")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
