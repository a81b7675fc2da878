"""Throughput of the deterministic evaluators, side by side with the reference libraries.

Run: ``python benchmarks/evaluator_speed.py [--pairs 10000] [--repeats 3]``. Writes
``benchmarks/results/evaluator_speed.json`` and prints a markdown table.

For each metric on the same 10,000 generated pairs (seeded), in one run:

- ``score fn``: ragmetrics' scoring function (``rouge_l``, ``bleu_score``, ``token_f1``,
  ``levenshtein_similarity``), tokenisation included;
- ``evaluate()``: the full evaluator, building a ``MetricResult`` with reasoning and details;
- ``reference``: the reference library computing the same figure on the same text, tokenisation
  included: rouge-score ``RougeScorer(["rougeL"]).score``, nltk ``sentence_bleu`` (weights 0.5/0.5,
  method1) on the same tokens, rapidfuzz ``Levenshtein.normalized_distance`` on the trimmed, case-folded
  strings. f1 has no library computing unique-token F1; its reference column is the official SQuAD v1.1
  ``f1_score`` (bag-of-tokens F1 after normalisation, the usual "token F1"), a comparable figure.
- ``max |diff|``: the largest score difference between ragmetrics and the reference over all pairs.

Figures are evaluations per second (best of ``--repeats``; ours and the reference interleaved).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import platform
import random
import re
import string
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.metrics.evaluators.factory import make_evaluator
from ragmetrics.metrics.evaluators.overlap import bleu_score, bleu_tokens, rouge_l
from ragmetrics.metrics.evaluators.text import levenshtein_similarity, token_f1

# Caps measured for the text evaluators (moved from ragmetrics/metrics/evaluators/text.py and overlap.py):
# regex compiling unrolls minimum repetition counts (a{1000000}: 0.6 s, 270 MB), so MAX_REGEX_SIZE bounds
# them; the costliest accepted patterns compile in under 0.5 s and 130 MB; matching memory grows with the
# output and capture groups (at most ~160 MB at the caps). levenshtein at max_chars 50,000 (random CJK):
# ~0.5 s, 100,000 chars ~1.3 s. rouge at max_chars 200,000 (random two-character tokens): ~0.7 s.
WORDS = (
    "the a of to and in is that it for on was with as by at this be from are or have not an they which "
    "one you had but were all we when there can more if no out so said what up its about into than them "
    "Paris France capital river bank model answer question context retrieval evaluation metric score "
    "café Zürich 2024 3.14 U.S. e-mail it's , . ! ?"
).split()


def make_pairs(n: int, seed: int = 20261129) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        reference = [rng.choice(WORDS) for _ in range(rng.randint(5, 40))]
        prediction = [
            w if rng.random() > 0.25 else rng.choice(WORDS) for w in reference if rng.random() > 0.1
        ]
        if rng.random() < 0.3:
            prediction = [rng.choice(WORDS) for _ in range(rng.randint(3, 40))]
        pairs.append((" ".join(prediction), " ".join(reference)))
    return pairs


def make_json_pairs(n: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        doc = {
            f"k{i}": rng.choice([1, 2.5, "x", True, None, [1, 2], {"a": rng.randint(0, 3)}])
            for i in range(rng.randint(1, 8))
        }
        other = {k: (v if rng.random() > 0.2 else "changed") for k, v in doc.items()}
        out.append((json.dumps(doc), json.dumps(other)))
    return out


def make_html(n: int, seed: int = 11) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    tags = ["p", "div", "span", "b", "i", "ul", "li", "section", "blink"]
    out = []
    for _ in range(n):
        parts = [f"<{t}>text {rng.randint(0, 99)}</{t}>" for t in rng.choices(tags, k=rng.randint(1, 12))]
        out.append(("<div>" + "".join(parts) + "</div>", ""))
    return out


def squad_f1(prediction: str, reference: str) -> float:
    """The official SQuAD v1.1 f1_score."""

    def normalize(s: str) -> str:
        s = s.lower()
        s = "".join(ch for ch in s if ch not in _PUNCT)
        s = re.sub(r"\b(a|an|the)\b", " ", s)
        return " ".join(s.split())

    pred, gold = normalize(prediction).split(), normalize(reference).split()
    common = collections.Counter(pred) & collections.Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return (2 * precision * recall) / (precision + recall)


_PUNCT = set(string.punctuation)


def rate(
    fns: dict[str, Callable[[str, str], Any]], pairs: Sequence[tuple[str, str]], repeats: int
) -> dict[str, tuple[float, list[Any]]]:
    """Evaluations per second of each function (best of ``repeats``, interleaved to share the noise)."""
    best = {key: float("inf") for key in fns}
    values: dict[str, list[Any]] = {}
    for _ in range(repeats):
        for key, fn in fns.items():
            started = time.perf_counter()
            values[key] = [fn(a, b) for a, b in pairs]
            best[key] = min(best[key], time.perf_counter() - started)
    return {key: (len(pairs) / best[key], values[key]) for key in fns}


def rate_evaluator(
    name: str, config: dict[str, Any], pairs: Sequence[tuple[str, str]], repeats: int
) -> float:
    ev = make_evaluator(name, **config)

    async def run() -> float:
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            for a, b in pairs:
                await ev.evaluate(a, b)
            best = min(best, time.perf_counter() - started)
        return len(pairs) / best

    return asyncio.run(run())


def references() -> dict[str, tuple[str, Callable[[str, str], float]]]:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from rapidfuzz.distance import Levenshtein
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    method1 = SmoothingFunction().method1
    return {
        "rouge": ("rouge-score rougeL", lambda a, b: scorer.score(b, a)["rougeL"].fmeasure),
        "bleu": (
            "nltk sentence_bleu",
            lambda a, b: float(
                sentence_bleu(
                    [bleu_tokens(b)], bleu_tokens(a), weights=(0.5, 0.5), smoothing_function=method1
                )
            ),
        ),
        "levenshtein": (
            "rapidfuzz normalized_distance",
            lambda a, b: 1 - Levenshtein.normalized_distance(a.strip().casefold(), b.strip().casefold()),
        ),
        "f1": ("SQuAD v1.1 f1_score (bag of tokens)", squad_f1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "evaluator_speed.json"
    )
    args = parser.parse_args()

    text_pairs = make_pairs(args.pairs)
    ours: dict[str, Callable[[str, str], float]] = {
        "rouge": rouge_l,
        "bleu": bleu_score,
        "f1": token_f1,
        "levenshtein": levenshtein_similarity,
    }
    refs = references()
    rows = []
    for name, fn in ours.items():
        label, ref_fn = refs[name]
        rates = rate({"ours": fn, "reference": ref_fn}, text_pairs, args.repeats)
        (fn_rate, our_values), (ref_rate, ref_values) = rates["ours"], rates["reference"]
        same_figure = name != "f1"
        diff = max(abs(x - y) for x, y in zip(our_values, ref_values, strict=True)) if same_figure else None
        rows.append(
            {
                "evaluator": name,
                "score_fn_per_s": round(fn_rate),
                "evaluate_per_s": round(rate_evaluator(name, {}, text_pairs, args.repeats)),
                "reference": label,
                "reference_per_s": round(ref_rate),
                "speedup_vs_reference": round(fn_rate / ref_rate, 2),
                "max_abs_diff": diff,
                "same_figure": same_figure,
            }
        )
    others: list[tuple[str, dict[str, Any], Sequence[tuple[str, str]]]] = [
        ("exact_match", {}, text_pairs),
        ("contains", {}, [(a, ", ".join(b.split()[:3])) for a, b in text_pairs]),
        ("regex", {"pattern": r"\b(capital|river)\b.*\d"}, text_pairs),
        ("json_validity", {}, make_json_pairs(args.pairs)),
        ("json_match", {}, make_json_pairs(args.pairs)),
        ("html_validation", {}, make_html(args.pairs)),
        ("cosine_similarity", {"embeddings": "fake"}, text_pairs),
    ]
    for name, config, pairs in others:
        rows.append(
            {
                "evaluator": name,
                "score_fn_per_s": None,
                "evaluate_per_s": round(rate_evaluator(name, config, pairs, args.repeats)),
                "reference": None,
                "reference_per_s": None,
                "speedup_vs_reference": None,
                "max_abs_diff": None,
                "same_figure": None,
            }
        )
    report = {
        "pairs": args.pairs,
        "repeats": args.repeats,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    def fmt(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float) and value < 1:
            return f"{value:.1e}"
        return f"{value:,}" if isinstance(value, int) else str(value)

    print(
        f"Evaluations per second on {args.pairs:,} pairs (best of {args.repeats}), Python "
        f"{report['python']}, {report['cpus']} CPUs\n"
    )
    print("| evaluator | score fn | evaluate() | reference | reference/s | speed-up | max abs diff |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for row in rows:
        diff = row["max_abs_diff"]
        diff_text = "-" if diff is None else ("0" if diff == 0 else f"{diff:.1e}")
        print(
            f"| {row['evaluator']} | {fmt(row['score_fn_per_s'])} | {fmt(row['evaluate_per_s'])} | "
            f"{row['reference'] or '-'} | {fmt(row['reference_per_s'])} | "
            f"{'-' if row['speedup_vs_reference'] is None else str(row['speedup_vs_reference']) + 'x'} | "
            f"{diff_text} |"
        )
    print(f"\nWrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
