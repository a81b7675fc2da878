"""LLM evaluators against a scripted in-test judge: a real object implementing the Judge protocol."""

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from ragmetrics import ConfigError, JudgeError, JudgeOutputError
from ragmetrics.judge import Judge, JudgeReply, JudgeRequest
from ragmetrics.metrics.evaluators.factory import GEvalEvaluator, LLMJudgeEvaluator, LLMRubricEvaluator
from ragmetrics.metrics.evaluators.rubric import (
    EvaluationSteps,
    GEvalGrade,
    JudgeRating,
    JudgeReplyText,
    RubricGrade,
    parse_rating,
)
from ragmetrics.score import JudgeInfo, Usage

Script = BaseModel | Exception | Callable[[JudgeRequest], BaseModel]


class ScriptedJudge:
    """Answers each task from a queue of scripted values (or raises a scripted error)."""

    def __init__(self, **script: list[Script]) -> None:
        self.info = JudgeInfo(provider="openai", model="scripted-judge")
        self.script = {task.replace("__", "."): list(values) for task, values in script.items()}
        self.requests: list[JudgeRequest] = []
        self.closed = 0
        self.delay = 0.0

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        queue = self.script[request.task]
        item = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(item, Exception):
            raise item
        value = item(request) if callable(item) and not isinstance(item, BaseModel) else item
        assert isinstance(value, request.response_model)
        return JudgeReply(
            value=value, usage=Usage(calls=1, prompt_tokens=100, completion_tokens=10), latency_ms=5.0
        )

    async def aclose(self) -> None:
        self.closed += 1

    def tasks(self) -> list[str]:
        return [r.task for r in self.requests]


def test_scripted_judge_implements_the_protocol():
    assert isinstance(ScriptedJudge(), Judge)


# -- llm_judge -------------------------------------------------------------------------------------


async def test_llm_judge_normalises_0_to_10():
    judge = ScriptedJudge(llm_judge__grade=[JudgeRating(reasoning="Correct and complete.", score=9)])
    ev = LLMJudgeEvaluator(judge, cache=False)
    result = await ev.evaluate(
        "Paris is the capital of France.", "The capital of France is Paris.", "What is the capital of France?"
    )
    assert result.score == pytest.approx(0.9) and result.passed
    assert result.reasoning.startswith("LLM judge score: 9.0/10")
    assert result.usage.prompt_tokens == 100 and result.judge.model == "scripted-judge"
    assert (
        "llm_judge|prompts=system.v1:" in result.signature
        and "judge=openai:scripted-judge" in result.signature
    )
    request = judge.requests[0]
    assert request.task == "llm_judge.grade" and request.response_model is JudgeRating
    assert "<response>\nParis is the capital of France.\n</response>" in request.messages[1].content
    assert request.variables["reference"] == "The capital of France is Paris."


async def test_llm_judge_low_score_fails_at_the_default_pass_mark():
    judge = ScriptedJudge(llm_judge__grade=[JudgeRating(reasoning="Wrong city.", score=2)])
    result = await LLMJudgeEvaluator(judge, cache=False).evaluate("Lyon", "Paris", "Capital?")
    assert result.score == pytest.approx(0.2) and result.passed is False and result.threshold == 0.5


async def test_llm_judge_custom_template_parses_a_number():
    template = (
        "Evaluate whether the response is factually accurate.\n\nQuestion: {input}\n"
        "Expected: {reference}\nResponse: {prediction}\n\nRate accuracy from 0 (wrong) to 10 (perfect). "
        "Reply with a single number."
    )
    judge = ScriptedJudge(llm_judge__custom=[JudgeReplyText(reply="8")])
    ev = LLMJudgeEvaluator.with_prompt(judge, template, cache=False)
    result = await ev.evaluate("Paris", "Paris", "What is the capital of France?")
    assert result.score == pytest.approx(0.8) and result.passed
    sent = judge.requests[0].messages[1].content
    assert "Question: What is the capital of France?\nExpected: Paris\nResponse: Paris" in sent
    assert judge.requests[0].prompts[-1].id == "llm_judge/custom"


async def test_llm_judge_template_substitution_is_single_pass():
    judge = ScriptedJudge(llm_judge__custom=[JudgeReplyText(reply="5/10")])
    ev = LLMJudgeEvaluator(judge, prompt="{input}|{prediction}|{reference}", cache=False)
    await ev.evaluate("{reference}", "REF", "IN")
    assert judge.requests[0].messages[1].content == "IN|{reference}|REF"


async def test_llm_judge_unparseable_reply_is_judge_output_invalid():
    judge = ScriptedJudge(llm_judge__custom=[JudgeReplyText.model_construct(reply="Excellent answer!")])
    ev = LLMJudgeEvaluator(judge, prompt="{input} {prediction} {reference}", cache=False)
    result = await ev.evaluate("x", "y", "z")
    assert result.score is None and result.status == "judge_output_invalid" and result.passed is None
    assert "no number between 0 and 10" in (result.message or "")


def test_llm_judge_reply_schema_rejects_a_reply_without_rating():
    with pytest.raises(ValueError, match="no number between 0 and 10"):
        JudgeReplyText(reply="Excellent answer!")
    assert parse_rating("Score: 7/10") == 7 and parse_rating("Out of 10, I'd give it 7.5") == 7.5
    assert (
        parse_rating("8 out of 10") == 8 and parse_rating("42 then 3") == 3 and parse_rating("none") is None
    )


def test_llm_judge_template_must_hold_all_placeholders():
    with pytest.raises(ConfigError, match=r"\{reference\}"):
        LLMJudgeEvaluator(ScriptedJudge(), prompt="Q: {input} A: {prediction}")
    with pytest.raises(ConfigError, match="llm"):
        LLMJudgeEvaluator(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        LLMJudgeEvaluator("nonsense-provider:model")


async def test_judge_errors_become_results_with_their_status():
    failing = ScriptedJudge(
        llm_judge__grade=[
            JudgeError(
                "rate limited",
                provider="openai",
                model="m",
                attempts=6,
                status="rate_limited",
                http_status=429,
            )
        ]
    )
    result = await LLMJudgeEvaluator(failing, cache=False).evaluate("a", "b", "c")
    assert result.score is None and result.status == "rate_limited" and result.passed is None
    assert "after 6 HTTP attempts" in (result.message or "")
    invalid = ScriptedJudge(llm_rubric__grade=[JudgeOutputError("bad json", provider="openai", model="m")])
    result = await LLMRubricEvaluator("Is polite", invalid, cache=False).evaluate("hi")
    assert result.status == "judge_output_invalid"


# -- llm_rubric ------------------------------------------------------------------------------------


async def test_llm_rubric_uses_the_judge_verdict_and_fills_placeholders():
    judge = ScriptedJudge(
        llm_rubric__grade=[RubricGrade(reason="Polite and on topic.", passed=True, score=0.8)]
    )
    ev = LLMRubricEvaluator(
        "The reply to {{ input }} is polite and never says <b>no</b>: {{output}}", judge, cache=False
    )
    result = await ev.evaluate("Sure, <happy> to help", "", "Can you help?")
    assert result.passed and result.score == 0.8 and result.threshold is None
    sent = judge.requests[0].messages[1].content
    filled = (
        "The reply to Can you help? is polite and never says &lt;b&gt;no&lt;/b&gt;: "
        "Sure, &lt;happy&gt; to help"
    )
    assert filled in sent
    assert "<output>\nSure, &lt;happy&gt; to help\n</output>" in sent
    assert judge.requests[0].variables["rubric"].endswith(": Sure, <happy> to help")


async def test_llm_rubric_threshold_stacks_on_the_verdict():
    passing_low = ScriptedJudge(llm_rubric__grade=[RubricGrade(reason="ok", passed=True, score=0.6)])
    result = await LLMRubricEvaluator("Is concise", passing_low, threshold=0.7, cache=False).evaluate("x")
    assert result.passed is False  # the judge passed it, but below the threshold
    failing_high = ScriptedJudge(llm_rubric__grade=[RubricGrade(reason="no", passed=False, score=0.9)])
    result = await LLMRubricEvaluator("Is concise", failing_high, threshold=0.7, cache=False).evaluate("x")
    assert result.passed is False  # above the threshold, but the judge failed it
    both = ScriptedJudge(llm_rubric__grade=[RubricGrade(reason="yes", passed=True, score=0.9)])
    assert (await LLMRubricEvaluator("Is concise", both, threshold=0.7, cache=False).evaluate("x")).passed


async def test_llm_rubric_negate_inverts_verdict_and_score():
    judge = ScriptedJudge(
        llm_rubric__grade=[RubricGrade(reason="mentions a competitor", passed=True, score=1.0)]
    )
    result = await LLMRubricEvaluator("Mentions a competitor", judge, negate=True, cache=False).evaluate("x")
    assert result.score == 0.0 and result.passed is False


def test_llm_rubric_rejects_unknown_placeholders():
    with pytest.raises(ConfigError, match=r"\{\{answer\}\}"):
        LLMRubricEvaluator("Check {{answer}}", ScriptedJudge())
    with pytest.raises(ConfigError):
        LLMRubricEvaluator("   ", ScriptedJudge())


# -- g_eval ----------------------------------------------------------------------------------------

_STEPS = EvaluationSteps(steps=["Read the output.", "Check it answers {{input}}.", "Check the tone."])


async def test_g_eval_derives_steps_then_grades():
    judge = ScriptedJudge(
        g_eval__steps=[_STEPS], g_eval__grade=[GEvalGrade(reason="Good.", score=7, passed=True)]
    )
    ev = GEvalEvaluator("The output answers {{input}} politely.", judge, cache=False)
    result = await ev.evaluate("Happy to help: Paris.", "", "Capital of France?")
    assert judge.tasks() == ["g_eval.steps", "g_eval.grade"]
    assert result.score == pytest.approx(0.7) and result.passed
    assert result.usage.calls == 2 and result.usage.prompt_tokens == 200
    assert result.details["steps"] == _STEPS.steps
    steps_request, grade_request = judge.requests
    assert "{{input}}" in steps_request.messages[1].content  # steps come from the criteria as written
    assert "The output answers Capital of France? politely." in grade_request.messages[1].content
    assert '<step index="1">Read the output.</step>' in grade_request.messages[1].content


async def test_g_eval_steps_are_derived_once_per_criteria():
    judge = ScriptedJudge(
        g_eval__steps=[_STEPS], g_eval__grade=[GEvalGrade(reason="ok", score=10, passed=True)]
    )
    ev = GEvalEvaluator("Is correct.", judge, cache=False)
    await ev.evaluate("one", "", "q1")
    second = await ev.evaluate("two", "", "q2")
    assert judge.tasks() == ["g_eval.steps", "g_eval.grade", "g_eval.grade"]
    assert ev.judge.stats.hits == 0  # the memo answered, not the judge cache
    assert second.usage.calls == 1


async def test_g_eval_concurrent_evaluations_share_one_steps_call():
    judge = ScriptedJudge(
        g_eval__steps=[_STEPS], g_eval__grade=[GEvalGrade(reason="ok", score=5, passed=False)]
    )
    judge.delay = 0.01
    ev = GEvalEvaluator("Is correct.", judge, cache=False)
    results = await asyncio.gather(*(ev.evaluate(f"output {i}", "", "q") for i in range(8)))
    assert judge.tasks().count("g_eval.steps") == 1
    assert all(r.score == 0.5 and r.passed is False for r in results)


async def test_g_eval_given_steps_skip_the_first_call():
    judge = ScriptedJudge(g_eval__grade=[GEvalGrade(reason="ok", score=8, passed=True)])
    ev = GEvalEvaluator("Is correct.", judge, steps=["Check facts."], threshold=0.9, cache=False)
    result = await ev.evaluate("x", "", "q")
    assert judge.tasks() == ["g_eval.grade"]
    assert result.passed is False  # the judge passed it at 8/10, below the stacked threshold 0.9


async def test_g_eval_steps_failure_and_retry_next_time():
    judge = ScriptedJudge(
        g_eval__steps=[JudgeError("timed out", provider="openai", model="m", status="timeout"), _STEPS],
        g_eval__grade=[GEvalGrade(reason="ok", score=6, passed=True)],
    )
    ev = GEvalEvaluator("Is correct.", judge, cache=False)
    failed = await ev.evaluate("x", "", "q")
    assert failed.status == "timeout" and failed.score is None
    ok = await ev.evaluate("x", "", "q")
    assert ok.score == pytest.approx(0.6)


def test_g_eval_validates_steps():
    with pytest.raises(ConfigError):
        GEvalEvaluator("criteria", ScriptedJudge(), steps=[])
    with pytest.raises(ConfigError):
        GEvalEvaluator("criteria", ScriptedJudge(), steps="one step")  # type: ignore[arg-type]


def test_llm_evaluators_sync_twin_leaves_a_users_judge_open():
    judge = ScriptedJudge(llm_rubric__grade=[RubricGrade(reason="fine", passed=True, score=1.0)])
    ev = LLMRubricEvaluator("Is fine", judge, cache=False)
    assert ev.evaluate_sync("x").passed
    assert judge.closed == 0  # the user's judge is theirs to close: the next run must still work


async def test_disk_cache_serves_a_repeat_run(tmp_path):
    calls: list[Any] = []

    def grade(request: JudgeRequest) -> RubricGrade:
        calls.append(request)
        return RubricGrade(reason="fine", passed=True, score=1.0)

    before = LLMRubricEvaluator("Is fine", ScriptedJudge(llm_rubric__grade=[grade]), cache=tmp_path)
    first = await before.evaluate("x")
    await before.judge.aclose()
    after = LLMRubricEvaluator("Is fine", ScriptedJudge(llm_rubric__grade=[grade]), cache=tmp_path)
    again = await after.evaluate("x")
    await after.judge.aclose()
    assert len(calls) == 1 and first.score == again.score == 1.0
    assert again.usage.cached_calls == 1
