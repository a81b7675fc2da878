"""A judge that failed the run's judge gate or its canaries marks every result it touched.

Each such result has status ``judge_untrusted``, no score and is not passed; the judge's own score stays
in ``details["judge_score"]``. It shows in the records, ``to_pandas``, the notebook view, ``--json``,
JUnit, ``--out`` and the report. A copycat judge (honest claims, every verification "supported" with a
real but random quote, the bundled canary answered honestly) is caught by canaries drawn from the run's
own rows; reading judges keep their scores and statuses.
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET

import pytest

import ragmetrics
from ragmetrics._aio import run_sync
from ragmetrics.pipeline.canaries import CanaryResult, run_canaries
from ragmetrics.pipeline.canary_draw import bundled_draw
from ragmetrics.testing import FakeLLMServer
from tests.pipeline.test_canaries import EXIT_JUDGE, run

ROWS = [
    {
        "id": f"r{i}",
        "question": "When was Python created, and what kind of language is it?",
        "answer": "Python was created in 1991. It is an interpreted language.",
        "contexts": [
            "Python is an interpreted language created by Guido van Rossum in 1991.",
            "Emperor penguins breed on the Antarctic sea ice in winter.",
        ],
    }
    for i in range(4)
]


def contradicted_rows(n: int = 30) -> list[dict[str, object]]:
    """Rows whose answers their contexts plainly contradict (a faithful judge scores them 0)."""
    rows = []
    for i in range(n):
        rows.append(
            {
                "id": f"bridge-{i}",
                "question": f"When was the {name(i)} bridge opened, and what is it built of?",
                "answer": f"The {name(i)} bridge was opened in {1950 + i}. It is built of pink granite.",
                "contexts": [
                    f"The {name(i)} bridge crosses the river at its narrowest point. The {name(i)} "
                    f"bridge was opened to traffic in {1900 + i}. The {name(i)} bridge is built of grey "
                    "limestone quarried nearby."
                ],
            }
        )
    return rows


def name(i: int) -> str:
    return ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir"][i % 6] + f" Street {chr(65 + i % 26)}"


def test_a_schema_filler_marks_every_result_it_touched_and_keeps_its_score_aside():
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        results = ragmetrics.evaluate_sync(
            ROWS, metrics=["faithfulness", "context_relevancy"], llm=spec, cache=False, progress=False
        )
    report = results.summary()
    assert report.judge_gate  # the run's gate failed ...
    for record in results:  # ... and every result of that judge says so itself
        for name, result in record.results.items():
            assert result.status != "ok" and not result.passed, (name, result.status)
            assert record.scores[name] is None
        relevancy = record.results["context_relevancy"]
        assert relevancy.status == "judge_untrusted"
        assert relevancy.details["judge_score"] == 0.0  # the raw score, kept for inspection
        assert spec in (relevancy.message or "") and "is set aside" in (relevancy.message or "")
        assert any(e.metric == "context_relevancy" and e.status == "judge_untrusted" for e in record.errors)
        assert record.mean_score is None and not record.ok
    agg = report.aggregates["context_relevancy"]
    assert agg.count == 0 and agg.mean is None and agg.statuses == {"judge_untrusted": len(ROWS)}
    frame = results.to_pandas()
    assert set(frame["context_relevancy_status"]) == {"judge_untrusted"}
    assert frame["context_relevancy"].isna().all()
    assert frame["context_relevancy_reason"].str.contains("set aside").all()
    view = results._repr_html_()
    assert "judge_untrusted 4" in view and "all ok" not in view


def test_with_the_gate_off_the_judges_scores_stand():
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        results = ragmetrics.evaluate_sync(
            ROWS,
            metrics=["context_relevancy"],
            llm=spec,
            cache=False,
            progress=False,
            judge_health_min=None,
        )
    assert {r.results["context_relevancy"].status for r in results} == {"ok"}
    assert [r.context_relevancy for r in results] == [0.0] * len(ROWS)


@pytest.mark.parametrize("judge", ["offline", "fake"])
def test_a_reading_judge_keeps_every_score_and_status(judge):
    with FakeLLMServer() as srv:
        spec = "offline" if judge == "offline" else f"openai:gpt-4o-mini@{srv.openai_base_url}"
        results = ragmetrics.evaluate_sync(
            ROWS, metrics=["faithfulness", "context_relevancy"], llm=spec, cache=False, progress=False
        )
        off = ragmetrics.evaluate_sync(
            ROWS,
            metrics=["faithfulness", "context_relevancy"],
            llm=spec,
            cache=False,
            progress=False,
            canaries=False,
            judge_health_min=None,
        )
    assert [r.scores for r in results] == [r.scores for r in off]  # nothing that passes changes its score
    assert {r.status_of(m) for r in results for m in r.scores} == {"ok"}
    assert results[0].faithfulness == 1.0 and results[0].context_relevancy == 0.5
    (canary,) = results.summary().canaries
    assert canary.passed and canary.source == "drawn from the run's rows"


def test_a_copycat_that_knows_the_bundled_canary_is_caught_by_one_drawn_from_the_rows(tmp_path):
    data = tmp_path / "bridges.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in contradicted_rows()) + "\n", encoding="utf-8")
    with FakeLLMServer(answer="copycat") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        # the hole: the one fixed canary, answered honestly, and every span and quote found
        from ragmetrics.metrics.claims.faithfulness import FaithfulnessMetric
        from ragmetrics.pipeline._metric_call import share_judges

        async def bundled_canary() -> list[CanaryResult]:
            judges = share_judges([FaithfulnessMetric(llm=spec, cache=False)])
            try:
                return await run_canaries(judges, bundled_draw("test"))
            finally:
                for judge in judges:
                    await judge.aclose()

        (bundled,) = run_sync(bundled_canary())
        assert bundled.passed
        before = len(srv.requests)
        out, junit, page = tmp_path / "out.jsonl", tmp_path / "junit.xml", tmp_path / "r.html"
        proc = run(
            "eval",
            str(data),
            "--judge",
            spec,
            "--metrics",
            "faithfulness",
            "--threshold",
            "0.5",
            "--json",
            "--no-cache",
            "--out",
            str(out),
            "--junit-xml",
            str(junit),
            "--report",
            str(page),
            cache=tmp_path,
        )
        questions = {r["question"] for r in contradicted_rows()}
        # the canary's requests are the rows' own: its question is one of theirs, sent once more
        asked = [q for q in (_question(req.body) for req in srv.requests[before:]) if q is not None]
    assert proc.returncode == EXIT_JUDGE, proc.stderr
    assert "failed its canaries" in proc.stderr
    summary = json.loads(proc.stdout)
    (canary,) = summary["canaries"]
    assert canary["source"] == "drawn from the run's rows" and not canary["passed"]
    assert {p["kind"]: p["got"] for p in canary["probes"]}["contradicted"] == "supported"
    health = summary["judge_health"][spec]
    assert health["span_rate"] == 1.0 and health["quote_rate"] == 1.0  # it looks as if it reads
    agg = summary["aggregates"]["faithfulness"]
    assert agg["count"] == 0 and agg["statuses"] == {"judge_untrusted": 30} and agg["passed"] == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 30
    for record in records:
        result = record["results"]["faithfulness"]
        assert result["status"] == "judge_untrusted" and result["passed"] is False
        assert result["details"]["judge_score"] == 1.0  # what the copycat claimed, set aside
    case = ET.parse(junit).getroot().find(".//testcase[@name='faithfulness']")
    assert case is not None and case.find("failure") is not None
    assert "judge_untrusted" in page.read_text(encoding="utf-8")
    assert len(asked) == 31 and set(asked) <= questions  # 30 rows and the canary, one of them again


def _question(body: object) -> str | None:
    """The question block of a claim extraction request (None for other requests)."""
    from ragmetrics.prompting import parse_blocks

    if not isinstance(body, dict):
        return None
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str) and "<answer>" in content:
            question = parse_blocks(content).get("question")
            return None if question is None else html.unescape(question)
    return None


def test_a_stream_marks_the_records_of_a_judge_that_failed_its_canaries_as_they_come():
    async def consume(spec: str) -> list[ragmetrics.EvaluationResult]:
        pipeline = ragmetrics.EvaluationPipeline(
            [ragmetrics.FaithfulnessMetric(llm=spec, cache=False)], progress=False
        )
        async with pipeline.stream(contradicted_rows(6)) as run:
            return [record async for record in run]

    with FakeLLMServer(answer="copycat") as srv:
        records = run_sync(consume(f"openai:gpt-4o-mini@{srv.openai_base_url}"))
    assert len(records) == 6
    assert {r.results["faithfulness"].status for r in records} == {"judge_untrusted"}
