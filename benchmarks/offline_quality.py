"""How well the faithfulness score agrees with human labels, per source and overall.

Usage::

    python benchmarks/offline_quality.py [--data PATH] [--judge offline] [--threshold 0.7]
        [--baseline-threshold 0.75] [--out benchmarks/results/offline_quality.json]

For every record of the data set (``label.faithful`` is the truth; ``meta`` is never read) it computes
the faithfulness score with :func:`score_record` and reports, per dataset (``BEGIN``, ``ExpertQA``),
per source and overall:

* ``auroc``: area under the ROC curve of the score against the labels (faithful = positive), by the
  Mann-Whitney statistic with ties counted half, plus a 95% bootstrap interval (1000 resamples, seed 0);
* ``balanced_accuracy`` at ``--threshold`` (score >= threshold predicts faithful);
* ``precision`` / ``recall`` / ``f1`` for detecting **unfaithful** answers (score < threshold);
* the baseline, whole-answer unigram overlap (share of the answer's tokens found in any context):
  its AUROC and its balanced accuracy and P/R/F1 at ``--baseline-threshold``;
* ``ms_per_record`` of the scoring function (after one untimed warm-up call that loads nltk's stemmer);
* for the offline judge, a diagnostic: the AUROC of each answer's lowest per-claim support score, i.e.
  what the binary verdicts (and so supported / all) give up by thresholding.

The thresholds are chosen the same way for the score and the baseline: the round number among 0.5,
0.6, 0.7, 0.75, 0.8, 0.9 and 1.0 with the best overall balanced accuracy on the dev set (ties go to
the higher, stricter one). That gives 0.7 for the offline judge's faithfulness (0.847; 0.6 ties) and
0.75 for the baseline (0.837).

The JSON goes to ``--out``; a markdown table is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = Path("/work/shared/data/faithfulness_dev.jsonl")
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "offline_quality.json"


# --------------------------------------------------------------------------------------------------
# Scoring: the one function to swap for the public metric API


def score_record(record: Mapping[str, Any], judge_spec: str) -> float:
    """Faithfulness of one record: supported claims / all claims (1.0 when there are no claims).

    Today this calls the offline judge's ``answer()`` directly. To score with any judge spec, replace
    the body with the public metric, e.g.
    ``FaithfulnessMetric(llm=judge_spec).score_sync(question=..., answer=..., contexts=...)``.
    """
    if judge_spec != "offline":
        raise SystemExit(f"--judge {judge_spec!r}: only 'offline' is wired up in this script for now")
    from ragmetrics.judge.offline import answer

    extraction = answer("claims.extract", {"question": record.get("question"), "answer": record["answer"]})
    claims = [c["text"] for c in extraction["claims"]]
    if not claims:
        return 1.0
    verification = answer("claims.verify", {"claims": claims, "contexts": list(record.get("contexts") or [])})
    supported = sum(v["verdict"] == "supported" for v in verification["verdicts"])
    return supported / len(claims)


def unigram_overlap(record: Mapping[str, Any]) -> float:
    """Baseline: the share of the answer's tokens (case-folded words and numbers) found in any context."""
    from ragmetrics._text import tokenize

    tokens = tokenize(record["answer"])
    if not tokens:
        return 1.0
    pool: set[str] = set()
    for context in record.get("contexts") or []:
        pool.update(tokenize(context))
    return sum(t in pool for t in tokens) / len(tokens)


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


def at_threshold(
    scores: Sequence[float], labels: Sequence[bool], threshold: float
) -> dict[str, float | None]:
    """Balanced accuracy (score >= threshold predicts faithful) and P/R/F1 for flagging unfaithful answers."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    pred_faithful = s >= threshold
    tpr = float(pred_faithful[y].mean()) if y.any() else None
    tnr = float((~pred_faithful[~y]).mean()) if (~y).any() else None
    bal = (tpr + tnr) / 2 if tpr is not None and tnr is not None else None
    flagged = ~pred_faithful
    true_flags = int((flagged & ~y).sum())
    precision = true_flags / int(flagged.sum()) if flagged.any() else None
    recall = true_flags / int((~y).sum()) if (~y).any() else None
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision is not None and recall is not None and precision + recall > 0
        else (0.0 if precision is not None and recall is not None else None)
    )
    return {
        "balanced_accuracy": bal,
        "precision_unfaithful": precision,
        "recall_unfaithful": recall,
        "f1_unfaithful": f1,
    }


def summarise(rows: list[dict[str, Any]], threshold: float, baseline_threshold: float) -> dict[str, Any]:
    scores = [r["score"] for r in rows]
    base = [r["baseline"] for r in rows]
    labels = [r["faithful"] for r in rows]
    return {
        "n": len(rows),
        "n_faithful": sum(labels),
        "auroc": auroc(scores, labels),
        "auroc_ci95": auroc_interval(scores, labels),
        **at_threshold(scores, labels, threshold),
        "mean_score": float(np.mean(scores)) if scores else None,
        "baseline": {
            "name": "whole-answer unigram overlap",
            "auroc": auroc(base, labels),
            "auroc_ci95": auroc_interval(base, labels),
            **at_threshold(base, labels, baseline_threshold),
        },
        "ms_per_record": float(np.mean([r["ms"] for r in rows])) if rows else None,
    }


# --------------------------------------------------------------------------------------------------
# Running and reporting


def load(path: Path) -> list[dict[str, Any]]:
    records = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                records.append(json.loads(line))
    return records


def min_claim_support(record: Mapping[str, Any]) -> float:
    """Diagnostic (offline judge only): the lowest per-claim support score, before any threshold.

    Shows how much ranking information the binary verdicts throw away; it is not a metric output.
    """
    from ragmetrics.judge import offline

    claims = [
        c["text"]
        for c in offline.answer(
            "claims.extract", {"question": record.get("question"), "answer": record["answer"]}
        )["claims"]
    ]
    if not claims:
        return 1.0
    contexts = [offline._prepare(c or "") for c in record.get("contexts") or []]
    return min(offline._support(c, contexts).score for c in claims)


def evaluate(
    records: list[dict[str, Any]],
    judge_spec: str,
    *,
    threshold: float,
    baseline_threshold: float,
    scorer: Callable[[Mapping[str, Any], str], float] = score_record,
) -> dict[str, Any]:
    first_started = time.perf_counter()
    if records:
        scorer(records[0], judge_spec)  # warm-up: lazy imports (nltk's stemmer) are not per-record costs
    first_call_ms = (time.perf_counter() - first_started) * 1000
    rows = []
    for record in records:
        started = time.perf_counter()
        score = scorer(record, judge_spec)
        ms = (time.perf_counter() - started) * 1000
        rows.append(
            {
                "id": record.get("id"),
                "source": record["source"],
                "dataset": record["source"].split(":")[0],
                "faithful": bool(record["label"]["faithful"]),
                "score": float(score),
                "baseline": unigram_overlap(record),
                "ms": ms,
                "min_support": min_claim_support(record) if judge_spec == "offline" else None,
            }
        )
    groups: dict[str, Any] = {}
    for dataset in sorted({r["dataset"] for r in rows}):
        groups[dataset] = summarise(
            [r for r in rows if r["dataset"] == dataset], threshold, baseline_threshold
        )
        sources = sorted({r["source"] for r in rows if r["dataset"] == dataset})
        if len(sources) > 1:
            for source in sources:
                groups[source] = summarise(
                    [r for r in rows if r["source"] == source], threshold, baseline_threshold
                )
    groups["overall"] = summarise(rows, threshold, baseline_threshold)
    diagnostics: dict[str, Any] = {"first_call_ms": first_call_ms}
    if judge_spec == "offline":
        diagnostics["min_claim_support_auroc"] = {
            name: auroc(
                [r["min_support"] for r in rows if name == "overall" or name in (r["dataset"], r["source"])],
                [r["faithful"] for r in rows if name == "overall" or name in (r["dataset"], r["source"])],
            )
            for name in groups
        }
    return {
        "judge": judge_spec,
        "threshold": threshold,
        "baseline_threshold": baseline_threshold,
        "groups": groups,
        "diagnostics": diagnostics,
        "scores": [{k: r[k] for k in ("id", "source", "faithful", "score", "baseline")} for r in rows],
    }


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(result: dict[str, Any]) -> str:
    head = (
        f"judge `{result['judge']}`; score threshold {result['threshold']}, baseline threshold "
        f"{result['baseline_threshold']}; unfaithful is the class detected by P/R/F1\n\n"
        "| group | n | AUROC (95% CI) | bal. acc | P | R | F1 | baseline AUROC | baseline bal. acc | "
        "baseline F1 | ms/record |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for name, g in result["groups"].items():
        ci = g["auroc_ci95"]
        ci_text = f" ({_f(ci[0], 2)}-{_f(ci[1], 2)})" if ci else ""
        b = g["baseline"]
        lines.append(
            f"| {name} | {g['n']} | {_f(g['auroc'])}{ci_text} | {_f(g['balanced_accuracy'])} | "
            f"{_f(g['precision_unfaithful'])} | {_f(g['recall_unfaithful'])} | {_f(g['f1_unfaithful'])} | "
            f"{_f(b['auroc'])} | {_f(b['balanced_accuracy'])} | {_f(b['f1_unfaithful'])} | "
            f"{_f(g['ms_per_record'], 1)} |"
        )
    diag = result.get("diagnostics", {})
    tail = f"\n\nfirst call (lazy imports): {_f(diag.get('first_call_ms'), 0)} ms"
    if "min_claim_support_auroc" in diag:
        tail += (
            "\ndiagnostic, not a metric output: AUROC of the lowest per-claim support score (before the "
            "verdict threshold): "
            + ", ".join(f"{k} {_f(v)}" for k, v in diag["min_claim_support_auroc"].items())
        )
    return head + "\n".join(lines) + tail


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--judge", default="offline", help="judge spec (only 'offline' for now)")
    parser.add_argument("--threshold", type=float, default=0.7, help="score >= threshold predicts faithful")
    parser.add_argument("--baseline-threshold", type=float, default=0.75)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    records = load(args.data)
    result = evaluate(
        records, args.judge, threshold=args.threshold, baseline_threshold=args.baseline_threshold
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(markdown(result))
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
