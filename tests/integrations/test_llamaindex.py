"""The LlamaIndex adapters, against real llama_index.core parts: a ``VectorStoreIndex`` over a few
documents with the ``MockEmbedding`` and ``MockLLM`` that llama_index.core ships (passed explicitly, so
the global ``Settings`` are never touched), its query engine, the instrumentation dispatcher and
``BatchEvalRunner``. The judge is the offline judge or the fake server.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import Response
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.evaluation import BatchEvalRunner, EvaluationResult
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import MockLLM
from llama_index.core.schema import QueryBundle

from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
from ragmetrics.integrations import RunResult
from ragmetrics.integrations.llamaindex import RagMetricsEventHandler, as_llamaindex_evaluator
from ragmetrics.sample import Sample
from ragmetrics.testing import FakeLLMServer

CAPITALS = [
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Rome is the capital of Italy.",
]
TOPICS = [
    ["The Seine flows through Paris.", "The Loire is the longest river in France."],
    ["The Spree flows through Berlin.", "The Rhine flows through Germany."],
    ["The Tiber flows through Rome.", "The Po is the longest river in Italy."],
]


def index_of(texts: list[str]) -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [Document(text=t) for t in texts], embed_model=MockEmbedding(embed_dim=8)
    )


class SlowMockLLM(MockLLM):
    """llama_index's MockLLM (it answers with its prompt), waiting ``delay`` seconds in async calls so that
    concurrent queries really interleave."""

    delay: float = 0.0

    def __init__(self, delay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delay = delay

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        await asyncio.sleep(self.delay)
        return await super().acomplete(prompt, formatted=formatted, **kwargs)


class GatedMockLLM(MockLLM):
    """llama_index's MockLLM whose async calls wait for ``gates.release[slot]``, after saying they arrived.

    Lets a test hold several queries in flight together and choose the order they finish in, with
    events instead of sleeps.
    """

    gates: Any = None
    slot: int = 0

    def __init__(self, gates: Any, slot: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gates, self.slot = gates, slot

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        self.gates.arrive()
        await self.gates.release[self.slot].wait()
        return await super().acomplete(prompt, formatted=formatted, **kwargs)


class Gates:
    """``all_in`` is set once ``expected`` LLM calls are waiting; ``release[i]`` lets call ``i`` go on."""

    def __init__(self, expected: int) -> None:
        self.expected, self.arrived = expected, 0
        self.all_in = asyncio.Event()
        self.release = [asyncio.Event() for _ in range(expected)]

    def arrive(self) -> None:
        self.arrived += 1
        if self.arrived >= self.expected:
            self.all_in.set()


class NoRetrievalEngine(BaseQueryEngine):
    """A query engine that answers without retrieving (or raises, to play a broken app)."""

    def __init__(self, reply: str = "Paris.", error: Exception | None = None) -> None:
        super().__init__(callback_manager=None)
        self.reply, self.error = reply, error

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}

    def _query(self, query_bundle: QueryBundle) -> Response:
        if self.error is not None:
            raise self.error
        return Response(self.reply)

    async def _aquery(self, query_bundle: QueryBundle) -> Response:
        return self._query(query_bundle)


class DelegatingEngine(BaseQueryEngine):
    """The app's own engine that asks an inner query engine and reformats its answer (no source nodes)."""

    def __init__(self, inner: BaseQueryEngine) -> None:
        super().__init__(callback_manager=None)
        self.inner = inner

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}

    def _query(self, query_bundle: QueryBundle) -> Response:
        return Response(f"In short: {self.inner.query(query_bundle).response}")

    async def _aquery(self, query_bundle: QueryBundle) -> Response:
        return Response(f"In short: {(await self.inner.aquery(query_bundle)).response}")


@pytest.fixture
def handlers() -> Iterator[list[RagMetricsEventHandler]]:
    """Handlers built in a test are detached and closed after it."""
    made: list[RagMetricsEventHandler] = []
    yield made
    for handler in made:
        handler.detach()
        handler.close(timeout=10)


def make(handlers: list[RagMetricsEventHandler], metrics: list[Any], **kwargs: Any) -> RagMetricsEventHandler:
    handler = RagMetricsEventHandler(metrics=metrics, **kwargs)
    handlers.append(handler)
    return handler.attach()


def offline_metrics() -> list[Any]:
    return [FaithfulnessMetric(llm="offline", cache=False), RelevancyMetric(llm="offline", cache=False)]


def sources(response: Any) -> list[str]:
    return [n.get_content() for n in response.source_nodes]


async def expected_scores(metrics: list[Any], result: RunResult) -> dict[str, float | None]:
    """The metrics' own scores on the captured triple: what the handler must report."""
    sample = Sample(question=result.question, answer=result.answer or "", contexts=tuple(result.contexts))
    scores = {m.name: (await m.evaluate_sample(sample)).score for m in metrics}
    for m in metrics:
        await m.judge.aclose()
    return scores


# -- the event handler -------------------------------------------------------------------------------------


def test_query_is_captured_and_scored_with_one_shared_judge(
    handlers: list[RagMetricsEventHandler], fake_llm_server: FakeLLMServer, openai_spec: str, tmp_path: Path
) -> None:
    metrics = [
        FaithfulnessMetric(llm=openai_spec, cache=tmp_path / "c"),
        RelevancyMetric(llm=openai_spec, cache=tmp_path / "c"),
        GroundednessMetric(llm=openai_spec, cache=tmp_path / "c"),
    ]
    handler = make(handlers, metrics)
    engine = index_of(CAPITALS).as_query_engine(llm=MockLLM(), similarity_top_k=2)
    question = "What is the capital of France?"

    response = engine.query(question)

    [result] = handler.flush_sync(timeout=30)
    assert (result.question, result.contexts, result.answer) == (
        question,
        sources(response),
        response.response,
    )
    assert len(result.contexts) == 2 and question in (result.answer or "")  # MockLLM echoes its prompt
    assert result.source == "llamaindex" and result.status == "ok"
    assert result.run_id.startswith("RetrieverQueryEngine.query-")
    assert result.meta == {
        "query_engine": "RetrieverQueryEngine",
        "retrievals": 1,
        "contexts_from": "source_nodes",
    }
    assert fake_llm_server.calls == {"claims.extract": 1, "claims.verify": 1}
    assert result.scores == asyncio.run(expected_scores(metrics, result))


async def test_concurrent_aqueries_on_several_engines_do_not_mix(
    handlers: list[RagMetricsEventHandler],
) -> None:
    metrics = offline_metrics()
    handler = make(handlers, metrics)
    gates = Gates(len(TOPICS))
    engines = [
        index_of(texts).as_query_engine(llm=GatedMockLLM(gates, i), similarity_top_k=2)
        for i, texts in enumerate(TOPICS)
    ]
    questions = [
        "Which river flows through Paris?",
        "Which river flows through Berlin?",
        "Which river flows through Rome?",
    ]

    tasks = [asyncio.ensure_future(e.aquery(q)) for e, q in zip(engines, questions, strict=True)]
    await asyncio.wait_for(gates.all_in.wait(), timeout=30)  # the three are in flight together
    assert not any(t.done() for t in tasks)
    for i in reversed(range(len(tasks))):  # the first query started first and finishes last
        gates.release[i].set()
        await tasks[i]
    responses = [t.result() for t in tasks]

    results = await handler.flush(timeout=30)
    assert sorted(r.question for r in results) == sorted(questions)
    by_question = {r.question: r for r in results}
    for question, response, texts in zip(questions, responses, TOPICS, strict=True):
        result = by_question[question]
        assert sorted(result.contexts) == sorted(texts) and result.contexts == sources(response)
        assert result.answer == response.response and question in result.answer
        assert result.status == "ok" and result.scores == await expected_scores(metrics, result)


async def test_many_aqueries_on_one_engine(handlers: list[RagMetricsEventHandler]) -> None:
    handler = make(handlers, offline_metrics())
    engine = index_of(CAPITALS).as_query_engine(llm=SlowMockLLM(delay=0.01), similarity_top_k=1)
    questions = [f"Question number {i}?" for i in range(8)]
    responses = await asyncio.gather(*(engine.aquery(q) for q in questions))
    results = await handler.flush(timeout=30)
    assert sorted((r.question, r.answer) for r in results) == sorted(
        zip(questions, (r.response for r in responses), strict=True)
    )
    assert len({r.run_id for r in results}) == 8


def test_added_with_add_event_handler_and_detached(handlers: list[RagMetricsEventHandler]) -> None:
    handler = RagMetricsEventHandler(metrics=offline_metrics())
    handlers.append(handler)
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(handler)  # the plain LlamaIndex way; span tracking starts on the first query
    engine = index_of(CAPITALS).as_query_engine(llm=MockLLM(), similarity_top_k=2)

    response = engine.query("What is the capital of Italy?")
    [result] = handler.flush_sync(timeout=30)
    assert result.status == "ok" and result.contexts == sources(response)

    handler.detach()
    assert all(h is not handler for h in dispatcher.event_handlers)
    assert all(type(h).__name__ != "_SpanTracker" for h in dispatcher.span_handlers)
    engine.query("And of Germany?")
    assert handler.flush_sync(timeout=30) == [result]


async def test_a_nested_query_belongs_to_the_outer_one(handlers: list[RagMetricsEventHandler]) -> None:
    handler = make(handlers, offline_metrics())
    inner = index_of(CAPITALS).as_query_engine(llm=MockLLM(max_tokens=4), similarity_top_k=2)
    question = "What is the capital of Germany?"

    response = await DelegatingEngine(inner).aquery(question)

    [result] = await handler.flush(timeout=30)
    assert (
        result.question == question and result.answer == response.response == "In short: text text text text"
    )
    assert sorted(result.contexts) == sorted(n.get_content() for n in inner.retrieve(QueryBundle(question)))
    assert result.run_id.startswith("DelegatingEngine.aquery-")
    assert result.meta["contexts_from"] == "retrieval_events" and result.status == "ok"


async def test_a_query_without_retrieval_is_skipped_with_a_reason(
    handlers: list[RagMetricsEventHandler],
) -> None:
    handler = make(handlers, offline_metrics())
    response = await NoRetrievalEngine(reply="Paris.").aquery("Capital of France?")
    [result] = await handler.flush(timeout=30)
    assert response.response == "Paris." and result.status == "skipped"
    assert "retrieved nothing" in (result.reason or "") and result.scores == {}
    assert (result.question, result.answer) == ("Capital of France?", "Paris.")


def test_a_query_that_raises_is_skipped_and_the_error_reaches_the_app(
    handlers: list[RagMetricsEventHandler],
) -> None:
    handler = make(handlers, offline_metrics())
    with pytest.raises(ValueError, match="index offline"):
        NoRetrievalEngine(error=ValueError("index offline")).query("Capital of France?")
    [result] = handler.flush_sync(timeout=30)
    assert result.status == "skipped" and "index offline" in (result.reason or "")


def test_a_streamed_response_is_skipped_with_a_reason(handlers: list[RagMetricsEventHandler]) -> None:
    handler = make(handlers, offline_metrics())
    engine = index_of(CAPITALS).as_query_engine(llm=MockLLM(max_tokens=3), similarity_top_k=2, streaming=True)
    streamed = engine.query("What is the capital of France?")
    assert "".join(streamed.response_gen).split() == ["text", "text", "text"]
    [result] = handler.flush_sync(timeout=30)
    assert result.status == "skipped" and "streamed" in (result.reason or "") and len(result.contexts) == 2


def test_jsonl_sink(handlers: list[RagMetricsEventHandler], tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    handler = make(handlers, offline_metrics(), sink=path)
    index_of(CAPITALS).as_query_engine(llm=MockLLM(), similarity_top_k=2).query(
        "What is the capital of Italy?"
    )
    results = handler.flush_sync(timeout=30)
    assert [RunResult.model_validate_json(line) for line in path.read_text().splitlines()] == results


# -- metrics as LlamaIndex evaluators ----------------------------------------------------------------------


async def test_evaluator_fills_llamaindex_results_from_ragmetrics_results() -> None:
    metric = FaithfulnessMetric(llm="offline", cache=False)
    evaluator = as_llamaindex_evaluator(metric, threshold=0.5)
    contexts = ["Python is an interpreted language created by Guido van Rossum in 1991."]
    answer = "Python is a compiled language created in 1991."

    got = await evaluator.aevaluate(query="What is Python?", response=answer, contexts=contexts)

    expected = await metric.evaluate(question="What is Python?", answer=answer, contexts=contexts)
    assert isinstance(got, EvaluationResult)
    assert (got.score, got.passing, got.feedback) == (
        expected.score,
        expected.score >= 0.5,
        expected.reasoning,
    )
    assert (got.query, got.response, got.contexts, got.invalid_result) == (
        "What is Python?",
        answer,
        contexts,
        False,
    )
    assert evaluator.last_result is not None and evaluator.last_result.score == expected.score
    assert (
        as_llamaindex_evaluator(metric)
        .evaluate(  # sync twin; no threshold: passing is None
            query="What is Python?", response=answer, contexts=contexts
        )
        .passing
        is None
    )


def test_evaluate_response_reads_the_engine_response(openai_spec: str, tmp_path: Path) -> None:
    metric = GroundednessMetric(llm=openai_spec, cache=tmp_path / "c", threshold=0.0)
    engine = index_of(CAPITALS).as_query_engine(llm=MockLLM(), similarity_top_k=2)
    response = engine.query("What is the capital of France?")

    got = as_llamaindex_evaluator(metric).evaluate_response(
        query="What is the capital of France?", response=response
    )

    assert got.contexts == sources(response) and got.response == response.response and got.passing is True
    assert (
        got.score
        == metric.evaluate_sync(
            question="What is the capital of France?", answer=response.response, contexts=sources(response)
        ).score
    )


async def test_a_failing_judge_gives_an_invalid_result(
    fake_llm_server: FakeLLMServer, openai_spec: str, tmp_path: Path
) -> None:
    fake_llm_server.faults(rate_500=1.0)
    metric = FaithfulnessMetric(llm=openai_spec, cache=tmp_path / "c", max_attempts=1, backoff_initial_s=0)
    evaluator = as_llamaindex_evaluator(metric)
    got = await evaluator.aevaluate(
        query="q?", response="Paris is in France.", contexts=["Paris is in France."]
    )
    assert got.invalid_result is True and got.score is None and got.passing is None
    assert (got.invalid_reason or "").startswith("provider_error:") and "HTTP 500" in got.invalid_reason
    await evaluator.aclose()


# BatchEvalRunner.__init__ calls llama_index's own deprecated asyncio_module(); the warning is the
# framework's internal one, not caused by this code, so it is ignored here (filterwarnings=error).
@pytest.mark.filterwarnings("ignore:asyncio_module\\(\\) is deprecated:DeprecationWarning")
async def test_evaluators_work_in_batch_eval_runner(openai_spec: str, tmp_path: Path) -> None:
    faithfulness = FaithfulnessMetric(llm=openai_spec, cache=tmp_path / "c", threshold=0.3)
    relevancy = RelevancyMetric(llm=openai_spec, cache=tmp_path / "c")
    engine = index_of(CAPITALS).as_query_engine(llm=MockLLM(), similarity_top_k=2)
    questions = ["What is the capital of France?", "What is the capital of Italy?"]
    responses = [await engine.aquery(q) for q in questions]
    runner = BatchEvalRunner(
        {
            "faithfulness": as_llamaindex_evaluator(faithfulness),
            "relevancy": as_llamaindex_evaluator(relevancy),
        },
        workers=2,
    )

    out = await runner.aevaluate_responses(queries=questions, responses=responses)

    assert set(out) == {"faithfulness", "relevancy"} and all(len(v) == 2 for v in out.values())
    for question, response, got in zip(questions, responses, out["faithfulness"], strict=True):
        expected = await faithfulness.evaluate(
            question=question, answer=response.response, contexts=sources(response)
        )
        assert (got.query, got.score, got.passing) == (question, expected.score, expected.passed)
    assert all(r.score is not None and not r.invalid_result for r in out["relevancy"])
    await faithfulness.judge.aclose()
    await relevancy.judge.aclose()


# -- the optional dependency -----------------------------------------------------------------------------


def test_without_llamaindex_importing_works_and_building_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['llama_index'] = None  # as if llama-index-core were not installed\n"
        "import ragmetrics, ragmetrics.integrations\n"
        "from ragmetrics.integrations.llamaindex import RagMetricsEventHandler, as_llamaindex_evaluator\n"
        "from ragmetrics.errors import MissingDependencyError\n"
        "metric = ragmetrics.FaithfulnessMetric(llm='offline')\n"
        "builders = (lambda: RagMetricsEventHandler(metrics=[metric]),\n"
        "            lambda: as_llamaindex_evaluator(metric))\n"
        "for build in builders:\n"
        "    try:\n"
        "        build()\n"
        "    except MissingDependencyError as exc:\n"
        "        print(exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all("pip install 'ragmetrics[llamaindex]'" in line for line in lines)
    assert lines[0].startswith("RagMetricsEventHandler needs the 'llama-index-core' package")
    assert lines[1].startswith("as_llamaindex_evaluator needs the 'llama-index-core' package")
