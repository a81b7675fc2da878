"""``_repr_html_`` (issue 23): the pass rate without a threshold, a claim flagged by several metrics."""

from __future__ import annotations

import ragmetrics
from ragmetrics.metrics import FaithfulnessMetric, GroundednessMetric

ROWS = [
    {
        "id": "py",
        "question": "What is Python?",
        "answer": "Python is a compiled language created in 1991.",
        "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
    },
    {
        "id": "paris",
        "question": "What is the capital of France?",
        "answer": "Paris is the capital of France.",
        "contexts": ["Paris is the capital and most populous city of France."],
    },
]


def test_no_threshold_shows_the_score_spread_and_says_why_there_is_no_pass_rate() -> None:
    results = ragmetrics.evaluate_sync(
        ROWS, metrics=["faithfulness", "relevancy"], llm="offline", progress=False
    )
    html = results._repr_html_()
    assert "<th>scores</th>" in html and "median" in html
    assert "<td>no threshold</td>" in html and "<td>-</td>" not in html.split("Worst")[0]
    assert "threshold=" in html  # says how to get a pass rate


def test_a_threshold_gives_a_pass_rate() -> None:
    metrics = [FaithfulnessMetric(llm="offline", threshold=0.7)]
    html = ragmetrics.evaluate_sync(ROWS, metrics=metrics, progress=False)._repr_html_()
    assert "<td>50%</td>" in html and "no threshold" not in html


def test_a_claim_flagged_by_several_metrics_shows_once_naming_them() -> None:
    metrics = [FaithfulnessMetric(llm="offline"), GroundednessMetric(llm="offline")]
    html = ragmetrics.evaluate_sync(ROWS, metrics=metrics, progress=False)._repr_html_()
    worst = html.split("Worst")[1]
    assert worst.count("Python is a compiled language") == 1
    assert "faithfulness contradicted" in worst and "groundedness contradicted" in worst


def test_the_offline_judge_shows_no_cache_counter_it_never_used() -> None:
    results = ragmetrics.evaluate_sync(ROWS, metrics=["faithfulness"], llm="offline", progress=False)
    head = results._repr_html_().split("</p>")[0]
    assert "0 calls" in head and "cache hits" not in head


def test_worst_samples_of_the_offline_judge_carry_its_note_and_an_llm_judge_s_do_not(srv) -> None:
    from ragmetrics.judge.offline.caveat import WORST_NOTE

    offline = ragmetrics.evaluate_sync(ROWS, metrics=["faithfulness"], llm="offline", progress=False)
    heading = offline._repr_html_().split("Worst")[1].split("</p>")[0]
    assert WORST_NOTE in heading and "it matches words, not meaning" in heading
    spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    judged = ragmetrics.evaluate_sync(ROWS, metrics=["faithfulness"], llm=spec, progress=False)
    html = judged._repr_html_()
    assert "Worst" in html and WORST_NOTE not in html
