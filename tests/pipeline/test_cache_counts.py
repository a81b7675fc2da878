"""Cache hits are replies from the cache; requests shared within a run are counted apart (issue 14)."""

from __future__ import annotations

from pathlib import Path

from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.report import render_html
from ragmetrics.testing import FakeLLMServer
from tests.pipeline.test_runner import rows, spec, three

__all__ = ["spec"]  # a fixture, imported for pytest (server and srv come from tests/conftest.py)


async def test_a_first_run_over_an_empty_cache_has_no_hits_only_shared_calls(
    srv: FakeLLMServer, spec: str, tmp_path: Path
) -> None:
    first = await EvaluationPipeline(
        metrics=three(spec, tmp_path / "c"), progress=False, canaries=False
    ).evaluate(rows(6))
    cache, usage = first.stats.cache, first.stats.usage
    assert (cache.hits, cache.misses, cache.shared) == (0, 12, 18)  # 3 metrics x 6 samples share 12 calls
    assert usage.cached_calls == 0 and usage.shared_calls == 18 and usage.calls == 12
    assert cache.hit_rate == 0.0
    page = render_html(first.summary())
    assert "0 (0%)" in page and "18 shared within the run" in page

    again = await EvaluationPipeline(
        metrics=three(spec, tmp_path / "c"), progress=False, canaries=False
    ).evaluate(rows(6))
    cache, usage = again.stats.cache, again.stats.usage
    assert srv.calls.total() == 12  # nothing new was sent
    assert cache.hits == 12 and cache.misses == 0 and usage.cached_calls == 12 and usage.calls == 0
    assert cache.shared == 18 and usage.shared_calls == 18


async def test_the_same_judge_run_twice_counts_the_second_run_as_cache_hits(
    spec: str, tmp_path: Path
) -> None:
    metrics = three(spec, False)  # memory only: the memo of an earlier run answers
    pipeline = EvaluationPipeline(metrics=metrics, progress=False, canaries=False)
    first = (await pipeline.evaluate(rows(2))).stats.cache
    assert (first.hits, first.misses, first.shared) == (0, 4, 6)
    second = (await pipeline.evaluate(rows(2))).stats.cache
    assert (second.hits, second.misses, second.shared) == (4, 0, 6)
