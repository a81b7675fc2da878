import asyncio
import time

import pytest

from ragmetrics import ConfigError, InvalidInputError, Sample
from ragmetrics.metrics.evaluators.factory import (
    ContainsEvaluator,
    ExactMatchEvaluator,
    F1Evaluator,
    LevenshteinEvaluator,
    RegexMatchEvaluator,
)

# -- exact_match (Synaptic examples) ---------------------------------------------------------------


async def test_exact_match_is_case_sensitive_by_default():
    ev = ExactMatchEvaluator()
    result = await ev.evaluate("hello", "hello", "")
    assert result.passed and result.score == 1.0
    result = await ev.evaluate("Hello", "hello", "")
    assert result.passed is False and result.score == 0.0
    assert "'hello'" in result.reasoning and "'Hello'" in result.reasoning  # expected vs received
    assert "letter case" in result.reasoning


async def test_exact_match_case_insensitive_and_trimmed():
    assert (await ExactMatchEvaluator.case_insensitive().evaluate("Hello", "hello")).passed
    assert (await ExactMatchEvaluator().evaluate("  hello\n", "hello ")).passed


async def test_exact_match_negate_asserts_must_not_equal():
    ev = ExactMatchEvaluator(negate=True)
    same = await ev.evaluate("yes", "yes")
    other = await ev.evaluate("no", "yes")
    assert (same.score, same.passed) == (0.0, False)
    assert (other.score, other.passed) == (1.0, True)
    assert same.reasoning.startswith("Negated")


def test_exact_match_sync_twin_outside_a_loop():
    assert ExactMatchEvaluator().evaluate_sync("a", "a").passed


async def test_exact_match_sync_twin_inside_a_running_loop():
    assert ExactMatchEvaluator().evaluate_sync("a", "a").passed


async def test_evaluate_sample_maps_answer_reference_question():
    sample = Sample(question="q?", answer="Paris", reference="paris")
    assert (await ExactMatchEvaluator.case_insensitive().evaluate_sample(sample)).passed
    with pytest.raises(InvalidInputError, match="field 'reference' must be a non-empty string"):
        await ExactMatchEvaluator().evaluate_sample(Sample(answer="x"))  # no silent 0 (issue 13)


async def test_wrong_argument_types_raise_invalid_input():
    with pytest.raises(InvalidInputError, match="prediction"):
        await ExactMatchEvaluator().evaluate(None, "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="reference"):
        await ExactMatchEvaluator().evaluate("x", 3)  # type: ignore[arg-type]


def test_options_are_validated_at_construction():
    with pytest.raises(ConfigError, match="case_sensitive"):
        ExactMatchEvaluator(case_sensitive="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="threshold"):
        LevenshteinEvaluator(threshold=1.5)
    with pytest.raises(ConfigError, match="threshold"):
        F1Evaluator(threshold=float("nan"))
    with pytest.raises(ConfigError, match="negate"):
        F1Evaluator(negate=1)  # type: ignore[arg-type]


# -- contains --------------------------------------------------------------------------------------


async def test_contains_scores_fraction_of_terms_with_fixed_pass_mark():
    ev = ContainsEvaluator()
    result = await ev.evaluate("Paris is the capital of France, in Europe", "paris, france, europe, asia")
    assert result.score == 0.75
    assert result.passed is False and result.threshold == 0.9
    assert "'asia'" in result.reasoning
    assert (await ev.evaluate("PARIS", "paris")).passed  # case-insensitive by default
    assert not (await ContainsEvaluator(case_sensitive=True).evaluate("PARIS", "paris")).passed


async def test_contains_negate_means_must_not_contain():
    ev = ContainsEvaluator(negate=True)
    assert (await ev.evaluate("all good", "error")).passed
    assert not (await ev.evaluate("an Error happened", "error")).passed


async def test_contains_without_terms_has_no_score():
    result = await ContainsEvaluator().evaluate("anything", " , ")
    assert result.score is None and result.status == "invalid_input" and result.passed is None


# -- regex -----------------------------------------------------------------------------------------


async def test_regex_synaptic_date_example():
    ev = RegexMatchEvaluator(r"\d{4}-\d{2}-\d{2}")
    assert (await ev.evaluate("2024-01-15", "", "")).passed
    assert not (await ev.evaluate("January 15, 2024", "", "")).passed


def test_invalid_regex_is_a_config_error_at_construction():
    with pytest.raises(ConfigError, match="missing \\) at position 1"):
        RegexMatchEvaluator("(")
    with pytest.raises(ConfigError):
        RegexMatchEvaluator("a{2,1}")
    with pytest.raises(ConfigError, match="timeout"):
        RegexMatchEvaluator("a", timeout=0)


async def test_regex_is_case_insensitive_by_default():
    assert (await RegexMatchEvaluator("^paris$").evaluate("PARIS")).passed
    assert not (await RegexMatchEvaluator("^paris$", case_sensitive=True).evaluate("PARIS")).passed


async def test_regex_catastrophic_pattern_finishes_quickly():
    started = time.perf_counter()
    result = await RegexMatchEvaluator(r"(a+)+$").evaluate("a" * 50 + "!")
    assert time.perf_counter() - started < 5
    assert result.status in ("ok", "timeout") and result.passed is not True


async def test_regex_timeout_is_a_failed_evaluation_with_a_reason():
    started = time.perf_counter()
    result = await RegexMatchEvaluator(r"(a|aa)+$", timeout=0.2).evaluate("a" * 60 + "!")
    assert time.perf_counter() - started < 5
    assert result.status == "timeout" and result.score is None and result.passed is None
    assert "did not finish within 0.2 s" in (result.message or "")


# -- levenshtein and f1 ----------------------------------------------------------------------------


async def test_levenshtein_scores_one_minus_normalised_distance():
    result = await LevenshteinEvaluator().evaluate("kitten", "sitting")
    assert result.score == pytest.approx(1 - 3 / 7)
    assert result.threshold == 0.9 and result.passed is False
    assert (await LevenshteinEvaluator().evaluate("Hello ", "hello")).score == 1.0
    assert (await LevenshteinEvaluator(case_sensitive=True).evaluate("Hello", "hello")).score == 0.8
    assert (await LevenshteinEvaluator().evaluate("", "")).score == 1.0


async def test_f1_uses_unique_whitespace_tokens():
    ev = F1Evaluator()
    # unique tokens: {the, cat, sat} vs {the, cat, on, mat}: 2 shared; P=2/3, R=2/4 -> F1 = 4/7
    result = await ev.evaluate("the the cat sat", "The cat on mat")
    assert result.score == pytest.approx(4 / 7)
    assert (await ev.evaluate("", "")).score == 1.0
    assert (await ev.evaluate("a", "")).score == 0.0
    assert (await ev.evaluate("Paris.", "Paris")).score == 0.0  # punctuation stays on the token


async def test_evaluators_can_run_concurrently():
    ev = LevenshteinEvaluator()
    results = await asyncio.gather(*(ev.evaluate(str(i), str(i)) for i in range(50)))
    assert all(r.score == 1.0 for r in results)
