"""Batch mode end to end: EvaluationPipeline(batch=...) through the fake server's batch APIs.

The real openai and anthropic SDKs talk to FakeLLMServer over loopback HTTP; the batch requests are
answered by the offline judge exactly as the same real-time requests would be.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
from ragmetrics.errors import BatchPendingError, ConfigError
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.pipeline.batch import BatchOptions
from ragmetrics.testing import FakeLLMServer, FakeReply

ROWS = [
    {
        "id": "python",
        "question": "What is Python?",
        "answer": "Python is a compiled language created in 1991.",
        "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
    },
    {
        "id": "paris",
        "question": "What is the capital of France?",
        "answer": "Paris is the capital of France. It is known for the Eiffel Tower.",
        "contexts": ["Paris is the capital and largest city of France.", "The Eiffel Tower is in Paris."],
    },
    {
        "id": "idk",
        "question": "Who won?",
        "answer": "I don't know.",
        "contexts": ["The home team won the final 2-1."],
    },
]
FAST = {"poll_interval_s": 0}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def srv(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy-key")
    server.reset()
    yield server
    server.reset()


def metrics(srv: FakeLLMServer, provider: str = "openai", **options: Any) -> list[Any]:
    if provider == "anthropic":
        spec, options = "anthropic:claude-haiku-4-5", {"base_url": srv.anthropic_base_url, **options}
    else:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    return [cls(llm=spec, **options) for cls in (FaithfulnessMetric, RelevancyMetric, GroundednessMetric)]


def real_time_requests(srv: FakeLLMServer) -> list[Any]:
    return [r for r in srv.requests if r.endpoint in ("chat", "messages") and r.batch_id is None]


def batch_lines(srv: FakeLLMServer) -> list[Any]:
    return [r for r in srv.requests if r.endpoint in ("chat", "messages") and r.batch_id is not None]


def scores(results: Any) -> list[dict[str, float | None]]:
    return [dict(r.scores) for r in results]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_run_scores_as_real_time_at_half_the_price_in_two_rounds(srv, provider, tmp_path, monkeypatch):
    results = EvaluationPipeline(metrics(srv, provider), batch=FAST, progress=False).run(ROWS)
    assert [r.id for r in results] == ["python", "paris", "idk"] and not any(r.errors for r in results)
    assert results[0].faithfulness == 0.5  # the seed example: one claim contradicted, one supported
    # round 1 extracts the claims of each sample, round 2 verifies them; nothing is sent in real time.
    # The canaries ride in the same two batches (their extraction, then their verification): no extra round
    assert [len(b.custom_ids) for b in srv.batches] == [3 + 1, 2 + 1] and all(b.ended for b in srv.batches)
    assert not real_time_requests(srv)
    assert [r.task for r in batch_lines(srv)].count("claims.extract") == 3 + 1
    batch_bodies = sorted(json.dumps(dict(r.body), sort_keys=True) for r in batch_lines(srv))
    usage = results.stats.usage
    assert usage.calls == 5 + 2 and usage.succeeded == 5 + 2 and usage.cached_calls == 0
    (canary,) = results.summary().canaries
    assert canary.passed and canary.usage.calls == 2 and canary.usage.cost_usd > 0
    assert sum(r.usage.calls for r in results) == 5  # the records hold their own calls only

    # the same data in real time, on an empty cache: the same bodies on the wire, the same scores
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "fresh"))
    srv.reset()
    live = EvaluationPipeline(metrics(srv, provider), progress=False).run(ROWS)
    assert scores(live) == scores(results)
    assert sorted(json.dumps(dict(r.body), sort_keys=True) for r in real_time_requests(srv)) == batch_bodies
    assert live.stats.usage.prompt_tokens == usage.prompt_tokens
    assert usage.cost_usd == pytest.approx(live.stats.usage.cost_usd / 2) and usage.cost_usd > 0
    (live_canary,) = live.summary().canaries  # at batch price in the batch run, as the rest
    assert canary.usage.cost_usd == pytest.approx(live_canary.usage.cost_usd / 2)


def test_a_finished_batch_fills_the_cache_so_real_time_makes_zero_calls(srv):
    batched = EvaluationPipeline(metrics(srv), batch=FAST, progress=False, canaries=False).run(ROWS)
    srv.reset()
    again = EvaluationPipeline(metrics(srv), progress=False, canaries=False).run(ROWS)
    assert srv.calls.total() == 0 and srv.requests == []
    assert scores(again) == scores(batched)
    assert again.stats.usage.cached_calls == 5 and again.stats.usage.cost_usd == 0


def test_a_transient_failure_in_a_batch_is_sent_again_in_the_next_one(srv):
    srv.on(lambda r: r.task == "claims.verify" and "Paris" in r.prompt, FakeReply(status=500), times=1)
    results = EvaluationPipeline(metrics(srv), batch=FAST, progress=False, canaries=False).run(ROWS)
    assert not any(r.errors for r in results)
    assert [len(b.custom_ids) for b in srv.batches] == [3, 2, 1]
    paris = results[1]
    assert paris.usage.retries == 1 and paris.usage.calls == 3  # extraction, failed and resent verification


def test_a_request_that_keeps_failing_gets_its_status_and_the_rest_finish(srv):
    srv.on(lambda r: r.task == "claims.verify" and "Paris" in r.prompt, FakeReply(status=500, message="down"))
    srv.on(lambda r: r.task == "claims.extract" and "Python" in r.prompt, FakeReply(hang=True))
    # the faults are scripted by the rows' text, which a canary drawn from the rows shares: none here
    results = EvaluationPipeline(
        metrics(srv), batch={**FAST, "resubmits": 1}, progress=False, canaries=False
    ).run(ROWS)
    assert len(results) == 3  # never dropped
    python, paris, idk = results
    assert python.scores == {"faithfulness": None, "relevancy": None, "groundedness": None}
    assert {e.status for e in python.errors} == {"timeout"}
    assert "expired" in python.errors[0].message and "batch" in python.errors[0].message
    assert paris.faithfulness is None and paris.relevancy is not None  # relevancy needs no verification
    assert {e.status for e in paris.errors} == {"provider_error"} and "HTTP 500" in paris.errors[0].message
    assert idk.relevancy == 0.0 and not idk.errors
    # each failing request was sent twice (one resubmission), in successive batches
    assert sum(c.endswith("-1") for b in srv.batches for c in b.custom_ids) == 2


def test_an_invalid_reply_is_re_asked_in_the_next_batch_as_in_real_time(srv):
    srv.on(lambda r: r.task == "claims.extract" and "Paris" in r.prompt, FakeReply(invalid=True), times=1)
    results = EvaluationPipeline(metrics(srv), batch=FAST, progress=False).run(ROWS)
    assert not any(r.errors for r in results)
    paris = results[1]
    assert paris.usage.reasks == 1
    re_ask = [r for r in batch_lines(srv) if r.task == "claims.extract" and "Paris" in r.prompt][-1]
    assert len(re_ask.body["messages"]) > 2  # the invalid reply and the validation error ride along


def test_stop_after_submit_then_resume_in_a_new_pipeline_without_resubmitting(srv, tmp_path):
    ledger = tmp_path / "ledger"
    with pytest.raises(BatchPendingError) as stopped:
        EvaluationPipeline(
            metrics(srv), batch={**FAST, "max_wait_s": 0, "directory": ledger}, progress=False, canaries=False
        ).run(ROWS)
    first = srv.batches
    assert len(first) == 1 and stopped.value.batch_ids == [first[0].id]
    assert json.loads((next(ledger.iterdir()) / "batches.json").read_text())[0]["id"] == first[0].id

    with pytest.raises(ConfigError, match="resume"):  # without resume it refuses rather than pay twice
        EvaluationPipeline(
            metrics(srv), batch={**FAST, "directory": ledger}, progress=False, canaries=False
        ).run(ROWS)
    assert len(srv.batches) == 1

    results = EvaluationPipeline(
        metrics(srv), batch={**FAST, "directory": ledger, "resume": True}, progress=False, canaries=False
    ).run(ROWS)
    assert not any(r.errors for r in results) and results[0].faithfulness == 0.5
    submitted = [c for b in srv.batches for c in b.custom_ids]
    assert len(srv.batches) == 2 and len(submitted) == len(set(submitted)) == 5
    assert sum(r.endpoint == "files" and r.method == "POST" for r in srv.requests) == 2  # one upload each


def test_resume_in_a_new_process(srv, tmp_path):
    import os
    import subprocess
    import sys

    ledger = tmp_path / "ledger"
    script = (
        "import sys\n"
        "from ragmetrics import FaithfulnessMetric\n"
        "from ragmetrics.errors import BatchPendingError\n"
        "from ragmetrics.pipeline import EvaluationPipeline\n"
        "rows = [{'question': 'What is Python?', 'answer': 'Python is a compiled language created in 1991.',"
        " 'contexts': ['Python is an interpreted language created by Guido van Rossum in 1991.']}]\n"
        "m = FaithfulnessMetric(llm=sys.argv[1])\n"
        "try:\n"
        "    batch = {'max_wait_s': 0, 'directory': sys.argv[2]}\n"
        "    EvaluationPipeline([m], batch=batch, progress=False, canaries=False).run(rows)\n"
        "except BatchPendingError:\n"
        "    sys.exit(3)\n"
    )
    spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    proc = subprocess.run(
        [sys.executable, "-c", script, spec, str(ledger)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert len(srv.batches) == 1
    metric = FaithfulnessMetric(llm=spec)
    rows = [{k: ROWS[0][k] for k in ("question", "answer", "contexts")}]
    results = EvaluationPipeline(
        [metric], batch={**FAST, "directory": ledger, "resume": True}, progress=False, canaries=False
    ).run(rows)
    assert results[0].faithfulness == 0.5
    assert len(srv.batches) == 2 and len(srv.batches[0].custom_ids) == 1


def test_batch_mode_refuses_what_it_cannot_do(srv):
    with pytest.raises(ConfigError, match="no batch API"):
        EvaluationPipeline([FaithfulnessMetric(llm="offline")], batch=True, progress=False).run(ROWS)
    with pytest.raises(ConfigError, match="max_cost_usd"):
        EvaluationPipeline(metrics(srv), batch=True, max_cost_usd=1.0)
    with pytest.raises(ConfigError, match="stream"):
        EvaluationPipeline(metrics(srv), batch=True).stream(ROWS)
    with pytest.raises(ConfigError, match="unknown option"):
        EvaluationPipeline(metrics(srv), batch={"poll": 1})
    with pytest.raises(ConfigError, match="max_rounds"):
        BatchOptions(max_rounds=1)

    def length_ok(sample: Any) -> float:
        return 1.0

    with pytest.raises(ConfigError, match="nothing to batch"):
        EvaluationPipeline([length_ok], batch=True, progress=False).run(ROWS)
    assert srv.batches == []


def test_callbacks_see_the_final_records_only(srv):
    events: list[str] = []
    pipeline = EvaluationPipeline(
        metrics(srv), batch=FAST, progress=False, callbacks=[lambda e: events.append(e.kind)]
    )
    results = pipeline.run(ROWS)
    assert events == ["start", "record", "record", "record", "end"]
    assert not any(r.errors for r in results) and len(srv.batches) == 2


def test_estimate_shows_the_batch_price_beside_the_real_time_one(srv):
    estimate = EvaluationPipeline(metrics(srv)).estimate(ROWS)
    assert estimate.cost_usd > 0 and estimate.batch_cost_usd == pytest.approx(estimate.cost_usd / 2)
    assert "with --batch" in str(estimate)
    assert srv.calls.total() == 0


def test_a_run_stopped_between_deferring_and_submitting_defers_those_requests_again(srv, tmp_path):
    from ragmetrics.errors import JudgeError

    ledger = {**FAST, "directory": tmp_path / "ledger"}
    srv.on(lambda r: r.endpoint == "batches" and r.method == "POST", FakeReply(status=400), times=1)
    with pytest.raises(JudgeError, match="batch API failed to submit"):
        EvaluationPipeline(metrics(srv), batch=ledger, progress=False, canaries=False).run(ROWS)
    assert srv.batches == []  # the requests were deferred (and remembered) but never submitted
    results = EvaluationPipeline(metrics(srv), batch=ledger, progress=False, canaries=False).run(ROWS)
    assert not any(r.errors for r in results) and [len(b.custom_ids) for b in srv.batches] == [3, 2]


def test_the_run_time_of_a_batch_run_counts_from_its_first_submission(srv):
    """Before, the clock started at the final real-time pass: 127 s of waiting showed as 0.6 s."""
    import time

    srv.batch_plan(polls=1, seconds=0.6)  # each batch ends at the first poll 0.6 s after it was created
    started = time.monotonic()
    results = EvaluationPipeline(metrics(srv), batch={"poll_interval_s": 0.2}, progress=False).run(ROWS)
    elapsed = time.monotonic() - started
    assert len(srv.batches) == 2 and not any(r.errors for r in results)
    assert 1.2 <= results.stats.wall_time_s <= elapsed  # two rounds of at least 0.6 s each
    assert results.summary().run.wall_time_s == results.stats.wall_time_s
    assert f"in {results.stats.wall_time_s:.1f} s" in str(results.summary())
