"""Numbers and dates read from text (ragmetrics/text/numbers.py)."""

from __future__ import annotations

from ragmetrics import text as _text


def test_extract_numbers_normalises_values_and_kinds():
    found = _text.extract_numbers("In May 2020, 1,000 people (35%) met; two of them on 3 March. It may rain.")
    assert [(n.value, n.kind) for n in found] == [
        ("month:5", "month"),
        ("2020", "year"),
        ("1000", "number"),
        ("35", "percent"),
        ("2", "number"),
        ("3", "number"),
        ("month:3", "month"),
    ]
    assert [n.value for n in _text.extract_numbers("3.50 and 007 and 12.5 per cent")] == ["3.5", "7", "12.5"]
    assert _text.extract_numbers("one of the best") == []  # "one" is too often a pronoun
    assert _text.extract_numbers("version1.2") == []
