"""JSON text to Python values with every number exact: the parsing ``json_validity`` and ``json_match`` share.

``json.loads`` turns numbers into ``float`` (``1e400`` and ``1e401`` both become ``inf``;
``0.1000000000000000000001`` becomes ``0.1``) and ``int`` (quadratic in the digit count, and refused
past ``sys.get_int_max_str_digits()``, 4,300 digits by default, so a long valid integer was "invalid").
Here an integer of fewer than 640 characters is an ``int``; every other number is a ``Decimal``, whose
construction is linear and whose comparisons (with ints and other Decimals) are exact: ``1 == 1.0 ==
1e0``. A literal whose exponent is beyond ``decimal``'s range (more than 10**18 in magnitude) is kept as
its lower-cased text (:class:`HugeNumber`), equal only to the same literal. No process-wide setting
changes.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["NUMBERS", "HugeNumber", "exact_decoder", "json_type", "loads_exact", "shown"]

_INT_CHARS_ALWAYS_OK = 640  # sys.int_info.str_digits_check_threshold: the lowest digit limit allowed


class HugeNumber(str):
    """A JSON number whose exponent is beyond ``decimal``'s range: kept as its (lower-cased) literal."""

    __slots__ = ()


NUMBERS = (int, float, Decimal)
"""The types a parsed JSON number compares by value as (``HugeNumber`` compares by its text)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (RFC 8259 has no NaN or Infinity)")


def _exact_int(literal: str) -> int | Decimal:
    return int(literal) if len(literal) < _INT_CHARS_ALWAYS_OK else Decimal(literal)


def _exact_float(literal: str) -> Decimal | HugeNumber:
    try:
        return Decimal(literal)
    except InvalidOperation:  # an exponent past decimal's limits (|exponent| > 999,999,999,999,999,999)
        mantissa = re.split("[eE]", literal, maxsplit=1)[0]
        if not mantissa.strip("-0."):
            return Decimal(0)
        return HugeNumber(literal.lower())


def loads_exact(text: str) -> Any:
    """``json.loads`` with exact numbers; NaN and Infinity are refused (``ValueError``).

    Raises:
        json.JSONDecodeError: The text is not JSON.
        ValueError: It holds NaN or Infinity.
        RecursionError: It nests too deep for the standard library's recursive parser.
    """
    return json.loads(text, parse_constant=_reject_constant, parse_int=_exact_int, parse_float=_exact_float)


def exact_decoder() -> json.JSONDecoder:
    """A decoder with the same exact numbers, for ``raw_decode`` (finding JSON inside text)."""
    return json.JSONDecoder(parse_int=_exact_int, parse_float=_exact_float)


def json_type(value: Any) -> str:
    """The type of a parsed value as reasoning names it (``number`` for the exact kinds)."""
    return "number" if isinstance(value, (Decimal, HugeNumber)) else type(value).__name__


def shown(value: Any) -> str:
    """A parsed leaf as JSON text (exact numbers as their digits)."""
    return str(value) if isinstance(value, (Decimal, HugeNumber)) else json.dumps(value)
