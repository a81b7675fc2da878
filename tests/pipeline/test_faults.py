"""Faults injected by the fake server (429s, 500s, malformed JSON, hangs): every sample comes back.

Also the adaptive limit (halves on 429, climbs back) and the requests/tokens-per-minute caps.
"""

from __future__ import annotations

import asyncio
import gc
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmetrics import FaithfulnessMetric
from ragmetrics.errors import NoScoreError
from ragmetrics.judge.base import JudgeReply, JudgeRequest
from ragmetrics.judge.limits import AdaptiveLimiter, RateLimiter
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.score import JudgeInfo, Usage
from ragmetrics.testing import FakeLLMServer, FakeReply
from tests.pipeline.test_runner import answer, rows, three


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(answer=answer, seed=7) as srv:
        yield srv


@pytest.fixture
def srv(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    server.reset()
    yield server
    server.reset()


class LocalJudge:
    """The same deterministic judge in process (no network, no faults): the fault-free reference."""

    info = JudgeInfo(provider="openai", model="local-reference")

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        value = request.response_model.model_validate(
            answer(request.task, request.variables), context=dict(request.context)
        )
        return JudgeReply(value=value, usage=Usage(calls=1))

    async def aclose(self) -> None:
        return None


async def test_a_thousand_samples_survive_429s_500s_malformed_json_and_hangs(
    srv: FakeLLMServer, tmp_path: Path
) -> None:
    data = rows(1000)
    reference = await EvaluationPipeline(
        metrics=three(LocalJudge(), False), concurrency=64, canaries=False
    ).evaluate(data)  # type: ignore[arg-type]
    assert all(r.ok for r in reference)

    srv.faults(rate_429=0.20, rate_500=0.05, malformed=0.02, hang=0.01, retry_after=0, seed=11)
    spec = f"openai:fake-model@{srv.openai_base_url}"
    # A malformed reply is re-asked, and `reasks` malformed replies in a row are a permanent
    # judge_output_invalid, as they should be. At the default 2 re-asks that is 0.02**3 per call, about
    # one sample in 50 runs of this test's ~2,800 calls (the clean-clone CI of 933b340 met it on 3.13);
    # 4 re-asks make it 0.02**5 per call, one in ~100,000 runs.
    metrics = three(spec, tmp_path / "cache", timeout_s=0.25, max_attempts=12, max_concurrency=32, reasks=4)
    # Hundreds of attempts are cut at 0.25 s here, and under that the SDKs' pool (httpcore2) now and then
    # drops an idle connection from its list without closing it: the clean-clone CIs of 933b340 and
    # d7799f3 counted 12 and 11 such sockets here, left to the garbage collector (a ResourceWarning).
    # The judge's HTTP client now closes every connection a reply came on when it closes
    # (test_provider_faults.py::test_closing_a_judge_closes_a_connection_its_pool_lost_track_of), so
    # those are gone; the bound stays for a connection dropped before any reply came on it, which no
    # run here has shown. Garbage left by the tests before this one (in the same worker) is collected
    # first and not counted.
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        results = await EvaluationPipeline(metrics=metrics, concurrency=64, canaries=False).evaluate(data)
        elapsed = time.perf_counter() - started
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert len(unclosed) <= 8, f"{len(unclosed)} unclosed sockets or transports: {unclosed[:4]}"

    assert len(results) == 1000 and [r.index for r in results] == list(range(1000))
    failed = [(r.index, r.errors) for r in results if not r.ok]
    assert not failed
    assert [r.scores for r in results] == [r.scores for r in reference]
    sources = [req.reply for req in srv.requests if req.source == "fault"]
    assert sum(1 for f in sources if f is not None and f.status == 429) > 300
    stats = results.stats
    assert stats.retries >= sum(1 for f in sources if f is not None and (f.status >= 429 or f.hang))
    assert stats.throttled > 0
    assert stats.cache.misses == 2000
    summary = str(results.summary())
    assert f"retries {stats.retries}" in summary and "throttled" in summary
    assert elapsed < 900  # ~30 s on 2 idle cores, 6 min on a loaded one; the point is that it never hangs


async def test_a_judge_that_never_answers_gives_records_that_say_why(
    srv: FakeLLMServer, tmp_path: Path
) -> None:
    srv.faults(rate_429=1.0, retry_after=0)
    spec = f"openai:fake-model@{srv.openai_base_url}"
    results = await EvaluationPipeline(metrics=three(spec, tmp_path / "c", max_attempts=3)).evaluate(rows(4))
    for record in results:
        assert record.mean_score is None
        assert {e.status for e in record.errors} == {"rate_limited"}
        assert all("3 HTTP attempts" in e.message and "HTTP 429" in e.message for e in record.errors)
    assert results.summary()["faithfulness"].statuses == {"rate_limited": 4}
    srv.reset()
    srv.faults(malformed=1.0)
    results = await EvaluationPipeline(metrics=three(spec, tmp_path / "c2")).evaluate(rows(2))
    assert {e.status for r in results for e in r.errors} == {"judge_output_invalid"}


async def test_raise_on_error_stops_at_the_first_permanent_failure(
    srv: FakeLLMServer, tmp_path: Path
) -> None:
    srv.faults(rate_500=1.0)
    spec = f"openai:fake-model@{srv.openai_base_url}"
    with pytest.raises(NoScoreError, match="provider_error"):
        await EvaluationPipeline(
            metrics=three(spec, tmp_path / "c", max_attempts=2), raise_on_error=True
        ).evaluate(rows(50))
    assert srv.calls.total() < 50 * 2


async def test_the_concurrency_limit_halves_on_429_and_climbs_back(
    srv: FakeLLMServer, tmp_path: Path
) -> None:
    srv.on(lambda r: r.index < 6, FakeReply(status=429, retry_after=0))
    spec = f"openai:fake-model@{srv.openai_base_url}"
    metric = FaithfulnessMetric(llm=spec, cache=tmp_path / "c", backoff_initial_s=0, max_concurrency=16)
    limiter = metric.judge.inner.limiter
    limiter.cooldown_s = 0.0  # count every 429 of the scripted burst
    results = await EvaluationPipeline(metrics=[metric], concurrency=16).evaluate(rows(120))
    assert all(r.ok for r in results)
    assert limiter.throttled >= 1 and results.stats.throttled == limiter.throttled
    assert limiter.limit > 1  # recovered after the burst of 429s


def test_adaptive_limiter_arithmetic() -> None:
    lim = AdaptiveLimiter(maximum=8, recover_after=2, cooldown_s=0.0)
    lim.on_rate_limited()
    lim.on_rate_limited()
    assert lim.limit == 2 and lim.throttled == 2
    for _ in range(4):
        lim.on_success()
    assert lim.limit == 4


def test_a_burst_of_429s_halves_the_limit_once_per_cooldown() -> None:
    lim = AdaptiveLimiter(maximum=32, cooldown_s=60.0)
    for _ in range(32):  # every request in flight answered 429 at once
        lim.on_rate_limited()
    assert lim.limit == 16 and lim.throttled == 1


async def test_requests_per_minute_cap_spaces_requests_out() -> None:
    rate = RateLimiter(requests_per_minute=600)  # 10 per second, one second of burst
    started = time.perf_counter()
    await asyncio.gather(*(rate.acquire() for _ in range(15)))
    elapsed = time.perf_counter() - started
    assert 0.4 <= elapsed < 1.5  # 10 at once, then 5 more at 10/s


async def test_tokens_per_minute_cap_waits_for_the_tokens() -> None:
    rate = RateLimiter(tokens_per_minute=6000)  # 100 tokens per second
    await rate.acquire(100)
    rate.record(50)  # the completion: the bucket is now 50 in debt
    started = time.perf_counter()
    await rate.acquire(50)
    assert 0.8 <= time.perf_counter() - started < 1.5
    with pytest.raises(ValueError, match="requests_per_minute"):
        RateLimiter(requests_per_minute=0)


async def test_rate_caps_apply_to_a_provider_judge(srv: FakeLLMServer, tmp_path: Path) -> None:
    spec = f"openai:fake-model@{srv.openai_base_url}"
    metrics: list[Any] = three(spec, tmp_path / "c")
    judge = metrics[0].judge.inner
    judge.rate = RateLimiter(requests_per_minute=1200, burst_s=0.05)  # 20/s, one at a time
    started = time.perf_counter()
    results = await EvaluationPipeline(metrics=metrics, canaries=False).evaluate(rows(10))
    assert all(r.ok for r in results) and srv.calls.total() == 20
    assert time.perf_counter() - started >= 0.9  # 20 requests at 20 per second
    assert judge.rate.waited_s > 0
