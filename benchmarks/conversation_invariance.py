"""Does a turn of a conversation score as the same sample scored alone? An invariance check on labelled data.

Conversations are built by chaining k independent labelled records of
``../shared/data/faithfulness_dev.jsonl`` (seeded shuffle; each record a user question, then the
assistant's answer carrying the record's contexts), scored turn by turn through ``ragmetrics.evaluate``
(faithfulness, relevancy, groundedness), and each turn's scores are compared exactly (float equality,
and equal statuses) with the record scored alone. ``--data ../shared/data/relevancy_dev.jsonl`` runs
the relevancy labels (no contexts). Balanced accuracy at 0.5 against the labels, alone and per turn,
says whether a difference helps or hurts.

A later turn is not the record by design: its question is read after a transcript of the earlier
messages, and what the user said in earlier turns is evidence beside the contexts (the question itself
is not, so a first turn is its record exactly). Where a turn's score differs, two re-scorings of the
record as a plain sample say which of those moved it: the record with the turn's evidence (its
contexts and the user's earlier messages), and the record with the turn's question (the history
transcript and the question). A third, the turn's own sample scored as a plain sample, checks that the
pipeline adds nothing else.

    python benchmarks/conversation_invariance.py                 # offline judge, k = 1 and 3
    python benchmarks/conversation_invariance.py --data ../shared/data/relevancy_dev.jsonl
    python benchmarks/conversation_invariance.py --judge fake    # through FakeLLMServer's reading answers
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "faithfulness_dev.jsonl"
METRICS = ("faithfulness", "relevancy", "groundedness")
SEED = 41


def load(path: Path, limit: int | None = None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:limit] if limit else rows


def chain(rows: list[dict], k: int, seed: int = SEED) -> list[tuple[dict, list[dict]]]:
    """Conversations of k records each (the last may be shorter), with the records of their turns in order."""
    order = list(rows)
    random.Random(seed).shuffle(order)
    out = []
    for start in range(0, len(order), k):
        group = order[start : start + k]
        messages: list[dict] = []
        for row in group:
            messages.append({"role": "user", "content": row["question"]})
            messages.append(
                {"role": "assistant", "content": row["answer"], "contexts": list(row["contexts"])}
            )
        out.append(({"id": f"conv{start // k}", "messages": messages}, group))
    return out


def _sample(row_id: str, question: str, answer: str, contexts: Any) -> dict:
    return {"id": row_id, "question": question, "answer": answer, "contexts": list(contexts)}


def _score(records: list[dict], llm: str) -> tuple[dict[str, dict[str, tuple[float | None, str]]], Any]:
    import ragmetrics

    results = ragmetrics.evaluate_sync(
        records, metrics=list(METRICS), llm=llm, progress=False, canaries=False
    )
    return {r.id: {m: _outcome(r, m) for m in METRICS} for r in results}, results


def _outcome(record: Any, metric: str) -> tuple[float | None, str]:
    """A record's (score, status) on ``metric``; a metric missing from the record is its error's status."""
    result = record.results.get(metric)
    if result is None:
        return None, record.errors[0].status if record.errors else "absent"
    return result.score, result.status


def _cited_user(result: Any, question_index: int) -> set[str]:
    """Which user messages a turn's verdicts cite: the ``current`` question or an ``earlier`` one."""
    kinds = set()
    for cite in ((result.details or {}) if result is not None else {}).get("cited") or []:
        if cite.get("kind") == "user":
            kinds.add("current question" if cite.get("message") == question_index else "earlier user message")
    return kinds


def balanced_accuracy(scored: list[tuple[float | None, bool]], threshold: float = 0.5) -> float | None:
    """Balanced accuracy of ``score >= threshold`` against the labels (no score counts as negative)."""
    pos = [s for s, label in scored if label]
    neg = [s for s, label in scored if not label]
    if not pos or not neg:
        return None
    tpr = sum(s is not None and s >= threshold for s in pos) / len(pos)
    tnr = sum(s is None or s < threshold for s in neg) / len(neg)
    return round((tpr + tnr) / 2, 4)


LABELS = {"faithfulness": "faithful", "relevancy": "relevant"}


def check(rows: list[dict], k: int, llm: str = "offline", seed: int = SEED) -> dict:
    """Score the records alone and chained; compare every turn and metric; attribute each difference."""
    convs = chain(rows, k, seed)
    alone, _ = _score([_sample(r["id"], r["question"], r["answer"], r["contexts"]) for r in rows], llm)
    _, turn_records = _score([c for c, _ in convs], llm)
    by_id = {r.id: r for r in turn_records}
    pairs = []  # (turn record, its row, turn number)
    unread = []  # conversations the pipeline could not read: one invalid_input record each, no turns
    for conv, group in convs:
        if conv["id"] in by_id:
            bad = by_id[conv["id"]]
            unread.append(
                {
                    "conversation": conv["id"],
                    "records": [r["id"] for r in group],
                    "error": bad.errors[0].message[:300],
                }
            )
            continue
        for n, row in enumerate(group):
            pairs.append((by_id[f"{conv['id']}#turn{n}"], row, n))
    # re-scorings of every turn that differs: the record with the turn's evidence, with its question, and
    # the turn's own sample as a plain sample
    differing = [
        (rec, row, n)
        for rec, row, n in pairs
        if any(_outcome(rec, m) != alone[row["id"]][m] for m in METRICS)
    ]
    probes: list[dict] = []
    for rec, row, _ in differing:
        s = rec.sample
        probes.append(_sample(f"{rec.id}|evidence", row["question"], row["answer"], s.contexts))
        probes.append(_sample(f"{rec.id}|question", s.question, row["answer"], row["contexts"]))
        probes.append(_sample(f"{rec.id}|own", s.question, row["answer"], s.contexts))
    probed, _ = _score(probes, llm) if probes else ({}, [])
    per_metric: dict[str, Counter] = {m: Counter() for m in METRICS}
    per_position: dict[str, Counter] = {}
    cases = []
    for rec, row, n in pairs:
        position = per_position.setdefault(f"turn{n}", Counter())
        position["turns"] += 1
        moved = []
        for m in METRICS:
            mine = _outcome(rec, m)
            theirs = alone[row["id"]][m]
            counts = per_metric[m]
            counts["turns"] += 1
            if mine == theirs:
                counts["identical"] += 1
                continue
            counts["differ"] += 1
            position[f"{m} differ"] += 1
            if mine[0] is not None and theirs[0] is not None:
                counts[
                    "higher in the conversation" if mine[0] > theirs[0] else "lower in the conversation"
                ] += 1
            evidence = probed[f"{rec.id}|evidence"][m] == mine
            question = probed[f"{rec.id}|question"][m] == mine
            own = probed[f"{rec.id}|own"][m] == mine
            if evidence and not question:
                cause = "evidence: the user's messages"
            elif question and not evidence:
                cause = "question: the history transcript"
            elif evidence and question:
                cause = "either alone"
            else:
                cause = "both together"
            if not own:
                cause += " (and not reproduced by the turn's sample alone)"
            counts[cause] += 1
            cited = sorted(_cited_user(rec.results.get(m), rec.sample.meta.get("message_index", 0) - 1))
            if cause.startswith("evidence"):
                kind = (
                    " and ".join(cited)
                    if cited
                    else "none: a context's quote, the user's words in the pooled support"
                )
                counts[f"user message cited: {kind}"] += 1
            moved.append(
                {
                    "metric": m,
                    "alone": theirs[0],
                    "in_conversation": mine[0],
                    "status": [theirs[1], mine[1]],
                    "cause": cause,
                    "cites_user": cited,
                }
            )
        if moved:
            cases.append(
                {"turn": rec.id, "record": row["id"], "source": row["source"].split(":")[0], "moved": moved}
            )
    identical_turns = len(pairs) - len(cases)
    accuracy = {}
    for metric, key in LABELS.items():
        labelled = [(rec, row) for rec, row, _ in pairs if (row.get("label") or {}).get(key) is not None]
        if labelled:
            accuracy[metric] = {
                "labelled": len(labelled),
                "alone": balanced_accuracy(
                    [(alone[row["id"]][metric][0], row["label"][key]) for _, row in labelled]
                ),
                "in_conversation": balanced_accuracy(
                    [(_outcome(rec, metric)[0], row["label"][key]) for rec, row in labelled]
                ),
            }
    return {
        "k": k,
        "conversations": len(convs),
        "turns": len(pairs),
        "turns_identical_on_all_three": identical_turns,
        "conversations_unread": unread,
        "per_metric": {m: dict(c) for m, c in per_metric.items()},
        "per_position": {p: dict(c) for p, c in per_position.items()},
        "balanced_accuracy_at_0.5": accuracy,
        "cases": cases,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--judge", choices=("offline", "fake"), default="offline")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = load(args.data, args.limit)
    result: dict = {
        "data": args.data.name,
        "records": len(rows),
        "judge": args.judge,
        "seed": SEED,
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RAGMETRICS_CACHE_DIR"] = tmp
        for k in args.k:
            started = time.perf_counter()
            if args.judge == "fake":
                from ragmetrics.testing import FakeLLMServer

                os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-dummy")
                with FakeLLMServer() as srv:
                    run = check(rows, k, f"openai:gpt-4o-mini@{srv.openai_base_url}")
                    run["server_calls"] = srv.calls.total()
            else:
                run = check(rows, k)
            run["wall_s"] = round(time.perf_counter() - started, 2)
            result["runs"].append(run)
    name = "" if args.data == DEFAULT_DATA else f"_{args.data.stem}"
    out = args.out or HERE / "results" / f"conversation_invariance_{args.judge}{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print("| k | turns | identical on all three | metric | identical | differ | higher / lower | causes |")
    print("|---|---|---|---|---|---|---|---|")
    for run in result["runs"]:
        for m, c in run["per_metric"].items():
            causes = "; ".join(
                f"{key} {v}"
                for key, v in c.items()
                if key.startswith(("evidence", "question", "either", "both"))
            )
            print(
                f"| {run['k']} | {run['turns']} | {run['turns_identical_on_all_three']} | {m} "
                f"| {c.get('identical', 0)} "
                f"| {c.get('differ', 0)} | {c.get('higher in the conversation', 0)} / "
                f"{c.get('lower in the conversation', 0)} | {causes} |"
            )


if __name__ == "__main__":
    main()
