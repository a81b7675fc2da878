"""Every HTTP attempt is counted: judge, pipeline and CLI usage agree exactly with the fake server's counters.

The server counts every POST it receives and estimates the tokens of every reply it sends; a summary
must report the same calls and tokens under re-asks (invalid replies), truncation
(``finish_reason=length``), 429s and timeouts, whether the request then succeeds or fails. A request
the server never answered (timed out) has no usage: it is counted as an ``unmetered`` attempt.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli.app import main
from ragmetrics.errors import JudgeError, JudgeOutputError
from ragmetrics.judge import make_judge
from ragmetrics.judge.pricing import cost_usd, load_prices
from ragmetrics.metrics.claims.engine import extract_request
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.sample import Sample
from ragmetrics.score import Usage
from ragmetrics.testing import FakeLLMServer, FakeReply
from tests.pipeline.test_runner import rows, three

MODEL = "gpt-4o-mini"  # in the bundled price table, so every token has a price
FAST = {"backoff_initial_s": 0.0, "backoff_max_s": 0.0}
# Exact counts need only the scripted hang to time out: on a loaded CI machine a request can wait
# longer than half a second before the server even reads it (CI once counted 4 such timeouts).
HANG_S = 2.0


def spec(srv: FakeLLMServer) -> str:
    return f"openai:{MODEL}@{srv.openai_base_url}"


def server_cost(srv: FakeLLMServer) -> float:
    """What the server's own token counts cost, priced with the judge's price table."""
    return cost_usd(load_prices(), "openai", MODEL, srv.prompt_tokens, srv.completion_tokens)


def assert_matches_server(usage: Usage, srv: FakeLLMServer) -> None:
    assert usage.calls == srv.calls.total(), "every HTTP attempt the server received is counted"
    assert usage.prompt_tokens == srv.prompt_tokens
    assert usage.completion_tokens == srv.completion_tokens
    assert usage.cost_usd == pytest.approx(server_cost(srv), rel=1e-12, abs=1e-15)


def extract() -> Any:
    first = rows(1)[0]
    return extract_request(Sample.from_fields(question=first["question"], answer=first["answer"]))


# -- one judge request -----------------------------------------------------------------------------

SCRIPTS = {
    # name: (replies before the valid one, expected (calls, reasks, retries, unmetered))
    "reask": ([FakeReply(invalid=True)], (2, 1, 0, 0)),
    "malformed": ([FakeReply(malformed=True)], (2, 1, 0, 0)),
    "truncated": ([FakeReply(truncate=True)], (2, 0, 1, 0)),
    "429": ([FakeReply(status=429, retry_after=0)], (2, 0, 1, 1)),
    "timeout": ([FakeReply(hang=True)], (2, 0, 1, 1)),
    "everything": (
        [
            FakeReply(status=429, retry_after=0),
            FakeReply(invalid=True),
            FakeReply(truncate=True),
            FakeReply(hang=True),
            FakeReply(status=503, retry_after=0),
        ],
        (6, 1, 4, 3),
    ),
}


@pytest.mark.parametrize("name", list(SCRIPTS))
async def test_a_request_that_succeeds_counts_every_attempt(srv: FakeLLMServer, name: str) -> None:
    before, (calls, reasks, retries, unmetered) = SCRIPTS[name]
    srv.enqueue(*before, FakeReply())
    judge = make_judge(spec(srv), timeout_s=HANG_S, max_tokens=400, **FAST)
    reply = await judge.complete(extract())
    await judge.aclose()
    usage = reply.usage
    assert (usage.calls, usage.reasks, usage.retries, usage.unmetered) == (calls, reasks, retries, unmetered)
    assert_matches_server(usage, srv)
    assert usage.requests == 1 == usage.succeeded and usage.failed == 0


async def test_anthropic_attempts_are_counted_the_same_way(srv: FakeLLMServer, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    srv.enqueue(
        FakeReply(status=529, retry_after=0), FakeReply(invalid=True), FakeReply(truncate=True), FakeReply()
    )
    judge = make_judge(f"anthropic:claude-haiku-4-5@{srv.anthropic_base_url}", max_tokens=400, **FAST)
    reply = await judge.complete(extract())
    await judge.aclose()
    usage = reply.usage
    assert (usage.calls, usage.reasks, usage.retries, usage.unmetered) == (4, 1, 2, 1)
    assert usage.calls == srv.calls.total() and usage.prompt_tokens == srv.prompt_tokens
    assert usage.completion_tokens == srv.completion_tokens
    prices = load_prices()
    assert usage.cost_usd == pytest.approx(
        cost_usd(prices, "anthropic", "claude-haiku-4-5", srv.prompt_tokens, srv.completion_tokens)
    )


async def test_a_request_that_fails_carries_what_it_cost(srv: FakeLLMServer) -> None:
    srv.on("claims.extract", FakeReply(invalid=True))
    judge = make_judge(spec(srv), reasks=2, **FAST)
    with pytest.raises(JudgeOutputError) as info:
        await judge.complete(extract())
    await judge.aclose()
    err = info.value
    assert err.usage.calls == 3 and err.usage.reasks == 2 and err.attempts == 3 and err.reasks == 2
    assert err.usage.succeeded == 0 and err.usage.failed == 1
    assert_matches_server(err.usage, srv)
    assert err.usage.cost_usd > 0, "replies that were thrown away were still billed"
    text = str(err)
    assert "failed after 3 HTTP attempts, 2 of them re-asks after invalid output" in text
    assert text.count("attempts") == 1, f"the attempt count is said once: {text}"


async def test_a_request_that_times_out_for_good_counts_unanswered_attempts(srv: FakeLLMServer) -> None:
    srv.on("claims.extract", FakeReply(hang=True))
    judge = make_judge(spec(srv), timeout_s=0.3, max_attempts=2, **FAST)
    with pytest.raises(JudgeError) as info:
        await judge.complete(extract())
    await judge.aclose()
    usage = info.value.usage
    assert info.value.status == "timeout"
    assert usage.calls == 2 == srv.calls.total() and usage.retries == 1
    assert usage.unmetered == 2 and usage.prompt_tokens == 0 == srv.prompt_tokens, "no reply, no usage"


async def test_a_timeout_backs_off_and_cuts_the_concurrency_limit(srv: FakeLLMServer) -> None:
    srv.enqueue(FakeReply(hang=True), FakeReply())
    judge = make_judge(
        spec(srv), timeout_s=HANG_S, max_concurrency=8, backoff_initial_s=0.0, backoff_max_s=5.0
    )
    started = time.perf_counter()
    await judge.complete(extract())
    elapsed = time.perf_counter() - started
    await judge.aclose()
    assert judge.limiter.throttled == 1 and judge.limiter.limit == 4, "a timeout halves the limit like a 429"
    # the retry waited at least a quarter of the timeout instead of going out at once
    assert elapsed >= HANG_S * 1.25


# -- a pipeline run and the CLI --------------------------------------------------------------------


def _marked(marker: str, task: str) -> Any:
    return lambda r: r.task == task and f"Item {marker} " in r.prompt


def script_faults(srv: FakeLLMServer) -> None:
    """Per-sample faults, so the expected counts do not depend on which request arrives first."""
    srv.on(_marked("0", "claims.verify"), FakeReply(invalid=True), times=2)  # re-asked twice, then fine
    srv.on(_marked("1", "claims.verify"), FakeReply(invalid=True))  # never valid: fails for good
    srv.on(_marked("2", "claims.extract"), FakeReply(status=429, retry_after=0), times=1)
    srv.on(_marked("3", "claims.extract"), FakeReply(truncate=True), times=1)
    srv.on(_marked("4", "claims.extract"), FakeReply(hang=True), times=1)


def check_run(usage: Usage, srv: FakeLLMServer) -> None:
    assert_matches_server(usage, srv)
    assert usage.reasks == 4, "2 re-asks for sample 0, 2 for sample 1"
    assert usage.retries == 3, "one each after the 429, the truncated reply and the timeout"
    assert usage.unmetered == 2, "the 429 and the timed-out request"


async def test_pipeline_summary_agrees_with_the_server(srv: FakeLLMServer, tmp_path: Path) -> None:
    script_faults(srv)
    metrics = three(spec(srv), False, timeout_s=HANG_S, max_tokens=400, **FAST)
    # the scripted faults are counted per sample: no canaries in front of them
    results = await EvaluationPipeline(metrics=metrics, canaries=False).evaluate(rows(6))
    check_run(results.stats.usage, srv)
    failed = results[1]
    assert failed.results["faithfulness"].status == "judge_output_invalid"
    faith = failed.results["faithfulness"].usage
    assert faith.calls == 4 and faith.reasks == 2, "the failed result holds its extraction and 3 verify calls"
    assert failed.usage.calls == 4, "the metrics that shared the calls do not count them twice"
    assert "3 HTTP attempts, 2 of them re-asks after invalid output" in failed.results["faithfulness"].message
    assert sum(r.usage.calls for r in results) == srv.calls.total()
    text = str(results.summary())
    assert (
        f"{srv.calls.total()} LLM calls (11 succeeded, 1 failed, 4 re-asks, 3 retries; 2 unmetered)" in text
    )


def _write_rows(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows(6)), encoding="utf-8")
    return path


def test_cli_summary_agrees_with_the_server(srv: FakeLLMServer, tmp_path: Path, capsys) -> None:
    data = _write_rows(tmp_path / "rows.jsonl")
    args = ["eval", str(data), "--judge", spec(srv), "--no-cache", "--timeout", str(HANG_S), "--no-canaries"]
    script_faults(srv)
    assert main([*args, "--json"]) in (0, 1)
    summary = json.loads(capsys.readouterr().out)
    check_run(Usage.model_validate(summary["run"]["usage"]), srv)
    srv.reset()
    script_faults(srv)
    main(args)
    out = capsys.readouterr().out
    calls = srv.calls.total()
    assert calls == 19, "6 extractions, 6 verifications, 4 re-asks, 3 retries"
    assert f"6 samples, {calls} LLM calls (11 succeeded, 1 failed, 4 re-asks, 3 retries; 2 unmetered)" in out


# -- the budget ------------------------------------------------------------------------------------


async def test_max_cost_holds_when_every_verification_reply_is_invalid(srv: FakeLLMServer) -> None:
    srv.on("claims.verify", FakeReply(invalid=True))
    budget, concurrency = 0.002, 4
    metrics = three(spec(srv), False, **FAST)
    results = await EvaluationPipeline(
        metrics=metrics, concurrency=concurrency, max_cost_usd=budget
    ).evaluate(rows(60))
    spent = results.stats.usage.cost_usd
    assert spent == pytest.approx(server_cost(srv), rel=1e-9), "the run reports what the server billed"
    assert results.stats.usage.calls == srv.calls.total()
    window = concurrency * max(r.usage.cost_usd for r in results)
    assert server_cost(srv) <= budget + window, "at most one in-flight window past the budget"
    skipped = [r for r in results if r.skipped]
    assert skipped and results.stats.budget_exhausted, "the budget stopped the run"
    assert all(r.usage.calls == 0 for r in skipped) and len(skipped) > 40
