"""A judge nobody listens for is reported within seconds, for one call as for a whole run.

Before: one ``metric.evaluate_sync`` against a closed port took 17-22 s (five refused connects with
growing backoff, the breaker tripping on the fifth, then a sixth backoff of about 8 s before the
tripped breaker refused the last attempt). Now a tripped breaker ends the call's retries at once, and
while every attempt at a judge that never answered was refused, the waits between attempts are at
most ``REFUSED_WAIT_S``. Real openai SDK, real sockets: a port bound and closed again refuses.
"""

from __future__ import annotations

import socket
import time

import pytest

import ragmetrics
from ragmetrics.judge.retry import REFUSED_WAIT_S

ROW = {"question": "q?", "answer": "Python is a language.", "contexts": ["Python is a language."]}


@pytest.fixture
def closed_url(dummy_keys: None) -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"openai:gpt-4o-mini@http://127.0.0.1:{port}/v1"


def _one_call(spec: str) -> tuple[float, ragmetrics.MetricResult]:
    started = time.perf_counter()
    result = ragmetrics.FaithfulnessMetric(llm=spec, cache=False).evaluate_sync(
        question=ROW["question"], answer=ROW["answer"], contexts=ROW["contexts"]
    )
    return time.perf_counter() - started, result


def test_one_call_to_a_closed_port_fails_fast(closed_url: str) -> None:
    _one_call(closed_url)  # the SDK's imports and first-call setup, not what is measured
    seconds, result = _one_call(closed_url)
    assert result.status == "provider_error" and result.score is None
    assert "judge unreachable" in (result.message or "")
    assert result.usage.calls == 5  # the breaker's five refused attempts, and no sixth
    assert seconds < 10.0, seconds  # 5 attempts, 4 waits of at most REFUSED_WAIT_S; before: 17-22 s
    assert REFUSED_WAIT_S <= 0.25


def test_a_run_against_a_closed_port_fails_fast(closed_url: str) -> None:
    _one_call(closed_url)
    started = time.perf_counter()
    results = ragmetrics.evaluate_sync(
        [dict(ROW, id=str(i)) for i in range(8)],
        metrics=["faithfulness", "relevancy"],
        llm=closed_url,
        cache=False,
        progress=False,
    )
    seconds = time.perf_counter() - started
    assert all(r.scores["faithfulness"] is None for r in results)
    assert all(e.status == "provider_error" for r in results for e in r.errors)
    assert sum(r.usage.calls for r in results) <= 16  # a tripped breaker sends nothing more
    assert seconds < 15.0, seconds
