"""HTML pages as text for test-set generation, in time and memory linear in the page.

A small tokenizer of our own, not ``html.parser``, whose ``close()`` and start-tag pattern are
quadratic or memory-hungry on hostile pages in Pythons before 3.13.4: here every search is a forward
``str.find`` or single-character-class search, and a tag is never matched as a whole. Only what text
extraction needs is tokenized, as the HTML standard does: comments, declarations, processing
instructions, CDATA, start and end tags, and the raw text of ``<script>``, ``<style>``, ``<title>``
and ``<textarea>``. A construct left open at the end is dropped, as a browser drops it; character
references are decoded by :func:`html.unescape`.
"""

from __future__ import annotations

import html
import re

__all__ = ["html_text"]

_BLOCK_TAGS = frozenset(
    "p div section article header footer li ul ol table tr br pre blockquote main nav aside".split()
)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_SKIP_TAGS = frozenset({"script", "style", "head", "noscript", "template"})
_RAW_TAGS = frozenset({"script", "style", "title", "textarea"})
"""Elements whose content is text up to their end tag (never markup)."""
_MARKUP = re.compile(r"<(?:!|\?|/?[A-Za-z])")
_NAME = re.compile(r"[^\t\n\f\r />]*")
_TAG_STOP = re.compile(r"[>\"']")
_SPACE = re.compile(r"\s+")
_BLANK = " \t\n\r\f"


class _Text:
    """The text parts of a page, with the elements being skipped (``head``, ``noscript``...)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.skip: dict[str, int] = {}

    def data(self, raw: str) -> None:
        if raw and not any(self.skip.values()):
            self.parts.append(_SPACE.sub(" ", html.unescape(raw)))

    def start(self, tag: str) -> None:
        if tag == "body":
            self.skip.pop("head", None)  # a <head> never closed ends where the body starts
        if tag in _SKIP_TAGS:
            self.skip[tag] = self.skip.get(tag, 0) + 1
        elif tag in _HEADINGS:
            self.parts.append("\n\n" + "#" * _HEADINGS[tag] + " ")
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def end(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self.skip[tag] = max(0, self.skip.get(tag, 0) - 1)
        elif tag in _HEADINGS or tag in _BLOCK_TAGS:
            self.parts.append("\n\n")


def _tag_end(page: str, pos: int) -> int:
    """Index just past the ``>`` closing the tag whose attributes start at ``pos``; -1 if it never closes."""
    while True:
        stop = _TAG_STOP.search(page, pos)
        if stop is None:
            return -1
        if stop.group() == ">":
            return stop.end()
        before = stop.start() - 1
        while page[before] in _BLANK:  # a quote opens a value only after "=" (spaces allowed)
            before -= 1
        if page[before] != "=":
            pos = stop.end()
            continue
        close = page.find(stop.group(), stop.end())
        if close < 0:
            return -1
        pos = close + 1


def _raw_end(page: str, tag: str, pos: int) -> tuple[int, int]:
    """Where the raw text of ``tag`` starting at ``pos`` ends, and where its end tag ends (-1, -1: never)."""
    closing = re.compile(rf"</{tag}[\t\n\f\r />]", re.IGNORECASE)
    found = closing.search(page, pos)
    if found is None:
        return -1, -1
    after = _tag_end(page, found.end() - 1)
    return found.start(), after


def _tokens(page: str, out: _Text) -> None:
    pos = 0  # everything before pos has been handled
    n = len(page)
    while pos < n:
        found = _MARKUP.search(page, pos)
        if found is None:
            break
        at = found.start()
        out.data(page[pos:at])
        if page.startswith("<!--", at):
            close = page.find("-->", at + 4)
            if page.startswith(("<!-->", "<!--->"), at):  # empty comments, closed at once
                close = page.find(">", at + 4) - 2
            pos = close + 3 if close >= 0 else n
        elif page[at + 1] in "!?":  # declaration, processing instruction, CDATA: to the next ">"
            close = page.find(">", at + 2)
            pos = close + 1 if close >= 0 else n
        else:
            closing = page[at + 1] == "/"
            name_at = at + 2 if closing else at + 1
            name = _NAME.match(page, name_at)
            tag = name.group().lower() if name else ""
            after = _tag_end(page, name_at + len(tag))
            if after < 0:
                return  # a tag left open at the end: dropped, with all after it
            pos = after
            if closing:
                out.end(tag)
                continue
            out.start(tag)
            if tag in _RAW_TAGS:  # "<script/>" opens its raw text too, as in a browser
                text_end, pos = _raw_end(page, tag, after)
                if tag not in _SKIP_TAGS:
                    out.data(page[after:text_end] if text_end >= 0 else page[after:])
                if pos < 0:
                    return  # the element runs to the end of the page
                out.end(tag)
    out.data(page[pos:])


def html_text(markup: str) -> str:
    """The text of an HTML page: no tags, comments, scripts or styles; headings as ``#`` lines."""
    text = _Text()
    _tokens(markup, text)
    joined = "".join(text.parts)
    lines = [line.strip() for line in joined.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
