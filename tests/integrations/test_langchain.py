"""The LangChain callback handler, against real langchain_core runnables: an LCEL RAG chain over an
in-memory vector store with deterministic fake embeddings, a chat prompt, the fake chat models that
langchain_core ships and a string output parser. The judge is the offline judge or the fake server.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
    ParrotFakeChatModel,
)
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable, RunnableLambda, RunnableParallel, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
from ragmetrics.integrations import RunResult
from ragmetrics.integrations.langchain import RagMetricsCallbackHandler
from ragmetrics.sample import Sample
from ragmetrics.testing import FakeLLMServer, FakeReply

CAPITALS = [
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Rome is the capital of Italy.",
    "Madrid is the capital of Spain.",
    "Lisbon is the capital of Portugal.",
]
RIVERS = [
    "The Seine flows through Paris.",
    "The Spree flows through Berlin.",
    "The Tiber flows through Rome.",
]
QUESTIONS = [
    "What is the capital of France?",
    "Which city is Germany's capital?",
    "Tell me about Italy.",
    "Where does the Spanish government sit?",
]


def store(texts: list[str]) -> InMemoryVectorStore:
    return InMemoryVectorStore.from_documents(
        [Document(page_content=t) for t in texts], embedding=DeterministicFakeEmbedding(size=32)
    )


def join_docs(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer the question from the context only. Question: {question}"), ("human", "{context}")]
)


def rag_chain(model: Any, retriever: Runnable | None = None) -> Runnable:
    """The textbook LCEL RAG chain: retrieve, format, prompt, chat model, parse to a string."""
    retriever = retriever or store(CAPITALS).as_retriever(search_kwargs={"k": 2})
    return (
        {"context": retriever | join_docs, "question": RunnablePassthrough()}
        | PROMPT
        | model
        | StrOutputParser()
    )


def retrieved(question: str, texts: list[str] = CAPITALS, k: int = 2) -> list[str]:
    """What the retriever returns for ``question``, asked directly (no callbacks)."""
    return [d.page_content for d in store(texts).as_retriever(search_kwargs={"k": k}).invoke(question)]


def offline_metrics() -> list[Any]:
    return [FaithfulnessMetric(llm="offline", cache=False), RelevancyMetric(llm="offline", cache=False)]


@pytest.fixture
def handlers() -> Iterator[list[RagMetricsCallbackHandler]]:
    """Handlers built in a test are closed after it (their background thread, if any, stops)."""
    made: list[RagMetricsCallbackHandler] = []
    yield made
    for handler in made:
        handler.close(timeout=10)


def make(
    handlers: list[RagMetricsCallbackHandler], metrics: list[Any], **kwargs: Any
) -> RagMetricsCallbackHandler:
    handler = RagMetricsCallbackHandler(metrics=metrics, **kwargs)
    handlers.append(handler)
    return handler


async def expected_scores(metrics: list[Any], result: RunResult) -> dict[str, float | None]:
    """The metrics' own scores on the captured triple: what the handler must report."""
    sample = Sample(question=result.question, answer=result.answer or "", contexts=tuple(result.contexts))
    scores = {m.name: (await m.evaluate_sample(sample)).score for m in metrics}
    for m in metrics:
        await m.judge.aclose()
    return scores


# -- capture and scoring ---------------------------------------------------------------------------------


def test_invoke_captures_the_triple_and_scores_it_with_one_shared_judge(
    handlers: list[RagMetricsCallbackHandler],
    fake_llm_server: FakeLLMServer,
    openai_spec: str,
    tmp_path: Path,
) -> None:
    question = QUESTIONS[0]
    contexts = retrieved(question)
    claims = ["Paris is the capital of France.", "Berlin is the capital of Spain."]
    # scripted verdicts: claim 0 supported by a quote from context 0, claim 1 contradicted by context 1
    fake_llm_server.on(
        "claims.extract",
        FakeReply(
            json={
                "claims": [{"text": c, "span": c, "relevance": "direct"} for c in claims],
                "addresses_question": "yes",
            }
        ),
    )
    fake_llm_server.on(
        "claims.verify",
        FakeReply(
            json={
                "verdicts": [
                    {
                        "claim": 0,
                        "verdict": "supported",
                        "context": 0,
                        "evidence": contexts[0],
                        "reason": "r",
                    },
                    {
                        "claim": 1,
                        "verdict": "contradicted",
                        "context": 1,
                        "evidence": contexts[1],
                        "reason": "r",
                    },
                ]
            }
        ),
    )
    metrics = [
        FaithfulnessMetric(llm=openai_spec, cache=tmp_path / "c"),
        RelevancyMetric(llm=openai_spec, cache=tmp_path / "c"),
        GroundednessMetric(llm=openai_spec, cache=tmp_path / "c"),
    ]
    handler = make(handlers, metrics)
    model = FakeListChatModel(responses=[" ".join(claims)])

    answer = rag_chain(model).invoke(question, config={"callbacks": [handler]})

    [result] = handler.flush_sync(timeout=30)
    assert (result.question, result.contexts, result.answer) == (question, contexts, answer)
    assert result.source == "langchain" and result.status == "ok" and result.reason is None
    assert result.evaluation is not None and result.evaluation.sample is not None
    assert result.evaluation.sample.id == result.run_id
    assert result.scores == {
        "faithfulness": 0.5,
        "relevancy": 1.0,
        "groundedness": len(claims[0]) / (len(claims[0]) + len(claims[1])),
    }
    # three metrics, one judge: the claims are extracted once and verified once, against the captured triple
    assert fake_llm_server.calls == {"claims.extract": 1, "claims.verify": 1}
    extract, verify = fake_llm_server.requests
    assert extract.variables == {"question": question, "answer": answer}
    assert verify.variables is not None and verify.variables["contexts"] == contexts
    assert result.meta["run_name"] == "RunnableSequence" and result.meta["retrievals"] == 1


async def test_abatch_keeps_parallel_runs_apart(handlers: list[RagMetricsCallbackHandler]) -> None:
    metrics = offline_metrics()
    handler = make(handlers, metrics)
    chain = rag_chain(ParrotFakeChatModel())  # answers with the context it was given: faithful by design

    answers = await chain.abatch(QUESTIONS, config={"callbacks": [handler]})

    results = await handler.flush(timeout=30)
    assert len(results) == len(QUESTIONS) and len({r.run_id for r in results}) == len(QUESTIONS)
    by_question = {r.question: r for r in results}
    assert set(by_question) == set(QUESTIONS)
    for question, answer in zip(QUESTIONS, answers, strict=True):
        result = by_question[question]
        assert result.contexts == retrieved(question)
        assert result.answer == answer == "\n\n".join(result.contexts)
        assert result.status == "ok" and result.scores == await expected_scores(metrics, result)
    assert len({tuple(r.contexts) for r in results}) > 1, "the questions retrieve different documents"


def test_sync_batch_runs_in_threads_and_keeps_runs_apart(handlers: list[RagMetricsCallbackHandler]) -> None:
    handler = make(handlers, offline_metrics())
    answers = rag_chain(ParrotFakeChatModel()).batch(QUESTIONS, config={"callbacks": [handler]})
    results = handler.flush_sync(timeout=30)
    assert sorted((r.question, r.answer) for r in results) == sorted(zip(QUESTIONS, answers, strict=True))
    assert all(r.contexts == retrieved(r.question) for r in results)


async def test_astream_takes_the_question_from_the_run_end_and_the_streamed_answer(
    handlers: list[RagMetricsCallbackHandler],
) -> None:
    metrics = offline_metrics()
    handler = make(handlers, metrics)
    reply = "Paris is the capital of France. It lies on the Seine."
    chain = rag_chain(GenericFakeChatModel(messages=iter([AIMessage(content=reply)])))

    chunks = [chunk async for chunk in chain.astream(QUESTIONS[0], config={"callbacks": [handler]})]

    assert len(chunks) > 1 and "".join(chunks) == reply
    [result] = await handler.flush(timeout=30)
    assert (result.question, result.contexts, result.answer) == (QUESTIONS[0], retrieved(QUESTIONS[0]), reply)
    assert result.status == "ok" and result.scores == await expected_scores(metrics, result)


async def test_concurrent_streams_do_not_mix(handlers: list[RagMetricsCallbackHandler]) -> None:
    handler = make(handlers, offline_metrics())
    chain = rag_chain(ParrotFakeChatModel())

    async def consume(question: str) -> str:
        return "".join([c async for c in chain.astream(question, config={"callbacks": [handler]})])

    answers = await asyncio.gather(*(consume(q) for q in QUESTIONS))
    results = await handler.flush(timeout=30)
    assert sorted((r.question, r.answer) for r in results) == sorted(zip(QUESTIONS, answers, strict=True))
    assert all(r.contexts == retrieved(r.question) for r in results)


async def test_nested_chains_and_two_retrievers_belong_to_the_outer_run(
    handlers: list[RagMetricsCallbackHandler],
) -> None:
    handler = make(handlers, offline_metrics())
    capitals = store(CAPITALS).as_retriever(search_kwargs={"k": 1})
    rivers = store(RIVERS).as_retriever(search_kwargs={"k": 1})
    both = RunnableParallel(a=capitals, b=rivers) | RunnableLambda(lambda d: d["a"] + d["b"])
    inner = rag_chain(ParrotFakeChatModel(), retriever=both)
    # the app's own outer chain: a dict in, a dict out, the RAG chain nested inside
    outer = RunnableParallel(answer=itemgetter("query") | inner, query=itemgetter("query"))

    out = await outer.ainvoke({"query": QUESTIONS[1]}, config={"callbacks": [handler]})

    [result] = await handler.flush(timeout=30)
    assert result.question == QUESTIONS[1] and result.answer == out["answer"]
    expected = retrieved(QUESTIONS[1], CAPITALS, 1) + retrieved(QUESTIONS[1], RIVERS, 1)
    assert sorted(result.contexts) == sorted(expected)  # in retriever start order; both ran in parallel
    assert result.meta["retrievals"] == 2 and result.status == "ok"


async def test_question_and_answer_keys_are_configurable(handlers: list[RagMetricsCallbackHandler]) -> None:
    handler = make(handlers, offline_metrics(), question_keys=("q",), answer_keys=("reply",))
    retriever = store(CAPITALS).as_retriever(search_kwargs={"k": 2})
    chain = RunnableParallel(
        reply=RunnableLambda(lambda d: d["q"]) | rag_chain(ParrotFakeChatModel(), retriever=retriever),
        note=RunnableLambda(lambda d: "a side value"),
    )
    out = await chain.ainvoke({"q": QUESTIONS[2], "user": "u-1"}, config={"callbacks": [handler]})
    [result] = await handler.flush(timeout=30)
    assert (result.question, result.answer) == (QUESTIONS[2], out["reply"])
    assert result.contexts == retrieved(QUESTIONS[2])


async def test_chat_style_messages_in_and_a_message_out(handlers: list[RagMetricsCallbackHandler]) -> None:
    handler = make(handlers, offline_metrics())
    retriever = store(CAPITALS).as_retriever(search_kwargs={"k": 2})
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Context: {context}"), MessagesPlaceholder("messages")]
    )
    chain = (
        {
            "context": itemgetter("messages")
            | RunnableLambda(lambda ms: ms[-1].content)
            | retriever
            | join_docs,
            "messages": itemgetter("messages"),
        }
        | prompt
        | FakeListChatModel(responses=["Madrid."])
    )  # no output parser: the chain returns an AIMessage
    history = [HumanMessage("Hello"), AIMessage("Hi, ask me about capitals."), HumanMessage(QUESTIONS[3])]

    out = await chain.ainvoke({"messages": history}, config={"callbacks": [handler]})

    [result] = await handler.flush(timeout=30)
    assert isinstance(out, AIMessage) and result.answer == out.content == "Madrid."
    assert result.question == QUESTIONS[3] and result.contexts == retrieved(QUESTIONS[3])


async def test_answer_falls_back_to_the_last_chat_model_output(
    handlers: list[RagMetricsCallbackHandler],
) -> None:
    handler = make(handlers, offline_metrics())
    reply = "Rome is the capital of Italy."
    chain = rag_chain(FakeListChatModel(responses=[reply])) | RunnableLambda(
        lambda text: {"words": len(text.split())}
    )
    out = await chain.ainvoke(QUESTIONS[2], config={"callbacks": [handler]})
    [result] = await handler.flush(timeout=30)
    assert out == {"words": 6} and result.answer == reply and result.status == "ok"


# -- what is not scored ------------------------------------------------------------------------------------


async def test_a_run_without_retrieval_is_skipped_with_a_reason(
    handlers: list[RagMetricsCallbackHandler],
    fake_llm_server: FakeLLMServer,
    openai_spec: str,
    tmp_path: Path,
) -> None:
    handler = make(handlers, [FaithfulnessMetric(llm=openai_spec, cache=tmp_path / "c")])
    chain = PROMPT | FakeListChatModel(responses=["Paris."]) | StrOutputParser()
    out = await chain.ainvoke(
        {"question": "Capital of France?", "context": "none"}, config={"callbacks": [handler]}
    )
    [result] = await handler.flush(timeout=30)
    assert out == "Paris." and result.status == "skipped"
    assert "retrieved nothing" in (result.reason or "") and result.scores == {} and result.evaluation is None
    assert (result.question, result.answer, result.contexts) == ("Capital of France?", "Paris.", [])
    assert fake_llm_server.calls.total() == 0


async def test_a_run_that_raises_is_skipped_and_the_error_reaches_the_app(
    handlers: list[RagMetricsCallbackHandler],
) -> None:
    handler = make(handlers, offline_metrics())

    def boom(_: Any) -> str:
        raise ValueError("the app's own bug")

    chain = rag_chain(ParrotFakeChatModel()) | RunnableLambda(boom)
    with pytest.raises(ValueError, match="the app's own bug"):
        await chain.ainvoke(QUESTIONS[0], config={"callbacks": [handler]})
    [result] = await handler.flush(timeout=30)
    assert result.status == "skipped" and "ValueError: the app's own bug" in (result.reason or "")


# -- failures inside scoring stay inside scoring -------------------------------------------------------


async def test_a_failing_judge_is_recorded_and_the_chain_result_is_unaffected(
    handlers: list[RagMetricsCallbackHandler],
    fake_llm_server: FakeLLMServer,
    openai_spec: str,
    tmp_path: Path,
) -> None:
    fake_llm_server.faults(rate_500=1.0)
    metric = FaithfulnessMetric(llm=openai_spec, cache=tmp_path / "c", max_attempts=1, backoff_initial_s=0)
    handler = make(handlers, [metric])
    chain = rag_chain(ParrotFakeChatModel())

    with_handler = await chain.ainvoke(QUESTIONS[0], config={"callbacks": [handler]})
    assert with_handler == await chain.ainvoke(QUESTIONS[0])

    [result] = await handler.flush(timeout=30)
    assert result.status == "failed" and result.scores == {"faithfulness": None}
    [error] = result.errors
    assert error.metric == "faithfulness" and error.status == "provider_error" and "HTTP 500" in error.message
    assert result.reason == error.message and result.answer == with_handler
    await metric.judge.aclose()


async def test_a_raising_metric_and_a_raising_sink_never_reach_the_chain(
    handlers: list[RagMetricsCallbackHandler],
) -> None:
    def exploding(sample: Sample) -> float:
        raise RuntimeError("metric bug")

    exploding.name = "exploding"  # type: ignore[attr-defined]

    def bad_sink(result: RunResult) -> None:
        raise OSError("disk full")

    faithfulness = FaithfulnessMetric(llm="offline", cache=False)
    handler = make(handlers, [faithfulness, exploding], sink=bad_sink)
    out = await rag_chain(ParrotFakeChatModel()).ainvoke(QUESTIONS[0], config={"callbacks": [handler]})
    [result] = await handler.flush(timeout=30)
    assert out == result.answer
    expected = (await expected_scores([faithfulness], result))["faithfulness"]
    assert result.status == "failed" and result.scores == {"faithfulness": expected, "exploding": None}
    assert expected is not None
    metric_error, sink_error = result.errors
    assert metric_error.metric == "exploding" and "metric bug" in metric_error.message
    assert sink_error.metric is None and sink_error.message == "the sink raised OSError: disk full"


def test_callbacks_return_at_once_while_the_judge_is_slow(
    handlers: list[RagMetricsCallbackHandler],
    fake_llm_server: FakeLLMServer,
    openai_spec: str,
    tmp_path: Path,
) -> None:
    fake_llm_server.latency = 1.5  # scoring takes two judge calls: at least 3 s
    handler = make(handlers, [FaithfulnessMetric(llm=openai_spec, cache=tmp_path / "c")])
    chain = rag_chain(ParrotFakeChatModel())
    chain.invoke(QUESTIONS[1])  # warm up the chain, without the handler
    started = time.perf_counter()
    chain.invoke(QUESTIONS[0], config={"callbacks": [handler]})
    elapsed = time.perf_counter() - started
    assert elapsed < 2.0, f"the app waited {elapsed:.2f} s for scoring (which takes at least 3 s)"
    assert handler.results == [] and handler.pending == 1
    [result] = handler.flush_sync(timeout=30)
    assert result.status == "ok" and handler.pending == 0
    assert time.perf_counter() - started >= 3.0


async def test_async_runs_are_scored_on_the_apps_loop_after_the_call_returns(
    handlers: list[RagMetricsCallbackHandler],
) -> None:
    handler = make(handlers, offline_metrics())
    await rag_chain(ParrotFakeChatModel()).ainvoke(QUESTIONS[0], config={"callbacks": [handler]})
    assert handler.pending == 1 and handler.results == []
    [result] = await handler.flush(timeout=30)
    assert result.status == "ok"


# -- sinks ----------------------------------------------------------------------------------------------


def test_jsonl_sink_gets_one_line_per_run(handlers: list[RagMetricsCallbackHandler], tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    handler = make(handlers, offline_metrics(), sink=path)
    chain = rag_chain(ParrotFakeChatModel())
    chain.invoke(QUESTIONS[0], config={"callbacks": [handler]})
    (PROMPT | ParrotFakeChatModel()).invoke(
        {"question": "q", "context": "c"}, config={"callbacks": [handler]}
    )
    results = handler.flush_sync(timeout=30)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    back = [RunResult.model_validate_json(line) for line in lines]
    assert [r.model_dump() for r in back] == [r.model_dump() for r in results]
    assert {r.status for r in back} == {"ok", "skipped"}
    assert json.loads(lines[0])["source"] == "langchain"


async def test_async_callback_sink(handlers: list[RagMetricsCallbackHandler]) -> None:
    seen: list[RunResult] = []

    async def sink(result: RunResult) -> None:
        await asyncio.sleep(0)
        seen.append(result)

    handler = make(handlers, offline_metrics(), sink=sink)
    await rag_chain(ParrotFakeChatModel()).abatch(QUESTIONS[:2], config={"callbacks": [handler]})
    assert await handler.flush(timeout=30) == seen and len(seen) == 2


def test_bad_settings_fail_when_the_handler_is_built(tmp_path: Path) -> None:
    from ragmetrics.errors import ConfigError

    with pytest.raises(ConfigError, match="non-empty list of metrics"):
        RagMetricsCallbackHandler(metrics=[])
    with pytest.raises(ConfigError, match="does not exist"):
        RagMetricsCallbackHandler(metrics=offline_metrics(), sink=tmp_path / "missing" / "runs.jsonl")
    with pytest.raises(ConfigError, match="sink must be"):
        RagMetricsCallbackHandler(metrics=offline_metrics(), sink=42)
    with pytest.raises(ConfigError, match="max_pending"):
        RagMetricsCallbackHandler(metrics=offline_metrics(), max_pending=0)


def test_runs_beyond_max_pending_are_skipped_not_queued(
    handlers: list[RagMetricsCallbackHandler],
    fake_llm_server: FakeLLMServer,
    openai_spec: str,
    tmp_path: Path,
) -> None:
    fake_llm_server.latency = 0.3
    handler = make(handlers, [FaithfulnessMetric(llm=openai_spec, cache=tmp_path / "c")], max_pending=1)
    rag_chain(ParrotFakeChatModel()).batch(
        QUESTIONS[:3], config={"callbacks": [handler], "max_concurrency": 1}
    )
    results = handler.flush_sync(timeout=30)
    assert sorted(r.status for r in results) == ["ok", "skipped", "skipped"]
    assert all("max_pending" in (r.reason or "") for r in results if r.status == "skipped")


# -- the optional dependency -----------------------------------------------------------------------------


def test_without_langchain_importing_works_and_building_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['langchain_core'] = None  # as if langchain-core were not installed\n"
        "import ragmetrics, ragmetrics.integrations\n"
        "from ragmetrics.integrations.langchain import RagMetricsCallbackHandler\n"
        "from ragmetrics.errors import MissingDependencyError\n"
        "try:\n"
        "    RagMetricsCallbackHandler(metrics=[ragmetrics.FaithfulnessMetric(llm='offline')])\n"
        "except MissingDependencyError as exc:\n"
        "    assert isinstance(exc, ImportError)\n"
        "    print(exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'ragmetrics[langchain]'" in proc.stdout
    assert "RagMetricsCallbackHandler needs the 'langchain-core' package" in proc.stdout


def test_importing_ragmetrics_integrations_loads_no_framework() -> None:
    code = (
        "import sys, ragmetrics.integrations\n"
        "print(sorted(m for m in ('langchain_core', 'llama_index') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
