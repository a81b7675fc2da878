"""The input validators: one message format for a bad setting and one for a bad sample field.

A setting (a constructor argument, a run option) that is wrong raises
:class:`~ragmetrics.errors.ConfigError` as ``<owner>: <option> must be <expected>, got <value>[; <what
to do>]``; a sample field that is wrong raises :class:`~ragmetrics.errors.InvalidInputError`, whose
message is ``row <row>: field '<field>' must be <expected>, got <type> <value> (<what to do>)``. Every
hand-written ``isinstance`` check that used to build one of these messages goes through here, so the
rules (``True`` is not an integer, NaN is not a number, long values are cut in the middle) hold
everywhere alike.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from numbers import Real
from typing import Any

from ragmetrics.errors import ConfigError, InvalidInputError, shorten

__all__ = [
    "MAX_NESTING",
    "check_callable",
    "check_choice",
    "check_field",
    "check_flag",
    "check_int",
    "check_json_object",
    "check_nesting",
    "check_one_of",
    "check_number",
    "check_option_text",
    "check_seconds",
    "check_size",
    "check_unit",
    "config_error",
    "env_number",
    "nesting_depth",
]

MAX_NESTING = 64
"""How deeply lists and mappings may nest in one value of a row (``meta``, an extra column).

A row nested deeper is that row's ``invalid_input``, found when the row is read and before any call
is paid: pydantic refuses to serialise past a few hundred levels and ``json``/``repr`` recurse, so a
deeper value would crash the exports after every call had been made.
"""


def config_error(
    owner: str, option: str, expected: str, got: object, *, hint: str | None = None
) -> ConfigError:
    """The error for a bad setting: ``owner: option must be expected, got value[; hint]``.

    Args:
        owner: What the setting belongs to (``regex``, ``EvaluationPipeline``, ``run_suite``).
        option: The setting's name.
        expected: What it must be, as a noun phrase (``an integer >= 1``).
        got: The value given (shown as its ``repr``, cut in the middle when long).
        hint: What to do about it.
    """
    text = f"{owner}: {option} must be {expected}, got {shorten(repr(got), 120)}"
    return ConfigError(f"{text}; {hint}" if hint else text)


def env_number(var: str, text: str, *, whole: bool = False) -> float:
    """The number an environment variable's text holds: a whole number >= 1, or seconds > 0.

    Args:
        var: The variable's name, for the message.
        text: Its text (stripped, not empty).
        whole: Whether it must be a whole number >= 1 (a count) rather than a finite number > 0.

    Raises:
        ConfigError: ``environment variable <var> must be <expected>, got '<text>'``.
    """
    try:
        value: float = int(text) if whole else float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and (value >= 1 if whole else value > 0)):
        expected = "a whole number >= 1" if whole else "a finite number > 0 (seconds)"
        raise ConfigError(f"environment variable {var} must be {expected}, got {shorten(repr(text), 120)}")
    return value


def check_flag(value: object, option: str, owner: str) -> bool:
    """``value`` if it is a bool.

    Raises:
        ConfigError: Anything else (``1`` and ``"yes"`` included).
    """
    if not isinstance(value, bool):
        raise config_error(owner, option, "true or false", value)
    return value


def check_int(
    value: object,
    option: str,
    owner: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    optional: bool = False,
) -> int:
    """``value`` if it is an integer (not a bool) within ``[minimum, maximum]``.

    With ``optional``, None passes too (and is returned as it is).

    Raises:
        ConfigError: Not an integer, or out of bounds.
    """
    if value is None and optional:
        return value  # type: ignore[return-value]
    if minimum is not None and maximum is not None:
        expected = f"an integer in [{minimum}, {maximum}]"
    elif minimum is not None:
        expected = f"an integer >= {minimum}"
    elif maximum is not None:
        expected = f"an integer <= {maximum}"
    else:
        expected = "an integer"
    if optional:
        expected += " or None"
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        raise config_error(owner, option, expected, value)
    return value


def check_number(
    value: object,
    option: str,
    owner: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    expected: str | None = None,
    optional: bool = False,
) -> float:
    """``value`` as a float if it is a finite real number (not a bool) within the bounds.

    Args:
        value: The value.
        option: The setting's name.
        owner: What it belongs to.
        low: Lower bound, if any (excluded when ``low_open``).
        high: Upper bound, if any (excluded when ``high_open``).
        low_open: Whether ``low`` itself is refused.
        high_open: Whether ``high`` itself is refused.
        expected: The noun phrase for the message (default: built from the bounds).
        optional: Whether None passes too (returned as it is; the default message says ``or None``).

    Raises:
        ConfigError: Not a finite number, or out of bounds.
    """
    if value is None and optional:
        return value  # type: ignore[return-value]
    if expected is None:
        if low is not None and high is not None:
            expected = f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        elif low is not None:
            expected = f"a number {'>' if low_open else '>='} {low:g}"
        elif high is not None:
            expected = f"a number {'<' if high_open else '<='} {high:g}"
        else:
            expected = "a finite number"
        if optional:
            expected += " or None"
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise config_error(owner, option, expected, value)
    number = float(value)
    if low is not None and (number < low or (low_open and number == low)):
        raise config_error(owner, option, expected, value)
    if high is not None and (number > high or (high_open and number == high)):
        raise config_error(owner, option, expected, value)
    return number


def check_seconds(value: object, option: str, owner: str, *, maximum: float = 60.0) -> float:
    """``value`` as a float if it is a number of seconds in ``(0, maximum]``.

    Raises:
        ConfigError: Not a number, or out of bounds.
    """
    expected = f"a number of seconds in (0, {maximum:g}]"
    return check_number(value, option, owner, low=0.0, high=maximum, low_open=True, expected=expected)


def check_unit(value: object, option: str, owner: str, *, optional: bool = False) -> float:
    """``value`` as a float if it is a number in [0, 1] (a pass mark, a share, a rate).

    With ``optional``, None passes too (and is returned as it is).

    Raises:
        ConfigError: Not a finite number (``must be a number in [0, 1]``), or outside [0, 1] (``must lie
            in [0, 1]``).
    """
    if value is None and optional:
        return value  # type: ignore[return-value]
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise config_error(owner, option, "a number in [0, 1]" + (" or None" if optional else ""), value)
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise ConfigError(f"{owner}: {option} must lie in [0, 1], got {shorten(repr(value), 120)}")
    return number


def check_option_text(
    value: object, option: str, owner: str, *, optional: bool = False, expected: str = "a non-empty string"
) -> str:
    """``value`` if it is a string with something other than whitespace in it.

    Args:
        value: The value.
        option: The setting's name.
        owner: What it belongs to.
        optional: Whether None passes too (returned as it is).
        expected: The noun phrase for the message.

    Raises:
        ConfigError: Not a string, or blank.
    """
    if value is None and optional:
        return value  # type: ignore[return-value]
    if not isinstance(value, str) or not value.strip():
        raise config_error(owner, option, expected, value)
    return value


def check_choice(
    value: object, option: str, owner: str, choices: Iterable[object], *, expected: str | None = None
) -> Any:
    """``value`` if it equals one of ``choices`` (a bool never stands for 0 or 1).

    Raises:
        ConfigError: Anything else; the message lists the choices (or says ``expected``).
    """
    allowed = tuple(choices)
    if isinstance(value, bool) and not any(isinstance(c, bool) for c in allowed):
        ok = False
    else:
        try:
            ok = value in allowed
        except TypeError:  # an unhashable or incomparable value is no choice
            ok = False
    if not ok:
        if expected is None:
            *first, last = [repr(c) for c in allowed]
            expected = f"{', '.join(first)} or {last}" if first else last
        raise config_error(owner, option, expected, value)
    return value


def check_callable(value: object, option: str, owner: str, *, expected: str = "a callable") -> Any:
    """``value`` if it can be called.

    Raises:
        ConfigError: It cannot; the message shows its type, not its value.
    """
    if not callable(value):
        raise ConfigError(f"{owner}: {option} must be {expected}, got {type(value).__name__}")
    return value


def check_field(
    value: Any,
    field: str,
    types: type | tuple[type, ...],
    expected: str,
    *,
    row: int | str | None = None,
    optional: bool = False,
    detail: str | None = None,
) -> Any:
    """``value`` if it is an instance of ``types`` (or None when ``optional``); for sample fields.

    ``bool`` never passes for ``int``, and ``str``/``bytes`` never pass for a sequence type.

    Args:
        value: The field's value.
        field: The field (``question``, ``contexts[2]``).
        types: The accepted types.
        expected: What it must be, as a noun phrase (``a string or None``).
        row: The dataset row or sample id, when known.
        optional: Whether None is accepted.
        detail: What to do about it, for the message.

    Raises:
        InvalidInputError: The value has another type.
    """
    if value is None and optional:
        return value
    accepted = types if isinstance(types, tuple) else (types,)
    wrong = not isinstance(value, accepted)
    if isinstance(value, bool) and bool not in accepted and int in accepted:
        wrong = True
    if isinstance(value, (str, bytes)) and not any(t in (str, bytes) for t in accepted):
        wrong = True
    if wrong:
        raise InvalidInputError(field, expected, value, row=row, detail=detail)
    return value


def nesting_depth(value: Any, limit: int = MAX_NESTING) -> int:
    """Levels of list, tuple, set and mapping nesting in ``value`` (a scalar is 0, ``[1]`` is 1).

    Iterative (no recursion, whatever the depth), and it stops looking past ``limit``: the answer is
    then ``limit + 1``. A container reached again is looked into again only from deeper than before,
    so shared parts cost little, and a cycle (a list holding itself) comes out as too deep.
    """
    deepest = 0
    reached: dict[int, int] = {}  # id of a container -> the deepest level it was looked into from
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, (list, tuple, set, frozenset)):
            children = node
        else:
            continue
        if reached.get(id(node), -1) >= depth:
            continue
        reached[id(node)] = depth
        depth += 1
        if depth > limit:
            return limit + 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def check_nesting(value: Any, field: str, *, row: int | str | None = None) -> Any:
    """``value`` if lists and mappings nest in it at most :data:`MAX_NESTING` levels deep.

    Raises:
        InvalidInputError: It nests deeper (or holds itself); the message does not show the value.
    """
    if nesting_depth(value) > MAX_NESTING:
        raise InvalidInputError(
            field,
            f"nested at most {MAX_NESTING} levels deep (MAX_NESTING)",
            row=row,
            detail="it nests deeper, or holds itself; flatten it or leave it out",
        )
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def check_json_object(
    value: Any, field: str, *, row: int | str | None = None, detail: str | None = None
) -> dict[str, Any]:
    """``value`` as a dict: a mapping with string keys, or the text of a JSON object parsed.

    Blank text is the empty object (some servers send ``""`` for a call without arguments). Only JSON
    values pass: ``NaN``, ``Infinity``, a key that is no string and a Python object (a ``datetime``) are
    refused, naming where they are; so is a value nested past :data:`MAX_NESTING`.

    Args:
        value: A mapping, or the JSON text of an object.
        field: The field (``messages[2].tool_calls[0].function.arguments``).
        row: The dataset row, when known.
        detail: What to do about it, for the message (a default says to give a JSON object).

    Raises:
        InvalidInputError: Not a mapping, not JSON, JSON but not an object, or not a JSON value inside.
    """
    what = detail or 'give the arguments as a JSON object, such as {"query": "..."}'
    parsed: Any = value
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            parsed = json.loads(value, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) or "too deep"
            raise InvalidInputError(
                field, "the text of a JSON object", row=row, detail=f"not JSON: {reason}; {what}"
            ) from None
        if not isinstance(parsed, Mapping):
            kind = type(parsed).__name__
            raise InvalidInputError(
                field, "a JSON object", row=row, detail=f"the JSON holds a {kind}; {what}"
            )
    check_field(parsed, field, Mapping, "a JSON object (a mapping)", row=row, detail=what)
    check_nesting(parsed, field, row=row)
    problem = _not_json(parsed)
    if problem is not None:
        raise InvalidInputError(field, "a JSON object", row=row, detail=f"{problem}; {what}")
    return dict(parsed)


def _not_json(value: Any) -> str | None:
    """What in ``value`` (nested at most ``MAX_NESTING`` deep) JSON cannot hold, and where; or None."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if node is None or isinstance(node, (str, bool, int)):
            continue
        where = path or "the top level"
        if isinstance(node, float):
            if math.isfinite(node):
                continue
            return f"{node!r} at {where} is not a JSON number"
        if isinstance(node, Mapping):
            for key, item in node.items():
                if not isinstance(key, str):
                    return f"the key {shorten(repr(key), 40)} at {where} is not a string"
                stack.append((item, f"{path}[{key!r}]"))
        elif isinstance(node, (list, tuple)):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node))
        else:
            return f"a {type(node).__name__} at {where} is not a JSON value"
    return None


def check_size(
    count: int,
    cap: int,
    field: str,
    unit: str,
    *,
    row: int | str | None = None,
    hint: str,
    at_least: bool = False,
) -> int:
    """``count`` if it is at most ``cap`` (a number of messages, of characters).

    With ``at_least``, ``count`` is what was counted before stopping (the message says "or more").

    Raises:
        InvalidInputError: ``field`` holds more than ``cap`` ``unit``; the message says the cap and ``hint``.
    """
    if count > cap:
        raise InvalidInputError(
            field,
            f"at most {cap:,} {unit}",
            row=row,
            detail=f"it holds {count:,}{' or more' if at_least else ''}; {hint}",
        )
    return count


def check_one_of(
    value: Any, field: str, choices: Iterable[str], *, row: int | str | None = None, detail: str | None = None
) -> str:
    """``value`` if it is one of the strings ``choices`` (a message's ``role``, a record's ``type``).

    Raises:
        InvalidInputError: Anything else; the message lists the choices.
    """
    allowed = tuple(choices)
    if not isinstance(value, str) or value not in allowed:
        *first, last = [repr(c) for c in allowed]
        expected = f"one of {', '.join(first)} or {last}" if first else last
        raise InvalidInputError(field, expected, value, row=row, detail=detail)
    return value
