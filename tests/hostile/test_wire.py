"""Hostile servers on the wire: replies that are not replies, usage that lies, replies that trickle.

Every POST the fake server receives is an attempt on some record, whatever came back; a reply that is
not a completion (an error body with HTTP 200, a body nested 100,000 deep) is a ``provider_error``
saying so, and a usage report nobody could believe is priced at ragmetrics' own estimate.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ragmetrics.errors import JudgeError
from ragmetrics.judge import make_judge
from ragmetrics.judge.metering import Meter
from ragmetrics.judge.schema import MAX_JUDGE_TEXT_CHARS
from ragmetrics.metrics.claims.engine import extract_request
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.pipeline.export import write_jsonl
from ragmetrics.sample import Sample
from ragmetrics.testing import FakeLLMServer, FakeReply, FakeRequest
from tests.pipeline.test_runner import answer, rows, three

FAST = {"backoff_initial_s": 0.0, "backoff_max_s": 0.0, "max_attempts": 2}
GATEWAY_ERROR = json.dumps({"error": {"message": "upstream provider failed", "type": "upstream_error"}})
DEEP = "[" * 100_000 + "]" * 100_000


def spec(srv: FakeLLMServer) -> str:
    return f"openai:gpt-4o-mini@{srv.openai_base_url}"


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (FakeReply(body=GATEWAY_ERROR), "HTTP 200 with an error instead of a reply: upstream provider"),
        (FakeReply(body=DEEP), "nests too deep to decode"),
        (FakeReply(body='{"choices": "abc", "usage": {"prompt_tokens": 5}}'), "could not be read"),
    ],
    ids=["error-in-200", "deep", "not-a-completion"],
)
async def test_a_reply_that_is_not_a_completion_is_a_provider_error_and_counted(
    srv: FakeLLMServer, reply: FakeReply, message: str
) -> None:
    srv.on("claims.verify", reply)
    results = await EvaluationPipeline(metrics=three(spec(srv), False, **FAST), canaries=False).evaluate(
        rows(3)
    )
    for record in results:
        assert {e.status for e in record.errors} == {"provider_error"}, record.errors
        assert all(message in e.message for e in record.errors)
        assert all("InstructorRetryException" not in e.message for e in record.errors)
    assert sum(r.usage.calls for r in results) == srv.calls.total(), "every POST is an attempt"
    assert srv.calls["claims.verify"] >= 3


async def test_a_gateway_error_with_a_rate_limit_code_is_retried(srv: FakeLLMServer) -> None:
    body = json.dumps({"error": {"message": "slow down", "code": 429}})
    srv.on("claims.extract", FakeReply(body=body), times=1)
    judge = make_judge(spec(srv), **FAST)
    reply = await judge.complete(extract_request(Sample.from_fields(question="q", answer="Paris is big.")))
    await judge.aclose()
    assert reply.usage.calls == srv.calls.total() == 2 and reply.usage.retries == 1


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": float("nan"), "completion_tokens": 5},
        {"prompt_tokens": 10**12, "completion_tokens": 10**12},
        {"prompt_tokens": 50, "completion_tokens": -3},
        {"input_tokens": 2_000_000, "output_tokens": 10},
    ],
    ids=["nan", "trillion", "negative", "far-above-the-request"],
)
async def test_implausible_usage_is_priced_at_our_estimate(srv: FakeLLMServer, usage: dict) -> None:
    srv.on(lambda r: True, FakeReply(usage=usage))
    results = await EvaluationPipeline(metrics=three(spec(srv), False, **FAST), canaries=False).evaluate(
        rows(4)
    )
    total = sum((r.usage for r in results[1:]), results[0].usage)
    assert all(not r.errors for r in results), [r.errors for r in results]
    assert total.calls == srv.calls.total() == 8 and total.estimated == 8 and total.unmetered == 0
    # our estimate reads the whole request body, so it is a little above the server's own count
    assert srv.prompt_tokens <= total.prompt_tokens <= 2 * srv.prompt_tokens
    assert srv.completion_tokens <= total.completion_tokens <= 2 * srv.completion_tokens
    assert total.cost_usd < 0.01, "8 small calls cost cents, not millions"
    assert "implausible usage" in total.describe()


async def test_plausible_usage_is_believed_as_reported(srv: FakeLLMServer) -> None:
    srv.on(lambda r: True, FakeReply(usage={"prompt_tokens": 777, "completion_tokens": 33}))
    judge = make_judge(spec(srv), **FAST)
    reply = await judge.complete(extract_request(Sample.from_fields(question="q", answer="Paris is big.")))
    await judge.aclose()
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (777, 33)
    assert reply.usage.estimated == 0 and reply.usage.unmetered == 0


def test_a_meter_without_an_estimate_still_refuses_counts_beyond_any_context() -> None:
    meter = Meter()
    meter.sent()
    meter.answered(200, {"usage": {"prompt_tokens": 10**12, "completion_tokens": 1}})
    meter.sent()
    meter.answered(200, {"usage": {"prompt_tokens": 120_000, "completion_tokens": 900}})
    spent = meter.usage(lambda p, c: (p + c) / 1e6)
    assert spent.estimated == 1 and (spent.prompt_tokens, spent.completion_tokens) == (120_000, 900)


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        (FakeReply(body=json.dumps({"type": "error", "error": {"type": "overloaded", "message": "x"}})), 1),
        (FakeReply(body=DEEP), 1),
        (FakeReply(usage={"input_tokens": 10**12, "output_tokens": float("nan")}), 0),
    ],
    ids=["error-in-200", "deep", "absurd-usage"],
)
async def test_anthropic_replies_are_classified_and_counted_the_same_way(
    srv: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, reply: FakeReply, status: int
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    srv.on(lambda r: True, reply)
    judge = make_judge(f"anthropic:claude-haiku-4-5@{srv.anthropic_base_url}", max_tokens=400, **FAST)
    request = extract_request(Sample.from_fields(question="q", answer="Paris is big."))
    try:
        if status:
            with pytest.raises(JudgeError) as caught:
                await judge.complete(request)
            assert caught.value.status == "provider_error" and caught.value.usage.calls == srv.calls.total()
        else:
            spent = (await judge.complete(request)).usage
            assert spent.calls == srv.calls.total() == spent.estimated == 1 and spent.cost_usd < 0.01
    finally:
        await judge.aclose()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_trickling_reply_ends_at_the_attempts_timeout(
    srv: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    where = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    if provider == "anthropic":
        where = f"anthropic:claude-haiku-4-5@{srv.anthropic_base_url}"
    judge = make_judge(where, timeout_s=1.0, reasks=2, **FAST)
    request = extract_request(Sample.from_fields(question="q", answer="Paris is big."))
    try:
        warm = await judge.complete(request)  # imports and connections happen outside the timing
        srv.reset()
        # four bytes a second: each read waits 0.25 s, far from the 1 s read timeout even on a loaded machine
        # (at one byte a second a late byte once tripped the read timeout first), the whole reply minutes
        srv.on(lambda r: True, FakeReply(trickle=4.0))
        started = time.perf_counter()
        with pytest.raises(JudgeError) as caught:
            await judge.complete(extract_request(Sample.from_fields(question="q", answer="Rome is old.")))
        elapsed = time.perf_counter() - started
    finally:
        await judge.aclose()
    assert warm.usage.calls == 1
    error = caught.value
    assert error.status == "timeout" and error.usage.calls == srv.calls.total() == 2
    assert "within 1 s (timeout_s bounds each attempt's whole wall clock)" in str(error)
    # two attempts of 1 s each; the old per-call bound was 1 s x 3 (re-asks) + 5 s = 8 s an attempt
    assert elapsed < 6.0, elapsed


async def test_a_huge_reason_is_cut_when_parsed(srv: FakeLLMServer, tmp_path: Path) -> None:
    huge = "x" * 5_000_000

    def verdicts(request: FakeRequest) -> FakeReply:  # the usual verdicts, each with a 5 MB reason
        body = answer("claims.verify", request.variables)
        for verdict in body["verdicts"]:
            verdict["reason"] = huge
        return FakeReply(json=body)

    srv.on("claims.verify", verdicts)
    metrics = three(spec(srv), tmp_path / "cache", **FAST)
    results = await EvaluationPipeline(metrics=metrics).evaluate(rows(2))
    out = write_jsonl(results, tmp_path / "out.jsonl")
    assert out.stat().st_size < 200_000, "no reason reaches --out uncut"
    reasons = [c.reason or "" for r in results for c in r.results["faithfulness"].claims]
    assert reasons and all(len(r) < MAX_JUDGE_TEXT_CHARS + 100 for r in reasons)
    assert all("characters cut by ragmetrics" in r for r in reasons)
    cached = sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert cached < 3_000_000, f"the cache holds {cached:,} bytes"


def test_the_schema_cache_is_bounded() -> None:
    import gc
    import weakref

    from ragmetrics.metrics.claims import schemas
    from ragmetrics.metrics.claims.schemas import SCHEMA_CACHE_SIZE, verification_model

    first = verification_model(1, 1, text=True, per_context=1)
    first.model_json_schema()
    gone = weakref.ref(first)
    del first
    for n in range(2 * SCHEMA_CACHE_SIZE):  # each row shape is a class and a JSON schema
        verification_model(1 + n % 16, 2 + n // 16).model_json_schema()
    gc.collect()
    assert verification_model.cache_info().currsize <= SCHEMA_CACHE_SIZE
    assert len(schemas._SCHEMAS) <= SCHEMA_CACHE_SIZE, "the JSON schemas built are bounded too"
    assert gone() is None, "the least recently used shape's class and schema are dropped"
