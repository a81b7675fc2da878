"""Documents in, chunks out: files and folders, JSONL chunks, LangChain Documents, LlamaIndex nodes.

:func:`load_documents` reads ``.txt``, ``.md``/``.markdown``, ``.html``/``.htm`` and ``.pdf`` files
(PDF through ``pypdf``, the ``pdf`` extra) and folders of them (recursively, in sorted order), a
``.jsonl`` file of ready chunks (one ``{"text": ..., "doc_id": ..., "id": ...}`` object a line),
LangChain ``Document`` objects and LlamaIndex nodes or documents. :func:`chunk_documents` cuts each
document into chunks of about ``chunk_tokens`` tokens (estimated as characters / 4, the package's one
token estimate: no tokenizer is downloaded) with ``overlap_tokens`` of overlap, at paragraph, then
sentence, then word boundaries; a chunk never ends on a heading, and each chunk names the heading
it falls under. Every chunk keeps its document id and its character offsets in the document's text
(``document.text[chunk.start:chunk.end] == chunk.text``). Ready chunks (JSONL lines, LlamaIndex
nodes) are kept as they are.
"""

from __future__ import annotations

import html.parser
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics._textnorm import CHARS_PER_TOKEN
from ragmetrics.errors import ConfigError, MissingDependencyError

__all__ = ["Chunk", "Document", "chunk_documents", "load_chunks", "load_documents"]

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

# -- reading files ---------------------------------------------------------------------------------

_BLOCK_TAGS = frozenset(
    "p div section article header footer li ul ol table tr br pre blockquote main nav aside".split()
)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_SKIP_TAGS = frozenset({"script", "style", "head", "noscript", "template"})


class _HtmlText(html.parser.HTMLParser):
    """HTML to text: headings become ``#`` lines (as in Markdown), blocks become paragraphs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self.skip += 1
        elif tag in _HEADINGS:
            self.parts.append("\n\n" + "#" * _HEADINGS[tag] + " ")
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self.skip = max(0, self.skip - 1)
        elif tag in _HEADINGS or tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_text(markup: str) -> str:
    """The text of an HTML page: no tags, scripts or styles; headings as ``#`` lines."""
    parser = _HtmlText()
    parser.feed(markup)
    parser.close()
    text = "".join(parser.parts)
    lines = [line.strip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _pdf_text(path: Path) -> str:
    try:
        import pypdf
    except ImportError as exc:
        raise MissingDependencyError("pypdf", "pdf", f"reading the PDF {path}") from exc
    try:
        reader = pypdf.PdfReader(str(path))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except Exception as exc:  # pypdf raises many kinds (PdfReadError, struct errors, ...)
        raise ConfigError(f"{path}: not a readable PDF ({type(exc).__name__}: {exc})") from exc
    return "\n\n".join(p for p in pages if p)


def _read_file(path: Path, doc_id: str) -> list[Document]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return [Document(id=doc_id, text="", chunks=tuple(load_chunks(path)))]
    if suffix == ".pdf":
        text = _pdf_text(path)
    else:
        try:
            raw = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text ({exc}); convert it to UTF-8") from exc
        text = html_text(raw) if suffix in (".html", ".htm") else raw.replace("\r\n", "\n")
    return [Document(id=doc_id, text=text)]


def load_chunks(path: str | Path) -> list[Chunk]:
    """Ready chunks from a JSONL file, kept as they are.

    One object a line with ``text`` (also ``page_content`` or ``content``) and optionally ``doc_id``
    (or ``source``), ``id``, ``start``, ``heading``.

    Raises:
        ConfigError: A line is not a JSON object or has no text.
    """
    path = Path(path)
    chunks: list[Chunk] = []
    with path.open(encoding="utf-8-sig") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{n}: not JSON ({exc.msg})") from exc
            text = next(
                (
                    row[k]
                    for k in ("text", "page_content", "content")
                    if isinstance(row, dict) and isinstance(row.get(k), str)
                ),
                None,
            )
            if text is None:
                raise ConfigError(f"{path}:{n}: expected an object with a 'text' string")
            doc_id = str(row.get("doc_id") or row.get("source") or f"{path.name}:{n}")
            start = int(row.get("start") or 0)
            chunks.append(
                Chunk(
                    id=str(row.get("id") or f"{doc_id}#{n - 1}"),
                    doc_id=doc_id,
                    text=text,
                    start=start,
                    end=start + len(text),
                    heading=str(row.get("heading") or ""),
                )
            )
    return chunks


def _from_object(obj: Any, index: int) -> Document:
    """A LangChain Document or a LlamaIndex node / document, by duck typing (neither is imported)."""
    if hasattr(obj, "page_content"):  # LangChain Document
        meta = getattr(obj, "metadata", None) or {}
        doc_id = meta.get("source") or getattr(obj, "id", None) or f"document-{index}"
        return Document(id=str(doc_id), text=str(obj.page_content))
    get_content = getattr(obj, "get_content", None)
    if callable(get_content):  # LlamaIndex: a node (a ready chunk) or a Document (to chunk)
        text = str(get_content())
        node_id = str(getattr(obj, "node_id", None) or getattr(obj, "id_", None) or f"node-{index}")
        ref = getattr(obj, "ref_doc_id", None)
        if type(obj).__name__ == "Document" or ref is None:
            meta = getattr(obj, "metadata", None) or {}
            return Document(id=str(meta.get("file_path") or meta.get("source") or node_id), text=text)
        start = getattr(obj, "start_char_idx", None) or 0
        chunk = Chunk(id=node_id, doc_id=str(ref), text=text, start=start, end=start + len(text))
        return Document(id=str(ref), text="", chunks=(chunk,))
    raise ConfigError(
        f"documents: item {index} is a {type(obj).__name__}; expected a path, a str, a LangChain "
        "Document, a LlamaIndex node or document, or a ragmetrics Document"
    )


def load_documents(sources: Iterable[Any] | str | Path) -> list[Document]:
    """Read documents from paths (files and folders), LangChain Documents, LlamaIndex nodes.

    A folder is read recursively in sorted order (the files with :data:`TEXT_SUFFIXES`), each
    document named by its path relative to the folder. LlamaIndex nodes of one document are grouped
    into one :class:`Document` holding them as ready chunks.

    Raises:
        ConfigError: A path does not exist, a file type is not supported, or an item is of no known kind.
        MissingDependencyError: A PDF without the ``pdf`` extra.
    """
    if isinstance(sources, (str, Path)):
        sources = [sources]
    docs: list[Document] = []
    for i, src in enumerate(sources):
        if isinstance(src, Document):
            docs.append(src)
        elif isinstance(src, (str, Path)):
            path = Path(src)
            if path.is_dir():
                files = sorted(
                    p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
                )
                for f in files:
                    docs += _read_file(f, f.relative_to(path).as_posix())
            elif path.is_file():
                if path.suffix.lower() not in (*TEXT_SUFFIXES, ".jsonl"):
                    raise ConfigError(
                        f"{path}: unsupported file type {path.suffix!r}; "
                        f"use one of {', '.join(TEXT_SUFFIXES)} or .jsonl (ready chunks)"
                    )
                docs += _read_file(path, path.name)
            else:
                raise ConfigError(f"{path}: no such file or folder")
        else:
            docs.append(_from_object(src, i))
    return _group_nodes(docs)


def _group_nodes(docs: list[Document]) -> list[Document]:
    """Merge documents that only carry ready chunks and share an id (one LlamaIndex document's nodes)."""
    out: list[Document] = []
    by_id: dict[str, int] = {}
    for doc in docs:
        if doc.chunks is not None and not doc.text and doc.id in by_id:
            prev = out[by_id[doc.id]]
            out[by_id[doc.id]] = prev.model_copy(update={"chunks": (*(prev.chunks or ()), *doc.chunks)})
            continue
        if doc.chunks is not None and not doc.text:
            by_id[doc.id] = len(out)
        out.append(doc)
    return out


# -- chunking --------------------------------------------------------------------------------------

_HEADING_LINE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
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


def _chunk_text(doc: Document, chunk_tokens: int, overlap_tokens: int) -> list[Chunk]:
    text = doc.text
    limit = chunk_tokens * CHARS_PER_TOKEN
    overlap = overlap_tokens * CHARS_PER_TOKEN
    headings = [(m.start(), m.end(), m.group(2).strip()) for m in _HEADING_LINE.finditer(text)]
    # sections: from one heading line to the next (the text before the first has no heading)
    bounds = [0, *(h[0] for h in headings), len(text)]
    sections = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        title = next((h[2] for h in headings if h[0] == a), "")
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
    docs: Sequence[Document], *, chunk_tokens: int = 256, overlap_tokens: int = 32
) -> list[Chunk]:
    """Cut documents into chunks of at most about ``chunk_tokens`` tokens, ``overlap_tokens`` shared.

    Ready chunks (``Document.chunks``) are passed through unchanged; blank chunks are dropped.

    Raises:
        ConfigError: ``chunk_tokens`` is not positive, or the overlap is not smaller than it.
    """
    if chunk_tokens <= 0 or not 0 <= overlap_tokens < chunk_tokens:
        raise ConfigError(
            f"chunk_tokens must be > 0 and 0 <= overlap_tokens < chunk_tokens, got {chunk_tokens}, "
            f"{overlap_tokens}"
        )
    out: list[Chunk] = []
    for doc in docs:
        chunks = (
            list(doc.chunks) if doc.chunks is not None else _chunk_text(doc, chunk_tokens, overlap_tokens)
        )
        out += [c for c in chunks if c.text.strip()]
    return out
