"""The report's cache stat for a run that calls no model: "no LLM calls", not "0 (0%), 23 misses"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.report import write_html_report
from ragmetrics.testing import FakeLLMServer, FakeReply, FakeRequest

ROWS = [
    {
        "question": "What kind of language is Python?",
        "answer": "Python is a compiled language created in 1991.",
        "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
    },
    {"question": "What is the capital of France?", "answer": "Paris.", "contexts": ["Paris is in France."]},
]


def _stat(html: str, label: str) -> str:
    match = re.search(rf"<dt>{label}</dt><dd>(.*?)</dd>", html)
    assert match, label
    return re.sub(r"<[^>]+>", " ", match.group(1))


def test_the_offline_judge_run_says_no_llm_calls_instead_of_cache_misses(tmp_path: Path) -> None:
    metrics = [
        FaithfulnessMetric(llm="offline"),
        RelevancyMetric(llm="offline"),
        GroundednessMetric(llm="offline"),
    ]
    report = EvaluationPipeline(metrics=metrics).run(ROWS)
    html = write_html_report(report.summary(), tmp_path / "r.html").read_text(encoding="utf-8")
    stat = _stat(html, "Cache hits")
    assert "no LLM calls" in stat and "misses" not in stat and "0%" not in stat
    assert _stat(html, "LLM calls").split()[0] == "0"


def test_the_groundedness_card_does_not_count_unverified_quotes_as_supported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # claims whose spans are in the answers, every one judged "supported" with a quote found in no context;
    # before, the cards said "supported 2"
    def extract(req: FakeRequest) -> FakeReply:
        span = "Paris." if "Paris." in req.prompt else "Python is a compiled language"
        return FakeReply(json={"claims": [{"text": span, "span": span}], "addresses_question": "yes"})

    verify = {"verdicts": [{"claim": 0, "verdict": "supported", "context": 0, "evidence": "no such words"}]}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeLLMServer() as srv:
        srv.on("claims.extract", extract)
        srv.on("claims.verify", FakeReply(json=verify))
        spec = f"openai:fake-model@{srv.openai_base_url}"
        metrics = [FaithfulnessMetric(llm=spec, cache=False), GroundednessMetric(llm=spec, cache=False)]
        report = EvaluationPipeline(metrics=metrics, progress=False).run(ROWS).summary()
    html = write_html_report(report, tmp_path / "r.html").read_text(encoding="utf-8")
    cards = dict(re.findall(r'<article class="card" data-metric="\d+"><h3>(\w+)</h3>(.*?)</article>', html))
    legend = {
        name: " ".join(re.sub(r"<[^>]+>", " ", body.split('class="mix-legend"', 1)[1]).split())
        for name, body in cards.items()
    }
    # the unverified "supported" verdicts count as not found on every card, never as supported
    assert legend["faithfulness"].startswith("> supported 0 contradicted 0 not found 2"), legend
    assert legend["groundedness"].startswith("> supported 0 contradicted 0 not found 2"), legend
