"""Model-graded evaluators over the real openai SDK against the fake server, and on the offline judge."""

from __future__ import annotations

import pytest

from ragmetrics.metrics.evaluators.factory import GEvalEvaluator, LLMJudgeEvaluator, LLMRubricEvaluator
from ragmetrics.testing import FakeReply


async def test_llm_judge_score_is_normalised_from_a_scripted_reply(fake_llm_server, openai_spec):
    fake_llm_server.on("llm_judge.grade", FakeReply(json={"reasoning": "Correct and complete.", "score": 9}))
    ev = LLMJudgeEvaluator(openai_spec)
    result = await ev.evaluate(
        "Paris is the capital of France.", "The capital of France is Paris.", "What is the capital of France?"
    )
    assert result.score == pytest.approx(0.9) and result.passed
    assert "9.0/10" in result.reasoning
    assert result.usage.calls == 1 and result.usage.prompt_tokens > 0
    request = fake_llm_server.requests[0]
    assert request.variables == {
        "prediction": "Paris is the capital of France.",
        "input": "What is the capital of France?",
        "reference": "The capital of France is Paris.",
    }
    await ev.judge.aclose()


async def test_g_eval_derives_steps_once_per_criteria(fake_llm_server, openai_spec):
    ev = GEvalEvaluator("The output names the capital. The output is one sentence.", openai_spec)
    first = await ev.evaluate("Paris is the capital.", "", "Capital of France?")
    second = await ev.evaluate("Lyon.", "", "Capital of France?")
    assert fake_llm_server.calls["g_eval.steps"] == 1 and fake_llm_server.calls["g_eval.grade"] == 2
    assert first.score is not None and second.score is not None and first.score > second.score
    await ev.judge.aclose()


@pytest.mark.parametrize(
    "make",
    [
        lambda: LLMJudgeEvaluator("offline"),
        lambda: LLMRubricEvaluator("The answer mentions Paris and France", "offline", threshold=0.5),
        lambda: GEvalEvaluator("The output mentions Paris and France.", "offline"),
    ],
)
async def test_offline_judge_grades_with_a_labelled_heuristic(make):
    ev = make()
    good = await ev.evaluate(
        "Paris is the capital of France.", "The capital of France is Paris.", "What is the capital of France?"
    )
    bad = await ev.evaluate(
        "Bananas are yellow.", "The capital of France is Paris.", "What is the capital of France?"
    )
    assert good.status == "ok" and bad.status == "ok"
    assert good.score > bad.score
    assert "heuristic" in good.reasoning.lower()
