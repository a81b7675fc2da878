from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics.text import tokens as _text


def test_normalize_folds_case_quotes_width_and_space():
    assert _text.normalize("  Ｐython’s  “Zen”\n\tof  ＰYTHON ") == 'python\'s "zen" of python'
    assert _text.normalize("Straße", lower=False) == "Straße"
    assert _text.normalize("Straße") == "strasse"


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


def test_stem_english_only_and_possessives():
    assert _text.stem("languages") == _text.stem("language")
    assert _text.stem("created") == _text.stem("creating")
    assert _text.stem("rossum's") == _text.stem("rossum")
    assert _text.stem("interprété") == "interprété"  # non-ASCII: left alone
    assert _text.stem("天") == "天"
    assert _text.stems(["runs", "running"]) == ["run", "run"]


def test_importing_text_does_not_import_nltk():
    code = (
        "import sys, ragmetrics.text.tokens as t; assert 'nltk' not in sys.modules; "
        "t.stem('running'); assert 'nltk' not in sys.modules"  # nor does stemming (nltk's file, isolated)
    )
    subprocess.run([sys.executable, "-c", code], check=True)


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
