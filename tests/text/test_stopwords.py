"""Stopwords, content tokens and the language guess (ragmetrics/text/stopwords.py)."""

from __future__ import annotations

from ragmetrics import text as _text


def test_content_tokens_and_language_guess():
    tokens = _text.tokenize("The cat is on the mat and it is not happy")
    assert _text.content_tokens(tokens) == ["cat", "mat", "happy"]
    french = _text.tokenize("Le chat est sur la table et il mange du poisson")
    assert _text.guess_language(french) == "fr"
    assert _text.content_tokens(french) == ["chat", "table", "mange", "poisson"]
    assert _text.guess_language(_text.tokenize("Der Hund ist nicht im Haus und die Katze auch nicht")) == "de"
    assert _text.guess_language([]) == "en"
    # English words that are also foreign function words survive in English text
    assert "die" in _text.content_tokens(_text.tokenize("Many plants die in the winter"))
    assert _text.content_tokens(["i", "like", "snow"], keep=frozenset({"i"})) == ["i", "snow"]
    assert _text.content_tokens(_text.tokenize("作られました")) == ["作"]  # hiragana endings are not content


def test_stopwords_are_case_folded_with_straight_apostrophes():
    for word in _text.STOPWORDS:
        assert word == _text.normalize(word)
    assert "don't" in _text.STOPWORDS and "the" in _text.STOPWORDS
    assert _text.stopwords_for("xx") == _text.STOPWORDS
    assert "und" in _text.stopwords_for("de")
