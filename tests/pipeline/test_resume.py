"""Cache and resume: a finished run re-runs free, a SIGKILLed run resumes with only the missing calls,
and processes sharing one cache directory are safe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmetrics import FaithfulnessMetric, RelevancyMetric
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.testing import FakeLLMServer
from tests.pipeline.test_faults import LocalJudge
from tests.pipeline.test_runner import answer, rows, three

KEY = "sk-test-resume-secret-0123456789"

SCRIPT = textwrap.dedent("""
    import json, sys
    from ragmetrics import FaithfulnessMetric, RelevancyMetric
    from ragmetrics.pipeline import EvaluationPipeline

    spec, cache, data, out = sys.argv[1:5]
    opts = dict(cache=cache, backoff_initial_s=0, max_concurrency=4)
    metrics = [FaithfulnessMetric(llm=spec, **opts), RelevancyMetric(llm=spec, **opts)]
    results = EvaluationPipeline(metrics=metrics, concurrency=4, canaries=False).run(data)
    with open(out, "w") as fh:
        json.dump([r.scores for r in results], fh)
""")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(answer=answer) as srv:
        yield srv


@pytest.fixture
def srv(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.reset()
    yield server
    server.reset()


def two(spec: str, cache: Path) -> list[object]:
    opts = dict(cache=cache, backoff_initial_s=0, max_concurrency=4)
    return [FaithfulnessMetric(llm=spec, **opts), RelevancyMetric(llm=spec, **opts)]


def write_rows(path: Path, n: int) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows(n)) + "\n", encoding="utf-8")
    return path


def launch(
    tmp_path: Path, spec: str, cache: Path, data: Path, name: str
) -> tuple[subprocess.Popen[bytes], Path]:
    script = tmp_path / "run_pipeline.py"
    script.write_text(SCRIPT, encoding="utf-8")
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    proc = subprocess.Popen(
        [sys.executable, str(script), spec, str(cache), str(data), str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return proc, out


def cache_entries(cache: Path) -> int:
    from ragmetrics.judge.rows import JsonRows

    rows = JsonRows(cache, what="judge cache", hint="")
    try:
        return rows.count()
    finally:
        rows.close()


async def reference(n: int) -> list[dict[str, float | None]]:
    judge = LocalJudge()
    metrics = [FaithfulnessMetric(llm=judge, cache=False), RelevancyMetric(llm=judge, cache=False)]
    return [r.scores for r in await EvaluationPipeline(metrics=metrics).evaluate(rows(n))]


async def test_a_finished_dataset_reruns_with_zero_calls(srv: FakeLLMServer, tmp_path: Path) -> None:
    spec = f"openai:fake-model@{srv.openai_base_url}"
    first = await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), canaries=False).evaluate(rows(30))
    assert srv.calls.total() == 60
    srv.reset()
    again = await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), canaries=False).evaluate(rows(30))
    assert srv.calls.total() == 0
    assert [r.scores for r in again] == [r.scores for r in first]
    # per sample, the extraction and the verification come from the cache; the other metrics' three
    # identical requests are shared within the run (not cache hits)
    cache = again.stats.cache
    assert (cache.hits, cache.shared, cache.misses) == (30 * 2, 30 * 3, 0)
    assert again.stats.usage.calls == 0 and again.stats.usage.cost_usd == 0
    assert all(r.usage.cached_calls > 0 for r in again)
    # the API key is never part of a key or a value
    for path in (tmp_path / "c").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes()


async def test_changing_model_or_parameters_misses_the_cache(srv: FakeLLMServer, tmp_path: Path) -> None:
    spec = f"openai:fake-model@{srv.openai_base_url}"
    await EvaluationPipeline(metrics=three(spec, tmp_path / "c"), canaries=False).evaluate(rows(3))
    assert srv.calls.total() == 6
    other = f"openai:other-model@{srv.openai_base_url}"
    await EvaluationPipeline(metrics=three(other, tmp_path / "c"), canaries=False).evaluate(rows(3))
    assert srv.calls.total() == 12
    await EvaluationPipeline(metrics=three(spec, tmp_path / "c", temperature=0.7), canaries=False).evaluate(
        rows(3)
    )
    assert srv.calls.total() == 18
    await EvaluationPipeline(
        metrics=three(spec, tmp_path / "c", timeout_s=9, max_attempts=2), canaries=False
    ).evaluate(rows(3))
    assert srv.calls.total() == 18  # retries and timeouts are not part of the key


async def test_a_run_killed_half_way_resumes_with_only_the_missing_calls(
    srv: FakeLLMServer, tmp_path: Path
) -> None:
    n = 60
    spec = f"openai:fake-model@{srv.openai_base_url}"
    cache = tmp_path / "cache"
    data = write_rows(tmp_path / "data.jsonl", n)
    srv.latency = 0.05
    proc, out = launch(tmp_path, spec, cache, data, "killed")
    deadline = time.monotonic() + 60
    while srv.calls.total() < n and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL and not out.exists()
    # a request the killed process had already sent may still be read by the server's thread: let it
    # settle, so that it is not counted after the reset below as a call of the resumed run
    made_before, settle = -1, time.monotonic() + 10
    while srv.calls.total() != made_before and time.monotonic() < settle:
        made_before = srv.calls.total()
        time.sleep(0.3)
    saved = cache_entries(cache)
    assert 0 < saved < 2 * n
    assert made_before - saved <= 4 + 1  # at most the requests in flight were lost

    srv.reset()
    results = await EvaluationPipeline(metrics=two(spec, cache), concurrency=4, canaries=False).evaluate(data)
    assert srv.calls.total() == 2 * n - saved  # only the missing calls
    assert [r.scores for r in results] == await reference(n)
    srv.reset()
    await EvaluationPipeline(metrics=two(spec, cache), canaries=False).evaluate(data)
    assert srv.calls.total() == 0


async def test_two_processes_share_one_cache_directory_safely(srv: FakeLLMServer, tmp_path: Path) -> None:
    n = 40
    spec = f"openai:fake-model@{srv.openai_base_url}"
    cache = tmp_path / "shared-cache"
    data = write_rows(tmp_path / "data.jsonl", n)
    srv.latency = 0.01
    runs = [launch(tmp_path, spec, cache, data, f"p{i}") for i in range(2)]
    for proc, _ in runs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()[-2000:]
    expected = await reference(n)
    for _, out in runs:
        assert json.loads(out.read_text()) == expected
    assert 2 * n <= srv.calls.total() <= 4 * n
    assert cache_entries(cache) == 2 * n
    srv.reset()
    results = await EvaluationPipeline(metrics=two(spec, cache), canaries=False).evaluate(data)
    assert srv.calls.total() == 0 and [r.scores for r in results] == expected
