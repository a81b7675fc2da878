"""Word tokens and the one model-token estimate (ragmetrics/text/tokens.py), and who uses it."""

from __future__ import annotations

import pytest

from ragmetrics import text as _text
from ragmetrics.metrics.claims.engine import chunk_contexts


def test_tokenize_words_numbers_clitics_and_cjk():
    assert _text.tokenize("Python’s 1,000 users don't like l'eau, 3.5%") == [
        "python's",
        "1,000",
        "users",
        "don't",
        "like",
        "l'eau",
        "3.5",
    ]
    assert _text.tokenize("I do n't know , it 's fine") == ["i", "do", "n't", "know", "it", "'s", "fine"]
    assert _text.tokenize("今天天气") == ["今", "天", "天", "气"]
    assert _text.tokenize("Größe naïve") == ["grösse", "naïve"]
    assert _text.tokenize("") == []


def test_token_spans_index_into_the_original_text():
    text = "Der Zug fährt um 9.30 Uhr ab."
    for token, start, end in _text.token_spans(text):
        assert text[start:end].casefold() == token


def test_ngrams():
    assert _text.ngrams(["a", "b", "c"], 2) == [("a", "b"), ("b", "c")]
    assert _text.ngrams(["a"], 2) == []


@pytest.mark.parametrize(("chars", "tokens"), [(0, 0), (1, 1), (3, 1), (4, 1), (5, 2), (8, 2), (401, 101)])
def test_tokens_are_characters_over_four_rounded_up(chars: int, tokens: int) -> None:
    assert _text.tokens_for_chars(chars) == tokens
    assert _text.estimate_tokens("x" * chars) == tokens


def test_contexts_that_fill_the_budget_exactly_share_one_chunk() -> None:
    # two contexts of 40 characters are 10 tokens each: together exactly a 20-token budget
    contexts = ["a" * 39 + ".", "b" * 39 + "."]
    chunks = chunk_contexts(contexts, 20)
    assert [[p.index for p in chunk] for chunk in chunks] == [[0, 1]]
    # one character more and they no longer fit together
    assert len(chunk_contexts([contexts[0] + "c", contexts[1]], 20)) == 2
