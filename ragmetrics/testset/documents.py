"""Documents and chunks, and cutting documents into chunks.

:func:`chunk_documents` cuts each document into chunks of about ``chunk_tokens`` tokens (estimated as
characters / 4, the package's one token estimate: no tokenizer is downloaded) with ``overlap_tokens``
of overlap, at paragraph, then sentence, then word boundaries; a chunk never ends on a heading, and
each chunk names the heading it falls under. Every chunk keeps its document id and its character
offsets in the document's text (``document.text[chunk.start:chunk.end] == chunk.text``). Ready chunks
(JSONL lines, LlamaIndex nodes) are kept as they are. Reading files is :mod:`.loading`; the chunks of a
run are counted against the caps of :mod:`.limits` as they are cut, in time linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.errors import ConfigError
from ragmetrics.testset.limits import DocumentLimits, RunTally, limits_or_default
from ragmetrics.text import CHARS_PER_TOKEN

__all__ = ["TEXT_SUFFIXES", "Chunk", "Document", "chunk_documents"]

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".pdf")
"""File types read from folders (a ``.jsonl`` file is read when named, as ready chunks)."""


class Document(BaseModel):
    """One source document as text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """The document id: the file path as given (relative to the folder named), a LangChain
    ``metadata["source"]`` or ``id``, a LlamaIndex ``ref_doc_id``, a JSONL line's ``doc_id``."""
    text: str
    """The document's text (HTML without tags, PDF pages joined by blank lines)."""
    chunks: tuple[Chunk, ...] | None = None
    """Ready chunks that are kept as given (JSONL lines, LlamaIndex nodes); None: chunk the text."""


class Chunk(BaseModel):
    """A piece of one document, with where it sits in it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """``DOC_ID#N`` (N counts from 0 in the document), or the id a ready chunk came with."""
    doc_id: str
    """The document it comes from."""
    text: str
    """The chunk's text, exactly ``document.text[start:end]`` for chunks cut here."""
    start: int = Field(ge=0)
    """Character offset of the chunk's first character in the document's text."""
    end: int = Field(ge=0)
    """Character offset just past its last character."""
    heading: str = ""
    """The heading the chunk falls under ("" when the document has none before it)."""


Document.model_rebuild()

# -- chunking --------------------------------------------------------------------------------------

# the title runs to the end of its line; closing "#"s and spaces are stripped in Python (a lazy title
# followed by "[ \t#]*$" tried every end of a long run of spaces again: quadratic in the run)
_HEADING_LINE = re.compile(r"^(#{1,6})[ \t]+(.+)$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _units(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Cut points for text[start:end]: paragraphs, then sentences of paragraphs, as (start, end) spans."""
    spans: list[tuple[int, int]] = []
    for m in re.finditer(r"\S(?:.*?\S)?(?=\s*\n\s*\n|\s*\Z)", text[start:end], re.DOTALL):
        a, b = start + m.start(), start + m.end()
        prev = a
        for s in _SENTENCE_END.finditer(text, a, b):
            spans.append((prev, s.start()))
            prev = s.end()
        spans.append((prev, b))
    return [(a, b) for a, b in spans if b > a]


def _split_long(a: int, b: int, limit: int) -> list[tuple[int, int]]:
    """A unit longer than ``limit`` characters, cut at spaces (or hard) into pieces."""
    return [(s, min(b, s + limit)) for s in range(a, b, limit)]


def _title(raw: str) -> str:
    """A heading line's title: what follows the ``#``s, closing ``#``s and spaces stripped."""
    return (raw.rstrip(" \t#") or raw[:1]).strip()


def _chunk_text(doc: Document, chunk_tokens: int, overlap_tokens: int, tally: RunTally) -> list[Chunk]:
    text = doc.text
    limit = chunk_tokens * CHARS_PER_TOKEN
    overlap = overlap_tokens * CHARS_PER_TOKEN
    titles = {m.start(): _title(m.group(2)) for m in _HEADING_LINE.finditer(text)}
    # sections: from one heading line to the next (the text before the first has no heading)
    bounds = [0, *titles, len(text)]
    sections = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        title = titles.get(a, "")
        if b > a:
            sections.append((a, b, title))
    chunks: list[Chunk] = []
    for a, b, title in sections:
        units: list[tuple[int, int]] = []
        for u in _units(text, a, b):
            units += _split_long(*u, limit) if u[1] - u[0] > limit else [u]
        # the heading line is its own unit; it must never end a chunk, so join it to the next unit
        if units and title and len(units) > 1 and text[units[0][0] : units[0][1]].lstrip().startswith("#"):
            units[1] = (units[0][0], units[1][1])
            units.pop(0)
        i = 0
        while i < len(units):
            j = i
            while j + 1 < len(units) and units[j + 1][1] - units[i][0] <= limit:
                j += 1
            start, end = units[i][0], units[j][1]
            tally.chunk(doc.id, end - start)
            chunks.append(
                Chunk(
                    id=f"{doc.id}#{len(chunks)}",
                    doc_id=doc.id,
                    text=text[start:end],
                    start=start,
                    end=end,
                    heading=title,
                )
            )
            if j + 1 >= len(units):
                break
            # the next chunk starts early enough to repeat about ``overlap`` characters
            k = j + 1
            while k - 1 > i and end - units[k - 1][0] <= overlap:
                k -= 1
            i = k
    return chunks


def chunk_documents(
    docs: Sequence[Document],
    *,
    chunk_tokens: int = 256,
    overlap_tokens: int = 32,
    limits: DocumentLimits | None = None,
) -> list[Chunk]:
    """Cut documents into chunks of at most about ``chunk_tokens`` tokens, ``overlap_tokens`` shared.

    Ready chunks (``Document.chunks``) are passed through unchanged; blank chunks are dropped.

    Args:
        docs: The documents.
        chunk_tokens: Chunk size in estimated tokens (characters / 4), at most
            :data:`~ragmetrics.testset.limits.MAX_CHUNK_CHARS` / 4.
        overlap_tokens: Tokens shared by neighbouring chunks.
        limits: The caps (default :class:`~ragmetrics.testset.limits.DocumentLimits`): chunks in all
            and characters per chunk.

    Raises:
        ConfigError: ``chunk_tokens`` is not positive or over its cap, the overlap is not smaller than
            it, or the documents give more chunks than the cap (stopped as soon as it is passed).
    """
    limits = limits_or_default(limits)
    most = limits.chunk_chars // CHARS_PER_TOKEN
    if not 0 < chunk_tokens <= most or not 0 <= overlap_tokens < chunk_tokens:
        raise ConfigError(
            f"chunk_tokens must be in [1, {most}] (MAX_CHUNK_CHARS / {CHARS_PER_TOKEN}) and 0 <= "
            f"overlap_tokens < chunk_tokens, got {chunk_tokens}, {overlap_tokens}"
        )
    tally = RunTally(limits)
    out: list[Chunk] = []
    for doc in docs:
        if doc.chunks is not None:
            for chunk in doc.chunks:
                tally.chunk(chunk.id, len(chunk.text))
            chunks = list(doc.chunks)
        else:
            chunks = _chunk_text(doc, chunk_tokens, overlap_tokens, tally)
        out += [c for c in chunks if c.text.strip()]
    return out
