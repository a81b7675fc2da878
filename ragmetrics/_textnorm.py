"""How text is measured and compared, written once: the token estimate and the quote normaliser.

**Token estimate.** No tokenizer files can be downloaded, so every count ragmetrics makes without a
provider's usage report is ``ceil(characters / 4)``: the claim engine's context chunks, the cost
estimate, the tokens-per-minute cap and the fake LLM server's usage. One rule, so an estimate and a
run over the fake server agree.

**Quote normaliser.** Whether a judge's evidence quote counts as found in its context (the claim
engine's ``quote_found``, behind groundedness) and where the HTML report highlights that quote read
the same folded text: per character cluster (a character with the combining marks that follow it)
NFKC, then case folding, then one table of quotes and dashes (curly and low quotes become ``'`` and
``"``, en and em dashes, hyphens and the minus sign become ``-``), and every run of white space one
space. :func:`fold` also says, for each folded character, which characters of the original it came
from, so the report can highlight the original text.
"""

from __future__ import annotations

import unicodedata

__all__ = ["CHARS_PER_TOKEN", "TRIM", "estimate_tokens", "fold", "normalize_for_match", "tokens_for_chars"]

CHARS_PER_TOKEN = 4
"""Characters per token in every estimate."""


def tokens_for_chars(chars: int) -> int:
    """Estimated tokens in ``chars`` characters of text: ``ceil(chars / 4)`` (0 for none)."""
    return -(-max(0, chars) // CHARS_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """Estimated tokens in ``text``: ``ceil(len(text) / 4)``."""
    return tokens_for_chars(len(text))


_TABLE = str.maketrans(
    {
        "\u2018": "'",  # left single quote
        "\u2019": "'",  # right single quote, apostrophe
        "\u201a": "'",  # single low-9 quote
        "\u201b": "'",  # single high-reversed-9 quote
        "\u201c": '"',  # left double quote
        "\u201d": '"',  # right double quote
        "\u201e": '"',  # double low-9 quote
        "\u201f": '"',  # double high-reversed-9 quote
        "\u2010": "-",  # hyphen (NFKC gives it for the non-breaking hyphen)
        "\u2012": "-",  # figure dash
        "\u2013": "-",  # en dash
        "\u2014": "-",  # em dash
        "\u2015": "-",  # horizontal bar
        "\u2212": "-",  # minus sign
    }
)
"""The one quote and dash table (applied after NFKC, which already makes no-break spaces spaces)."""

TRIM = " .,;:!?\"'"
"""Stripped from both ends of a folded quote: a quote is found whatever punctuation closes it."""


def _continues(ch: str) -> bool:
    """Whether ``ch`` belongs to the cluster before it (what NFKC may compose with its predecessor).

    That is a mark (combining or spacing) or a Hangul vowel or final jamo.
    """
    return unicodedata.category(ch)[0] == "M" or "\u1160" <= ch <= "\u11ff"


def fold(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` folded for matching, with where each folded character came from.

    Returns:
        ``(folded, starts, ends)``: ``folded[k]`` comes from ``text[starts[k]:ends[k]]`` (a cluster
        that folds to several characters, like ``ß`` or ``ﬁ``, maps each of them to the whole
        cluster). White space runs fold to one space; leading and trailing white space is dropped.
        ``folded.strip(TRIM)`` is :func:`normalize_for_match` of ``text``.
    """
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    ascii_only = text.isascii()  # ASCII folds one character to one: its lower case
    n = len(text)
    i = 0
    space = False
    while i < n:
        j = i + 1
        if ascii_only:
            piece = text[i].lower()
        else:
            while j < n and _continues(text[j]):
                j += 1
            piece = unicodedata.normalize("NFKC", text[i:j]).casefold().translate(_TABLE)
        for ch in piece:
            if ch.isspace():
                if not space and out:
                    out.append(" ")
                    starts.append(i)
                    ends.append(j)
                space = True
                continue
            space = False
            out.append(ch)
            starts.append(i)
            ends.append(j)
        i = j
    if out and out[-1] == " ":
        out.pop()
        starts.pop()
        ends.pop()
    return "".join(out), starts, ends


def normalize_for_match(text: str) -> str:
    """``text`` folded (see :func:`fold`) and stripped of :data:`TRIM`: how quotes are compared.

    Whole-string operations, so a long context folds at C speed; the result is the one :func:`fold`
    gives cluster by cluster (a property test holds the two together).
    """
    text = unicodedata.normalize("NFKC", text).casefold().translate(_TABLE)
    return " ".join(text.split()).strip(TRIM)
