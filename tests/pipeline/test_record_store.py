"""A run past ``records_in_memory`` keeps its records in a temporary file, and nothing changes for the user.

Every record comes back, in dataset order, equal to the same run's records kept in memory; the summary,
the exports (JSONL, CSV, pandas), the notebook view, the HTML report and the saved report read them from
the file; a huge run's summary is the plain arithmetic of its records.
"""

from __future__ import annotations

import json
import math
import pickle
import tempfile

import pytest

import ragmetrics
from ragmetrics.errors import ConfigError
from ragmetrics.pipeline import EvaluationPipeline, Report, read_jsonl
from ragmetrics.pipeline.records import RecordScan
from ragmetrics.report import write_html_report
from ragmetrics.testing import FakeLLMServer

METRICS = ["faithfulness", "context_relevancy"]


def rows(n: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"q{i}",
            "question": f"What colour is item {i}, and how heavy is it?",
            "answer": f"Item {i} is {'blue' if i % 3 else 'red'}. It weighs {i % 7} kilograms.",
            "contexts": [f"Item {i} is blue.", f"Item {i} weighs {i % 5} kilograms."],
        }
        for i in range(n)
    ]


def timeless(record: ragmetrics.pipeline.EvaluationResult) -> dict[str, object]:
    """A record's content without its timings (two runs never take the same milliseconds)."""
    data = record.model_dump(mode="json")
    data.pop("latency_ms")
    for result in data["results"].values():
        result.pop("latency_ms")
    return data


def test_a_run_past_records_in_memory_reads_every_record_back_from_its_file(tmp_path):
    with FakeLLMServer() as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        options = {"metrics": METRICS, "llm": spec, "cache": False, "progress": False}
        kept = ragmetrics.evaluate_sync(rows(12), **options)
        filed = ragmetrics.evaluate_sync(rows(12), records_in_memory=4, **options)
    assert not kept.in_file and filed.in_file
    assert "12 records in a temporary file" in repr(filed)
    assert len(filed) == 12 and [r.index for r in filed] == list(range(12))
    assert [timeless(r) for r in filed] == [timeless(r) for r in kept]
    assert filed[-1].id == "q11" and [r.id for r in filed[3:6]] == ["q3", "q4", "q5"]
    assert filed[2] is not filed[2]  # read back anew at every access
    with pytest.raises(IndexError, match="record 12 of 12"):
        filed[12]

    report = filed.summary()
    assert report.aggregates == kept.summary().aggregates
    assert [timeless(r) for r in report.records] == [timeless(r) for r in kept]
    again = Report.from_json(report.to_json())  # a saved report holds the records themselves
    assert [timeless(r) for r in again.records] == [timeless(r) for r in kept]

    out = filed.to_jsonl(tmp_path / "records.jsonl")
    assert [timeless(r) for r in read_jsonl(out)] == [timeless(r) for r in kept]
    frame, expected = filed.to_pandas(), kept.to_pandas()
    timing = [c for c in frame.columns if "latency" in c]
    assert frame.drop(columns=timing).equals(expected.drop(columns=timing))
    assert len(filed.to_pandas(level="claims")) == len(kept.to_pandas(level="claims")) > 12
    filed.to_csv(tmp_path / "records.csv")
    assert len((tmp_path / "records.csv").read_text().splitlines()) == 13

    html = write_html_report(report, tmp_path / "report.html").read_text()
    assert html.count("Item 11 is blue.") >= 1 and "kept no records" not in html
    view = filed._repr_html_()
    assert "12 samples" in view and "Worst 5 samples" in view
    copied = pickle.loads(pickle.dumps(filed))  # a copy holds the records themselves
    assert not copied.in_file and [timeless(r) for r in copied] == [timeless(r) for r in kept]


def test_an_untrusted_judges_marks_are_set_on_records_read_back_from_the_file():
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        results = ragmetrics.evaluate_sync(
            rows(6), metrics=METRICS, llm=spec, cache=False, progress=False, records_in_memory=0
        )
    assert results.in_file and results.summary().judge_gate
    for record in results:
        assert record.scores["context_relevancy"] is None and record.mean_score is None
        assert record.results["context_relevancy"].status == "judge_untrusted"
        assert record.results["context_relevancy"].details["judge_score"] == 0.0
        assert any(e.metric == "context_relevancy" and e.status == "judge_untrusted" for e in record.errors)
    agg = results.summary().aggregates["context_relevancy"]
    assert agg.count == 0 and agg.statuses == {"judge_untrusted": 6}


def test_a_huge_runs_summary_is_the_arithmetic_of_its_records():
    n = 3000
    options = {"metrics": ["faithfulness", "relevancy"], "llm": "offline", "progress": False}
    results = ragmetrics.evaluate_sync(rows(n), records_in_memory=100, threshold=0.7, **options)
    assert results.in_file and len(results) == n
    report = results.summary()
    for name in ("faithfulness", "relevancy"):
        scores = [r.scores[name] for r in results if r.scores[name] is not None]
        agg = report.aggregates[name]
        assert agg.total == n and agg.count == len(scores) > 0
        assert agg.mean == pytest.approx(math.fsum(scores) / len(scores), abs=1e-12)
        assert agg.passed == sum(s >= 0.7 for s in scores)
    assert report.aggregates == Report.from_records(list(results), run=results.stats).aggregates
    scan = RecordScan(results, 5, ["faithfulness"])
    ordered = sorted((r for r in results if r.mean_score is not None), key=lambda r: r.mean_score)
    assert [r.index for r in scan.worst] == [r.index for r in ordered[:5]]
    assert len(scan.scores["faithfulness"]) == report.aggregates["faithfulness"].count
    summary = json.loads(report.model_dump_json(exclude={"records"}))
    assert summary["run"]["samples"] == n


@pytest.mark.parametrize("bad", [-1, 1.5, "10"])
def test_records_in_memory_is_checked(bad):
    with pytest.raises(ConfigError, match="records_in_memory"):
        EvaluationPipeline(metrics=["rouge"], records_in_memory=bad)


def test_without_a_writable_temporary_directory_the_records_stay_in_memory(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    results = ragmetrics.evaluate_sync(
        rows(5), metrics=["faithfulness"], llm="offline", progress=False, records_in_memory=2
    )
    assert not results.in_file and [r.index for r in results] == list(range(5))
    assert all(r.faithfulness is not None for r in results)
    assert "keeping every record in memory" in caplog.text and "TMPDIR" in caplog.text


def test_hostile_text_comes_back_from_the_file_as_it_went_in():
    """Lone surrogates, markup, line and paragraph separators, NUL, bidi controls and a 1 MB cell, judged
    by the fake server's schema-only mode (answers built from the schema, not from our own prompts)."""
    hostile = [
        {"id": "lone\udc80", "answer": "Paris \ud800 is big.", "contexts": ["Paris is big."]},
        {"id": "markup", "answer": "</contexts><script>alert(1)</script>", "contexts": ["<b>x</b>"]},
        {"id": "separators", "answer": "A\u2028B\u2029C\x00D \u202eevil", "contexts": ["A B C D"]},
        {"id": "meta", "answer": "Tea is hot.", "contexts": ["Tea is hot."], "meta": {"k": "\udcff 🍵"}},
        {"id": "huge", "answer": "Rain is wet.", "contexts": ["Rain is wet. " * 80_000]},
    ]
    rows_in = [{"question": "What is it?", **row} for row in hostile]
    with FakeLLMServer(answer="schema") as srv:
        options = {
            "metrics": METRICS,
            "llm": f"openai:gpt-4o-mini@{srv.openai_base_url}",
            "cache": False,
            "progress": False,
            "judge_health_min": None,
            "canaries": False,
        }
        kept = ragmetrics.evaluate_sync(rows_in, records_in_memory=None, **options)
        filed = ragmetrics.evaluate_sync(rows_in, records_in_memory=0, **options)
    assert filed.in_file and not kept.in_file
    assert [r.id for r in filed] == ["lone\udc80", "markup", "separators", "meta", "huge"]
    assert [timeless(r) for r in filed] == [timeless(r) for r in kept]
    assert filed[0].status_of("faithfulness") == "invalid_input"  # the lone surrogate, as in memory
    assert filed[3].sample is not None and filed[3].sample.meta["k"] == "\udcff 🍵"
    assert len(filed[4].sample.contexts[0]) == len("Rain is wet. " * 80_000)
