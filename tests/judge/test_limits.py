"""The limiter's seams for a limit shared beyond one process, and the cluster bucket's rules."""

from __future__ import annotations

import asyncio
import time

import pytest

from ragmetrics.integrations._ray_bucket import RateBucket
from ragmetrics.judge.limits import AdaptiveLimiter, RateGate, RateLimiter


def test_a_rate_limit_is_passed_on_but_a_cut_for_another_worker_is_not():
    told: list[int] = []
    limiter = AdaptiveLimiter(maximum=16, cooldown_s=0.0, on_throttle=lambda _: told.append(limiter.limit))
    limiter.on_rate_limited()
    assert limiter.limit == 8 and told == [8], "the judge's own 429: cut, then the shared limit is told"
    limiter.cut()
    assert limiter.limit == 4 and told == [8], "a cut made for another worker's 429 is not sent back"


def test_a_cut_within_the_cooldown_is_the_same_signal():
    limiter = AdaptiveLimiter(maximum=16, cooldown_s=60.0)
    limiter.on_rate_limited()
    limiter.cut()
    assert limiter.limit == 8 and limiter.throttled == 1


def test_the_local_rate_limiter_is_a_rate_gate():
    gate: RateGate = RateLimiter(requests_per_minute=60)
    assert callable(gate.acquire) and callable(gate.record)


async def test_the_bucket_halves_its_caps_once_per_signal_and_recovers():
    bucket = RateBucket(requests_per_minute=600, burst_s=0.1, cooldown_s=1.0, recover_s=10.0)
    assert await bucket.acquire() == 0
    assert bucket.throttle() == 1
    assert bucket.throttle() == 1, "a burst of 429s within the cooldown is one cut"
    stats = bucket.stats()
    assert stats["throttles"] == 2 and stats["cuts"] == 1
    assert 0.5 <= stats["share"] < 0.52, "halved, climbing back by a tenth a second"
    started = time.monotonic()
    for _ in range(4):
        assert await bucket.acquire() == 1, "each grant tells the worker how many cuts there were"
    # 600 a minute halved is 5 a second, and the one request the bucket held is spent: 4 take 0.8 s
    assert time.monotonic() - started >= 0.6


async def test_the_bucket_without_caps_grants_at_once():
    bucket = RateBucket()
    started = time.monotonic()
    await asyncio.gather(*(bucket.acquire(100) for _ in range(50)))
    assert time.monotonic() - started < 0.5
    assert bucket.stats()["requests"] == 50 and bucket.stats()["waited_s"] == 0.0


@pytest.mark.parametrize("tokens", [0, 2_000])
async def test_the_bucket_spends_tokens_per_minute_too(tokens):
    bucket = RateBucket(tokens_per_minute=60_000, burst_s=0.1)  # 1,000 tokens a second
    started = time.monotonic()
    await bucket.acquire(100)
    bucket.record(tokens)  # the reply's completion, beyond the estimate
    await bucket.acquire(100)
    waited = time.monotonic() - started
    assert (waited >= 1.8) if tokens else (waited < 1.0), "the debt of a long reply delays the next request"


def test_the_servers_retry_after_is_passed_on_with_the_rate_limit():
    told: list[float | None] = []
    limiter = AdaptiveLimiter(maximum=4, cooldown_s=0.0, on_throttle=told.append)
    limiter.on_rate_limited(2.5)
    limiter.on_rate_limited()
    assert told == [2.5, None]


@pytest.mark.parametrize("caps", [{}, {"requests_per_minute": 60_000}])
async def test_a_retry_after_holds_every_grant_of_the_bucket_until_then(caps):
    bucket = RateBucket(**caps, burst_s=0.1)
    await bucket.acquire()
    for ignored in (float("nan"), float("inf"), -5.0, 0.0, None):
        bucket.throttle(ignored)
    await bucket.acquire()
    assert bucket.log()["holds"] == [] and bucket.stats()["held_s"] == 0.0, "a bad Retry-After holds nothing"
    bucket.throttle(0.4)
    await asyncio.gather(*(bucket.acquire() for _ in range(3)))
    log = bucket.log()
    (set_at, until), grants = log["holds"][0], log["grants"]
    assert until - set_at == pytest.approx(0.4) and len(grants) == 5
    assert all(g < set_at for g in grants[:2]) and all(g >= until for g in grants[2:])


async def test_a_retry_after_that_comes_while_the_rate_makes_a_request_wait_still_holds_it():
    bucket = RateBucket(requests_per_minute=600, burst_s=0.1)  # one request per 0.1 s
    await bucket.acquire()
    waiting = asyncio.ensure_future(bucket.acquire())  # waits for the rate's next token
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done()
    bucket.throttle(0.5)  # longer than the rate's wait
    await waiting
    (set_at, until), grants = bucket.log()["holds"][0], bucket.log()["grants"]
    assert grants[-1] > set_at and grants[-1] >= until, "granted inside the hold"


async def test_a_huge_retry_after_holds_at_most_a_minute():
    bucket = RateBucket()
    bucket.throttle(1e12)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(bucket.acquire(), timeout=0.1)
    assert 59.0 < bucket._hold_until - time.monotonic() <= 60.0


def test_the_bucket_counts_the_starts_of_each_batch():
    bucket = RateBucket()
    assert [bucket.attempt("0+4") for _ in range(3)] == [1, 2, 3]
    assert bucket.attempt("4+4") == 1
    bucket.done("0+4")
    assert bucket.attempt("0+4") == 1, "a finished batch starts afresh"
