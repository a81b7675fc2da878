"""The reference document's examples, with a judge that answers as a careful human would.

The answers are scripted on the loopback fake server; the real openai and anthropic SDKs (through
instructor) carry them over HTTP into the metrics.
"""

from __future__ import annotations

import pytest

from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
from ragmetrics.testing import FakeReply
from tests.metrics import seed_answers as seed


def script(srv, extract, verify=None):
    srv.on("claims.extract", FakeReply(json=extract))
    if verify is not None:
        srv.on("claims.verify", FakeReply(json=verify))


@pytest.fixture(params=["openai", "anthropic"])
def spec(request, fake_llm_server, dummy_keys):
    if request.param == "openai":
        return f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    # The anthropic SDK takes its base URL from ANTHROPIC_BASE_URL.
    request.getfixturevalue("monkeypatch").setenv("ANTHROPIC_BASE_URL", fake_llm_server.anthropic_base_url)
    return "anthropic:claude-haiku-4-5"


async def test_faithfulness_seed_example_scores_one_half(fake_llm_server, spec):
    script(fake_llm_server, seed.PYTHON_EXTRACT, seed.PYTHON_VERIFY)
    metric = FaithfulnessMetric(llm=spec)
    score = await metric.score(question=seed.PYTHON_Q, answer=seed.PYTHON_A, contexts=seed.PYTHON_CTX)
    assert score == 0.5
    result = await metric.evaluate(question=seed.PYTHON_Q, answer=seed.PYTHON_A, contexts=seed.PYTHON_CTX)
    assert [c.verdict for c in result.claims] == ["contradicted", "supported"]
    assert (
        result.contradicted_rate == 0.5 and result.supported_rate == 0.5 and result.unverifiable_rate == 0.0
    )
    assert result.claims[0].evidence == "Python is an interpreted language"
    assert result.claims[0].context_index == 0 and result.claims[0].evidence_verified is True
    assert "compiled" in result.reasoning
    assert result.judge is not None and not result.judge.heuristic
    await metric.judge.aclose()


async def test_relevancy_seed_example_scores_one(fake_llm_server, spec):
    script(fake_llm_server, seed.PARIS_EXTRACT)
    metric = RelevancyMetric(llm=spec)
    assert await metric.score(question=seed.PARIS_Q, answer=seed.PARIS_A) == 1.0
    await metric.judge.aclose()


async def test_groundedness_seed_example_scores_one(fake_llm_server, spec):
    script(fake_llm_server, seed.SK_EXTRACT, seed.SK_VERIFY)
    metric = GroundednessMetric(llm=spec)
    assert await metric.score(answer=seed.SK_A, contexts=seed.SK_CTX) == 1.0
    await metric.judge.aclose()


async def test_usage_tokens_and_cost_come_from_the_provider_response(fake_llm_server, openai_spec):
    script(fake_llm_server, seed.PYTHON_EXTRACT, seed.PYTHON_VERIFY)
    metric = FaithfulnessMetric(llm=openai_spec, cache=False)
    result = await metric.evaluate(question=seed.PYTHON_Q, answer=seed.PYTHON_A, contexts=seed.PYTHON_CTX)
    assert result.usage.calls == 2
    assert result.usage.prompt_tokens == fake_llm_server.prompt_tokens
    assert result.usage.completion_tokens == fake_llm_server.completion_tokens
    expected = (fake_llm_server.prompt_tokens * 0.15 + fake_llm_server.completion_tokens * 0.60) / 1e6
    assert result.usage.cost_usd == pytest.approx(expected, rel=1e-12)
    assert result.latency_ms > 0
    await metric.judge.aclose()
