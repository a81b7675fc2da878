"""Queries made with ``aquery`` under ``asyncio.run`` and no ``await handler.flush()`` (issue 14).

The loop ends right after the queries, cancelling the scoring it was doing: nothing captured is lost,
the cut-off scoring is re-run on the background thread and ``close()`` returns every score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.llms import MockLLM

from ragmetrics import FaithfulnessMetric, RelevancyMetric
from ragmetrics.integrations.llamaindex import RagMetricsEventHandler
from tests.integrations.test_llamaindex import CAPITALS, SlowMockLLM, index_of

QUESTIONS = ["What is the capital of France?", "What is the capital of Germany?", "Capital of Italy?"]


@pytest.fixture
def handler() -> Iterator[RagMetricsEventHandler]:
    metrics = [FaithfulnessMetric(llm="offline", cache=False), RelevancyMetric(llm="offline", cache=False)]
    made = RagMetricsEventHandler(metrics=metrics).attach()
    yield made
    made.detach()
    made.close(timeout=10)


@pytest.mark.parametrize("llm", [MockLLM(), SlowMockLLM(delay=0.01)], ids=["instant", "slow"])
def test_aquery_under_asyncio_run_without_flush_loses_nothing(
    handler: RagMetricsEventHandler, llm: Any
) -> None:
    engine = index_of(CAPITALS).as_query_engine(llm=llm, similarity_top_k=2)

    async def app() -> None:
        await asyncio.gather(*(engine.aquery(q) for q in QUESTIONS))  # and return: no flush

    asyncio.run(app())
    results = handler.close(timeout=30)
    assert sorted(r.question for r in results) == sorted(QUESTIONS)
    assert [r.status for r in results] == ["ok"] * 3, [r.reason for r in results]
    assert all(r.scores["faithfulness"] is not None and r.scores["relevancy"] is not None for r in results)


def test_the_scores_equal_those_of_a_run_that_flushed(handler: RagMetricsEventHandler) -> None:
    engine = index_of(CAPITALS).as_query_engine(llm=MockLLM(), similarity_top_k=2)

    async def flushed() -> list[Any]:
        await asyncio.gather(*(engine.aquery(q) for q in QUESTIONS))
        return await handler.flush(timeout=30)

    want = {r.question: r.scores for r in asyncio.run(flushed())}

    async def unflushed() -> None:
        await asyncio.gather(*(engine.aquery(q) for q in QUESTIONS))

    asyncio.run(unflushed())
    got = {r.question: r.scores for r in handler.close(timeout=30)[3:]}
    assert got == want


def test_a_query_finished_as_the_loop_ends_is_scored_too(handler: RagMetricsEventHandler) -> None:
    engine = index_of(CAPITALS).as_query_engine(llm=MockLLM(), similarity_top_k=2)

    async def app() -> None:
        await engine.aquery(QUESTIONS[0])  # the drain task is created, and cancelled before it starts

    asyncio.run(app())
    [result] = handler.close(timeout=30)
    assert result.status == "ok" and result.scores["faithfulness"] is not None
