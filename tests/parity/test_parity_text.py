"""levenshtein against rapidfuzz and a textbook edit distance; f1 against slow set arithmetic and SQuAD."""

import collections
import json
import re
import string
from fractions import Fraction
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from ragmetrics.metrics.evaluators.text import levenshtein_similarity, token_f1

LEVENSHTEIN_TOLERANCE = 0.0
"""Bit-identical: the same distance from rapidfuzz and the same division."""
F1_TOLERANCE = 1e-12
"""Against exact rational arithmetic: float rounding only."""

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent.parent / "data" / "parity_corpus.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
]


def textbook_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def slow_f1(prediction: str, reference: str) -> float:
    p, r = set(prediction.casefold().split()), set(reference.casefold().split())
    if not p and not r:
        return 1.0
    if not p or not r:
        return 0.0
    return float(Fraction(2 * len(p & r), len(p) + len(r)))


def squad_f1(prediction: str, reference: str) -> float:
    """The official SQuAD v1.1 evaluation script's f1_score (normalise, then bag-of-tokens F1)."""

    def normalize(s: str) -> str:
        s = s.lower()
        s = "".join(ch for ch in s if ch not in set(string.punctuation))
        s = re.sub(r"\b(a|an|the)\b", " ", s)
        return " ".join(s.split())

    pred, gold = normalize(prediction).split(), normalize(reference).split()
    common = collections.Counter(pred) & collections.Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return (2 * precision * recall) / (precision + recall)


def test_levenshtein_equals_rapidfuzz_on_the_corpus():
    for row in CORPUS:
        a, b = row["prediction"], row["reference"]
        ours = levenshtein_similarity(a, b)
        theirs = 1 - Levenshtein.normalized_distance(a.strip().casefold(), b.strip().casefold())
        assert abs(ours - theirs) <= LEVENSHTEIN_TOLERANCE, row["note"]
        exact = levenshtein_similarity(a, b, case_sensitive=True)
        assert exact == 1 - Levenshtein.normalized_distance(a.strip(), b.strip())


@settings(max_examples=400, deadline=None)
@given(a=st.text(max_size=30), b=st.text(max_size=30))
def test_levenshtein_agrees_with_rapidfuzz_and_a_textbook_dp(a, b):
    ours = levenshtein_similarity(a, b, case_sensitive=True)
    x, y = a.strip(), b.strip()
    assert ours == 1 - Levenshtein.normalized_distance(x, y)
    longest = max(len(x), len(y))
    expected = 1.0 if longest == 0 else 1 - textbook_distance(x, y) / longest
    assert abs(ours - expected) <= 1e-12


def test_f1_on_the_corpus():
    for row in CORPUS:
        assert (
            abs(token_f1(row["prediction"], row["reference"]) - slow_f1(row["prediction"], row["reference"]))
            <= F1_TOLERANCE
        ), row["note"]


@settings(max_examples=400, deadline=None)
@given(a=st.text(alphabet="abcAB \t\n.,é", max_size=60), b=st.text(alphabet="abcAB \t\n.,é", max_size=60))
def test_f1_agrees_with_exact_set_arithmetic(a, b):
    assert abs(token_f1(a, b) - slow_f1(a, b)) <= F1_TOLERANCE


words = st.lists(
    st.sampled_from(["paris", "france", "capital", "river", "seine", "city", "42", "north", "old"]),
    min_size=1,
    max_size=9,
    unique=True,
)


@settings(max_examples=200, deadline=None)
@given(a=words, b=words)
def test_f1_equals_squad_f1_when_tokens_are_unique_and_normalised(a, b):
    # On text that SQuAD's normaliser leaves alone and that repeats no token, the two F1s coincide.
    prediction, reference = " ".join(a), " ".join(b)
    assert abs(token_f1(prediction, reference) - squad_f1(prediction, reference)) <= F1_TOLERANCE
