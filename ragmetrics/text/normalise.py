"""Text normalised, written once: the whole-text normaliser and the quote normaliser.

:func:`normalize` (the word tokens and the offline judge read it): NFKC, straight quotes, one space
for each run of white space, case folding. :func:`normalize_for_match` and :func:`fold` (the claim
engine's ``quote_found`` and the HTML report's highlighting read the same folded text): per
character cluster (a character with the combining marks that follow it) NFKC, case folding, one
table of quotes and dashes (curly and low quotes become ``'`` and ``"``, en and em dashes, hyphens
and the minus sign ``-``), every run of white space one space. :func:`fold` also says, for each
folded character, which characters of the original it came from.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from array import array

__all__ = ["TRIM", "fold", "normalize", "normalize_for_match"]

_QUOTES = str.maketrans(
    {
        "\u2018": "'",  # left single quote
        "\u2019": "'",  # right single quote, apostrophe
        "\u201a": "'",  # single low-9 quote
        "\u201b": "'",  # single high-reversed-9 quote
        "\u201c": '"',  # left double quote
        "\u201d": '"',  # right double quote
        "\u201e": '"',  # double low-9 quote
        "\u201f": '"',  # double high-reversed-9 quote
    }
)
"""The quotes made straight, by both normalisers."""

_TABLE = _QUOTES | str.maketrans(
    {
        "\u2010": "-",  # hyphen (NFKC gives it for the non-breaking hyphen)
        "\u2012": "-",  # figure dash
        "\u2013": "-",  # en dash
        "\u2014": "-",  # em dash
        "\u2015": "-",  # horizontal bar
        "\u2212": "-",  # minus sign
    }
)
"""The one quote and dash table (applied after NFKC, which already makes no-break spaces spaces)."""

_SPACE = re.compile(r"\s+")


def normalize(text: str, *, lower: bool = True) -> str:
    """Return ``text`` in Unicode NFKC form, with straight quotes, collapsed whitespace, case-folded.

    Args:
        text: Any text.
        lower: Case-fold (the default); pass False to keep the case.
    """
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _SPACE.sub(" ", text).strip()
    return text.casefold() if lower else text


TRIM = " .,;:!?\"'"
"""Stripped from both ends of a folded quote: a quote is found whatever punctuation closes it."""


def _joins(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "M" or unicodedata.combining(ch) != 0 or "\u1160" <= ch <= "\u11ff"


@functools.lru_cache(maxsize=4096)
def _continues(ch: str) -> bool:
    """Whether ``ch`` belongs to the cluster before it (what NFKC may reorder or compose with it).

    That is a mark (combining or spacing), a Hangul vowel or final jamo, or a character whose NFKC
    form starts with one (the halfwidth sound mark U+FF9E is U+3099, a compatibility jamo such as
    U+314F is U+1161): whole-string NFKC reorders and composes those with what comes before.
    """
    if _joins(ch):
        return True
    return not ch.isascii() and _joins(unicodedata.normalize("NFKC", ch)[:1] or " ")


_ASCII_RUN = re.compile(r"[\x00-\x7f]+")
_PLAIN_RUN = re.compile(r"\S+(?: \S+)*")  # words with single spaces between them
_SPACE_RUN = re.compile(r"\s{2,}")  # re's \s is str.isspace, in ASCII too (\x1c-\x1f included)
_ASCII_BLANK = str.maketrans(dict.fromkeys("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", " "))


def fold(text: str) -> tuple[str, array[int], array[int]]:
    """``text`` folded for matching, with where each folded character came from.

    Returns:
        ``(folded, starts, ends)``: ``folded[k]`` comes from ``text[starts[k]:ends[k]]`` (a cluster
        that folds to several characters, like ``ß`` or ``ﬁ``, maps each of them to the whole
        cluster). White space runs fold to one space; leading and trailing white space is dropped.
        The offsets are machine-integer arrays: 16 bytes per character, not two lists of int objects.
        ``folded.strip(TRIM)`` is :func:`normalize_for_match` of ``text``.
    """
    folder = _Folder()
    n = len(text)
    if text.isascii():
        folder.ascii(text, 0, n)
        return folder.result()
    i = 0
    plain_from = 0  # a stretch that failed the plain test is not tried again (no quadratic retries)
    while i < n:
        if i >= plain_from and (stretch := _PLAIN_RUN.match(text, i)) is not None:
            if folder.plain(text, i, stretch.end()):
                i = stretch.end()
                continue
            plain_from = stretch.end()
        run = _ASCII_RUN.match(text, i)
        end = i
        if run is not None:  # ASCII folds one character to one (its lower case): whole runs at once
            end = run.end()
            if end < n and _continues(text[end]):
                end -= 1  # the run's last character starts the cluster of the marks after it
            folder.ascii(text, i, end)
            i = end
        if i < n and i == end:
            j = i + 1
            while j < n and _continues(text[j]):
                j += 1
            folder.cluster(text, i, j)
            i = j
    return folder.result()


class _Folder:
    """The folded text being built, with its offsets; white space runs become one space."""

    __slots__ = ("ends", "out", "space", "starts")

    def __init__(self) -> None:
        self.out: list[str] = []
        self.starts: array[int] = array("q")
        self.ends: array[int] = array("q")
        self.space = True
        """Whether the next white space adds nothing: the folded text is empty or ends with a space."""

    def _keep(self, text: str, start: int, end: int) -> None:
        self.out.append(text[start:end].lower().translate(_ASCII_BLANK))
        self.starts.extend(range(start, end))
        self.ends.extend(range(start + 1, end + 1))

    def ascii(self, text: str, start: int, end: int) -> None:
        """Fold ``text[start:end]``, all ASCII: kept stretches at once, skipping white space runs."""
        i = start
        if self.space:
            while i < end and text[i].isspace():
                i += 1
        if i >= end:
            return
        kept = i
        for m in _SPACE_RUN.finditer(text, i, end):
            self._keep(text, kept, m.start() + 1)  # the run's first character stands for it
            kept = m.end()
        if kept < end:
            self._keep(text, kept, end)
        self.space = text[end - 1].isspace()

    def plain(self, text: str, start: int, end: int) -> bool:
        """Fold ``text[start:end]`` (words with single spaces) at once if each character folds to one.

        True for most text: already in NFKC form, case folding keeps its length, no marks (each
        character is its own cluster); else False, and nothing is folded.
        """
        piece = text[start:end]
        folded = piece.casefold()
        if (
            len(folded) != len(piece)
            or not unicodedata.is_normalized("NFKC", piece)
            or any(_continues(ch) for ch in set(piece))
        ):
            return False
        self.out.append(folded.translate(_TABLE))
        self.starts.extend(range(start, end))
        self.ends.extend(range(start + 1, end + 1))
        self.space = False
        return True

    def _blank(self, start: int, end: int) -> None:
        if not self.space:
            self.out.append(" ")
            self.starts.append(start)
            self.ends.append(end)
        self.space = True

    def cluster(self, text: str, start: int, end: int) -> None:
        for ch in unicodedata.normalize("NFKC", text[start:end]).casefold().translate(_TABLE):
            if ch.isspace():
                self._blank(start, end)
                continue
            self.out.append(ch)
            self.starts.append(start)
            self.ends.append(end)
            self.space = False

    def result(self) -> tuple[str, array[int], array[int]]:
        folded = "".join(self.out)
        if self.space and folded:  # a trailing space
            folded = folded[:-1]
            self.starts.pop()
            self.ends.pop()
        return folded, self.starts, self.ends


def normalize_for_match(text: str) -> str:
    """``text`` folded (see :func:`fold`) and stripped of :data:`TRIM`: how quotes are compared.

    Whole-string operations, so a long context folds at C speed; the result is the one :func:`fold`
    gives cluster by cluster (a property test holds the two together).
    """
    text = unicodedata.normalize("NFKC", text).casefold().translate(_TABLE)
    return " ".join(text.split()).strip(TRIM)
