"""Retries, re-asks, truncation and timeouts of the provider judges, against the loopback fake server."""

from __future__ import annotations

import gc
import time
import warnings

import pytest

from ragmetrics import FaithfulnessMetric, JudgeError, NoScoreError, RelevancyMetric
from ragmetrics.errors import JudgeOutputError
from ragmetrics.judge import make_judge
from ragmetrics.metrics.claims.engine import extract_request
from ragmetrics.sample import Sample
from ragmetrics.testing import FakeReply
from tests.metrics import seed_answers as seed

FAST = {"backoff_initial_s": 0.0, "backoff_max_s": 0.0}


def sample() -> Sample:
    return Sample.from_fields(question=seed.PARIS_Q, answer=seed.PARIS_A)


async def test_429_with_retry_after_is_honoured_then_succeeds(fake_llm_server, openai_spec):
    fake_llm_server.enqueue(FakeReply(status=429, retry_after=0.4), FakeReply(json=seed.PARIS_EXTRACT))
    judge = make_judge(openai_spec, **FAST)
    started = time.perf_counter()
    reply = await judge.complete(extract_request(sample()))
    elapsed = time.perf_counter() - started
    assert elapsed >= 0.4, "Retry-After was not honoured"
    assert reply.usage.calls == 2 and judge.retries == 1
    assert judge.limiter.throttled == 1, "a 429 must lower the concurrency limit"
    assert len(reply.value.claims) == 2
    await judge.aclose()


async def test_500s_until_attempts_run_out_report_provider_model_and_count(fake_llm_server, openai_spec):
    fake_llm_server.on("claims.extract", FakeReply(status=500, message="boom"))
    judge = make_judge(openai_spec, max_attempts=3, **FAST)
    with pytest.raises(JudgeError) as info:
        await judge.complete(extract_request(sample()))
    err = info.value
    assert err.attempts == 3 and err.http_status == 500 and err.status == "provider_error"
    assert "openai:gpt-4o-mini" in str(err) and "3 HTTP attempts" in str(err) and "boom" in str(err)
    assert fake_llm_server.calls.total() == 3
    await judge.aclose()


async def test_failed_judge_becomes_a_status_on_the_result_and_score_raises(fake_llm_server, openai_spec):
    fake_llm_server.on("claims.extract", FakeReply(status=503, retry_after=0))
    metric = RelevancyMetric(llm=openai_spec, max_attempts=2, cache=False, **FAST)
    result = await metric.evaluate(question=seed.PARIS_Q, answer=seed.PARIS_A)
    assert result.score is None and result.status == "provider_error" and result.passed is None
    assert "503" in result.message
    with pytest.raises(NoScoreError) as info:
        await metric.score(question=seed.PARIS_Q, answer=seed.PARIS_A)
    assert info.value.status == "provider_error"
    await metric.judge.aclose()


async def test_rate_limited_for_good_has_status_rate_limited(fake_llm_server, openai_spec):
    fake_llm_server.on("claims.extract", FakeReply(status=429, retry_after=0))
    metric = RelevancyMetric(llm=openai_spec, max_attempts=2, cache=False, **FAST)
    result = await metric.evaluate(question=seed.PARIS_Q, answer=seed.PARIS_A)
    assert result.status == "rate_limited" and result.score is None
    await metric.judge.aclose()


async def test_invalid_then_valid_json_gives_exactly_one_reask(fake_llm_server, openai_spec):
    fake_llm_server.enqueue(FakeReply(invalid=True), FakeReply(json=seed.PARIS_EXTRACT))
    judge = make_judge(openai_spec, **FAST)
    reply = await judge.complete(extract_request(sample()))
    assert fake_llm_server.calls.total() == 2
    assert reply.usage.calls == 2
    assert reply.usage.prompt_tokens == fake_llm_server.prompt_tokens, "tokens of the re-ask are billed too"
    await judge.aclose()


async def test_malformed_json_then_valid_gives_one_reask(fake_llm_server, openai_spec):
    fake_llm_server.enqueue(FakeReply(malformed=True), FakeReply(json=seed.PARIS_EXTRACT))
    judge = make_judge(openai_spec, **FAST)
    reply = await judge.complete(extract_request(sample()))
    assert fake_llm_server.calls.total() == 2 and len(reply.value.claims) == 2
    await judge.aclose()


async def test_never_valid_output_is_judge_output_invalid_not_a_zero(fake_llm_server, openai_spec):
    fake_llm_server.on("claims.extract", FakeReply(invalid=True))
    metric = RelevancyMetric(llm=openai_spec, reasks=1, cache=False, **FAST)
    result = await metric.evaluate(question=seed.PARIS_Q, answer=seed.PARIS_A)
    assert result.score is None and result.status == "judge_output_invalid"
    assert fake_llm_server.calls.total() == 2
    judge = make_judge(openai_spec, reasks=0, **FAST)
    with pytest.raises(JudgeOutputError) as info:
        await judge.complete(extract_request(sample()))
    assert "claims" in str(info.value), "the validation problem is named"
    await metric.judge.aclose()
    await judge.aclose()


async def test_claim_index_out_of_range_is_reasked(fake_llm_server, openai_spec):
    bad = {
        "verdicts": [
            {"claim": 7, "verdict": "supported", "context": 0, "evidence": "x", "reason": "r"},
            {"claim": 1, "verdict": "supported", "context": 0, "evidence": "x", "reason": "r"},
        ]
    }
    fake_llm_server.on("claims.extract", FakeReply(json=seed.PYTHON_EXTRACT))
    fake_llm_server.on("claims.verify", FakeReply(json=bad), times=1)
    fake_llm_server.on("claims.verify", FakeReply(json=seed.PYTHON_VERIFY))
    metric = FaithfulnessMetric(llm=openai_spec, cache=False, **FAST)
    result = await metric.evaluate(question=seed.PYTHON_Q, answer=seed.PYTHON_A, contexts=seed.PYTHON_CTX)
    assert result.score == 0.5
    verify_requests = [r for r in fake_llm_server.requests if r.task == "claims.verify"]
    assert len(verify_requests) == 2
    assert "out of range" in str(verify_requests[1].body["messages"]), "the re-ask names the problem"
    await metric.judge.aclose()


async def test_truncated_output_is_retried_with_more_room(fake_llm_server, openai_spec):
    fake_llm_server.enqueue(
        FakeReply(json=seed.PARIS_EXTRACT, truncate=True), FakeReply(json=seed.PARIS_EXTRACT)
    )
    judge = make_judge(openai_spec, max_tokens=500, **FAST)
    reply = await judge.complete(extract_request(sample()))
    assert len(reply.value.claims) == 2, "a cut-off reply is never parsed as a short list"
    limits = [r.body["max_tokens"] for r in fake_llm_server.requests]
    assert limits == [500, 1000]
    await judge.aclose()


async def test_always_truncated_ends_as_status_truncated(fake_llm_server, openai_spec):
    fake_llm_server.on("claims.extract", FakeReply(json=seed.PARIS_EXTRACT, truncate=True))
    metric = RelevancyMetric(llm=openai_spec, max_tokens=500, max_tokens_cap=1000, cache=False, **FAST)
    result = await metric.evaluate(question=seed.PARIS_Q, answer=seed.PARIS_A)
    assert result.status == "truncated" and result.score is None
    assert fake_llm_server.calls.total() == 2
    await metric.judge.aclose()


async def test_hanging_server_times_out_with_status_timeout(fake_llm_server, openai_spec):
    fake_llm_server.on("claims.extract", FakeReply(hang=True))
    metric = RelevancyMetric(llm=openai_spec, timeout_s=0.3, max_attempts=2, cache=False, **FAST)
    started = time.perf_counter()
    result = await metric.evaluate(question=seed.PARIS_Q, answer=seed.PARIS_A)
    assert result.status == "timeout" and result.score is None
    assert time.perf_counter() - started < 5
    await metric.judge.aclose()


async def test_dropped_connection_is_retried(fake_llm_server, openai_spec):
    fake_llm_server.enqueue(FakeReply(drop=True), FakeReply(json=seed.PARIS_EXTRACT))
    judge = make_judge(openai_spec, **FAST)
    reply = await judge.complete(extract_request(sample()))
    assert reply.usage.calls == 2
    await judge.aclose()


async def test_bad_key_is_fatal_and_names_the_variable(fake_llm_server, openai_spec):
    fake_llm_server.on("claims.extract", FakeReply(status=401, message="Incorrect API key provided"))
    judge = make_judge(openai_spec, **FAST)
    with pytest.raises(JudgeError) as info:
        await judge.complete(extract_request(sample()))
    assert info.value.attempts == 1 and "OPENAI_API_KEY" in str(info.value)
    await judge.aclose()


async def test_server_without_tool_calling_falls_back_to_json_schema_mode(fake_llm_server, openai_spec):
    rule = fake_llm_server.on(
        lambda r: "tools" in r.body, FakeReply(status=400, message="tools are not supported by this model")
    )
    fake_llm_server.on("claims.extract", FakeReply(json=seed.PARIS_EXTRACT))
    judge = make_judge(openai_spec, **FAST)
    reply = await judge.complete(extract_request(sample()))
    await judge.complete(extract_request(Sample.from_fields(question="q2", answer="a2")))
    assert len(reply.value.claims) == 2 and rule.hits == 1, "the working mode is remembered"
    assert [r.mode for r in fake_llm_server.requests] == ["tools", "json_schema", "json_schema"]
    await judge.aclose()


async def test_anthropic_429_then_success(fake_llm_server, dummy_keys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm_server.anthropic_base_url)
    fake_llm_server.enqueue(FakeReply(status=429, retry_after=0), FakeReply(json=seed.PARIS_EXTRACT))
    judge = make_judge("anthropic:claude-haiku-4-5", **FAST)
    reply = await judge.complete(extract_request(sample()))
    assert reply.usage.calls == 2 and reply.usage.cost_usd > 0
    assert [r.endpoint for r in fake_llm_server.requests] == ["messages", "messages"]
    await judge.aclose()


async def test_anthropic_temperature_is_sent_and_recorded_only_if_the_sdk_takes_it(
    fake_llm_server, dummy_keys, monkeypatch
):
    import inspect

    from anthropic.resources.messages import AsyncMessages

    from ragmetrics.judge.providers.anthropic import sdk_takes_temperature

    takes = "temperature" in inspect.signature(AsyncMessages.create).parameters
    assert sdk_takes_temperature() is takes, "the version rule disagrees with the installed SDK"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm_server.anthropic_base_url)
    fake_llm_server.enqueue(FakeReply(json=seed.PARIS_EXTRACT))
    judge = make_judge("anthropic:claude-haiku-4-5", **FAST)
    await judge.complete(extract_request(sample()))
    sent = fake_llm_server.requests[-1].body
    if takes:
        assert judge.info.temperature == 0.0 and sent["temperature"] == 0.0
    else:  # the model's default applies: the judge must not claim a temperature it never sent
        assert judge.info.temperature is None and "temperature" not in sent
        assert judge.info.temperature_text == "not sent"
        metric = FaithfulnessMetric(llm=judge, cache=False)
        assert "temperature=not sent" in metric._signature()
    await judge.aclose()


def test_missing_key_is_a_config_error_naming_the_variable():
    from ragmetrics import ConfigError

    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_judge("openai:gpt-4o-mini")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        make_judge("anthropic:claude-haiku-4-5")


def test_base_url_variables_name_the_judge(monkeypatch, dummy_keys):
    from ragmetrics.settings import parse_judge_spec

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    assert (
        parse_judge_spec("anthropic:claude-haiku-4-5").spec
        == "anthropic:claude-haiku-4-5@http://127.0.0.1:9/"
    )
    assert parse_judge_spec("openai:gpt-4o-mini").spec == "openai:gpt-4o-mini@http://127.0.0.1:8/v1"
    assert parse_judge_spec("anthropic:m@https://gw.example/").base_url == "https://gw.example/"  # spec wins
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert parse_judge_spec("anthropic:claude-haiku-4-5").base_url is None


async def test_instructor_retry_logs_are_quiet_in_our_calls_only(fake_llm_server, openai_spec, caplog):
    import logging

    caplog.set_level(logging.DEBUG, logger="instructor")
    fake_llm_server.enqueue(FakeReply(status=500), FakeReply(json=seed.PARIS_EXTRACT))
    judge = make_judge(openai_spec, **FAST)
    reply = await judge.complete(extract_request(sample()))
    await judge.aclose()
    assert reply.usage.calls == 2 and judge.retries == 1  # instructor logs a failed call at ERROR
    assert [r for r in caplog.records if r.name.startswith("instructor") and r.levelno >= logging.ERROR] == []
    retry_logger = logging.getLogger("instructor.v2.retry")
    assert retry_logger.level == logging.NOTSET  # the user's own configuration is untouched
    retry_logger.error("a user's own instructor call failed")  # outside our calls it still logs
    assert any(r.getMessage() == "a user's own instructor call failed" for r in caplog.records)


async def test_an_unparsable_reply_that_used_every_token_is_truncation_whatever_finish_reason_says(
    fake_llm_server, openai_spec
):
    # llama-cpp-python reports a tool call cut at max_tokens as finish_reason "tool_calls": the reply is
    # broken JSON that spent the whole budget, so it is retried with more room instead of re-asked
    fake_llm_server.enqueue(
        FakeReply(json=seed.PARIS_EXTRACT, malformed=True), FakeReply(json=seed.PARIS_EXTRACT)
    )
    judge = make_judge(openai_spec, max_tokens=16, reasks=0, **FAST)
    reply = await judge.complete(extract_request(sample()))
    assert len(reply.value.claims) == 2
    assert [r.body["max_tokens"] for r in fake_llm_server.requests] == [16, 32]
    assert reply.usage.calls == 2 and reply.usage.retries == 1
    await judge.aclose()


async def test_an_unparsable_reply_within_its_budget_is_still_invalid_output(fake_llm_server, openai_spec):
    fake_llm_server.on("claims.extract", FakeReply(json=seed.PARIS_EXTRACT, malformed=True))
    metric = RelevancyMetric(llm=openai_spec, max_tokens=2000, reasks=0, cache=False, **FAST)
    result = await metric.evaluate(question=seed.PARIS_Q, answer=seed.PARIS_A)
    assert result.status == "judge_output_invalid" and fake_llm_server.calls.total() == 1
    await metric.judge.aclose()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_closing_a_judge_closes_a_connection_its_pool_lost_track_of(
    fake_llm_server, dummy_keys, provider
):
    # Under attempts cut at the deadline, the SDKs' pool (httpcore2) now and then drops an idle
    # connection from its list without closing it: the clean-clone CI of d7799f3 found 11 such sockets
    # open for the garbage collector (ResourceWarning) after the thousand-sample fault test. That drop is
    # made here by hand, once the reply is in; the judge's close must still close the socket.
    base = fake_llm_server.openai_base_url if provider == "openai" else fake_llm_server.anthropic_base_url
    model = "gpt-4o-mini" if provider == "openai" else "claude-haiku-4-5"
    judge = make_judge(f"{provider}:{model}@{base}", **FAST)
    fake_llm_server.enqueue(FakeReply(json=seed.PARIS_EXTRACT))
    reply = await judge.complete(extract_request(sample()))
    assert len(reply.value.claims) == 2
    pool = judge._client()._client._transport._pool  # the SDK client's HTTP client's connection pool
    assert len(pool._connections) == 1
    pool._connections.clear()  # the pool forgets its idle connection, as httpcore2 sometimes does
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        await judge.aclose()
        del pool
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
