import json

import pytest

from ragmetrics import ConfigError
from ragmetrics.judge import JudgeReply, JudgeRequest
from ragmetrics.metrics.evaluators.factory import ContainsEvaluator, ExactMatchEvaluator, RegexMatchEvaluator
from ragmetrics.metrics.evaluators.rubric import RubricGrade
from ragmetrics.regression.suite import Case, Check, Suite, run_suite
from ragmetrics.score import JudgeInfo, Usage

SUITE_YAML = """
name: capitals
embeddings: fake
cases:
  - id: france
    input: What is the capital of France?
    expected: Paris
    passing: all
    evaluators:
      - exact_match
      - type: contains
        value: Paris, France
      - {type: rouge, threshold: 0.5}
  - id: germany
    input: What is the capital of Germany?
    expected: Berlin
    passing: any
    evaluators:
      - {type: exact_match, case_sensitive: false}
      - {type: regex, value: "^Bonn$"}
  - input: Give me JSON
    expected: {"city": "Rome", "country": "Italy"}
    evaluators:
      - json_match
      - {type: cosine_similarity, threshold: 0.1}
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_suite_loads_from_yaml(tmp_path):
    suite = Suite.from_file(write(tmp_path, "capitals.yaml", SUITE_YAML))
    assert suite.name == "capitals" and [c.id for c in suite.cases] == ["france", "germany", "case-3"]
    france = suite.cases[0]
    assert [c.evaluator.name for c in france.evaluators] == ["exact_match", "contains", "rouge"]
    assert france.evaluators[1].value == "Paris, France"
    assert suite.cases[1].passing == "any"
    assert suite.cases[2].expected == {"city": "Rome", "country": "Italy"}


async def test_run_suite_scores_each_evaluator_and_applies_passing_logic(tmp_path):
    suite = Suite.from_file(write(tmp_path, "capitals.yml", SUITE_YAML))
    outcome = await run_suite(
        suite,
        {
            "france": "Paris",  # exact ok, contains 1 of 2 = 0.5 fails -> all fails
            "germany": "berlin",  # case-insensitive exact match passes -> any passes
            "case-3": '{"city": "Rome", "country": "Italy"}',
        },
    )
    france, germany, rome = outcome.cases
    assert [r.name for r in france.results] == ["exact_match", "contains", "rouge"]
    assert france.results[1].score == 0.5 and france.passed is False
    assert germany.passed is True and germany.results[1].passed is False
    assert rome.results[0].score == 1.0 and rome.passed
    assert (outcome.passed, outcome.failed) == (2, 1)
    # no model-graded evaluator here: nothing billed (the fake embedder's one request is counted, free)
    assert outcome.judge_usage.prompt_tokens == 0 and outcome.judge_usage.cost_usd == 0.0


async def test_outputs_as_list_function_or_recorded():
    case = Case(id="a", input="2+2?", expected="4", evaluators=(ExactMatchEvaluator(),), output="4")
    suite = Suite(cases=(case,))
    assert (await run_suite(suite)).cases[0].passed
    assert not (await run_suite(suite, ["5"])).cases[0].passed

    async def model(prompt: str) -> str:
        return "4"

    assert (await run_suite(suite, model)).cases[0].passed
    assert (await run_suite(suite, lambda prompt: "4")).cases[0].passed


async def test_missing_output_fails_only_that_case():
    suite = Suite(
        cases=(
            Case(id="a", input="x", expected="x", evaluators=(ExactMatchEvaluator(),)),
            Case(id="b", input="y", expected="y", evaluators=(ExactMatchEvaluator(),)),
        )
    )
    outcome = await run_suite(suite, {"b": "y"})
    assert outcome.cases[0].passed is False and "no output" in outcome.cases[0].errors[0]
    assert outcome.cases[1].passed is True


async def test_result_without_score_never_passes():
    slow = RegexMatchEvaluator(r"(a|aa)+$", timeout=0.05)
    suite = Suite(cases=(Case(id="r", input="x", evaluators=(slow,), passing="any"),))
    outcome = await run_suite(suite, ["a" * 60 + "!"])
    assert outcome.cases[0].results[0].status == "timeout" and outcome.cases[0].passed is False


async def test_check_values_and_structured_expected():
    case = Case(
        input="q",
        expected={"a": 1},
        evaluators=(
            Check(evaluator=ContainsEvaluator(), value="a"),
            ExactMatchEvaluator(),
        ),
    )
    assert case.reference_for(case.evaluators[0]) == "a"
    assert case.reference_for(case.evaluators[1]) == '{"a": 1}'


class RubricJudge:
    def __init__(self) -> None:
        self.info = JudgeInfo(provider="openai", model="scripted")

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        return JudgeReply(
            value=RubricGrade(reason="ok", passed=True, score=1.0),
            usage=Usage(calls=1, prompt_tokens=50, completion_tokens=5),
        )

    async def aclose(self) -> None:
        pass


async def test_judge_usage_is_reported_separately(tmp_path):
    path = write(
        tmp_path,
        "s.json",
        json.dumps(
            {
                "cases": [
                    {
                        "id": "p",
                        "input": "hi",
                        "evaluators": [{"type": "llm_rubric", "value": "Is polite", "cache": False}],
                    },
                ]
            }
        ),
    )
    suite = Suite.from_file(path, llm=RubricJudge())
    outcome = await run_suite(suite, ["Hello there!"])
    assert outcome.cases[0].passed and outcome.judge_usage.prompt_tokens == 50


def test_regex_case_uses_expected_as_pattern(tmp_path):
    suite = Suite.from_data([{"input": "date?", "expected": r"\d{4}", "evaluators": [{"type": "regex"}]}])
    assert suite.cases[0].evaluators[0].evaluator.pattern == r"\d{4}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cases: [", r"bad\.yaml: invalid YAML at line 1"),
        ("[]", r"'cases' must be a non-empty list"),
        ("cases:\n  - {input: x}", r"cases\[0\]\.evaluators: must be a non-empty list"),
        ("cases:\n  - {evaluators: [exact_match]}", r"cases\[0\]: missing 'input'"),
        (
            "cases:\n  - {input: x, evaluators: [rouge_l]}",
            r"cases\[0\]\.evaluators\[0\]: unknown evaluator type "
            r"'rouge_l' \(did you mean 'rouge'\?\)",
        ),
        (
            "cases:\n  - {input: x, evaluators: [{type: rouge, threshold: 2}]}",
            r"cases\[0\]\.evaluators\[0\]: rouge: threshold must lie in \[0, 1\]",
        ),
        (
            "cases:\n  - {input: x, evaluators: [{type: regex, value: '('}]}",
            r"evaluators\[0\]: regex: invalid pattern",
        ),
        ("cases:\n  - {input: x, evaluators: [{case_sensitive: true}]}", r"evaluators\[0\]: missing 'type'"),
        (
            "cases:\n  - {input: x, passing: most, evaluators: [f1]}",
            r"cases\[0\]\.passing: must be 'all' or 'any'",
        ),
        ("cases:\n  - {input: x, color: red, evaluators: [f1]}", r"cases\[0\]: unknown field"),
        (
            "cases:\n  - {id: a, input: x, evaluators: [f1]}\n  - {id: a, input: y, evaluators: [f1]}",
            r"duplicate case id 'a'",
        ),
        ("cases:\n  - {input: 3, evaluators: [f1]}", r"cases\[0\]\.input: must be a string"),
        ("cases:\n  - {input: x, evaluators: [{type: custom, value: '(o) =>', negate: true}]}", r"negate"),
    ],
)
def test_load_errors_name_file_and_field(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message) as info:
        Suite.from_file(write(tmp_path, "bad.yaml", text))
    assert "bad.yaml" in str(info.value)


def test_missing_file_and_bad_json(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the suite file"):
        Suite.from_file(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match=r"bad\.json: invalid JSON at line 1 column 2"):
        Suite.from_file(write(tmp_path, "bad.json", "{oops"))


def test_case_validation():
    with pytest.raises(ConfigError, match="at least one evaluator"):
        Case(input="x", evaluators=())
    with pytest.raises(ConfigError, match="passing"):
        Case(input="x", evaluators=(ExactMatchEvaluator(),), passing="most")  # type: ignore[arg-type]


async def test_run_suite_validates_concurrency():
    suite = Suite(cases=(Case(input="x", evaluators=(ExactMatchEvaluator(),), output="x"),))
    with pytest.raises(ConfigError):
        await run_suite(suite, max_concurrency=0)


async def test_suite_reports_model_usage_apart_from_the_judge_and_shares_one_judge(tmp_path):
    from ragmetrics.regression.suite import Suite, run_suite

    suite = Suite.from_data(
        {
            "name": "s",
            "cases": [
                {
                    "id": f"c{i}",
                    "input": f"Capital of France? ({i})",
                    "expected": "Paris",
                    "evaluators": [
                        {"type": "llm_judge", "llm": "offline"},
                        {"type": "llm_rubric", "llm": "offline", "value": "mentions Paris"},
                    ],
                }
                for i in range(3)
            ],
        }
    )

    async def model(question: str) -> dict:
        return {
            "output": "Paris is the capital of France.",
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.001},
        }

    outcome = await run_suite(suite, model, progress=False)
    assert outcome.model_usage.prompt_tokens == 30 and outcome.model_usage.cost_usd == pytest.approx(0.003)
    assert outcome.judge_usage.prompt_tokens == 0, "the offline judge spends nothing"
    judges = {id(c.evaluator.judge) for case in suite.cases for c in case.evaluators}
    assert len(judges) == 1, "evaluators naming the same judge share one caching judge"
