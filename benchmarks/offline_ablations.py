"""Variants of the offline judge's faithfulness score, each against the unigram-overlap baseline.

Usage::

    python benchmarks/offline_ablations.py [--data PATH] [--minilm]
        [--out benchmarks/results/offline_ablations.json]

The question this answers: is there a principled change to the offline judge's lexical support that
beats whole-answer unigram overlap *clearly* (a paired 95% interval of the AUROC difference above 0)
on ``faithfulness_dev.jsonl``? Every variant is a rule fixed in advance, not a weight fitted to the
labels. For each: AUROC on BEGIN, ExpertQA and overall, and the overall AUROC difference from the
unigram baseline with its paired bootstrap interval (``offline_quality.auroc_difference``, seed 0).

Variants built from the shipped judge's per-claim features (``ragmetrics.judge.osup._support``,
the same claims the judge extracts):

* ``shipped``: the judge as released (mean claim support); checked equal to ``FaithfulnessMetric``.
* ``raw``: no logistic calibration (the equal-weight feature mean, with the same caps).
* ``content`` / ``words`` / ``bigram`` and the pairs of them: fewer features.
* ``min``: the least-supported claim instead of the mean (the BEGIN and ExpertQA labels are
  "every claim supported").
* ``no_caps``: without the contradiction and speaker caps.
* ``idf``: content and word recall weighted by each word's information content, ``9 - zipf``
  (``wordfreq``; skipped when it is not installed).
* ``minilm_tokens`` (``--minilm``): a fourth feature, BERTScore-style recall of each claim's word
  pieces against the contexts' (greedy cosine of all-MiniLM-L6-v2 token embeddings; the
  ``embeddings`` extra).

And one built apart from the judge's claims: ``sentence_min``, the minimum over answer *sentences*
of the mean of content, word and bigram recall (the per-sentence signals DESIGN.md lists).

Observed on 2026-11-30 (``benchmarks/results/offline_ablations.json``): every variant but bigram
recall alone lands within about 0.015 AUROC of the shipped judge and none has a paired interval
above 0. Also measured once by hand and not kept here (it needs WordNet data, which no maintained
PyPI package ships): adding WordNet synonyms of the context words to the pool, 0.923 overall
(+0.013, interval -0.011 to +0.038).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import offline_quality as oq  # noqa: E402  (benchmarks/offline_quality.py: data, statistics, baseline)

from ragmetrics import text as _text  # noqa: E402
from ragmetrics.judge.offline import claims as oc  # noqa: E402
from ragmetrics.judge.offline import judge as offline  # noqa: E402
from ragmetrics.judge.offline import support as osup  # noqa: E402

Claim = tuple[str, Any]  # (claim text, osup._Support)


def claim_features(record: dict[str, Any]) -> tuple[list[Claim], list[Any]]:
    """The judge's claims for ``record`` with their support features, and the prepared contexts."""
    extracted = offline.answer("claims.extract", {"question": record["question"], "answer": record["answer"]})
    prepared = [osup._prepare(c or "") for c in record.get("contexts") or []]
    pool = osup._pool(prepared)
    claims = [c["text"] for c in extracted["claims"]]
    return [(c, osup._support(c, prepared, pool)) for c in claims], prepared


def capped(sup: Any, value: float) -> float:
    """The shipped judge's caps: contradicted and speaker claims keep little support."""
    if sup.contradiction:
        return min(value, offline.CONTRADICTED_SUPPORT)
    if sup.speaker:
        return min(value, offline.SPEAKER_SUPPORT)
    return value


def penalty(sup: Any) -> float:
    return offline.MISMATCH_PENALTY if any(f.endswith("not in the contexts") for f in sup.flags) else 0.0


def from_features(*names: str, calibrate: bool = True, caps: bool = True) -> Callable[[str, Any], float]:
    def support(_: str, sup: Any) -> float:
        if sup.context is None:
            return sup.support
        raw = max(0.0, sum(getattr(sup, n) for n in names) / len(names) - penalty(sup))
        value = offline.calibrate(raw) if calibrate else raw
        return capped(sup, value) if caps else value

    return support


def idf_support() -> Callable[[str, Any], float] | None:
    try:
        from wordfreq import zipf_frequency
    except ImportError:
        return None

    def weighted(items: Sequence[str], surfaces: Sequence[str], pool: set[str]) -> float:
        weights = [9.0 - zipf_frequency(s, "en") for s in surfaces]
        total = sum(weights)
        return sum(w for x, w in zip(items, weights, strict=True) if x in pool) / total if total else 1.0

    def support(claim: str, sup: Any, pool: Any) -> float:
        if sup.context is None:
            return sup.support
        tokens = _text.tokenize(oc._CITATION.sub(" ", claim))
        stems = _text.stems(tokens)
        keep = [t not in oc._PRONOUNS and not t.startswith("'") for t in tokens]
        pairs = oc._content_pairs(claim)
        content = weighted([s for _, s in pairs], [w for w, _ in pairs], pool.stems)
        words = weighted(
            [s for s, k in zip(stems, keep, strict=True) if k],
            [t for t, k in zip(tokens, keep, strict=True) if k],
            pool.stems,
        )
        raw = max(0.0, (content + words + sup.bigram) / 3 - penalty(sup))
        return capped(sup, offline.calibrate(raw))

    return support  # type: ignore[return-value]


def sentence_min(record: dict[str, Any]) -> float:
    """Minimum over answer sentences of the mean content, word and bigram recall (no claim machinery)."""
    stems: set[str] = set()
    bigrams: set[tuple[str, str]] = set()
    for context in record.get("contexts") or []:
        for a, b in _text.sentence_spans(context):
            s = _text.stems(_text.tokenize(context[a:b]))
            stems.update(s)
            bigrams.update(zip(s, s[1:], strict=False))
    per = []
    for a, b in _text.sentence_spans(record["answer"]):
        tokens = _text.tokenize(oc._CITATION.sub(" ", record["answer"][a:b]))
        if not tokens:
            continue
        st = _text.stems(tokens)
        content = _text.stems(_text.content_tokens(tokens))
        pairs = list(zip(st, st[1:], strict=False))
        words = sum(x in stems for x in st) / len(st)
        c = sum(x in stems for x in content) / len(content) if content else words
        bi = sum(x in bigrams for x in pairs) / len(pairs) if pairs else words
        per.append((c + words + bi) / 3)
    return min(per) if per else 1.0


class TokenAligner:
    """BERTScore-style recall with all-MiniLM-L6-v2 token embeddings (the ``embeddings`` extra)."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import importlib

        from sentence_transformers import SentenceTransformer

        path = importlib.import_module(oq.MINILM_PACKAGE).get_model_path()
        self.model = SentenceTransformer(str(path), device="cpu")

    def recalls(self, claims: Sequence[str], windows: Sequence[str]) -> list[float]:
        import numpy as np

        texts = list(claims) + list(windows)
        out = self.model.encode(
            texts, output_value="token_embeddings", show_progress_bar=False, batch_size=32
        )
        vecs = []
        for e in out:
            e = e.numpy()[1:-1]  # without [CLS] and [SEP]
            vecs.append(e / np.linalg.norm(e, axis=1, keepdims=True) if len(e) else e)
        pool = [v for v in vecs[len(claims) :] if len(v)]
        if not pool:
            return [0.0] * len(claims)
        every = np.concatenate(pool, axis=0)
        return [float((v @ every.T).max(axis=1).mean()) if len(v) else 0.0 for v in vecs[: len(claims)]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=oq.DEFAULT_DATA)
    parser.add_argument(
        "--minilm", action="store_true", help="add the MiniLM token-alignment variant (~1 min)"
    )
    parser.add_argument("--out", type=Path, default=oq.RESULTS / "offline_ablations.json")
    args = parser.parse_args(argv)
    records = oq.load(args.data)
    labels = [bool(r["label"]["faithful"]) for r in records]
    started = time.perf_counter()
    features = [claim_features(r) for r in records]
    shipped = [oq.score_record(r, "offline") for r in records]

    def aggregate(fn: Callable[[str, Any], float], agg: Callable[[list[float]], float]) -> list[float]:
        # an answer without claims scores 1.0, as FaithfulnessMetric gives it (status no_claims)
        return [agg([fn(c, s) for c, s in claims]) if claims else 1.0 for claims, _ in features]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    variants: dict[str, list[float]] = {
        "shipped": aggregate(lambda _, s: s.support, mean),
        "raw": aggregate(from_features("content", "words", "bigram", calibrate=False), mean),
        "content": aggregate(from_features("content"), mean),
        "words": aggregate(from_features("words"), mean),
        "bigram": aggregate(from_features("bigram"), mean),
        "content+words": aggregate(from_features("content", "words"), mean),
        "content+bigram": aggregate(from_features("content", "bigram"), mean),
        "words+bigram": aggregate(from_features("words", "bigram"), mean),
        "min": aggregate(lambda _, s: s.support, min),
        "no_caps": aggregate(from_features("content", "words", "bigram", caps=False), mean),
    }
    mismatched = [
        i
        for i, (a, b) in enumerate(zip(variants["shipped"], shipped, strict=True))
        if b is None or not math.isclose(a, b, abs_tol=1e-3)
    ]
    if mismatched:
        raise SystemExit(f"the shipped variant differs from FaithfulnessMetric on records {mismatched[:5]}")
    skipped: dict[str, str] = {}
    idf = idf_support()
    if idf is None:
        skipped["idf"] = "wordfreq is not installed (pip install wordfreq)"
    else:
        variants["idf"] = [
            mean([idf(c, s, osup._pool(prepared)) for c, s in claims]) if claims else 1.0  # type: ignore[call-arg]
            for claims, prepared in features
        ]
    variants["sentence_min"] = [sentence_min(r) for r in records]
    if args.minilm:
        aligner = TokenAligner()
        scores = []
        for claims, prepared in features:
            if not claims:
                scores.append(1.0)
                continue
            windows = osup._window_texts(prepared)
            sims = aligner.recalls([c for c, _ in claims], windows)
            scores.append(
                mean(
                    [
                        s.support
                        if s.context is None
                        else capped(
                            s,
                            offline.calibrate(
                                max(0.0, (s.content + s.words + s.bigram + sim) / 4 - penalty(s))
                            ),
                        )
                        for (_, s), sim in zip(claims, sims, strict=True)
                    ]
                )
            )
        variants["minilm_tokens"] = scores
    else:
        skipped["minilm_tokens"] = "not asked for (--minilm)"
    unigram = [oq.unigram_overlap(r) for r in records]
    groups = {
        "BEGIN": [i for i, r in enumerate(records) if r["source"].startswith("BEGIN")],
        "ExpertQA": [i for i, r in enumerate(records) if r["source"].startswith("ExpertQA")],
        "overall": list(range(len(records))),
    }

    def aurocs(scores: list[float]) -> dict[str, float | None]:
        return {g: oq.auroc([scores[i] for i in idx], [labels[i] for i in idx]) for g, idx in groups.items()}

    result: dict[str, Any] = {
        "data": str(args.data),
        "n": len(records),
        "unigram": aurocs(unigram),
        "variants": {
            name: {"auroc": aurocs(scores), "minus_unigram": oq.auroc_difference(scores, unigram, labels)}
            for name, scores in variants.items()
        },
        "skipped": skipped,
        "wall_s": time.perf_counter() - started,
    }
    lines = [
        "| variant | BEGIN | ExpertQA | overall | minus unigram (95% CI) |",
        "|---|---|---|---|---|",
        "| unigram overlap | " + " | ".join(f"{result['unigram'][g]:.3f}" for g in groups) + " | - |",
    ]
    for name, v in result["variants"].items():
        d = v["minus_unigram"]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{v['auroc'][g]:.3f}" for g in groups)
            + f" | {d['delta']:+.3f} ({d['ci95'][0]:+.3f} to {d['ci95'][1]:+.3f}) |"
        )
    print("\n".join(lines))
    for name, why in skipped.items():
        print(f"- {name}: skipped: {why}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
