"""Against the real providers: run with `pytest --live` and OPENAI_API_KEY / ANTHROPIC_API_KEY set.

Skipped otherwise (CI has no key and no network). They check that the seed example comes out as a
careful human judge would score it, through the real SDKs and models.
"""

from __future__ import annotations

import os

import pytest

from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric

pytestmark = pytest.mark.live

SPECS = [
    pytest.param("openai:gpt-4o-mini", "OPENAI_API_KEY", id="openai"),
    pytest.param("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY", id="anthropic"),
]


@pytest.mark.parametrize(("spec", "key"), SPECS)
async def test_seed_examples_against_a_real_judge(spec, key, tmp_path):
    if not os.environ.get(key):
        pytest.skip(f"{key} is not set")
    faithfulness = FaithfulnessMetric(llm=spec, cache=tmp_path)
    result = await faithfulness.evaluate(
        question="What is Python?",
        answer="Python is a compiled language created in 1991.",
        contexts=["Python is an interpreted language created by Guido van Rossum in 1991."],
    )
    assert result.status == "ok" and 0.3 <= result.score <= 0.7, result.reasoning
    assert any(c.verdict == "contradicted" for c in result.claims)
    assert result.usage.calls >= 2 and result.usage.prompt_tokens > 0
    relevancy = RelevancyMetric(llm=spec, cache=tmp_path)
    assert (
        await relevancy.score(
            question="What is the capital of France?",
            answer="Paris is the capital and largest city of France.",
        )
        >= 0.9
    )
    groundedness = GroundednessMetric(llm=spec, cache=tmp_path)
    assert (
        await groundedness.score(
            answer="SynapseKit supports 31 LLM providers.",
            contexts=["SynapseKit supports 31 LLM providers including OpenAI, Anthropic, and Gemini."],
        )
        >= 0.9
    )
    for metric in (faithfulness, relevancy, groundedness):
        await metric.judge.aclose()
