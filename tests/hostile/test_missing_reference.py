"""Evaluators that compare with a reference, on rows and suite cases without one (issue 13).

Before, ``rouge``, ``bleu``, ``exact_match``, ``f1``, ``levenshtein`` and ``cosine_similarity`` scored
0.000 with status ``ok`` on a pipeline row without a reference, and ``contains`` / ``json_match`` gave
an ``invalid_input`` that named no field: a silent 0 that looked like a bad answer.
"""

from __future__ import annotations

import pytest

from ragmetrics.errors import InvalidInputError
from ragmetrics.metrics.evaluators.factory import EVALUATOR_TYPES, make_evaluator
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.regression.suite import Case, Check, Suite, run_suite
from ragmetrics.sample import Sample

NEEDS_REFERENCE = [
    "exact_match",
    "contains",
    "json_match",
    "rouge",
    "bleu",
    "f1",
    "levenshtein",
    "cosine_similarity",
]


def build(name: str):
    return make_evaluator(name, embeddings="fake") if name == "cosine_similarity" else make_evaluator(name)


def test_the_evaluators_that_need_a_reference_say_so():
    assert sorted(n for n, cls in EVALUATOR_TYPES.items() if cls.needs.reference) == sorted(NEEDS_REFERENCE)


@pytest.mark.parametrize("name", NEEDS_REFERENCE)
def test_a_row_without_a_reference_is_invalid_input_naming_the_field(name: str):
    rows = [
        {"id": "none", "answer": '{"a": 1}'},
        {"id": "blank", "answer": '{"a": 1}', "reference": "  \n"},
        {"id": "given", "answer": '{"a": 1}', "reference": '{"a": 1}'},
    ]
    results = EvaluationPipeline([build(name)], progress=False).run(rows)
    for record in results[:2]:
        assert record.scores[name] is None, f"{name} scored {record.scores[name]} with no reference"
        (error,) = record.errors
        assert error.status == "invalid_input" and error.field == "reference" and error.metric == name
        assert "field 'reference'" in error.message and name in error.message
    assert results[2].scores[name] is not None and not results[2].errors, results[2].errors


@pytest.mark.parametrize("name", NEEDS_REFERENCE)
async def test_evaluate_sample_refuses_a_missing_reference(name: str):
    with pytest.raises(InvalidInputError, match="field 'reference'") as caught:
        await build(name).evaluate_sample(Sample(answer="Paris"))
    assert caught.value.field == "reference"


def test_the_other_rows_and_metrics_still_score():
    metrics = [make_evaluator("rouge"), make_evaluator("json_validity"), make_evaluator("regex", pattern="P")]
    results = EvaluationPipeline(metrics, progress=False).run(
        [{"answer": "Paris"}, {"answer": "P", "reference": "P"}]
    )
    assert results[0].scores["rouge"] is None
    assert results[0].scores["json_validity"] == 0.0 and results[0].scores["regex"] == 1.0
    assert results[1].scores["rouge"] == 1.0


async def test_a_suite_case_without_an_expected_value_is_invalid_input():
    suite = Suite(
        cases=(
            Case(id="bare", input="Capital of France?", evaluators=(make_evaluator("rouge"),)),
            Case(
                id="own-value",
                input="Capital of France?",
                evaluators=(Check(evaluator=make_evaluator("exact_match"), value="Paris"),),
            ),
            Case(
                id="regex-needs-none",
                input="Capital of France?",
                evaluators=(make_evaluator("regex", pattern="^Par"),),
            ),
        )
    )
    outcome = await run_suite(suite, {"bare": "Paris", "own-value": "Paris", "regex-needs-none": "Paris"})
    bare, own, regex = outcome.cases
    (result,) = bare.results
    assert result.score is None and result.status == "invalid_input" and result.passed is None
    assert "field 'expected'" in (result.message or "") and "rouge" in (result.message or "")
    assert not bare.passed
    assert own.passed and own.results[0].score == 1.0
    assert regex.passed


def test_a_suite_file_without_expected_fails_that_case_only(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text(
        "cases:\n"
        "  - {id: a, input: q, output: Paris, evaluators: [f1]}\n"
        "  - {id: b, input: q, output: Paris, expected: Paris, evaluators: [f1]}\n"
    )
    from ragmetrics._aio import run_sync

    outcome = run_sync(run_suite(Suite.from_file(path), progress=False))
    assert [c.passed for c in outcome.cases] == [False, True]
    assert outcome.cases[0].results[0].status == "invalid_input"
