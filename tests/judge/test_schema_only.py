"""Through a server that only honours the schema, every judged metric scores with no re-ask (issue 11).

``FakeLLMServer(answer="schema")`` ignores the prompt and returns an arbitrary instance valid under the
request's JSON schema (first enum value, minimum numbers, arrays at minItems, strings from the prompt),
the way a constrained-decoding server answers when the model understands nothing. If the contract
lives in the schema, such a reply is always valid: the three RAG metrics cost exactly 2 calls per
sample, and llm_rubric and g_eval score every sample.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ragmetrics import EvaluationPipeline, FaithfulnessMetric, GroundednessMetric, RelevancyMetric
from ragmetrics.metrics.evaluators.rubric import GEvalEvaluator, LLMRubricEvaluator
from ragmetrics.testing import FakeLLMServer

FACTS = ("Item {i} is blue.", "Item {i} weighs {i} kg.", "It was made in 1889.")
SAMPLES = [
    {
        "id": f"s{i}",
        "question": f"What is item {i}?",
        "answer": " ".join(f.format(i=i) for f in FACTS[: 1 + i % 3]),
        "contexts": [f"Item {i} is blue and round.", f"Item {i} weighs {i + 1} kg."][: 1 + i % 2],
    }
    for i in range(12)
]


@pytest.fixture(scope="module")
def schema_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(answer="schema", seed=3) as server:
        yield server


@pytest.fixture
def srv(schema_server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    schema_server.reset()
    yield schema_server
    schema_server.reset()


@pytest.fixture(params=["openai", "anthropic"])
def spec(request, srv: FakeLLMServer, dummy_keys, monkeypatch) -> str:
    if request.param == "openai":
        return f"openai:gpt-4o-mini@{srv.openai_base_url}"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
    return "anthropic:claude-haiku-4-5"


def rag_metrics(spec: str) -> list[Any]:
    opts: dict[str, Any] = {"cache": False, "reasks": 2}
    return [
        FaithfulnessMetric(llm=spec, **opts),
        RelevancyMetric(llm=spec, **opts),
        GroundednessMetric(llm=spec, **opts),
    ]


async def test_three_rag_metrics_parse_every_filler_reply_and_refuse_to_score_it(
    srv: FakeLLMServer, spec: str
) -> None:
    # every filler reply is schema-valid (no schema re-ask), but its spans are in no answer: the extraction
    # gets one re-ask naming them, no claim is left to verify (no verification call is paid for), and no
    # claim metric scores what the judge did not read
    results = await EvaluationPipeline(metrics=rag_metrics(spec)).evaluate(SAMPLES)

    for record in results:
        assert set(record.scores) == {"faithfulness", "relevancy", "groundedness"}
        assert all(score is None for score in record.scores.values()), record.scores
        assert {record.status_of(m) for m in record.scores} == {"judge_output_invalid"}
        assert (record.usage.calls, record.usage.reasks) == (2, 1), record.usage  # extraction, its re-ask
    assert results.stats.usage.calls == srv.calls.total()
    assert results.summary().judge_gate, "the judge gate lists the filler judge"
    assert all(r.source == "default" for r in srv.requests), "every reply was the schema filler's"


async def test_llm_rubric_and_g_eval_score_every_sample_with_no_reask(srv: FakeLLMServer, spec: str) -> None:
    rubric = LLMRubricEvaluator("The output answers the input politely.", spec, cache=False)
    g_eval = GEvalEvaluator("The output is correct and complete.", spec, cache=False)
    outputs = [(s["answer"], s["question"]) for s in SAMPLES[:6]]

    for output, question in outputs:
        graded = await rubric.evaluate(output, input=question)
        assert graded.status == "ok" and graded.score is not None, graded.message
        stepped = await g_eval.evaluate(output, input=question)
        assert stepped.status == "ok" and stepped.score is not None, stepped.message
        assert stepped.details["steps"], "at least one evaluation step (minItems 1)"
    await rubric.judge.aclose()
    await g_eval.judge.aclose()
    # one rubric grade and one g_eval grade per output, plus the steps once
    assert srv.calls == {"llm_rubric.grade": 6, "g_eval.grade": 6, "g_eval.steps": 1}
