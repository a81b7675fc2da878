"""Negation cues and antonym pairs (ragmetrics/text/negation.py)."""

from __future__ import annotations

from ragmetrics import text as _text


def test_negation_cues():
    assert _text.negation_cues(_text.tokenize("I did not go, he didn't and nobody cannot")) == [
        "not",
        "didn't",
        "nobody",
        "cannot",
    ]
    assert _text.negation_cues(_text.tokenize("I do n't know")) == ["n't"]
    assert _text.negation_cues(_text.tokenize("Er kommt nicht; il ne vient pas")) == ["nicht", "ne", "pas"]
    assert _text.negation_cues(_text.tokenize("it is green")) == []
    # "unlikely to return" says what "might not return" says
    assert _text.negation_cues(_text.tokenize("Europe is unlikely to return; he was unable to go")) == [
        "unlikely",
        "unable",
    ]


def test_antonyms_are_distinct_lowercase_pairs():
    for a, b in _text.ANTONYMS:
        assert a != b and a == a.lower() and b == b.lower()
    assert ("compiled", "interpreted") in _text.ANTONYMS
