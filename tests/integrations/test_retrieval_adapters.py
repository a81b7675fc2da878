"""The adapters with the retrieval and reference metrics (issue 13), on real LangChain / LlamaIndex parts.

A captured run carries the reference the user gives (LangChain run metadata, or the handler's
``references`` by question), so ``context_recall`` and ``answer_correctness`` can score it; metrics
may be given by name. Every expected score is the metric's own score on the captured sample.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import Document as LlamaDocument
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.evaluation import BatchEvalRunner
from llama_index.core.llms import MockLLM

from ragmetrics import ConfigError
from ragmetrics.integrations import RunResult
from ragmetrics.integrations.langchain import RagMetricsCallbackHandler
from ragmetrics.integrations.llamaindex import RagMetricsEventHandler, as_llamaindex_evaluator
from ragmetrics.metrics import RAG_METRICS
from ragmetrics.sample import Sample

CAPITALS = ["Paris is the capital of France.", "Berlin is the capital of Germany."]
QUESTION = "What is the capital of France?"
REFERENCE = "Paris is the capital of France."
NAMES = ["faithfulness", "context_recall", "context_precision", "context_relevancy", "answer_correctness"]


@pytest.fixture
def judge_env(openai_spec: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Metric names are judged by the judge from the environment: here the fake server."""
    monkeypatch.setenv("RAGMETRICS_JUDGE", openai_spec)
    return openai_spec


def chain(answer: str = "Paris is the capital of France.") -> Runnable:
    docs = [Document(page_content=t) for t in CAPITALS]
    retriever = InMemoryVectorStore.from_documents(docs, DeterministicFakeEmbedding(size=32)).as_retriever(
        search_kwargs={"k": 2}
    )
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    return (
        {
            "context": retriever | (lambda ds: "\n".join(d.page_content for d in ds)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | FakeListChatModel(responses=[answer] * 10)
        | StrOutputParser()
    )


async def own_scores(spec: str, run: RunResult) -> dict[str, float | None]:
    """Each metric's own score on the captured sample, reference included."""
    sample = Sample(
        question=run.question,
        answer=run.answer or "",
        contexts=tuple(run.contexts),
        reference=run.reference,
    )
    scores = {}
    for name in NAMES:
        metric = RAG_METRICS[name](llm=spec, cache=False)
        scores[name] = (await metric.evaluate_sample(sample)).score
        await metric.judge.aclose()
    return scores


@pytest.fixture
def closing() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for handler in made:
        handler.close(timeout=10)


async def test_langchain_run_metadata_carries_the_reference_and_named_metrics_score_it(
    judge_env: str, closing: list[Any]
) -> None:
    handler = RagMetricsCallbackHandler(metrics=NAMES)
    closing.append(handler)
    config: Any = {"callbacks": [handler], "metadata": {"reference": REFERENCE}}
    await chain().ainvoke(QUESTION, config=config)
    [run] = await handler.flush()
    assert run.status == "ok", run.reason
    assert run.reference == REFERENCE and set(run.scores) == set(NAMES)
    assert run.evaluation is not None and run.evaluation.sample.reference == REFERENCE
    assert run.scores == await own_scores(judge_env, run)


def test_langchain_references_by_question_and_a_run_without_one_says_which_field(
    judge_env: str, closing: list[Any]
) -> None:
    other = "What is the capital of Germany?"
    handler = RagMetricsCallbackHandler(metrics=NAMES, references={QUESTION: REFERENCE})
    closing.append(handler)
    chain().batch([QUESTION, other], config={"callbacks": [handler]})
    runs = {r.question: r for r in handler.close(timeout=30)}
    given, missing = runs[QUESTION], runs[other]
    assert given.status == "ok" and given.reference == REFERENCE
    assert given.scores["context_recall"] is not None and given.scores["answer_correctness"] is not None
    assert missing.status == "failed" and missing.reference is None
    for name in ("context_recall", "answer_correctness"):
        assert missing.scores[name] is None
        (error,) = [e for e in missing.errors if e.metric == name]
        assert error.status == "invalid_input" and "field 'reference'" in error.message
    assert missing.scores["faithfulness"] is not None  # the other metrics still score the run


def test_a_references_function_that_raises_fails_that_run_only(judge_env: str, closing: list[Any]) -> None:
    def lookup(question: str) -> str | None:
        if "Germany" in question:
            raise KeyError(question)
        return REFERENCE

    handler = RagMetricsCallbackHandler(metrics=["context_recall"], references=lookup)
    closing.append(handler)
    answers = chain().batch([QUESTION, "What is the capital of Germany?"], config={"callbacks": [handler]})
    assert answers == ["Paris is the capital of France."] * 2  # the app is untouched
    runs = {r.question: r for r in handler.close(timeout=30)}
    assert runs[QUESTION].status == "ok" and runs[QUESTION].scores["context_recall"] is not None
    broken = runs["What is the capital of Germany?"]
    assert broken.status == "failed" and "KeyError" in (broken.errors[0].type or "")


def test_references_must_be_a_mapping_or_a_function() -> None:
    with pytest.raises(ConfigError, match="references must be a mapping"):
        RagMetricsCallbackHandler(metrics=["faithfulness"], references="Paris")  # type: ignore[arg-type]


def index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [LlamaDocument(text=t) for t in CAPITALS], embed_model=MockEmbedding(embed_dim=8)
    )


async def test_llamaindex_handler_scores_the_reference_metrics_by_name(
    judge_env: str, closing: list[Any]
) -> None:
    handler = RagMetricsEventHandler(metrics=NAMES, references={QUESTION: REFERENCE}).attach()
    closing.append(handler)
    try:
        await index().as_query_engine(llm=MockLLM(max_tokens=8), similarity_top_k=2).aquery(QUESTION)
    finally:
        handler.detach()
    [run] = await handler.flush()
    assert run.status == "ok", run.reason
    assert run.reference == REFERENCE and len(run.contexts) == 2
    assert run.scores == await own_scores(judge_env, run)


# BatchEvalRunner.__init__ calls llama_index's own deprecated asyncio_module() (filterwarnings=error).
@pytest.mark.filterwarnings("ignore:asyncio_module\\(\\) is deprecated:DeprecationWarning")
async def test_named_evaluators_in_batch_eval_runner_take_a_reference_per_query(judge_env: str) -> None:
    engine = index().as_query_engine(llm=MockLLM(max_tokens=8), similarity_top_k=2)
    questions = [QUESTION, "What is the capital of Germany?"]
    evaluators = {name: as_llamaindex_evaluator(name) for name in ("context_recall", "answer_correctness")}
    runner = BatchEvalRunner(evaluators, workers=2)
    references = [REFERENCE, "Berlin is the capital of Germany."]
    out = await runner.aevaluate_queries(engine, queries=questions, reference=references)
    for name, evaluator in evaluators.items():
        assert all(r.score is not None and not r.invalid_result for r in out[name]), name
        metric = RAG_METRICS[name](llm=judge_env, cache=False)
        for got, reference in zip(out[name], references, strict=True):
            own = await metric.evaluate(
                question=got.query, answer=got.response, contexts=got.contexts, reference=reference
            )
            assert got.score == own.score
        await metric.judge.aclose()
        await evaluator.aclose()
    bare = await evaluators["context_recall"].aevaluate(query=QUESTION, response="Paris.", contexts=CAPITALS)
    assert bare.invalid_result is True and "field 'reference'" in (bare.invalid_reason or "")
