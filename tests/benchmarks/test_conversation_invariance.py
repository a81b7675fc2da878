"""Chained labelled samples score per turn as they score alone, but for the differences a turn has by design.

``benchmarks/conversation_invariance.py`` on a few dozen records of ``../shared/data/faithfulness_dev.jsonl``
with the offline judge: a one-turn conversation scores exactly as its record alone; a later turn
equals its record except where its two designed differences move it (what the user said in earlier
turns is evidence; it reads its question after a transcript of the history), each reproduced by
scoring the turn's own sample.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "faithfulness_dev.jsonl"


ci = load_benchmark("conversation_invariance")

pytestmark = pytest.mark.skipif(not DATA.is_file(), reason=f"the labelled data is not here ({DATA})")

EXPLAINED = {"evidence: the user's messages", "question: the history transcript"}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return ci.load(DATA)[::10]  # 30 records, BEGIN and ExpertQA


def test_chain_keeps_each_record_as_one_turn(rows: list[dict]) -> None:
    convs = ci.chain(rows, 3)
    assert [len(group) for _, group in convs] == [3] * 10
    conv, group = convs[0]
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant"] * 3
    assert conv["messages"][3]["content"] == group[1]["answer"]
    assert conv["messages"][3]["contexts"] == group[1]["contexts"]
    assert sorted(r["id"] for _, g in convs for r in g) == sorted(r["id"] for r in rows)


def test_turns_score_as_their_records_but_for_the_designed_differences(rows: list[dict]) -> None:
    run = ci.check(rows, 3)
    assert run["turns"] == 30 and not run["conversations_unread"]
    moved = [m for case in run["cases"] for m in case["moved"]]
    # every difference is one of the two designed ones, and the turn's own sample reproduces it
    assert {m["cause"] for m in moved} <= EXPLAINED
    # the user's earlier words only ever add support; nothing moves on a first turn
    assert all(m["in_conversation"] > m["alone"] for m in moved if m["metric"] != "relevancy")
    assert all(
        not c["turn"].endswith("#turn0")
        for c in run["cases"]
        for m in c["moved"]
        if m["metric"] == "relevancy"
    )
    assert run["per_metric"]["faithfulness"].get("differ", 0) == run["per_metric"]["groundedness"].get(
        "differ", 0
    )
    assert all(not c["turn"].endswith("#turn0") for c in run["cases"] if c["moved"])
    # the offline judge's counts on these 30 records: 28 turns identical on all three metrics
    assert run["turns_identical_on_all_three"] == 28
    counts = {m: (c.get("identical", 0), c.get("differ", 0)) for m, c in run["per_metric"].items()}
    assert counts == {"faithfulness": (29, 1), "relevancy": (29, 1), "groundedness": (29, 1)}


def test_a_one_turn_conversation_scores_exactly_as_its_record_alone(rows: list[dict]) -> None:
    run = ci.check(rows, 1)
    assert run["turns_identical_on_all_three"] == run["turns"] == 30
    assert all(c == {"turns": 30, "identical": 30} for c in run["per_metric"].values())
    assert not [m for c in run["cases"] for m in c["moved"]]
