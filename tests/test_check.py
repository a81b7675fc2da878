"""The one set of input validators (ragmetrics/_check.py) and its two message formats."""

from __future__ import annotations

import math

import pytest

from ragmetrics._check import (
    check_callable,
    check_choice,
    check_field,
    check_flag,
    check_int,
    check_json_object,
    check_number,
    check_one_of,
    check_option_text,
    check_seconds,
    check_size,
    check_unit,
    config_error,
)
from ragmetrics.errors import ConfigError, InvalidInputError


def test_a_bad_setting_names_owner_option_expected_value_and_what_to_do():
    err = config_error("regex", "pattern", "a string", 3, hint="quote it in YAML")
    assert str(err) == "regex: pattern must be a string, got 3; quote it in YAML"
    long = str(config_error("x", "y", "short", "a" * 1000))
    assert len(long) < 200 and " ... " in long


def test_integers_refuse_bools_floats_and_out_of_bounds():
    assert check_int(3, "n", "o", minimum=1) == 3
    for bad in (True, 2.0, "3", 0):
        with pytest.raises(ConfigError, match=r"o: n must be an integer >= 1, got"):
            check_int(bad, "n", "o", minimum=1)
    with pytest.raises(ConfigError, match=r"must be an integer in \[1, 1024\], got 2000"):
        check_int(2000, "m", "custom", minimum=1, maximum=1024)


def test_numbers_refuse_nan_infinity_bools_and_open_bounds():
    assert check_number(0.5, "alpha", "compare", low=0, high=1, low_open=True, high_open=True) == 0.5
    for bad in (math.nan, math.inf, True, "0.5", 0.0, 1.0):
        with pytest.raises(ConfigError, match=r"compare: alpha must be a number in \(0, 1\)"):
            check_number(bad, "alpha", "compare", low=0, high=1, low_open=True, high_open=True)
    assert check_seconds(60, "timeout", "regex") == 60.0
    with pytest.raises(ConfigError, match=r"regex: timeout must be a number of seconds in \(0, 60\], got 0"):
        check_seconds(0, "timeout", "regex")


def test_flags_and_option_text():
    assert check_flag(False, "negate", "rouge") is False
    with pytest.raises(ConfigError, match="rouge: negate must be true or false, got 1"):
        check_flag(1, "negate", "rouge")
    assert check_option_text("gpt", "model", "e") == "gpt"
    with pytest.raises(ConfigError, match="e: model must be a non-empty string, got '  '"):
        check_option_text("  ", "model", "e")


def test_sample_fields_name_row_field_expected_and_got():
    assert check_field(None, "reference", str, "a string or None", optional=True) is None
    with pytest.raises(InvalidInputError) as caught:
        check_field(5, "reference", str, "a string or None", row=3, detail="give text")
    assert str(caught.value) == "row 3: field 'reference' must be a string or None, got int 5 (give text)"
    assert caught.value.field == "reference" and caught.value.row == 3
    with pytest.raises(InvalidInputError, match="field 'id' must be a string or an integer, got bool"):
        check_field(True, "id", (str, int), "a string or an integer")
    with pytest.raises(InvalidInputError, match="field 'contexts' must be a list of strings, got str"):
        check_field("one passage", "contexts", (list, tuple), "a list of strings")


def test_optional_settings_take_none_and_say_so():
    assert check_int(None, "max_calls", "p", minimum=0, optional=True) is None
    with pytest.raises(ConfigError, match=r"p: max_calls must be an integer >= 0 or None, got -1"):
        check_int(-1, "max_calls", "p", minimum=0, optional=True)
    assert check_number(None, "max_wait_s", "b", low=0, optional=True) is None
    with pytest.raises(ConfigError, match=r"b: max_wait_s must be a number >= 0 or None, got nan"):
        check_number(math.nan, "max_wait_s", "b", low=0, optional=True)
    assert check_option_text(None, "name", "r", optional=True) is None


def test_pass_marks_and_shares_lie_in_the_unit_interval():
    assert check_unit(1, "threshold", "rouge") == 1.0
    assert check_unit(None, "threshold", "rouge", optional=True) is None
    with pytest.raises(ConfigError, match=r"rouge: threshold must lie in \[0, 1\], got 2"):
        check_unit(2, "threshold", "rouge")
    for bad in (math.nan, True, "0.5"):
        with pytest.raises(ConfigError, match=r"rouge: threshold must be a number in \[0, 1\] or None, got"):
            check_unit(bad, "threshold", "rouge", optional=True)


def test_choices_and_callables():
    assert check_choice("any", "passing", "case q1", ("all", "any")) == "any"
    with pytest.raises(ConfigError, match=r"case q1: passing must be 'all' or 'any', got 'some'"):
        check_choice("some", "passing", "case q1", ("all", "any"))
    with pytest.raises(ConfigError, match=r"ClaimTask: per_context must be 0, 1 or 2, got True"):
        check_choice(True, "per_context", "ClaimTask", (0, 1, 2))  # a bool is no number of choices
    with pytest.raises(ConfigError, match=r"got \[\]"):
        check_choice([], "level", "to_pandas()", ("samples",))
    assert check_callable(print, "callbacks", "p") is print
    with pytest.raises(ConfigError, match="p: callbacks must be callables, got int"):
        check_callable(3, "callbacks", "p", expected="callables")


def test_no_module_checks_a_number_by_hand():
    # The hand-written form the shared validators replaced: `if isinstance(x, bool) or not isinstance(x, int)
    # ...: raise ConfigError(...)` (or a math.isfinite / math.isnan test), each with its own message.
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "ragmetrics"
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "_check.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            raises = isinstance(node, ast.If) and any(
                isinstance(s, ast.Raise)
                and isinstance(s.exc, ast.Call)
                and getattr(s.exc.func, "id", None) in ("ConfigError", "InvalidInputError")
                for s in node.body
            )
            if not raises:
                continue
            test = ast.unparse(node.test)  # type: ignore[attr-defined]
            by_hand = "math.isfinite" in test or "math.isnan" in test
            by_hand |= ", bool)" in test and any(t in test for t in ("int", "float", "Real"))
            if by_hand:
                found.append(f"{path.relative_to(package)}:{node.lineno}: {test[:80]}")
    assert found == [], "use ragmetrics._check (check_int, check_number, check_unit...)"


def test_a_json_object_is_parsed_or_refused_naming_what_and_where():
    assert check_json_object('{"a": [1, 2.5]}', "args") == {"a": [1, 2.5]}
    assert check_json_object(" ", "args") == {} and check_json_object({"a": None}, "args") == {"a": None}
    with pytest.raises(
        InvalidInputError, match=r"field 'args' must be a JSON object \(the JSON holds a str;"
    ):
        check_json_object('"text"', "args", row=2)
    with pytest.raises(InvalidInputError, match=r"not JSON: Infinity is not a JSON number"):
        check_json_object('{"a": Infinity}', "args")
    with pytest.raises(InvalidInputError, match=r"inf at \['a'\]\[0\] is not a JSON number"):
        check_json_object({"a": [math.inf]}, "args")


def test_a_size_cap_and_a_choice_of_strings():
    assert check_size(10, 10, "messages", "messages", hint="split it") == 10
    with pytest.raises(InvalidInputError) as caught:
        check_size(11, 10, "messages", "messages", row=1, hint="split it", at_least=True)
    assert (
        str(caught.value)
        == "row 1: field 'messages' must be at most 10 messages (it holds 11 or more; split it)"
    )
    assert check_one_of("user", "role", ("user", "tool")) == "user"
    with pytest.raises(InvalidInputError, match=r"field 'role' must be one of 'user' or 'tool', got int 1"):
        check_one_of(1, "role", ("user", "tool"))
