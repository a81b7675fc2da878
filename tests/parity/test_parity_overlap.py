"""rouge and bleu against their reference libraries (test dependencies only).

Pairs: ``tests/data/parity_corpus.jsonl`` (empty, whitespace-only, non-ASCII, long texts), 500 pairs
from a seeded generator, and hypothesis-generated text.

The one documented difference: when neither side has a token, the references say 0 and ragmetrics
says 1.0 for equal texts (0.0 otherwise); those pairs are checked separately.
"""

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics.metrics.evaluators.overlap import bleu_score, bleu_tokens, rouge_l, rouge_tokens

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
bleu_module = pytest.importorskip("nltk.translate.bleu_score")
sacrebleu_bleu = pytest.importorskip("sacrebleu.metrics.bleu")

ROUGE_TOLERANCE = 1e-9
"""rouge-score rougeL F-measure: the same tokens and float operations; observed difference 0.0."""
BLEU_NLTK_TOLERANCE = 1e-9
"""nltk sentence_bleu, weights (0.5, 0.5), method1: the same float operations; observed difference 0.0."""
BLEU_SACREBLEU_TOLERANCE = 1e-9
"""sacrebleu floor smoothing 0.1 over 2-grams: same formula, different operation order (~1e-16)."""

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent.parent / "data" / "parity_corpus.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
]
SCORER = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
SMOOTHING = bleu_module.SmoothingFunction().method1


def generated_pairs(n: int = 500, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    words = (
        "the cat sat on a mat dog ran fast Paris France capital is of and to in it was "
        "café naïve Zürich 東京 Москва 2024 3.14 U.S. e-mail it's $5 50% , . ! ? — ( )"
    ).split()
    pairs = []
    for _ in range(n):
        a = " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.5:  # a noisy copy shares long subsequences
            b = " ".join(w if rng.random() > 0.3 else rng.choice(words) for w in a.split())
        else:
            b = " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
        pairs.append((a, b) if rng.random() < 0.5 else (b, a))
    return pairs


ALL_PAIRS = [(r["prediction"], r["reference"]) for r in CORPUS] + generated_pairs()


def reference_rouge(prediction: str, reference: str) -> float:
    return SCORER.score(reference, prediction)["rougeL"].fmeasure


def reference_bleu(prediction: str, reference: str) -> float:
    return bleu_module.sentence_bleu(
        [bleu_tokens(reference)], bleu_tokens(prediction), weights=(0.5, 0.5), smoothing_function=SMOOTHING
    )


def test_rouge_matches_rouge_score():
    worst, checked = 0.0, 0
    for prediction, reference in ALL_PAIRS:
        if not rouge_tokens(prediction) and not rouge_tokens(reference):
            continue
        worst = max(worst, abs(rouge_l(prediction, reference) - reference_rouge(prediction, reference)))
        checked += 1
    assert checked > 500
    assert worst <= ROUGE_TOLERANCE


def test_bleu_matches_nltk_sentence_bleu_method1():
    worst, checked = 0.0, 0
    for prediction, reference in ALL_PAIRS:
        if not bleu_tokens(prediction) and not bleu_tokens(reference):
            continue
        worst = max(worst, abs(bleu_score(prediction, reference) - reference_bleu(prediction, reference)))
        checked += 1
    assert checked > 500
    assert worst <= BLEU_NLTK_TOLERANCE


def test_bleu_matches_sacrebleu_floor_smoothing_where_both_define_it():
    # sacrebleu drops an n-gram order with no n-grams and floors unmatched unigrams; nltk (and we) score
    # a one-token output's missing bigram as epsilon and return 0 without a unigram match. Elsewhere:
    metric = sacrebleu_bleu.BLEU(
        tokenize="none", max_ngram_order=2, smooth_method="floor", smooth_value=0.1, effective_order=True
    )
    worst, checked = 0.0, 0
    for prediction, reference in ALL_PAIRS:
        hyp, ref = bleu_tokens(prediction), bleu_tokens(reference)
        if len(hyp) < 2 or not set(hyp) & set(ref):
            continue
        theirs = metric.sentence_score(" ".join(hyp), [" ".join(ref)]).score / 100
        worst = max(worst, abs(bleu_score(prediction, reference) - theirs))
        checked += 1
    assert checked > 300
    assert worst <= BLEU_SACREBLEU_TOLERANCE


def test_no_token_pairs_are_the_documented_difference():
    for prediction, reference, expected in [
        ("", "", 1.0),
        ("  ", "\n", 1.0),
        ("!!!", "!!!", 1.0),
        ("!!!", "???", 0.0),
        ("東京", "東京", 1.0),
        ("東京", "京都", 0.0),
    ]:
        assert rouge_l(prediction, reference) == expected
        assert reference_rouge(prediction, reference) == 0.0
    assert bleu_score("", "") == 1.0 and bleu_score(" ", "") == 1.0
    assert reference_bleu("", "") == 0


text = st.text(alphabet=st.sampled_from(list("abcAB xyz.,!?-'é東1 ")), max_size=80)


@settings(max_examples=300, deadline=None)
@given(prediction=text, reference=text)
def test_rouge_and_bleu_parity_on_generated_text(prediction, reference):
    if rouge_tokens(prediction) or rouge_tokens(reference):
        assert abs(rouge_l(prediction, reference) - reference_rouge(prediction, reference)) <= ROUGE_TOLERANCE
    if bleu_tokens(prediction) or bleu_tokens(reference):
        assert (
            abs(bleu_score(prediction, reference) - reference_bleu(prediction, reference))
            <= BLEU_NLTK_TOLERANCE
        )
