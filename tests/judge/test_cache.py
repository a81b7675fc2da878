"""The judge cache: keys hold what changes the output and never an API key; re-runs cost nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
from ragmetrics.judge import CachingJudge, make_judge
from ragmetrics.judge.cache import cache_key
from ragmetrics.metrics.claims.engine import extract_request
from ragmetrics.prompting import Prompt
from ragmetrics.sample import Sample
from ragmetrics.score import JudgeInfo
from ragmetrics.testing import FakeReply
from tests.metrics import seed_answers as seed


class _InfoOnly:
    def __init__(self, info: JudgeInfo) -> None:
        self.info = info


BASE = JudgeInfo(
    provider="openai", model="gpt-4o-mini", base_url=None, temperature=0.0, seed=0, max_tokens=2048
)


def _key(info: JudgeInfo = BASE, **request_changes) -> str:
    request = extract_request(Sample.from_fields(question="q", answer="a"))
    return cache_key(_InfoOnly(info), dataclasses.replace(request, **request_changes))


def test_every_output_affecting_field_changes_the_key():
    base = _key()
    assert _key() == base, "keys are stable"
    for change in (
        dict(model="gpt-4o"),
        dict(provider="anthropic"),
        dict(base_url="http://localhost:1/v1"),
        dict(temperature=0.5),
        dict(seed=1),
        dict(max_tokens=100),
    ):
        assert _key(BASE.model_copy(update=change)) != base, change
    request = extract_request(Sample.from_fields(question="q", answer="a"))
    edited = Prompt(id=request.prompts[1].id, text=request.prompts[1].text + " ", sha256="0" * 64)
    assert _key(prompts=(request.prompts[0], edited)) != base, "editing a prompt misses the cache"
    assert _key(version="2") != base, "a new metric logic version misses the cache"
    assert _key(repeat=1) != base
    assert _key(task="other") != base


@given(st.text(max_size=50), st.text(max_size=50))
@settings(max_examples=50, deadline=None)
def test_input_text_changes_the_key(a, b):
    ka = cache_key(_InfoOnly(BASE), extract_request(Sample.from_fields(question="q", answer=a)))
    kb = cache_key(_InfoOnly(BASE), extract_request(Sample.from_fields(question="q", answer=b)))
    assert (ka == kb) == (a == b)


async def test_rerun_makes_zero_calls_and_the_key_is_never_stored(
    fake_llm_server, openai_spec, tmp_path: Path
):
    cache_dir = tmp_path / "cache"
    args = dict(question=seed.PYTHON_Q, answer=seed.PYTHON_A, contexts=seed.PYTHON_CTX)

    async def run() -> float:
        metric = FaithfulnessMetric(llm=openai_spec, cache=cache_dir)
        try:
            return await metric.score(**args)
        finally:
            await metric.judge.aclose()

    first = await run()
    calls = fake_llm_server.calls.total()
    assert calls == 2
    second = await run()
    assert second == first and fake_llm_server.calls.total() == calls, "a re-run makes no call"
    secret = "sk-test-dummy-key-never-sent-anywhere-real"
    for path in cache_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"API key found in {path}"
    # another model misses the cache
    metric = FaithfulnessMetric(llm=openai_spec.replace("gpt-4o-mini", "gpt-4o"), cache=cache_dir)
    await metric.score(**args)
    await metric.judge.aclose()
    assert fake_llm_server.calls.total() == calls + 2


async def test_three_metrics_sharing_a_judge_cost_two_calls(fake_llm_server, openai_spec):
    metrics = [
        FaithfulnessMetric(llm=openai_spec, cache=False),
        RelevancyMetric(llm=openai_spec, cache=False),
        GroundednessMetric(llm=openai_spec, cache=False),
    ]
    shared = metrics[0].judge
    for m in metrics[1:]:
        m.use_judge(shared)
    fake_llm_server.latency = 0.05  # so the three requests really overlap
    results = await asyncio.gather(
        *(m.evaluate(question=seed.PYTHON_Q, answer=seed.PYTHON_A, contexts=seed.PYTHON_CTX) for m in metrics)
    )
    assert fake_llm_server.calls.total() == 2
    assert shared.stats.misses == 2 and shared.stats.shared + shared.stats.hits == 3
    assert sum(r.usage.calls for r in results) == 2, "each call is billed once"
    await shared.aclose()


async def test_identical_concurrent_requests_are_made_once(fake_llm_server, openai_spec):
    judge = CachingJudge(make_judge(openai_spec))
    fake_llm_server.latency = 0.1
    request = extract_request(Sample.from_fields(question="q", answer="Paris is in France."))
    replies = await asyncio.gather(*(judge.complete(request) for _ in range(10)))
    assert fake_llm_server.calls.total() == 1
    assert sum(not r.cached for r in replies) == 1
    await judge.aclose()


async def test_a_failure_is_not_cached(fake_llm_server, openai_spec, tmp_path):
    fake_llm_server.enqueue(FakeReply(status=400, message="bad request"))
    metric = RelevancyMetric(llm=openai_spec, cache=tmp_path / "c")
    failed = await metric.evaluate(question=seed.PARIS_Q, answer=seed.PARIS_A)
    assert failed.status == "provider_error"
    fake_llm_server.on("claims.extract", FakeReply(json=seed.PARIS_EXTRACT))
    assert await metric.score(question=seed.PARIS_Q, answer=seed.PARIS_A) == 1.0
    await metric.judge.aclose()


def test_offline_judge_is_not_written_to_disk(tmp_path):
    judge = CachingJudge(make_judge("offline"), tmp_path / "c")
    assert judge.directory is None


async def test_a_price_file_named_in_the_environment_overrides_the_bundled_table(
    fake_llm_server, openai_spec, tmp_path, monkeypatch
):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai": {"gpt-4o-mini": [1000.0, 0.0]}}))
    monkeypatch.setenv("RAGMETRICS_PRICES", str(prices))
    metric = RelevancyMetric(llm=openai_spec, cache=False)
    result = await metric.evaluate(question=seed.PARIS_Q, answer=seed.PARIS_A)
    assert result.usage.cost_usd == result.usage.prompt_tokens * 1000.0 / 1_000_000
    await metric.judge.aclose()
    monkeypatch.setenv("RAGMETRICS_PRICES", str(tmp_path / "missing.json"))
    from ragmetrics import ConfigError

    with pytest.raises(ConfigError, match="price file"):
        make_judge(openai_spec)


def test_disk_store_and_memo(tmp_path):
    from ragmetrics.errors import CacheError
    from ragmetrics.judge.store import DiskStore, LruMemo

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    store: DiskStore[int] = DiskStore(blocked / "cache", what="judge cache", hint="pass cache=False")
    with pytest.raises(CacheError, match=r"cannot open the judge cache at .*not-a-folder.*pass cache=False"):
        store.get("k")
    ok: DiskStore[int] = DiskStore(tmp_path / "ok", what="judge cache", hint="-")
    ok.set_many({"a": 1, "b": 2})
    ok.close()
    assert ok.get("a") == 1 and ok.get("missing") is None  # reopened after close
    ok.close()
    ok.close()  # safe twice
    assert DiskStore[int](None, what="x", hint="-").get("a") is None

    memo: LruMemo[int] = LruMemo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a", touch=True) == 1
    memo.put("c", 3)  # "b" is now the least recently used
    assert memo.get("b") is None and memo.get("a") == 1 and memo.get("c") == 3


async def test_a_provider_judge_over_an_unusable_cache_folder_says_where_and_what_to_do(
    fake_llm_server, openai_spec, tmp_path
):
    from ragmetrics.errors import CacheError

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    judge = CachingJudge(make_judge(openai_spec), blocked / "cache")
    with pytest.raises(CacheError, match=r"judge cache at .*not-a-folder.*--no-cache"):
        await judge.complete(extract_request(Sample.from_fields(question=seed.PARIS_Q, answer=seed.PARIS_A)))
    await judge.aclose()


OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from ragmetrics.judge.rows import JsonRows
base, start, me = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
failed = []
for trial in range(40):
    while time.time() < start + trial * 0.015:
        time.sleep(0.001)
    rows = JsonRows(base / str(trial), what="judge cache", hint="")
    try:
        rows.get("k")
        rows.set_many({me: trial})
    except Exception as exc:
        failed.append(f"{trial}: {exc}")
    finally:
        rows.close()
print(failed)
"""


def test_processes_opening_one_new_store_at_once_all_get_it(tmp_path):
    """Switching a new file to WAL while another process opens it was "database is locked" at once,
    without the busy timeout (27 of 300 such opens failed); the switch waits now."""
    import subprocess
    import sys
    import time

    start = str(time.time() + 1.0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AT_ONCE, str(tmp_path), start, f"p{i}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert outs == ["[]"] * 3
    from ragmetrics.judge.rows import JsonRows

    for trial in range(40):
        rows = JsonRows(tmp_path / str(trial), what="judge cache", hint="")
        assert rows.count() == 3 and rows.get("p0") == trial
        rows.close()
