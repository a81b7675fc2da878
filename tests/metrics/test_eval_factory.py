"""Type names, config options, and properties every deterministic evaluator keeps."""

import asyncio
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics import ConfigError
from ragmetrics.metrics.base import Metric
from ragmetrics.metrics.evaluators.factory import (
    EVALUATOR_TYPES,
    Evaluator,
    evaluator_options,
    make_evaluator,
)
from ragmetrics.score import MetricResult

NAMES = [
    "exact_match",
    "contains",
    "regex",
    "json_validity",
    "json_match",
    "html_validation",
    "rouge",
    "bleu",
    "f1",
    "levenshtein",
    "cosine_similarity",
    "llm_judge",
    "llm_rubric",
    "g_eval",
    "custom",
]


def test_the_fifteen_type_names():
    assert list(EVALUATOR_TYPES) == NAMES
    for name, cls in EVALUATOR_TYPES.items():
        assert cls.name == name and issubclass(cls, Evaluator)


def test_reexports():
    from ragmetrics.metrics.evaluators.factory import EvalResult, ExactMatchEvaluator  # noqa: F401

    assert EvalResult is MetricResult


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("exact_match", {"case_sensitive": False}),
        ("contains", {"negate": True}),
        ("regex", {"pattern": "^a"}),
        ("regex", {"value": "^a", "case_sensitive": True}),
        ("json_validity", {}),
        ("json_match", {"negate": True}),
        ("html_validation", {"allowed_tags": ["p"], "threshold": 0.5}),
        ("rouge", {"threshold": 0.3}),
        ("bleu", {"case_sensitive": True}),
        ("f1", {}),
        ("levenshtein", {"negate": True}),
        ("cosine_similarity", {"embeddings": "fake", "threshold": 0.8}),
        ("llm_judge", {"llm": "offline"}),
        ("llm_rubric", {"value": "Is polite", "llm": "offline", "temperature": 0.0}),
        ("g_eval", {"criteria": "Is correct", "llm": "offline", "threshold": 0.5}),
        ("custom", {"function": "(o) => 1", "threshold": 0.5}),
    ],
)
def test_make_evaluator_builds_each_type(name, config):
    ev = make_evaluator(name, **config)
    assert ev.name == name and isinstance(ev, Metric)


def test_make_evaluator_errors_name_what_is_accepted():
    with pytest.raises(ConfigError, match="did you mean 'levenshtein'"):
        make_evaluator("levenstein")
    with pytest.raises(
        ConfigError, match="exact_match: unknown option.*threshold.*accepted: case_sensitive, negate"
    ):
        make_evaluator("exact_match", threshold=0.5)
    with pytest.raises(ConfigError, match="json_match: unknown option.*threshold"):
        make_evaluator("json_match", threshold=0.5)  # fixed pass mark
    with pytest.raises(ConfigError, match="json_validity: unknown option.*case_sensitive"):
        make_evaluator("json_validity", case_sensitive=True)
    with pytest.raises(ConfigError, match="missing required option.*pattern"):
        make_evaluator("regex")
    with pytest.raises(ConfigError, match="'pattern' or 'value', not both"):
        make_evaluator("regex", pattern="a", value="b")
    with pytest.raises(ConfigError, match="unknown option.*colour"):
        make_evaluator("llm_rubric", rubric="x", colour="red")
    with pytest.raises(ConfigError):
        make_evaluator(3)  # type: ignore[arg-type]
    assert "temperature" in evaluator_options("g_eval")


def test_fixed_and_configurable_pass_marks():
    assert make_evaluator("contains").threshold == 0.9
    assert make_evaluator("json_match").threshold == 0.9
    assert make_evaluator("exact_match").threshold == 1.0
    for name in ("rouge", "bleu", "f1", "levenshtein", "html_validation"):
        assert make_evaluator(name).threshold == 0.9
    assert make_evaluator("custom", function="(o) => 1").threshold == 0.9
    assert make_evaluator("cosine_similarity", embeddings="fake").threshold == 0.9
    assert make_evaluator("llm_rubric", rubric="x", llm="offline").threshold is None


def test_case_sensitivity_defaults():
    assert make_evaluator("exact_match").case_sensitive is True
    for name in ("contains", "rouge", "bleu", "f1", "levenshtein"):
        assert make_evaluator(name).case_sensitive is False
    assert make_evaluator("regex", pattern="a").case_sensitive is False


# -- properties ------------------------------------------------------------------------------------

DETERMINISTIC = [
    make_evaluator("exact_match"),
    make_evaluator("contains"),
    make_evaluator("regex", pattern="a+b"),
    make_evaluator("json_validity"),
    make_evaluator("json_match"),
    make_evaluator("html_validation"),
    make_evaluator("rouge"),
    make_evaluator("bleu"),
    make_evaluator("f1"),
    make_evaluator("levenshtein"),
    make_evaluator("cosine_similarity", embeddings="fake"),
]
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60) | st.sampled_from(
    ["", " ", "{}", '{"a": [1, 2]}', "<p>x</p>", "Paris, France", "the cat sat on the mat", "ÄÖÜ ß", "東京"]
)


@settings(max_examples=150, deadline=None)
@given(prediction=texts, reference=texts)
def test_scores_lie_in_unit_interval_and_are_never_nan(prediction, reference):
    async def run() -> list[MetricResult]:
        return [await ev.evaluate(prediction, reference) for ev in DETERMINISTIC]

    for result in asyncio.run(run()):
        if result.score is None:
            assert result.status != "ok" and result.message
        else:
            assert 0.0 <= result.score <= 1.0 and not math.isnan(result.score)
            assert result.passed == (result.score >= result.threshold)


@settings(max_examples=100, deadline=None)
@given(text=texts)
def test_identity_scores_one(text):
    async def run() -> list[MetricResult]:
        names = ("exact_match", "rouge", "f1", "levenshtein")
        return [await make_evaluator(n).evaluate(text, text) for n in names]

    assert all(r.score == 1.0 for r in asyncio.run(run()))


@settings(max_examples=100, deadline=None)
@given(a=texts, b=texts)
def test_symmetric_evaluators(a, b):
    async def run() -> list[tuple[float | None, float | None]]:
        out = []
        for name in ("f1", "levenshtein", "rouge"):
            ev = make_evaluator(name)
            out.append(((await ev.evaluate(a, b)).score, (await ev.evaluate(b, a)).score))
        return out

    for x, y in asyncio.run(run()):
        assert x == pytest.approx(y, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(a=texts, b=texts)
def test_negate_is_one_minus_score(a, b):
    async def run() -> list[tuple[MetricResult, MetricResult]]:
        pairs = []
        for name in ("rouge", "bleu", "f1", "levenshtein", "contains", "exact_match"):
            plain, negated = make_evaluator(name), make_evaluator(name, negate=True)
            pairs.append((await plain.evaluate(a, b), await negated.evaluate(a, b)))
        return pairs

    for plain, negated in asyncio.run(run()):
        if plain.score is None:
            assert negated.score is None
        else:
            assert negated.score == pytest.approx(1.0 - plain.score)
            assert negated.passed == (negated.score >= negated.threshold)


def test_one_evaluator_table_the_others_are_read_from_it():
    from ragmetrics.metrics import (
        BUILTIN_METRICS,
        BY_NAME,
        CONVERSATION_METRICS,
        RAG_METRICS,
        metric_from_name,
    )
    from ragmetrics.metrics.evaluators.factory import PRIMARY_OPTION

    judged = {**RAG_METRICS, **CONVERSATION_METRICS}
    assert {n: c for n, c in BUILTIN_METRICS.items() if n not in judged} == dict(EVALUATOR_TYPES)
    by_name = {"exact_match", "contains", "json_validity", "json_match", "html_validation"}
    by_name |= {"rouge", "bleu", "f1", "levenshtein"}
    assert set(BY_NAME) == set(judged) | by_name
    assert dict(PRIMARY_OPTION) == {
        "regex": "pattern",
        "custom": "function",
        "llm_rubric": "rubric",
        "g_eval": "criteria",
    }
    assert {n for n, c in EVALUATOR_TYPES.items() if c.judged} == {"llm_judge", "llm_rubric", "g_eval"}
    assert metric_from_name("rouge", threshold=0.4).threshold == 0.4
    assert metric_from_name("contains", threshold=0.4).threshold == 0.9, "a fixed pass mark stays"
    with pytest.raises(ConfigError, match="unknown metric 'regex'"):
        metric_from_name("regex")


def test_the_evaluator_list_is_written_once_and_every_other_site_derives_from_it():
    import re
    from pathlib import Path

    from ragmetrics.calibration.labels import LABEL_FIELDS
    from ragmetrics.metrics import BUILTIN_METRICS, CONVERSATION_METRICS, RAG_METRICS
    from ragmetrics.metrics.aliases import METRIC_ALIASES
    from ragmetrics.regression.suite import Suite

    assert list(BUILTIN_METRICS) == [*RAG_METRICS, *CONVERSATION_METRICS, *EVALUATOR_TYPES]
    assert set(LABEL_FIELDS) == set(RAG_METRICS), "a label field for every RAG metric, and no other"
    with pytest.raises(ConfigError) as caught:  # the suite's list of known types is the table's
        Suite.from_data([{"input": "x", "evaluators": ["nonesuch"]}])
    known = str(caught.value).split("known types: ", 1)[1]
    assert known == f"{', '.join(BUILTIN_METRICS)} (and {', '.join(METRIC_ALIASES)} as aliases)"
    # No module spells the evaluators out as a list (a run of more than seven type names in a row, as a
    # docstring once listed all 15): a list written by hand would drift from the table.
    package = Path(__file__).resolve().parents[2] / "ragmetrics"
    longest: dict[str, int] = {}
    for path in package.rglob("*.py"):
        run = 0
        for word in re.findall(r"\w+", path.read_text(encoding="utf-8")):
            run = run + 1 if word in EVALUATOR_TYPES else run if word in ("and", "or") else 0
            longest[str(path.relative_to(package))] = max(run, longest.get(str(path.relative_to(package)), 0))
    assert {p: n for p, n in longest.items() if n > 7} == {}, "name the table (EVALUATOR_TYPES) instead"
