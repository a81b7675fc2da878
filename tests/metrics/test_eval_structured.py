import json
import time

import pytest

from ragmetrics import ConfigError
from ragmetrics.metrics.evaluators.factory import (
    HtmlValidationEvaluator,
    JsonMatchEvaluator,
    JsonValidityEvaluator,
)
from ragmetrics.metrics.evaluators.structured import json_key_paths

# -- json_validity ---------------------------------------------------------------------------------


async def test_json_validity_synaptic_examples():
    ev = JsonValidityEvaluator()
    assert (await ev.evaluate('{"key": "value"}', "", "")).passed
    result = await ev.evaluate("not json", "", "")
    assert result.passed is False and result.score == 0.0
    assert result.reasoning.startswith("Invalid JSON: Expecting value: line 1 column 1 (char 0)")
    assert result.details["line"] == 1 and result.details["column"] == 1


async def test_json_validity_rejects_nan_and_explains_fences():
    ev = JsonValidityEvaluator()
    assert not (await ev.evaluate('{"a": NaN}')).passed
    fenced = await ev.evaluate('```json\n{"a": 1}\n```')
    assert not fenced.passed and "code fence" in fenced.reasoning
    preamble = await ev.evaluate('Here is the JSON: {"a": 1}')
    assert not preamble.passed and "text before the JSON" in preamble.reasoning
    trailing = await ev.evaluate('{"a": 1} Hope this helps!')
    assert not trailing.passed and "text after the JSON" in trailing.reasoning


async def test_deeply_nested_json_gives_a_result_not_a_crash():
    deep = "[" * 100_000 + "]" * 100_000
    for ev in (JsonValidityEvaluator(), JsonMatchEvaluator()):
        started = time.perf_counter()
        result = await ev.evaluate(deep, "[]")
        assert time.perf_counter() - started < 5
        assert result.score == 0.0 and "nesting" in result.reasoning
    unclosed = await JsonValidityEvaluator().evaluate("{" * 100_000)
    assert unclosed.score == 0.0
    within = await JsonValidityEvaluator().evaluate("[" * 400 + "]" * 400)
    assert within.passed
    over = await JsonValidityEvaluator(max_depth=10).evaluate("[" * 11 + "]" * 11)
    assert not over.passed and "depth 11 exceeds the limit of 10" in over.reasoning


async def test_huge_outputs_are_refused_with_a_reason():
    result = await JsonValidityEvaluator(max_chars=1000).evaluate("[" + "1," * 1000 + "1]")
    assert result.score is None and result.status == "invalid_input"
    assert "over the limit of 1,000" in (result.message or "")


def test_structured_limits_are_validated():
    with pytest.raises(ConfigError):
        JsonValidityEvaluator(max_depth=0)
    with pytest.raises(ConfigError):
        JsonMatchEvaluator(max_depth=10_000)
    with pytest.raises(ConfigError):
        HtmlValidationEvaluator(max_chars=-1)


# -- json_match ------------------------------------------------------------------------------------


async def test_json_match_identical_and_reordered_keys():
    ev = JsonMatchEvaluator()
    result = await ev.evaluate('{"a": 1, "b": {"c": [1, 2]}}', '{"b": {"c": [1, 2]}, "a": 1.0}')
    assert result.score == 1.0 and result.passed and result.threshold == 0.9


async def test_json_match_measures_against_the_side_with_more_paths():
    ev = JsonMatchEvaluator()
    # expected has 4 paths, output 3: a matches, b[0] matches, b[1] differs, c missing -> 2/4
    result = await ev.evaluate('{"a": 1, "b": [1, 2]}', '{"a": 1, "b": [1, 3], "c": null}')
    assert result.score == 0.5
    assert result.details["missing"] == ["$.c"] and result.details["different"][0]["path"] == "$.b[1]"
    # extra keys lower the score too: 1 of 2
    extra = await ev.evaluate('{"a": 1, "z": 2}', '{"a": 1}')
    assert extra.score == 0.5 and extra.details["extra"] == ["$.z"]


async def test_json_match_arrays_by_index_and_types_are_strict():
    ev = JsonMatchEvaluator()
    assert (await ev.evaluate("[1, 2, 3]", "[3, 2, 1]")).score == pytest.approx(1 / 3)
    assert (await ev.evaluate('{"x": true}', '{"x": 1}')).score == 0.0
    assert (await ev.evaluate('{"x": []}', '{"x": {}}')).score == 0.0
    assert (await ev.evaluate('{"x": "1"}', '{"x": 1}')).score == 0.0
    assert (await ev.evaluate("3", "3")).score == 1.0


async def test_json_match_accepts_a_parsed_expected_value():
    ev = JsonMatchEvaluator()
    assert (await ev.evaluate('{"name": "Ada", "tags": ["x"]}', {"name": "Ada", "tags": ["x"]})).score == 1.0


async def test_json_match_wrapped_output_scores_zero_with_reason():
    ev = JsonMatchEvaluator()
    result = await ev.evaluate('```json\n{"a": 1}\n```', '{"a": 1}')
    assert result.score == 0.0 and "code fence" in result.reasoning
    result = await ev.evaluate('Sure! {"a": 1}', '{"a": 1}')
    assert result.score == 0.0 and "text before the JSON" in result.reasoning


async def test_json_match_bad_expected_value_has_no_score():
    result = await JsonMatchEvaluator().evaluate("{}", "{oops")
    assert result.score is None and result.status == "invalid_input"
    assert "expected value is not valid JSON" in (result.message or "")


async def test_json_match_negate():
    ev = JsonMatchEvaluator(negate=True)
    assert (await ev.evaluate('{"a": 1}', '{"b": 2}')).passed
    assert not (await ev.evaluate('{"a": 1}', '{"a": 1}')).passed


def test_key_paths_are_leaves_with_empty_containers():
    paths = json_key_paths({"a": {"b": [1, {}]}, "c": []})
    assert paths == {("a", "b", 0): 1, ("a", "b", 1): {}, ("c",): []}
    deep = json.loads("[" * 300 + "]" * 300)
    assert len(json_key_paths(deep)) == 1  # iterative: no recursion limit


# -- html_validation -------------------------------------------------------------------------------


async def test_html_all_recognised_elements_pass():
    ev = HtmlValidationEvaluator()
    result = await ev.evaluate("<!DOCTYPE html><html><body><p>Hi <b>there</b><br></p></body></html>")
    assert result.score == 1.0 and result.passed
    assert result.details["elements"] == 5


async def test_html_text_outside_any_element_fails_outright():
    ev = HtmlValidationEvaluator()
    result = await ev.evaluate("Here is your page: <p>hi</p>")
    assert result.score == 0.0 and "Text outside any element" in result.reasoning
    after = await ev.evaluate("<p>hi</p> trailing words")
    assert after.score == 0.0
    fenced = await ev.evaluate("```html\n<p>hi</p>\n```")
    assert fenced.score == 0.0 and "code fence" in fenced.reasoning


async def test_html_without_elements_fails():
    for text in ("", "   ", "<!-- just a comment -->"):
        result = await HtmlValidationEvaluator().evaluate(text)
        assert result.score == 0.0 and "no HTML element" in result.reasoning


async def test_html_unknown_tags_lower_the_share():
    result = await HtmlValidationEvaluator().evaluate("<div><blink>x</blink><my-widget></my-widget></div>")
    assert result.score == pytest.approx(1 / 3)
    assert result.details["rejected"] == {"blink": 1, "my-widget": 1}


async def test_html_allowed_and_blocked_tags():
    allowed = HtmlValidationEvaluator(allowed_tags=["p", "b"])
    assert (await allowed.evaluate("<p><b>x</b></p><p>y</p>")).score == 1.0
    assert (await allowed.evaluate("<p><i>x</i></p>")).score == 0.5
    blocked = HtmlValidationEvaluator(blocked_tags=["script"])
    result = await blocked.evaluate("<div><p>a</p><section><script>alert(1)</script></section></div>")
    assert result.score == 0.75 and result.details["rejected"] == {"script": 1}
    custom = HtmlValidationEvaluator(allowed_tags=["my-widget"])
    assert (await custom.evaluate("<my-widget></my-widget>")).score == 1.0


async def test_html_svg_children_are_judged_by_their_root():
    result = await HtmlValidationEvaluator().evaluate('<svg><g><path d="M0"/></g><circle r="1"/></svg>')
    assert result.score == 1.0
    only_div = HtmlValidationEvaluator(allowed_tags=["div"])
    assert (await only_div.evaluate("<div><svg><path/></svg></div>")).score == pytest.approx(1 / 3)


def test_html_rules_are_validated():
    with pytest.raises(ConfigError, match="both allowed and blocked"):
        HtmlValidationEvaluator(allowed_tags=["p"], blocked_tags=["p"])
    with pytest.raises(ConfigError, match="invalid tag name"):
        HtmlValidationEvaluator(blocked_tags=["<>"])
    assert HtmlValidationEvaluator(blocked_tags=["<SCRIPT>"]).blocked_tags == {"script"}


async def test_html_malformed_huge_and_deep_inputs_give_results():
    ev = HtmlValidationEvaluator()
    for text in (
        "<div",
        "<p>unclosed <b>bold",
        "</p></div>",
        "<<<>>>",
        "<![CDATA[x",
        "<div>" * 100_000,
        "<p>" + "x" * 500_000 + "</p>",
        "<a href='x" * 2000,
    ):
        started = time.perf_counter()
        result = await ev.evaluate(text)
        assert time.perf_counter() - started < 5
        assert result.score is not None and 0.0 <= result.score <= 1.0
    assert (await ev.evaluate("<div>" * 100_000)).score == 1.0
    big = await HtmlValidationEvaluator(max_chars=100).evaluate("<p>" + "x" * 200 + "</p>")
    assert big.status == "invalid_input"
