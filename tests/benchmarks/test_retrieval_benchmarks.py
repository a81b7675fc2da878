"""The retrieval benchmarks' own arithmetic and data construction (benchmarks/retrieval_*.py, issue 13).

The figures in the README are only as good as these: AUROC against a brute-force count, average
precision on hand-worked rankings, and distractors that can never be a record's own text.
"""

from __future__ import annotations

import itertools
import random

import pytest

from tests.benchmarks import load_benchmark

rq = load_benchmark("retrieval_quality")
rc = load_benchmark("retrieval_costs")


def _row(i: int, src: str, question: str, contexts: list[str], faithful: bool = True) -> dict:
    return {
        "id": f"r{i}",
        "source": f"{src}:x",
        "question": question,
        "answer": f"answer {i}. More text here.",
        "contexts": contexts,
        "label": {"faithful": faithful},
    }


ROWS = [
    _row(0, "ExpertQA", "What is A?", ["a1", "shared"]),
    _row(1, "ExpertQA", "what is a?  ", ["shared", "a2"]),  # the same question by another system
    _row(2, "ExpertQA", "What is B?", ["b1", "shared", "b2"]),
    _row(3, "ExpertQA", "What is C?", ["c1"], faithful=False),
    _row(4, "BEGIN", "hello", ["k1"]),
    _row(5, "BEGIN", "bye", ["k2"]),
    _row(6, "BEGIN", "again", ["k3"]),
]


def test_auroc_matches_a_brute_force_count_with_ties():
    rng = random.Random(3)
    for _ in range(50):
        pos = [rng.choice([0.0, 0.5, 1.0, rng.random()]) for _ in range(rng.randint(1, 8))]
        neg = [rng.choice([0.0, 0.5, 1.0, rng.random()]) for _ in range(rng.randint(1, 8))]
        brute = sum((p > n) + 0.5 * (p == n) for p, n in itertools.product(pos, neg)) / (len(pos) * len(neg))
        assert rq.auroc(pos, neg) == pytest.approx(brute)
    assert rq.auroc([1.0], []) is None
    assert rq.auroc([1, 1], [1, 1]) == 0.5, "a judge that calls everything relevant gets 0.5"


def test_average_precision_on_hand_worked_rankings():
    assert rq.average_precision([True, True, False]) == 1.0
    assert rq.average_precision([False, True, False, True]) == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert rq.average_precision([False, False]) is None
    # ranking by score, ties in retrieval order: scores put the relevant item (index 2) first
    assert rq.ranked_ap([False, False, True], [0.1, 0.1, 0.9]) == 1.0
    assert rq.ranked_ap([False, True], [0.5, 0.5]) == 0.5, "a tie keeps retrieval order"


def test_distractors_come_from_other_questions_of_the_same_source_never_an_own_text():
    rng = random.Random(0)
    for i, row in enumerate(ROWS):
        got = rq.distractors(ROWS, i, 10, rng)
        assert not set(got) & set(row["contexts"])
        same_source = {c for r in ROWS if r["source"] == row["source"] for c in r["contexts"]}
        assert set(got) <= same_source
    assert set(rq.distractors(ROWS, 0, 10, rng)) == {"b1", "b2", "c1"}, "r1 asks the same question"


def test_mixed_samples_keep_every_own_context_and_are_seeded():
    first, again = rq.mixed(ROWS, 5), rq.mixed(ROWS, 5)
    assert first == again
    for row, sample in zip(ROWS, first, strict=True):
        own = [c for c, o in zip(sample["contexts"], sample["own"], strict=True) if o]
        assert sorted(own) == sorted(row["contexts"])
        assert len(sample["contexts"]) - len(own) == max(2, len(own)), "as many distractors, at least 2"
    flipped = rq.ordered(first, own_first=False)
    assert all(s["own"] == sorted(s["own"]) for s in flipped), "own contexts last"


def test_recall_samples_remove_own_contexts_one_by_one_and_keep_the_distractors():
    samples = rq.recall_samples(ROWS, 1)
    assert "r3" not in {s["record"] for s in samples}, "unfaithful records give no reference"
    r2 = [s for s in samples if s["record"] == "r2"]
    assert [s["removed"] for s in r2] == [0, 1, 2, 3] and r2[-1]["all_removed"]
    own = set(ROWS[2]["contexts"])
    assert [len(set(s["contexts"]) & own) for s in r2] == [3, 2, 1, 0]
    assert all(s["reference"] == ROWS[2]["answer"] for s in r2)
    assert len({frozenset(set(s["contexts"]) - own) for s in r2}) == 1, "the same distractors throughout"


def test_cost_reference_is_the_first_contexts_leading_sentences():
    row = {"answer": "x" * 30, "contexts": ["First sentence is here. Second one is here too. Third."]}
    assert rc.reference_for(row) == "First sentence is here."
    assert rc.reference_for({"answer": "An answer.", "contexts": []}) == "An answer."
    assert set(rc.COMBOS["all seven"]) == set(rc.THREE) | set(rc.FOUR) and len(rc.COMBOS) == 10


def test_the_recall_series_follows_one_fixed_set_of_records():
    samples = rq.recall_samples(ROWS, 1)
    # a made-up recall: the share of own contexts kept
    n_own = {r["id"]: len(r["contexts"]) for r in ROWS}
    got = {s["id"]: 1 - s["removed"] / n_own[s["record"]] for s in samples}
    series = rq.same_records(samples, got)
    assert series["BEGIN"] == {"records": 3, "min_own_contexts": 1, "mean_recall": {"0": 1.0, "all": 0.0}}
    # ExpertQA: r0 and r1 have 2 own contexts, r2 has 3: only r2 is followed to 2 removed
    assert series["ExpertQA"]["records"] == 1 and series["ExpertQA"]["min_own_contexts"] == 3
    assert series["ExpertQA"]["mean_recall"] == {
        "0": 1.0,
        "1": pytest.approx(0.6667),
        "2": pytest.approx(0.3333),
        "all": 0.0,
    }


def test_a_cost_row_is_the_metrics_own_calls_and_the_canaries_are_counted_apart(monkeypatch, tmp_path):
    from ragmetrics.testing import FakeLLMServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    rows = [_row(i, "BEGIN", f"What is {i}?", [f"answer {i}. More text here."]) for i in range(3)]
    data = rc.samples(rows, False)
    with FakeLLMServer() as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        row = rc.measure(srv, spec, ("relevancy",), data, 2)
        with_them = rc.measure(srv, spec, ("relevancy",), data, 2, canaries=True)
    # relevancy is one call a sample; the canaries (once a run) add theirs to the run, never to a row
    assert row["calls_per_sample"] == 1.0 and row["canary_calls"] == 0 and row["pipeline_calls"] == 3
    assert with_them["canary_calls"] >= 1
    calls = with_them["pipeline_calls"]
    assert calls == 3 + with_them["canary_calls"] == round(with_them["calls_per_sample"] * 3)
