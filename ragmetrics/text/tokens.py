"""Tokens of a text: the words it is made of, and the estimate of the model tokens it costs.

* :func:`tokenize` / :func:`token_spans`: words, numbers and single CJK characters (so that Chinese
  and Japanese text, which has no spaces, still gives usable tokens); :func:`ngrams` over them.
* The token estimate: no tokenizer files can be downloaded, so every count ragmetrics makes without a
  provider's usage report is ``ceil(characters / 4)``: the claim engine's context chunks, the cost
  estimate, the tokens-per-minute cap and the fake LLM server's usage. One rule, so an estimate and
  a run over the fake server agree.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ragmetrics.text.normalise import _QUOTES, normalize

__all__ = ["CHARS_PER_TOKEN", "estimate_tokens", "ngrams", "token_spans", "tokenize", "tokens_for_chars"]

CHARS_PER_TOKEN = 4
"""Characters per token in every estimate."""


def tokens_for_chars(chars: int) -> int:
    """Estimated tokens in ``chars`` characters of text: ``ceil(chars / 4)`` (0 for none)."""
    return -(-max(0, chars) // CHARS_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """Estimated tokens in ``text``: ``ceil(len(text) / 4)``."""
    return tokens_for_chars(len(text))


_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(
    rf"(?<![^\W\d_])(?:n't|'(?:s|re|ve|ll|d|m))(?![^\W\d_])"  # detached clitics: "do n't", "it 's"
    rf"|\d+(?:[.,]\d+)*"  # numbers, with thousands separators or decimals
    rf"|[{_CJK}]"  # one Han / kana character per token
    rf"|[^\W\d_{_CJK}]+(?:'[^\W\d_{_CJK}]+)*"  # words, with inner apostrophes (don't, l'eau)
)


def token_spans(text: str) -> list[tuple[str, int, int]]:
    """Tokens of ``text`` with their character offsets: ``(normalised token, start, end)``.

    ``text`` is read as given (not re-normalised) so that the offsets index into it; each token is
    NFKC-normalised and case-folded on its own.
    """
    out = []
    for m in _TOKEN.finditer(text.translate(_QUOTES)):
        token = m.group()
        if not token.isascii():
            token = unicodedata.normalize("NFKC", token)
        out.append((token.casefold(), m.start(), m.end()))
    return out


def tokenize(text: str) -> list[str]:
    """Words, numbers and single CJK characters of ``text``, normalised and case-folded."""
    return [t for t, _, _ in token_spans(normalize(text))]


def ngrams(items: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The contiguous ``n``-grams of ``items`` (empty when there are fewer than ``n`` items)."""
    return [tuple(items[i : i + n]) for i in range(len(items) - n + 1)]
