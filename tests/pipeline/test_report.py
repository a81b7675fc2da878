"""Report: aggregates per metric (mean, count, statuses, bootstrap CI, pass rate), exports, JSON."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics.pipeline import EvaluationPipeline, EvaluationResult, Report, read_jsonl
from ragmetrics.pipeline.report import ErrorRecord, ReportBuilder, RunStats, ScoreSpread, bootstrap_ci
from ragmetrics.sample import Sample
from ragmetrics.score import ClaimRecord, MetricResult, Usage


def record(
    index: int, faith: float | None, status: str = "ok", *, passed: bool | None = None, cost: float = 0.001
) -> EvaluationResult:
    results = {}
    errors = []
    if faith is not None or status not in ("error", "skipped"):
        results["faithfulness"] = MetricResult(
            name="faithfulness",
            score=faith,
            status=status,
            threshold=0.5 if passed is not None else None,
            passed=passed,
            message=None if faith is not None else "judge timed out",
            claims=[ClaimRecord(text="c", verdict="supported")],
            usage=Usage(calls=2, cost_usd=cost),
        )
    if faith is None:
        errors.append(
            ErrorRecord(
                metric="faithfulness" if status != "skipped" else None,
                status=status,
                message="why",
                type="NoScoreError",
            )
        )
    return EvaluationResult(
        index=index,
        id=f"r{index}",
        sample=Sample(answer=f"a{index}", contexts=("c",)),
        scores={"faithfulness": faith, "relevancy": 1.0 if faith is not None else None},
        results=results,
        errors=errors,
        usage=Usage(calls=2, cost_usd=cost),
        latency_ms=12.5,
    )


RECORDS = [
    record(0, 1.0, passed=True),
    record(1, 0.5, passed=True),
    record(2, None, "timeout"),
    record(3, 0.0, passed=False),
    record(4, None, "skipped", cost=0.0),
]


def test_aggregates_count_every_status_and_leave_missing_scores_out_of_the_mean() -> None:
    report = Report.from_records(RECORDS)
    faith = report["faithfulness"]
    assert (faith.total, faith.count, faith.failed) == (5, 3, 2)
    assert faith.mean == pytest.approx(0.5) and faith.min == 0.0 and faith.max == 1.0
    assert faith.statuses == {"ok": 3, "skipped": 1, "timeout": 1}
    assert faith.passed == 2 and faith.pass_rate == pytest.approx(2 / 3)
    assert faith.ci_low is not None and faith.ci_high is not None
    assert 0.0 <= faith.ci_low <= faith.mean <= faith.ci_high <= 1.0
    rel = report["relevancy"]
    assert rel.mean == 1.0 and rel.ci_low == rel.ci_high == 1.0 and rel.pass_rate is None
    assert report.run.samples == 5 and report.run.failed == 2 and report.run.skipped == 1
    assert report.run.usage.cost_usd == pytest.approx(0.004)
    assert report.mean_score == pytest.approx(0.75)
    text = str(report)
    assert "faithfulness" in text and "timeout 1" in text and "5 samples" in text


def test_an_all_failed_metric_has_no_mean_and_no_nan() -> None:
    report = Report.from_records([record(0, None, "timeout"), record(1, None, "rate_limited")])
    faith = report["faithfulness"]
    assert faith.count == 0 and faith.mean is None and faith.ci_low is None
    assert faith.statuses == {"rate_limited": 1, "timeout": 1}
    dumped = report.to_json()
    assert "NaN" not in dumped and "nan" not in dumped.lower().replace("name", "")


def test_bootstrap_ci_is_seeded_and_reproducible() -> None:
    values = [0.1, 0.9, 0.5, 0.7, 0.3, 1.0, 0.0, 0.6]
    assert bootstrap_ci(values) == bootstrap_ci(values)
    assert bootstrap_ci(values, seed=1) != bootstrap_ci(values, seed=2)
    low, high = bootstrap_ci(values)
    assert low < sum(values) / len(values) < high
    assert bootstrap_ci([]) is None and bootstrap_ci([0.4]) == (0.4, 0.4)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=60))
def test_bootstrap_ci_lies_within_the_data_and_holds_the_mean(values: list[float]) -> None:
    low, high = bootstrap_ci(values, resamples=300)
    mean = math.fsum(values) / len(values)
    assert min(values) - 1e-12 <= low <= high <= max(values) + 1e-12
    assert low - 1e-9 <= mean <= high + 1e-9
    assert not math.isnan(low) and not math.isnan(high)


def test_bootstrap_of_a_large_sample_stays_bounded_in_memory() -> None:
    values = [i % 10 / 10 for i in range(200_000)]
    low, high = bootstrap_ci(values, resamples=200)
    assert low < 0.45 < high and high - low < 0.01


def test_report_json_round_trip_keeps_everything(tmp_path: Path) -> None:
    report = Report.from_records(RECORDS, run=RunStats(wall_time_s=1.5, retries=3, throttled=1, repeats=1))
    again = Report.from_json(report.to_json())
    assert again == report
    assert again.records[2].errors[0].status == "timeout"
    assert again.records[0].faithfulness == 1.0 and again.records[0].mean_score == 1.0
    assert again.run.retries == 3
    path = report.save(tmp_path / "report.json")
    assert Report.load(path) == report


def test_records_round_trip_through_jsonl(tmp_path: Path) -> None:
    report = Report.from_records(RECORDS)
    path = report.to_jsonl(tmp_path / "records.jsonl")
    back = list(read_jsonl(path))
    assert back == RECORDS
    assert repr(back[2]) == "EvaluationResult(faithfulness=None, relevancy=None, mean_score=None, errors=1)"


def test_csv_and_dataframe_have_one_flat_row_per_record(tmp_path: Path) -> None:
    report = Report.from_records(RECORDS)
    path = report.to_csv(tmp_path / "records.csv")
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 5
    assert (
        rows[0]["id"] == "r0" and rows[0]["faithfulness"] == "1.0" and rows[0]["faithfulness_status"] == "ok"
    )
    assert rows[2]["faithfulness"] == "" and rows[2]["faithfulness_status"] == "timeout"
    assert "timeout" in rows[2]["errors"]
    pd = pytest.importorskip("pandas")
    frame = report.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 5
    assert list(frame["id"]) == ["r0", "r1", "r2", "r3", "r4"]
    assert frame["faithfulness"].isna().sum() == 2  # missing scores are missing, not zero
    assert report.aggregates_frame().loc["faithfulness", "count"] == 3


def test_spread_over_repeats_is_summarised() -> None:
    spread = ScoreSpread.of([0.5, 1.0, None])
    assert (spread.n, spread.mean, spread.min, spread.max) == (2, 0.75, 0.5, 1.0)
    assert spread.std == pytest.approx(0.25)
    builder = ReportBuilder(["faithfulness"], repeats=3)
    for i, scores in enumerate(([0.5, 1.0, None], [1.0, 1.0, 1.0])):
        spread = ScoreSpread.of(scores)
        builder.add(
            EvaluationResult(
                index=i, id=str(i), scores={"faithfulness": spread.mean}, spread={"faithfulness": spread}
            )
        )
    agg = builder.aggregates()["faithfulness"]
    assert agg.repeats == 3 and agg.mean_spread == pytest.approx(0.125) and agg.max_spread == 0.5


async def test_pipeline_results_export_and_summarise(tmp_path: Path) -> None:
    def exact(sample: Sample) -> float:
        return 1.0 if sample.answer == sample.reference else 0.0

    data = [{"answer": "a", "reference": "a"}, {"answer": "b", "reference": "c"}, {"answer": None}]
    results = await EvaluationPipeline(metrics=[exact]).evaluate(data)
    summary = results.summary()
    assert summary["exact"].count == 2 and summary["exact"].statuses == {"invalid_input": 1, "ok": 2}
    assert summary.records == list(results)
    assert list(read_jsonl(results.to_jsonl(tmp_path / "r.jsonl"))) == list(results)
    assert results.to_csv(tmp_path / "r.csv").read_text(encoding="utf-8").count("\n") == 4
    pytest.importorskip("pandas")
    assert list(results.to_pandas()["exact"].fillna(-1)) == [1.0, 0.0, -1]
