"""Numbers and dates in text: digits, number words, percentages, years and month names.

Values are normalised, so that ``1,000`` and ``1000`` or ``two`` and ``2`` compare equal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragmetrics.text.tokens import token_spans

__all__ = ["Number", "extract_numbers"]

_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero _one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER_WORDS.update(
    {
        "thirty": "30",
        "forty": "40",
        "fifty": "50",
        "sixty": "60",
        "seventy": "70",
        "eighty": "80",
        "ninety": "90",
        "hundred": "100",
        "thousand": "1000",
        "million": "1000000",
        "billion": "1000000000",
        "dozen": "12",
        "half": "0.5",
        "twice": "2",
        "once": "1",
    }
)
_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ],
        start=1,
    )
    for m in names.split()
}
_NUMERIC = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w])(\s*%|\s*per\s*cent|\s*percent)?"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Number:
    """One number or date mention."""

    value: str
    """Canonical value: ``1000``, ``3.5``, ``1991``; for months ``month:3``."""
    kind: str
    """``year`` (1000-2099 written as four digits), ``percent``, ``month`` or ``number``."""
    text: str
    """The text as it appeared."""


def extract_numbers(text: str, spans: Sequence[tuple[str, int, int]] | None = None) -> list[Number]:
    """Numbers, percentages, years and month names in ``text``, in order of appearance.

    Number words from two to twenty, the tens, and ``hundred``/``thousand``/``million``/``billion``
    are read as numbers ("one" is too often a pronoun); ``may`` (and a three-letter month) counts as a
    month only when a day or year number is next to it. ``spans`` may pass ``token_spans(text)`` when
    the caller has it already.
    """
    found: list[tuple[int, Number]] = []
    for m in _NUMERIC.finditer(text):
        whole = m.group(1).replace(",", "")
        frac = m.group(2)
        value = whole.lstrip("0") or "0"
        if frac is not None and frac.strip("0"):
            value = f"{value}.{frac.rstrip('0')}"
        if m.group(3):
            kind = "percent"
        elif frac is None and len(whole) == 4 and 1000 <= int(whole) <= 2099 and "," not in m.group(1):
            kind = "year"
        else:
            kind = "number"
        found.append((m.start(), Number(value=value, kind=kind, text=m.group().strip())))
    tokens = token_spans(text) if spans is None else spans
    for i, (tok, start, _) in enumerate(tokens):
        if tok in _NUMBER_WORDS and tok not in ("once", "half"):
            found.append(
                (start, Number(value=_NUMBER_WORDS[tok], kind="number", text=text[start : start + len(tok)]))
            )
        elif tok in _MONTHS and (len(tok) > 3 or text[start].isupper()):
            near = [t for t, _, _ in tokens[max(0, i - 1) : i + 2] if t.isdigit()]
            if tok == "may" and not near:
                continue
            if (
                tok in ("mar", "jun", "jul", "sep", "dec", "jan", "oct", "nov", "aug", "apr", "feb")
                and not near
            ):
                continue
            found.append(
                (
                    start,
                    Number(value=f"month:{_MONTHS[tok]}", kind="month", text=text[start : start + len(tok)]),
                )
            )
    found.sort(key=lambda pair: pair[0])
    return [n for _, n in found]
