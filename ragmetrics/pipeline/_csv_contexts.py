"""A CSV contexts cell as a list of passages: a JSON list, the Python list pandas writes, or one passage.

``DataFrame.to_csv`` writes a list column as Python's ``repr`` (``['a', "b's"]``), which is not JSON;
read as one passage it would make two contexts one. :func:`csv_contexts` reads such a cell with a
strict scanner that knows only string literals, commas, whitespace and the brackets (no code is
evaluated, nothing is nested); a cell that starts with ``[`` and is neither form is refused with a
message saying how to write contexts in a CSV, never read as one passage (a cell that only starts
with ``[``, such as ``[1] Smith et al. found ...``, is one passage, as before). The scanner is linear in
the cell, which the CSV reader caps at ``MAX_CELL_CHARS``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ragmetrics.errors import shorten

__all__ = ["HOW_TO_WRITE", "csv_contexts"]

HOW_TO_WRITE = (
    'write contexts in a CSV as a JSON list of strings, e.g. ["first passage", "second passage"] '
    "(with pandas: df['contexts'] = df['contexts'].map(json.dumps) before df.to_csv(...)); a cell that "
    "does not start with '[' and end with ']' is one passage"
)
"""How a contexts column is written in a CSV (said by every message about one)."""

_ESCAPES = r"\\(?:[\\'\"abfnrtv]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})"
_PY_STRING = re.compile(
    rf"'[^'\\\n]*(?:{_ESCAPES}[^'\\\n]*)*'" + "|" + rf'"[^"\\\n]*(?:{_ESCAPES}[^"\\\n]*)*"'
)
"""One Python string literal without prefix or triple quotes (as ``repr`` writes a str); unrolled, linear."""
_ESCAPE = re.compile(_ESCAPES)
_SPACE = re.compile(r"[ \t\r\n]*")
_SIMPLE = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_SIMPLE["v"] = "\v"


def _unescape(match: re.Match[str]) -> str:
    code = match.group()[1:]
    if code in _SIMPLE:
        return _SIMPLE[code]
    value = int(code[1:], 16)
    if value > 0x10FFFF:
        raise ValueError(f"\\{code} is not a Unicode code point")
    return chr(value)


def _skip_space(text: str, pos: int) -> int:
    found = _SPACE.match(text, pos)
    return found.end() if found else pos


def _python_strings(text: str) -> list[str] | None:
    """``text`` as a Python list of string literals (``['a', "b"]``), or None when it is anything else."""
    items: list[str] = []
    pos = _skip_space(text, 1)
    while not text.startswith("]", pos):
        found = _PY_STRING.match(text, pos)
        if found is None:
            return None
        try:
            items.append(_ESCAPE.sub(_unescape, found.group()[1:-1]))
        except ValueError:
            return None
        pos = _skip_space(text, found.end())
        if text.startswith(",", pos):
            pos = _skip_space(text, pos + 1)
        elif not text.startswith("]", pos):
            return None
    return items if pos + 1 == len(text) else None


def csv_contexts(cell: str | None) -> Any:
    """A CSV contexts cell: a JSON list (as it is), a Python list of strings, or else one passage.

    ``''`` (or whitespace) is no passage; None stays None.

    Raises:
        ValueError: The cell is bracketed (``[`` ... ``]``) but is neither a JSON list nor a Python
            list of string literals; the message says what the cell holds and how to write contexts.
    """
    if cell is None:
        return None
    text = cell.strip()
    if not text:
        return []
    if not (text.startswith("[") and text.endswith("]")):  # ``[1] Smith et al. ...`` is one passage
        return [cell]
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, list):
        return value  # its items are checked as passages (a number is that row's invalid_input)
    strings = _python_strings(text)
    if strings is not None:
        return strings
    raise ValueError(
        f"the contexts cell {shorten(text, 80)!r} is bracketed like a list but is neither a JSON list nor a "
        f"Python list of string literals; {HOW_TO_WRITE}"
    )
