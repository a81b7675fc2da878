"""Hostile input on the new surfaces of issue 13: RAG metrics in suites, references in the adapters.

Bad contexts in a suite file are refused naming the file, case and field; a reference that is not a
string (from run metadata or a user's lookup) fails that run only, naming the field, and the app's
own call is untouched; an outputs function returning malformed contexts fails that case only.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from ragmetrics import ConfigError, FaithfulnessMetric
from ragmetrics.integrations.langchain import RagMetricsCallbackHandler
from ragmetrics.metrics import RAG_METRICS
from ragmetrics.regression.suite import Case, Suite, run_suite


def case(**fields: Any) -> dict[str, Any]:
    return {
        "id": "c",
        "input": "Capital of France?",
        "output": "Paris.",
        "evaluators": ["faithfulness"],
        **fields,
    }


@pytest.mark.parametrize(
    ("contexts", "match"),
    [
        (["fine", "bad \ud800 text"], r"cases\[0\].*contexts\[1\].*surrogate"),
        ([1, {"a": 2}], r"cases\[0\]\.contexts: must be a list of strings"),
        ("Paris is the capital.", r"cases\[0\]\.contexts: must be a list of strings"),
        ({"nested": ["x"]}, r"cases\[0\]\.contexts: must be a list of strings"),
    ],
)
def test_bad_contexts_in_a_suite_file_are_refused_naming_the_field(contexts: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Suite.from_data({"llm": "offline", "cases": [case(contexts=contexts)]}, source="s.yaml")


async def test_malformed_contexts_from_an_outputs_function_fail_that_case_only() -> None:
    metric = FaithfulnessMetric(llm="offline", threshold=0.5, cache=False)
    cases = tuple(Case(id=i, input=f"Capital? {i}", evaluators=(metric,)) for i in ("bad", "good"))

    def app(question: str) -> dict[str, Any]:
        if "bad" in question:
            return {"output": "Paris.", "contexts": "Paris is the capital of France."}  # a bare string
        return {"output": "Paris is the capital of France.", "contexts": ["Paris is the capital of France."]}

    bad, good = (await run_suite(Suite(cases=cases), app, progress=False)).cases
    assert not bad.passed and "contexts" in bad.errors[0] and bad.failures[0].type == "ConfigError"
    assert good.passed and good.results[0].score == 1.0


def rag_chain() -> Any:
    docs = [Document(page_content="Paris is the capital of France.")]
    retriever = InMemoryVectorStore.from_documents(docs, DeterministicFakeEmbedding(size=16)).as_retriever()
    model = FakeListChatModel(responses=["Paris is the capital of France."] * 4)
    context = retriever | (lambda ds: "\n".join(d.page_content for d in ds))
    return (
        {"context": context, "question": RunnablePassthrough()}
        | RunnableLambda(lambda x: x["question"])
        | model
        | StrOutputParser()
    )


@pytest.mark.parametrize("reference", [{"nested": "dict"}, 42, ["a", "list"]])
def test_a_non_string_reference_in_run_metadata_fails_that_run_naming_the_field(reference: Any) -> None:
    recall = RAG_METRICS["context_recall"](llm="offline", cache=False)
    handler = RagMetricsCallbackHandler(metrics=[recall])
    try:
        answer = rag_chain().invoke(
            "Capital of France?", config={"callbacks": [handler], "metadata": {"reference": reference}}
        )
        assert answer == "Paris is the capital of France."  # the app's call is untouched
    finally:
        [run] = handler.close(timeout=30)
    assert run.status == "failed" and run.reference is None and not run.scores
    assert run.errors and "field 'reference'" in run.errors[0].message


def test_a_references_lookup_returning_a_non_string_fails_that_run_naming_the_field() -> None:
    recall = RAG_METRICS["context_recall"](llm="offline", cache=False)
    handler = RagMetricsCallbackHandler(metrics=[recall], references=lambda q: 42)  # type: ignore[arg-type, return-value]
    try:
        rag_chain().invoke("Capital of France?", config={"callbacks": [handler]})
    finally:
        [run] = handler.close(timeout=30)
    assert run.status == "failed" and "field 'reference'" in run.errors[0].message
