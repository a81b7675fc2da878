"""Sentence spans: exact, stripped substrings of the input (ragmetrics/text/sentences.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics import text as _text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Python is a compiled language created in 1991. It was made by Dr. Guido van Rossum, e.g. in "
            "the U.S. office. Version 3.5 is out! Really? Yes [1]. Next [2, 3].",
            [
                "Python is a compiled language created in 1991.",
                "It was made by Dr. Guido van Rossum, e.g. in the U.S. office.",
                "Version 3.5 is out!",
                "Really?",
                "Yes [1].",
                "Next [2, 3].",
            ],
        ),
        (
            "J. K. Rowling wrote it. See example.com for more.",
            ["J. K. Rowling wrote it.", "See example.com for more."],
        ),
        ('He said "Go home." Then he left.', ['He said "Go home."', "Then he left."]),
        ("今天天气很好。我们去公园吧！好的", ["今天天气很好。", "我们去公园吧！", "好的"]),
        (
            "heart disease\n\nstroke\n\nlower respiratory infections",
            ["heart disease", "stroke", "lower respiratory infections"],
        ),
        (
            "a long line that wraps\nonto the next one. Done.",
            ["a long line that wraps\nonto the next one.", "Done."],
        ),
        (
            "an affected pregnancy or not.However, this is it.",
            ["an affected pregnancy or not.", "However, this is it."],
        ),
        ("it does be cold . The weather is cold", ["it does be cold .", "The weather is cold"]),
        ("", []),
        ("  ...  ", []),
    ],
)
def test_split_sentences(text, expected):
    assert _text.split_sentences(text) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(list("aB .!?。\n[]1,'\"é") + ["Dr.", "e.g.", " [1]", "3.5"]), max_size=40).map(
        "".join
    )
)
def test_sentence_spans_are_ordered_stripped_substrings(text):
    last_end = 0
    for start, end in _text.sentence_spans(text):
        assert last_end <= start < end <= len(text)
        piece = text[start:end]
        assert piece == piece.strip()
        last_end = end
