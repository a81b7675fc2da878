"""The dead-judge breaker: unit rules with a fake clock, then a real judge against the loopback server."""

from __future__ import annotations

import pytest

from ragmetrics.errors import JudgeError
from ragmetrics.judge import make_judge
from ragmetrics.judge.breaker import DeadJudgeBreaker, is_dead_failure
from ragmetrics.judge.retry import Failure
from ragmetrics.metrics.claims.engine import extract_request
from ragmetrics.sample import Sample
from ragmetrics.testing import FakeLLMServer, FakeReply

FAST = {"backoff_initial_s": 0.0, "backoff_max_s": 0.0}
REFUSED = Failure(status="provider_error", transient=True, message="could not connect to http://h/v1")
BAD_KEY = Failure(
    status="provider_error", transient=False, http_status=401, message="request refused", hint="check KEY"
)
SERVER_500 = Failure(status="provider_error", transient=True, http_status=500, message="server error")
TIMEOUT = Failure(status="timeout", transient=True, message="no reply within 1 s")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_what_counts_as_dead() -> None:
    assert is_dead_failure(REFUSED) and is_dead_failure(BAD_KEY)
    assert not is_dead_failure(SERVER_500) and not is_dead_failure(TIMEOUT)
    forbidden = Failure(status="provider_error", transient=False, http_status=403, message="no")
    not_found = Failure(status="provider_error", transient=False, http_status=404, message="no such model")
    assert is_dead_failure(forbidden) and not is_dead_failure(not_found)


def test_trips_after_five_dead_failures_in_a_row_and_says_why() -> None:
    breaker = DeadJudgeBreaker(clock=Clock())
    for _ in range(4):
        breaker.on_failure(REFUSED)
        assert breaker.check() is None
    breaker.on_failure(REFUSED)
    refusal = breaker.check()
    assert refusal is not None and not refusal.transient and refusal.status == "provider_error"
    assert refusal.message.startswith("judge unreachable, so calls now fail at once: could not connect")
    assert "(5 failures in a row)" in refusal.message and breaker.trips == 1 and breaker.refused == 1


def test_a_live_answer_resets_the_streak_and_a_timeout_leaves_it() -> None:
    breaker = DeadJudgeBreaker(clock=Clock())
    for failure in (REFUSED, REFUSED, REFUSED, REFUSED, SERVER_500, REFUSED, TIMEOUT, REFUSED, REFUSED):
        breaker.on_failure(failure)
    assert not breaker.tripped  # the 500 showed the server alive: 4 in a row since, timeouts aside
    breaker.on_failure(BAD_KEY)
    assert not breaker.tripped
    breaker.on_failure(BAD_KEY)
    refusal = breaker.check()
    assert refusal is not None and "refused the credentials" in refusal.message
    assert refusal.http_status == 401 and refusal.hint == "check KEY"


def test_after_a_success_only_a_long_outage_trips_it() -> None:
    clock = Clock()
    breaker = DeadJudgeBreaker(clock=clock)
    breaker.on_success()
    for _ in range(50):
        breaker.on_failure(REFUSED)
        clock.now += 0.5
    assert not breaker.tripped, "a 25 s blip in a long run must not end it"
    clock.now += 5.0
    breaker.on_failure(REFUSED)
    assert breaker.tripped


def test_a_tripped_breaker_probes_after_the_wait_and_closes_on_success() -> None:
    clock = Clock()
    breaker = DeadJudgeBreaker(clock=clock)
    for _ in range(5):
        breaker.on_failure(REFUSED)
    clock.now += 29.0
    assert breaker.check() is not None
    clock.now += 1.0
    assert breaker.check() is None, "the probe goes through"
    assert breaker.check() is not None, "the others still fail at once while it is out"
    breaker.on_failure(REFUSED)  # the probe failed: wait again
    clock.now += 29.0
    assert breaker.check() is not None
    clock.now += 1.0
    assert breaker.check() is None
    breaker.on_success()
    assert not breaker.tripped and breaker.check() is None


def _request(i: int):  # type: ignore[no-untyped-def]
    return extract_request(Sample.from_fields(question=f"Where is city {i}?", answer=f"City {i} is in X."))


async def test_a_dead_server_gets_no_more_requests_once_tripped(
    fake_llm_server: FakeLLMServer, openai_spec: str
) -> None:
    fake_llm_server.on(lambda r: True, FakeReply(drop=True))
    judge = make_judge(openai_spec, max_attempts=3, **FAST)
    errors = []
    for i in range(6):
        with pytest.raises(JudgeError) as info:
            await judge.complete(_request(i))
        errors.append(info.value)
    assert len(fake_llm_server.requests) == 5, "3 + 2 attempts, then nothing is sent"
    assert "could not connect" in str(errors[0]) and errors[0].attempts == 3
    assert all("judge unreachable" in str(e) and e.status == "provider_error" for e in errors[1:])
    assert errors[-1].attempts == 0 and "failed after" not in str(errors[-1])
    await judge.aclose()


async def test_a_blip_after_success_is_retried_through(
    fake_llm_server: FakeLLMServer, openai_spec: str
) -> None:
    judge = make_judge(openai_spec, max_attempts=3, **FAST)
    await judge.complete(_request(0))
    fake_llm_server.enqueue(*[FakeReply(drop=True)] * 6)
    for i in (1, 2):
        with pytest.raises(JudgeError, match="could not connect"):
            await judge.complete(_request(i))
    reply = await judge.complete(_request(3))
    assert reply.value.claims and not judge.breaker.tripped
    assert len(fake_llm_server.requests) == 1 + 6 + 1
    await judge.aclose()


async def test_an_anthropic_judge_refusing_the_key_is_tripped_too(
    fake_llm_server: FakeLLMServer, dummy_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm_server.anthropic_base_url)
    fake_llm_server.on(lambda r: True, FakeReply(status=401, message="invalid x-api-key"))
    judge = make_judge("anthropic:claude-haiku-4-5", **FAST)
    messages = []
    for i in range(8):
        with pytest.raises(JudgeError) as info:
            await judge.complete(_request(i))
        messages.append(str(info.value))
    assert len(fake_llm_server.requests) == 5, "401 is not retried; after 5 in a row nothing is sent"
    assert "ANTHROPIC_API_KEY" in messages[0] and "refused the credentials" in messages[-1]
    assert "invalid x-api-key" in messages[-1] and "ANTHROPIC_API_KEY" in messages[-1]
    await judge.aclose()
