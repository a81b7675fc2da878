"""Suites with the RAG metrics (issue 13): a case's input, contexts, expected value and output as a sample.

Every judge here is the fake server (the offline judge answering over real loopback HTTP), so the
calls a suite makes are counted where they arrive, and each score is checked against the pipeline's
score for the same sample rather than hard-coded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ragmetrics import ConfigError, EvaluationPipeline, FaithfulnessMetric
from ragmetrics.metrics import RAG_METRICS
from ragmetrics.metrics.evaluators.base import DEFAULT_THRESHOLD
from ragmetrics.regression.suite import Case, Check, Suite, run_suite
from ragmetrics.testing import FakeLLMServer

SEVEN = list(RAG_METRICS)
QUESTION = "What is the capital of France?"
CONTEXTS = ["Bananas are yellow.", "Paris is the capital of France. Paris lies on the Seine."]
REFERENCE = "Paris is the capital of France. Paris lies on the Seine."
ANSWER = "Paris is the capital of France. Paris has a big airport."


@pytest.fixture(autouse=True)
def configured_base_url(fake_llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake server is the user's configured OpenAI base URL, so the suites here may name it."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm_server.openai_base_url)


def suite_data(spec: str, **case: object) -> dict[str, object]:
    base = {
        "id": "rag",
        "input": QUESTION,
        "contexts": CONTEXTS,
        "expected": REFERENCE,
        "output": ANSWER,
        "evaluators": SEVEN,
    }
    return {"name": "rag", "llm": spec, "cases": [{**base, **case}]}


async def test_a_case_scores_the_seven_rag_metrics_as_the_pipeline_does_on_three_calls(
    openai_spec: str, fake_llm_server: FakeLLMServer
) -> None:
    suite = Suite.from_data(suite_data(openai_spec))
    assert [c.evaluator.name for c in suite.cases[0].evaluators] == SEVEN
    fake_llm_server.reset()
    outcome = await run_suite(suite, progress=False, canaries=False)  # the count is the case's own
    calls = fake_llm_server.calls.total()
    assert calls == 3  # the answer's and the reference's claims extracted, one verification of both

    fake_llm_server.reset()
    row = {"question": QUESTION, "answer": ANSWER, "contexts": CONTEXTS, "reference": REFERENCE}
    metrics = [RAG_METRICS[n](llm=openai_spec, cache=False) for n in SEVEN]
    expected = EvaluationPipeline(metrics, progress=False).run([row])[0]
    (case,) = outcome.cases
    assert {r.name: r.score for r in case.results} == expected.scores
    assert all(r.status == "ok" and r.threshold == DEFAULT_THRESHOLD for r in case.results)
    assert case.passed is all(s >= DEFAULT_THRESHOLD for s in expected.scores.values() if s is not None)


async def test_thresholds_apply_as_for_the_evaluators(openai_spec: str) -> None:
    data = suite_data(openai_spec, evaluators=[{"type": "context_recall", "threshold": 0.0}])
    low = (await run_suite(Suite.from_data(data), progress=False)).cases[0]
    (result,) = low.results
    assert result.threshold == 0.0 and result.passed is True and low.passed
    data = suite_data(openai_spec, evaluators=[{"type": "answer_correctness", "threshold": 1.0}])
    (result,) = (await run_suite(Suite.from_data(data), progress=False)).cases[0].results
    assert result.passed is (result.score == 1.0)  # F1 below 1: the threshold applies to the score


@pytest.mark.parametrize(
    ("missing", "field", "metrics"),
    [
        ("contexts", "contexts", ["faithfulness", "context_recall", "context_precision"]),
        ("expected", "expected", ["context_recall", "answer_correctness"]),
        ("input", "input", ["relevancy", "context_relevancy"]),
    ],
)
async def test_a_missing_field_is_invalid_input_naming_it_and_the_rest_score(
    openai_spec: str, missing: str, field: str, metrics: list[str]
) -> None:
    raw = suite_data(openai_spec)
    case = raw["cases"][0]  # type: ignore[index]
    if missing == "input":
        case["input"] = "   "
    else:
        del case[missing]
    outcome = await run_suite(Suite.from_data(raw), progress=False)
    (scored,) = outcome.cases
    assert not scored.passed and not scored.errors
    by_name = {r.name: r for r in scored.results}
    for name in metrics:
        result = by_name[name]
        assert result.score is None and result.status == "invalid_input" and result.passed is None
        assert f"field '{field}'" in (result.message or "") and name in (result.message or "")
    others = [r for r in scored.results if r.name not in metrics and r.status == "ok"]
    assert others and all(r.score is not None for r in others)


async def test_explicit_empty_contexts_are_scored_not_refused(openai_spec: str) -> None:
    data = suite_data(openai_spec, contexts=[], evaluators=["faithfulness"])
    (result,) = (await run_suite(Suite.from_data(data), progress=False)).cases[0].results
    assert result.status == "ok" and result.score == 0.0  # every claim unverifiable, not invalid input


async def test_an_outputs_function_may_return_what_it_retrieved(openai_spec: str) -> None:
    metric = FaithfulnessMetric(llm=openai_spec, threshold=0.5, cache=False)
    case = Case(id="app", input=QUESTION, evaluators=(metric,))  # no contexts on the case

    def app(question: str) -> dict[str, object]:
        return {"output": "Paris is the capital of France.", "contexts": CONTEXTS[1:]}

    (outcome,) = (await run_suite(Suite(cases=(case,)), app, progress=False)).cases
    (result,) = outcome.results
    assert result.status == "ok" and result.score == 1.0 and outcome.passed
    (bare,) = (await run_suite(Suite(cases=(case,)), ["Paris is the capital of France."])).cases
    assert bare.results[0].status == "invalid_input"  # no contexts anywhere: said, not scored 0


async def test_a_check_value_is_the_metrics_own_reference(openai_spec: str) -> None:
    recall = RAG_METRICS["context_recall"](llm=openai_spec, threshold=0.5, cache=False)
    case = Case(
        id="own",
        input=QUESTION,
        contexts=CONTEXTS,
        evaluators=(Check(evaluator=recall, value="Bananas are yellow."),),
        output=ANSWER,
    )
    (result,) = (await run_suite(Suite(cases=(case,)), progress=False)).cases[0].results
    assert result.status == "ok" and [c.text for c in result.claims] == ["Bananas are yellow."]


def test_bad_rag_entries_are_config_errors_naming_the_field(openai_spec: str) -> None:
    with pytest.raises(ConfigError, match=r"cases\[0\]\.evaluators\[0\]: .*pattern"):
        Suite.from_data(suite_data(openai_spec, evaluators=[{"type": "faithfulness", "pattern": "x"}]))
    with pytest.raises(ConfigError, match=r"cases\[0\]\.evaluators\[0\]: .*threshold"):
        Suite.from_data(suite_data(openai_spec, evaluators=[{"type": "context_recall", "threshold": 2}]))
    with pytest.raises(ConfigError, match=r"cases\[0\]\.contexts: must be a list of strings"):
        Suite.from_data(suite_data(openai_spec, contexts="Paris is the capital."))
    with pytest.raises(ConfigError, match="no threshold"):
        Case(input=QUESTION, evaluators=(FaithfulnessMetric(llm=openai_spec),))


def test_ragmetrics_test_reports_each_rag_metric_of_a_suite_file(openai_spec: str, tmp_path) -> None:
    data = suite_data(
        openai_spec, evaluators=["context_recall", {"type": "context_precision", "threshold": 0.4}]
    )
    (tmp_path / "rag.json").write_text(json.dumps(data), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", "test", "rag.json", "--json", "out.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads((tmp_path / "out.json").read_text())
    (case,) = report["cases"]
    assert case["name"] == "rag.json::rag" and set(case["metrics"]) == {"context_recall", "context_precision"}
    assert proc.returncode == (0 if case["outcome"] == "passed" else 1), proc.stdout + proc.stderr
