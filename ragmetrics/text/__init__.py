"""Text handling, written once: used by the offline judge, the claim engine and the test-set generator alike.

Dependency-free (nltk's stemmer module is loaded on first use; no data is ever downloaded) and
importing nothing else of ragmetrics. Its public names are imported from here; the modules say who
owns what: ``normalise`` (the whole-text and quote normalisers), ``tokens`` (word tokens and the
model-token estimate), ``sentences``, ``stopwords`` (function words, content tokens, the language
guess), ``stemming`` (the Porter stemmer), ``numbers`` (numbers and dates) and ``negation``
(negation cues and antonym pairs).
"""

from __future__ import annotations

from ragmetrics.text.negation import ANTONYMS, NEGATION_CUES, negation_cues
from ragmetrics.text.normalise import TRIM, fold, normalize, normalize_for_match
from ragmetrics.text.numbers import Number, extract_numbers
from ragmetrics.text.sentences import sentence_spans, split_sentences
from ragmetrics.text.stemming import stem, stems
from ragmetrics.text.stopwords import STOPWORDS, content_tokens, guess_language, stopwords_for
from ragmetrics.text.tokens import (
    CHARS_PER_TOKEN,
    estimate_tokens,
    ngrams,
    token_spans,
    tokenize,
    tokens_for_chars,
)

__all__ = [
    "ANTONYMS",
    "CHARS_PER_TOKEN",
    "NEGATION_CUES",
    "STOPWORDS",
    "TRIM",
    "Number",
    "content_tokens",
    "estimate_tokens",
    "extract_numbers",
    "fold",
    "guess_language",
    "negation_cues",
    "ngrams",
    "normalize",
    "normalize_for_match",
    "sentence_spans",
    "split_sentences",
    "stem",
    "stems",
    "stopwords_for",
    "token_spans",
    "tokenize",
    "tokens_for_chars",
]
