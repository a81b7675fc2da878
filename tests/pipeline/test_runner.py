"""EvaluationPipeline end to end through the real openai SDK + instructor against the loopback fake server.

The fake server here answers with a small deterministic judge (:func:`answer`): each sentence of the
answer is a claim; a claim is supported when a context contains it, contradicted when it says
"never", else not found. The helpers are imported by the other pipeline test modules.
"""

from __future__ import annotations

import asyncio
import io
import math
import re
from pathlib import Path
from typing import Any

import pytest

from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
from ragmetrics.errors import ConfigError, InvalidInputError, JudgeError, NoScoreError
from ragmetrics.pipeline import EvaluationPipeline, EvaluationResult, PipelineEvent
from ragmetrics.pipeline.runner import failure_record
from ragmetrics.sample import Sample
from ragmetrics.score import MetricResult
from ragmetrics.testing import FakeLLMServer, FakeReply

_SENT = re.compile(r"(?<=[.!?])\s+")


def answer(task: str, v: Any) -> dict[str, Any]:
    """The deterministic judge behind the fake server in these tests."""
    if task == "claims.extract":
        sents = [s.strip() for s in _SENT.split(v["answer"]) if s.strip()]
        return {
            "claims": [
                {"text": s, "span": s, "relevance": "off_topic" if "weather" in s else "direct"}
                for s in sents
            ],
            "addresses_question": "yes",
        }
    out = []
    for i, claim in enumerate(v["claims"]):
        core = claim.rstrip(".").lower()
        hit = next((j for j, ctx in enumerate(v["contexts"]) if core in ctx.lower()), None)
        # a claim that is a context's words with a number or a "not" changed contradicts it (a reading
        # judge passes the run's canaries)
        clash = next((j for j, ctx in enumerate(v["contexts"]) if _masked(core) in _masked(ctx)), None)
        if hit is None and clash is not None:
            out.append(
                {
                    "claim": i,
                    "verdict": "contradicted",
                    "context": clash,
                    "evidence": v["contexts"][clash],
                    "reason": "a number or a negation differs",
                }
            )
        elif hit is not None:
            k = v["contexts"][hit].lower().index(core)
            out.append(
                {
                    "claim": i,
                    "verdict": "supported",
                    "context": hit,
                    "evidence": v["contexts"][hit][k : k + len(core)],
                    "reason": "stated",
                }
            )
        elif "never" in claim:
            out.append(
                {
                    "claim": i,
                    "verdict": "contradicted",
                    "context": 0,
                    "evidence": v["contexts"][0][:20],
                    "reason": "says otherwise",
                }
            )
        else:
            out.append(
                {"claim": i, "verdict": "not_found", "context": None, "evidence": "", "reason": "absent"}
            )
    return {"verdicts": out}


def _masked(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower().rstrip(".")).replace(" not ", " ")


def rows(n: int, *, offset: int = 0) -> list[dict[str, Any]]:
    """``n`` small samples with varied scores: 1, 2 or 3 claims, some unsupported or off topic."""
    out = []
    for i in range(offset, offset + n):
        parts = [f"Item {i} is blue."]
        if i % 2:
            parts.append(f"Item {i} weighs {i} kg.")
        if i % 3 == 0:
            parts.append("The weather is nice.")
        out.append(
            {
                "id": f"s{i}",
                "question": f"What is item {i}?",
                "answer": " ".join(parts),
                "contexts": [
                    f"Item {i} is blue and round.",
                    f"item {i} weighs {i} kg" if i % 4 == 1 else "n/a",
                ],
            }
        )
    return out


def three(spec: str, cache: Path | bool, **opts: Any) -> list[Any]:
    """Faithfulness, relevancy and groundedness on one judge spec."""
    opts.setdefault("backoff_initial_s", 0)
    return [
        FaithfulnessMetric(llm=spec, cache=cache, **opts),
        RelevancyMetric(llm=spec, cache=cache, **opts),
        GroundednessMetric(llm=spec, cache=cache, **opts),
    ]


@pytest.fixture
def spec(srv: FakeLLMServer) -> str:
    return f"openai:fake-model@{srv.openai_base_url}"


# -- the seed API -------------------------------------------------------------------------------------


async def test_seed_api_scores_every_row_in_order_with_attributes(spec: str, tmp_path: Path) -> None:
    pipeline = EvaluationPipeline(metrics=three(spec, tmp_path / "c"))
    results = await pipeline.evaluate(
        questions=["What is RAG?", "How does SynapseKit work?"],
        answers=[
            "RAG is retrieval-augmented generation. It is never used.",
            "SynapseKit is a Python framework.",
        ],
        contexts=[
            ["RAG is retrieval-augmented generation for grounded answers."],
            ["SynapseKit is a Python framework for LLM apps."],
        ],
    )
    assert [r.index for r in results] == [0, 1]
    assert [r.id for r in results] == ["0", "1"]
    first = results[0]
    assert first.faithfulness == 0.5  # one claim supported, one contradicted
    assert first.relevancy == 1.0
    assert first.groundedness is not None and 0 < first.groundedness < 1
    assert first.mean_score == pytest.approx((0.5 + 1.0 + first.groundedness) / 3)
    assert (
        repr(results[1])
        == "EvaluationResult(faithfulness=1.00, relevancy=1.00, groundedness=1.00, mean_score=1.00)"
    )
    assert str(results[1]) == repr(results[1])
    claims = first.results["faithfulness"].claims
    assert [c.verdict for c in claims] == ["supported", "contradicted"]
    assert first.usage.calls == 2 and first.latency_ms > 0
    assert first.sample is not None and first.sample.answer.startswith("RAG")
    with pytest.raises(AttributeError):
        first.no_such_metric  # noqa: B018


async def test_three_metrics_on_one_sample_cost_exactly_two_calls(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    data = rows(6)
    results = await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), canaries=False).evaluate(data)
    assert srv.calls == {"claims.extract": 6, "claims.verify": 6}
    assert all(r.usage.calls == 2 for r in results)
    stats = results.stats
    assert stats.cache.misses == 12 and stats.cache.shared + stats.cache.hits == 6 * 3
    assert stats.usage.calls == 12


async def test_results_keep_dataset_order_and_ids_under_random_latency(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    srv.latency = (0.0, 0.03)
    data = rows(40)
    results = await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), concurrency=16).evaluate(data)
    assert [r.index for r in results] == list(range(40))
    assert [r.id for r in results] == [d["id"] for d in data]
    assert all(r.ok for r in results)


async def test_stream_yields_every_record_once(spec: str, tmp_path: Path) -> None:
    pipeline = EvaluationPipeline(metrics=three(spec, tmp_path / "c"), concurrency=4)
    seen = []
    run = pipeline.stream(rows(20))
    async for record in run:
        seen.append(record.index)
    assert sorted(seen) == list(range(20))
    summary = run.summary()
    assert summary.run.samples == 20 and summary.records == []
    assert summary["faithfulness"].count == 20


async def test_stream_closed_early_cancels_work_and_closes_judges(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    metrics = three(spec, tmp_path / "c")
    async with EvaluationPipeline(metrics=metrics, concurrency=2).stream(rows(50)) as run:
        async for _ in run:
            break
    await asyncio.sleep(0.05)
    made = srv.calls.total()
    assert made < 20
    await asyncio.sleep(0.1)
    assert srv.calls.total() == made  # nothing keeps running after close
    assert not metrics[0].judge.inner._clients  # the SDK client of this loop was closed


def test_run_is_synchronous_outside_an_event_loop(spec: str, tmp_path: Path) -> None:
    results = EvaluationPipeline(metrics=three(spec, tmp_path / "c")).run(rows(3))
    assert len(results) == 3 and all(r.ok for r in results)


async def test_run_works_inside_a_running_event_loop(spec: str, tmp_path: Path) -> None:
    pipeline = EvaluationPipeline(metrics=three(spec, tmp_path / "c"))
    results = pipeline.run(rows(3))  # as in Jupyter: no "event loop is already running"
    assert [r.index for r in results] == [0, 1, 2]
    assert pipeline.evaluate_sync(rows(3))[2].faithfulness == results[2].faithfulness


# -- custom metrics -----------------------------------------------------------------------------------


class LengthMetric:
    """An object metric whose evaluate_sample takes no repeat argument."""

    name = "short_answer"

    async def evaluate_sample(self, sample: Sample) -> MetricResult:
        return MetricResult(name=self.name, score=1.0 if len(sample.answer) < 30 else 0.5)


def has_digit(sample: Sample) -> bool:
    return any(ch.isdigit() for ch in sample.answer)


async def word_ratio(sample: Sample) -> dict[str, Any]:
    return {"score": min(1.0, len(sample.answer.split()) / 10), "reason": "words / 10"}


def broken(sample: Sample) -> float:
    raise ZeroDivisionError("boom")


def not_a_number(sample: Sample) -> float:
    return math.nan


async def test_custom_metrics_objects_and_plain_functions(tmp_path: Path) -> None:
    pipeline = EvaluationPipeline(metrics=[LengthMetric(), has_digit, word_ratio, broken, not_a_number])
    results = await pipeline.evaluate(
        answers=["Paris is the capital.", "It has 3 parts and many more words here."]
    )
    r0, r1 = results
    assert r0.short_answer == 1.0 and r1.short_answer == 0.5
    assert r0.has_digit == 0.0 and r1.has_digit == 1.0
    assert r0.word_ratio == pytest.approx(0.4) and r0.results["word_ratio"].reasoning == "words / 10"
    assert r0.broken is None and r0.not_a_number is None
    errors = {e.metric: e for e in r0.errors}
    assert errors["broken"].status == "error" and errors["broken"].type == "ZeroDivisionError"
    assert "boom" in errors["broken"].message and "ZeroDivisionError" in (errors["broken"].traceback or "")
    assert errors["not_a_number"].status == "error"  # NaN is refused, never stored
    assert r0.mean_score == pytest.approx((1.0 + 0.0 + 0.4) / 3)
    assert not any(isinstance(s, float) and math.isnan(s) for r in results for s in r.scores.values())


def test_bad_configuration_fails_when_the_pipeline_is_built() -> None:
    with pytest.raises(ConfigError, match="non-empty"):
        EvaluationPipeline(metrics=[])
    with pytest.raises(ConfigError, match="unique"):
        EvaluationPipeline(metrics=[has_digit, has_digit])
    with pytest.raises(ConfigError, match="concurrency"):
        EvaluationPipeline(metrics=[has_digit], concurrency=0)
    with pytest.raises(ConfigError, match="repeats"):
        EvaluationPipeline(metrics=[has_digit], repeats=0)
    with pytest.raises(ConfigError, match="clashes"):
        EvaluationPipeline(
            metrics=[type("M", (), {"name": "usage", "evaluate_sample": lambda self, s: 1.0})()]
        )
    with pytest.raises(ConfigError, match="unknown sample field"):
        EvaluationPipeline(metrics=[has_digit], columns={"answr": "a"})
    with pytest.raises(ConfigError, match="differ in length"):
        EvaluationPipeline(metrics=[has_digit]).run(answers=["a", "b"], questions=["q"])


# -- bad rows -----------------------------------------------------------------------------------------


async def test_bad_rows_become_error_records_naming_row_and_field(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    data: list[Any] = rows(5)
    data[1] = {"question": "q?", "contexts": ["c"]}  # no answer
    data[2] = {**data[2], "contexts": None}
    data[3] = {**data[3], "question": 42}
    results = await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), canaries=False).evaluate(data)
    assert len(results) == 5
    assert results[0].ok and results[4].ok
    for i, field in ((1, "answer"), (2, "contexts"), (3, "question")):
        record = results[i]
        assert record.scores == {"faithfulness": None, "relevancy": None, "groundedness": None}
        assert record.mean_score is None
        (err,) = record.errors
        assert err.status == "invalid_input" and err.row == i and err.field == field
        assert f"row {i}" in err.message and field in err.message
        assert record.status_of("faithfulness") == "invalid_input"
    assert srv.calls.total() == 4  # only the two good rows were judged
    assert results.summary()["faithfulness"].statuses == {"invalid_input": 3, "ok": 2}


async def test_strict_validates_every_row_before_the_first_call(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    data: list[Any] = rows(6)
    data[4] = {**data[4], "answer": None}
    data[5] = {**data[5], "contexts": "one passage"}
    with pytest.raises(InvalidInputError, match=r"row 4: field 'answer'.*also rows 5"):
        await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), strict=True).evaluate(iter(data))
    assert srv.calls.total() == 0


async def test_raise_on_error_raises_the_first_failure(srv: FakeLLMServer, spec: str, tmp_path: Path) -> None:
    data: list[Any] = rows(3)
    data[1] = {"question": "q", "contexts": []}
    with pytest.raises(InvalidInputError, match="row 1"):
        await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), raise_on_error=True).evaluate(data)
    srv.on(
        lambda r: r.task == "claims.extract" and "Item 2 " in r.prompt,
        FakeReply(status=400, message="bad request for item 2"),
    )
    metrics = three(spec, tmp_path / "c2")
    with pytest.raises(NoScoreError, match="provider_error"):
        await EvaluationPipeline(metrics=metrics, raise_on_error=True).evaluate(rows(4))
    assert not metrics[0].judge.inner._clients


async def test_a_sample_that_fails_for_good_says_why_and_the_others_are_unharmed(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    srv.on(lambda r: "Item 3 " in r.prompt, FakeReply(status=500, message="upstream exploded"))
    results = await EvaluationPipeline(metrics=three(spec, tmp_path / "c", max_attempts=2)).evaluate(rows(6))
    bad = results[3]
    assert bad.scores == {"faithfulness": None, "relevancy": None, "groundedness": None}
    assert {e.status for e in bad.errors} == {"provider_error"}
    assert all("upstream exploded" in e.message and "2 HTTP attempts" in e.message for e in bad.errors)
    assert all(r.ok for i, r in enumerate(results) if i != 3)
    assert results.stats.retries >= 1


# -- timeouts -----------------------------------------------------------------------------------------


async def test_a_sample_over_its_time_limit_gets_status_timeout_and_the_run_ends(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    await EvaluationPipeline(metrics=three(spec, False)).evaluate(rows(1))  # SDK imports outside the clock
    srv.on(lambda r: "Item 2 " in r.prompt, FakeReply(hang=True))
    pipeline = EvaluationPipeline(metrics=three(spec, tmp_path / "c", timeout_s=60), timeout_per_sample_s=5)
    started = asyncio.get_running_loop().time()
    results = await pipeline.evaluate(rows(5))
    assert asyncio.get_running_loop().time() - started < 40  # the hung sample is cut off at 5 s, not 60
    timed_out = results[2]
    assert {e.status for e in timed_out.errors} == {"timeout"}
    assert timed_out.status_of("relevancy") == "timeout"
    assert "timeout_per_sample_s=5 s" in timed_out.errors[0].message
    assert all(r.ok for i, r in enumerate(results) if i != 2), [r.errors for r in results]


async def test_a_call_over_its_time_limit_is_retried_then_reported_as_timeout(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    srv.on(lambda r: "Item 1 " in r.prompt, FakeReply(hang=True))
    metrics = three(spec, tmp_path / "c", timeout_s=1.0, max_attempts=2)
    results = await EvaluationPipeline(metrics=metrics).evaluate(rows(3))
    assert {e.status for e in results[1].errors} == {"timeout"}
    assert results[0].ok and results[2].ok


# -- repeats ------------------------------------------------------------------------------------------


async def test_repeats_run_each_judge_call_again_and_report_the_spread(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    pipeline = EvaluationPipeline(metrics=three(spec, tmp_path / "c"), repeats=3, canaries=False)
    results = await pipeline.evaluate(rows(4))
    assert srv.calls == {"claims.extract": 12, "claims.verify": 12}  # keyed by repeat index
    record = results[1]
    spread = record.spread["faithfulness"]
    assert spread.n == 3 and spread.std == 0.0 and spread.min == spread.max == record.faithfulness
    summary = results.summary()
    assert summary["faithfulness"].repeats == 3 and summary["faithfulness"].mean_spread == 0.0
    srv.reset()
    again = await pipeline.evaluate(rows(4))
    assert srv.calls.total() == 0
    assert [r.scores for r in again] == [r.scores for r in results]


# -- budget -------------------------------------------------------------------------------------------


async def test_max_cost_stops_launching_work_before_the_budget_is_exceeded(
    srv: FakeLLMServer, tmp_path: Path
) -> None:
    priced = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    full = await EvaluationPipeline(metrics=three(priced, tmp_path / "a"), concurrency=4).evaluate(rows(20))
    total = full.stats.usage.cost_usd
    assert total > 0
    budget = total * 0.5
    srv.reset()
    results = await EvaluationPipeline(
        metrics=three(priced, tmp_path / "b"), concurrency=4, max_cost_usd=budget
    ).evaluate(rows(20))
    assert len(results) == 20 and [r.index for r in results] == list(range(20))
    spent = results.stats.usage.cost_usd
    assert spent <= budget
    skipped = [r for r in results if r.skipped]
    done = [r for r in results if r.ok]
    assert skipped and done and len(skipped) + len(done) == 20
    assert all("max_cost_usd" in r.errors[0].message and r.errors[0].metric is None for r in skipped)
    assert all(r.usage.calls == 0 for r in skipped)
    assert results.stats.budget_exhausted and results.stats.skipped == len(skipped)
    assert results.summary()["faithfulness"].statuses["skipped"] == len(skipped)


# -- estimate -----------------------------------------------------------------------------------------


async def test_estimate_predicts_calls_tokens_and_cost_without_calling(
    srv: FakeLLMServer, tmp_path: Path
) -> None:
    priced = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    data: list[Any] = rows(12)
    data.append({"question": "q?", "answer": "", "contexts": ["x"]})  # empty answer: no call
    pipeline = EvaluationPipeline(metrics=three(priced, tmp_path / "c"))
    guess = pipeline.estimate(data)
    assert srv.calls.total() == 0
    results = await pipeline.evaluate(data)
    usage = results.stats.usage
    assert guess.calls == usage.calls == srv.calls.total()
    assert guess.prompt_tokens == pytest.approx(usage.prompt_tokens, rel=0.15)
    assert guess.completion_tokens == pytest.approx(usage.completion_tokens, rel=0.5)
    assert guess.cost_usd == pytest.approx(usage.cost_usd, rel=0.25)
    after = pipeline.estimate(data)
    assert after.calls == 0 and after.cached_calls == guess.calls and after.cost_usd == 0


# -- progress and callbacks ---------------------------------------------------------------------------


async def test_progress_bar_draws_when_asked_and_stays_off_otherwise(
    spec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), progress=True).evaluate(rows(3))
    err = capsys.readouterr().err
    assert "3/3" in err and "/s" in err and "cache" in err and "$" in err
    await EvaluationPipeline(metrics=three(spec, tmp_path / "c")).evaluate(rows(3))  # a log: one last line
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("3/3 |")
    await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), progress=False).evaluate(rows(3))
    assert capsys.readouterr().err == ""


def test_progress_bar_line_has_rate_eta_cache_and_cost() -> None:
    from ragmetrics.pipeline.progress import ProgressBar

    out = io.StringIO()
    bar = ProgressBar(10, enabled=True, stream=out, min_interval_s=0)
    bar.update(4, cache_hits=3, cache_requests=8, calls=5, cost_usd=0.0123, failed=1)
    line = bar.line()
    assert line.startswith("4/10 |") and "ETA" in line and "5 calls, 3 cached" in line and "$0.0123" in line
    bar.close()
    assert out.getvalue().endswith("\n")
    assert ProgressBar(10, stream=io.StringIO()).style == "lines"  # not a terminal: a log


async def test_callbacks_receive_start_record_and_end_events(spec: str, tmp_path: Path) -> None:
    seen: list[PipelineEvent] = []
    got: list[str] = []

    async def async_cb(event: PipelineEvent) -> None:
        got.append(event.kind)

    pipeline = EvaluationPipeline(metrics=three(spec, tmp_path / "c"), callbacks=[seen.append, async_cb])
    await pipeline.evaluate(rows(4))
    kinds = [e.kind for e in seen]
    assert kinds == ["start", "record", "record", "record", "record", "end"] == got
    assert seen[0].total == 4 and seen[-1].done == 4 and seen[-1].stats is not None
    assert sorted(e.record.index for e in seen if e.record is not None) == [0, 1, 2, 3]


# -- the one failure function -------------------------------------------------------------------------


def test_failure_record_maps_exceptions_to_statuses() -> None:
    bad = failure_record(InvalidInputError("contexts[1]", "a string", 3, row=7))
    assert (bad.status, bad.row, bad.field, bad.type) == (
        "invalid_input",
        7,
        "contexts[1]",
        "InvalidInputError",
    )
    judge = failure_record(
        JudgeError("slow", provider="openai", model="m", status="rate_limited"), metric="x"
    )
    assert judge.status == "rate_limited" and judge.traceback is None
    try:
        raise KeyError("k")
    except KeyError as exc:
        other = failure_record(exc, metric="m")
    assert other.status == "error" and "KeyError" in (other.traceback or "") and "metric 'm'" in other.message
    assert failure_record(TimeoutError("late")).status == "timeout"


def test_evaluation_result_is_never_nan_and_reads_scores_by_name() -> None:
    record = EvaluationResult(index=0, id="a", scores={"faithfulness": None, "custom": 0.25})
    assert record.mean_score == 0.25 and record.custom == 0.25 and record.faithfulness is None
    assert "custom" in dir(record)
    assert EvaluationResult(index=1, id="b", scores={"x": None}).mean_score is None
