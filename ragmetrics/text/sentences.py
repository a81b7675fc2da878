"""Sentences as exact substrings of the input: the claim splitters', the test sets' and the canaries'.

Split on ``. ! ?``, their CJK forms ``。！？``, ``…`` and line breaks; abbreviations, initials,
decimals and trailing citation markers such as ``[1]`` are kept in place.
"""

from __future__ import annotations

import re

__all__ = ["sentence_spans", "split_sentences"]

# --------------------------------------------------------------------------------------------------
# Sentences

_ABBREVIATIONS = frozenset(
    """
    e.g i.e etc vs al approx ca cf dr mr mrs ms prof sr jr st mt no nos fig figs vol pp ed eds inc ltd co
    corp jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n a.m p.m ph.d op est resp dept gen
    col lt sgt rev hon
    """.split()
)
_TERMINATOR = re.compile(r"[.!?…]+|[。！？]+|\n")
_CLOSERS = re.compile(r"[\"')\]»”’]*(?:\s*\[\d+(?:[,\-–]\s*\d+)*\])*[.!?]?")
_WORD_BEFORE = re.compile(r"([\w.]+)$")


def _is_abbreviation(text: str, dot: int) -> bool:
    """True when the ``.`` at ``dot`` ends an abbreviation, an initial or a list number."""
    m = _WORD_BEFORE.search(text, max(0, dot - 40), dot)
    if not m:
        return False
    word = m.group(1).casefold().rstrip(".")
    if word in _ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isalpha() and text[m.start(1)].isupper():
        return True  # an initial: "J. K. Rowling"
    if re.fullmatch(r"(?:[a-z]\.)+[a-z]", word):
        return True  # "U.S", "e.g"
    return False


def _soft_line_break(text: str, at: int) -> bool:
    """True for a single line break inside running text (lower-case or comma on both sides)."""
    # the characters either side, past spaces and tabs (no copy of the text: one per line break was
    # quadratic on many lines)
    i = at
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    j, n = at + 1, len(text)
    while j < n and text[j] in " \t":
        j += 1
    if i == 0 or j == n or text[j] == "\n":
        return False
    return (text[i - 1].islower() or text[i - 1] in ",;") and text[j].islower()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``; each ``text[start:end]`` is stripped.

    Splits after ``. ! ? …`` (followed by whitespace or the end, or glued to a capitalised word after
    a lower-case one: ``not.However``), after ``。！？`` and at line breaks (a single line break
    between lower-case words is read as wrapped text). A full stop does not split after an
    abbreviation (``e.g.``, ``Dr.``), an initial, or inside a number (``3.5``). Closing quotes and
    citation markers (``[1]``, ``[2, 3]``) after the terminator stay with their sentence.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    n = len(text)
    for m in _TERMINATOR.finditer(text):
        if m.start() < start:
            continue  # inside closers already given to the previous sentence
        end = m.end()
        mark = m.group()
        if mark == "\n":
            if _soft_line_break(text, m.start()):
                continue
        elif mark[0] in ".!?…":
            glued = (  # "...or not.However" (a lost space): lower-case word, stop, capitalised word
                end + 1 < n
                and text[end].isupper()
                and text[end + 1].islower()
                and m.start() >= 2
                and text[m.start() - 2 : m.start()].isalpha()
                and text[m.start() - 1].islower()
            )
            if end < n and not text[end].isspace() and text[end] not in "\"')]»”’[" and not glued:
                continue  # "3.5", "example.com", "a.b"
            if mark == "." and _is_abbreviation(text, m.start()):
                continue
            closers = _CLOSERS.match(text, end)
            if closers:
                end = closers.end()
            if end < n and not text[end].isspace() and not glued:
                continue
        _add_span(text, start, end, spans)
        start = end
    _add_span(text, start, n, spans)
    return spans


def _add_span(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start and any(ch.isalnum() for ch in text[start:end]):
        spans.append((start, end))
    elif end > start and spans and spans[-1][1] <= start:
        # stray punctuation or a lone marker: glue it to the previous sentence
        spans[-1] = (spans[-1][0], end)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, each an exact (stripped) substring of it; see :func:`sentence_spans`."""
    return [text[s:e] for s, e in sentence_spans(text)]
