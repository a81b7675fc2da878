"""Reading documents: files and folders, JSONL chunks, LangChain Documents, LlamaIndex nodes.

:func:`load_documents` reads ``.txt``, ``.md``/``.markdown``, ``.html``/``.htm`` (:mod:`.markup`) and
``.pdf`` files (through ``pypdf``, the ``pdf`` extra) and folders of them (recursively, in sorted
order), ``.jsonl`` files of ready chunks (:func:`load_chunks`), LangChain ``Document`` objects and
LlamaIndex nodes or documents, under the caps of :mod:`.limits` (a file is measured before it is read
and read no further than its cap). Text is UTF-8 (a byte order mark is skipped); bytes that are not,
a chunk line that is not a JSON object with a ``text`` string, a field of the wrong type, a ``start``
that is not a whole number >= 0 or a lone surrogate are each a :class:`~ragmetrics.errors.ConfigError`
naming the file, the line and the field, found before any LLM call.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragmetrics._check import check_field, check_int
from ragmetrics.errors import ConfigError, InvalidInputError, MissingDependencyError
from ragmetrics.sample import check_text
from ragmetrics.testset.documents import TEXT_SUFFIXES, Chunk, Document
from ragmetrics.testset.limits import DocumentLimits, RunTally, limits_or_default
from ragmetrics.testset.markup import html_text

__all__ = ["load_chunks", "load_documents", "valid_text"]

_TEXT_KEYS = ("text", "page_content", "content")


def _too_big(path: Path, size: int, cap: int, more: bool = False) -> ConfigError:
    return ConfigError(
        f"{path}: {size:,}{'+' if more else ''} bytes, over the cap of {cap:,} bytes per file "
        "(MAX_FILE_BYTES); split the file, or raise it with limits=DocumentLimits(file_bytes=...)"
    )


def _check_size(path: Path, limits: DocumentLimits) -> None:
    size = path.stat().st_size
    if size > limits.file_bytes:
        raise _too_big(path, size, limits.file_bytes)


def _read_bytes(path: Path, limits: DocumentLimits) -> bytes:
    """The bytes of ``path``, refused past ``limits.file_bytes`` before reading (and never read further)."""
    _check_size(path, limits)
    cap = limits.file_bytes
    with path.open("rb") as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:  # it grew after it was measured
        raise _too_big(path, len(data), cap, more=True)
    return data


def _decode(data: bytes, where: str, offset: int) -> str:
    """``data`` as UTF-8; ``offset`` is its first byte's offset in the file, for the message."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.end][:8]
        plural = len(bad) > 1
        raise ConfigError(
            f"{where}: byte{'s' if plural else ''} {bad.hex(' ')} at byte offset {offset + exc.start} "
            f"{'are' if plural else 'is'} not valid UTF-8 ({exc.reason}); convert the file to UTF-8"
        ) from None


def _bom(data: bytes) -> int:
    return len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0


def _pdf_text(path: Path, limits: DocumentLimits) -> str:
    try:
        import pypdf
    except ImportError as exc:
        raise MissingDependencyError("pypdf", "pdf", f"reading the PDF {path}") from exc
    _check_size(path, limits)  # before pypdf opens it
    pages: list[str] = []
    chars = 0
    try:
        reader = pypdf.PdfReader(str(path))
        for page in reader.pages:
            pages.append((page.extract_text() or "").strip())
            chars += len(pages[-1]) + 2
            if chars > limits.document_chars:  # stop extracting: the cap is passed already
                break
    except Exception as exc:  # pypdf raises many kinds (PdfReadError, struct errors, ...)
        raise ConfigError(f"{path}: not a readable PDF ({type(exc).__name__}: {exc})") from exc
    return "\n\n".join(p for p in pages if p)


def _read_file(path: Path, doc_id: str, tally: RunTally) -> list[Document]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return [Document(id=doc_id, text="", chunks=tuple(load_chunks(path, tally=tally)))]
    if suffix == ".pdf":
        text = _pdf_text(path, tally.limits)
    else:
        data = _read_bytes(path, tally.limits)
        start = _bom(data)
        raw = _decode(data[start:], str(path), start)
        del data
        text = html_text(raw) if suffix in (".html", ".htm") else raw.replace("\r\n", "\n")
    return [_document(doc_id, text, str(path), tally)]


def _document(doc_id: str, text: str, where: str, tally: RunTally) -> Document:
    """A document, counted against the caps; its text checked to be writable Unicode."""
    tally.document(where, len(text))
    valid_text(text, "text", where)
    return Document(id=doc_id, text=text)


def valid_text(text: str, field: str, where: str) -> str:
    """``text`` if it holds no lone surrogate (which no file can hold: the run would fail writing it).

    Raises:
        ConfigError: It does; the message names ``where``, the field and the character position.
    """
    try:
        return check_text(text, field)
    except InvalidInputError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _name(row: dict[str, Any], keys: tuple[str, ...], where: str) -> str | None:
    """The first of ``keys`` with a value (a string or a whole number), as text; None if none has one."""
    for key in keys:
        value = row.get(key)
        if value is None or value == "":
            continue
        try:
            check_field(value, key, (str, int), "a string (or a whole number)")
        except InvalidInputError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        return valid_text(str(value), key, where)
    return None


def _ready_chunk(row: Any, where: str, default_doc: str, n: int, tally: RunTally) -> Chunk:
    text = next((row[k] for k in _TEXT_KEYS if isinstance(row, dict) and isinstance(row.get(k), str)), None)
    if text is None:
        raise ConfigError(f"{where}: expected an object with a 'text' string")
    key = next(k for k in _TEXT_KEYS if row.get(k) is text)
    valid_text(text, key, where)
    tally.text(where, len(text))
    tally.chunk(where, len(text))
    doc_id = _name(row, ("doc_id", "source"), where) or default_doc
    chunk_id = _name(row, ("id",), where) or f"{doc_id}#{n - 1}"
    heading = row.get("heading")
    if heading is not None:
        try:
            check_field(heading, "heading", str, "a string")
        except InvalidInputError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        valid_text(heading, "heading", where)
    raw_start = row.get("start")
    start = 0 if raw_start is None else check_int(raw_start, "start", where, minimum=0)
    return Chunk(
        id=chunk_id,
        doc_id=doc_id,
        text=text,
        start=start,
        end=start + len(text),
        heading=heading or "",
    )


def load_chunks(
    path: str | Path, *, limits: DocumentLimits | None = None, tally: RunTally | None = None
) -> list[Chunk]:
    """Ready chunks from a JSONL file, kept as they are.

    One object a line with ``text`` (also ``page_content`` or ``content``) and optionally ``doc_id``
    (or ``source``), ``id``, ``start`` (a whole number >= 0), ``heading``.

    Args:
        path: The file (UTF-8).
        limits: The caps (default :class:`~ragmetrics.testset.limits.DocumentLimits`).
        tally: The run's count so far (when reading several sources); takes ``limits`` from it.

    Raises:
        ConfigError: The file is over its cap, or a line is not UTF-8, not a JSON object with a text
            string, nested too deeply to read, has a field of the wrong type, or passes a chunk cap;
            the message names the file and the line.
    """
    path = Path(path)
    tally = tally if tally is not None else RunTally(limits_or_default(limits))
    data = _read_bytes(path, tally.limits)
    pos = _bom(data)
    chunks: list[Chunk] = []
    n = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end + 1
        raw, offset = data[pos:end], pos
        pos = end
        n += 1
        where = f"{path}:{n}"
        if not raw.strip():
            continue
        line = _decode(raw, where, offset)
        try:
            row = json.loads(line)
        except RecursionError:
            raise ConfigError(f"{where}: nested too deeply to read; a chunk is a flat JSON object") from None
        except ValueError as exc:
            raise ConfigError(f"{where}: not JSON ({exc})") from None
        chunks.append(_ready_chunk(row, where, f"{path.name}:{n}", n, tally))
    return chunks


def _from_object(obj: Any, index: int, tally: RunTally) -> Document:
    """A LangChain Document or a LlamaIndex node / document, by duck typing (neither is imported)."""
    where = f"documents: item {index}"
    if hasattr(obj, "page_content"):  # LangChain Document
        meta = getattr(obj, "metadata", None) or {}
        doc_id = meta.get("source") or getattr(obj, "id", None) or f"document-{index}"
        return _document(str(doc_id), str(obj.page_content), f"{where} ({doc_id})", tally)
    get_content = getattr(obj, "get_content", None)
    if callable(get_content):  # LlamaIndex: a node (a ready chunk) or a Document (to chunk)
        text = str(get_content())
        node_id = str(getattr(obj, "node_id", None) or getattr(obj, "id_", None) or f"node-{index}")
        ref = getattr(obj, "ref_doc_id", None)
        if type(obj).__name__ == "Document" or ref is None:
            meta = getattr(obj, "metadata", None) or {}
            doc_id = str(meta.get("file_path") or meta.get("source") or node_id)
            return _document(doc_id, text, f"{where} ({doc_id})", tally)
        start = getattr(obj, "start_char_idx", None) or 0
        where = f"{where} (node {node_id})"
        valid_text(text, "text", where)
        tally.text(where, len(text))
        tally.chunk(where, len(text))
        chunk = Chunk(id=node_id, doc_id=str(ref), text=text, start=start, end=start + len(text))
        return Document(id=str(ref), text="", chunks=(chunk,))
    raise ConfigError(
        f"documents: item {index} is a {type(obj).__name__}; expected a path, a str, a LangChain "
        "Document, a LlamaIndex node or document, or a ragmetrics Document"
    )


def load_documents(
    sources: Iterable[Any] | str | Path, *, limits: DocumentLimits | None = None
) -> list[Document]:
    """Read documents from paths (files and folders), LangChain Documents, LlamaIndex nodes.

    A folder is read recursively in sorted order (the files with :data:`TEXT_SUFFIXES`), each
    document named by its path relative to the folder. LlamaIndex nodes of one document are grouped
    into one :class:`Document` holding them as ready chunks.

    Args:
        sources: Paths, folders, or document objects (or one path).
        limits: The caps (default :class:`~ragmetrics.testset.limits.DocumentLimits`: per file,
            document, chunk and run).

    Raises:
        ConfigError: A path does not exist, a file type is not supported, an item is of no known
            kind, a file is not UTF-8 or not readable, or a cap is passed (the message names it).
        MissingDependencyError: A PDF without the ``pdf`` extra.
    """
    tally = RunTally(limits_or_default(limits))
    if isinstance(sources, (str, Path)):
        sources = [sources]
    docs: list[Document] = []
    for i, src in enumerate(sources):
        if isinstance(src, Document):
            if src.chunks is None or src.text:
                tally.document(src.id, len(src.text))
                valid_text(src.text, "text", src.id)
            for chunk in src.chunks or ():
                tally.text(chunk.id, len(chunk.text))
                valid_text(chunk.text, "text", chunk.id)
            docs.append(src)
        elif isinstance(src, (str, Path)):
            path = Path(src)
            if path.is_dir():
                files = sorted(
                    p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
                )
                for f in files:
                    docs += _read_file(f, f.relative_to(path).as_posix(), tally)
            elif path.is_file():
                if path.suffix.lower() not in (*TEXT_SUFFIXES, ".jsonl"):
                    raise ConfigError(
                        f"{path}: unsupported file type {path.suffix!r}; "
                        f"use one of {', '.join(TEXT_SUFFIXES)} or .jsonl (ready chunks)"
                    )
                docs += _read_file(path, path.name, tally)
            else:
                raise ConfigError(f"{path}: no such file or folder")
        else:
            docs.append(_from_object(src, i, tally))
    return _group_nodes(docs)


def _group_nodes(docs: list[Document]) -> list[Document]:
    """Merge documents that only carry ready chunks and share an id (one LlamaIndex document's nodes)."""
    out: list[Document] = []
    nodes: dict[str, tuple[int, list[Chunk]]] = {}  # id -> (its place in out, its chunks so far)
    for doc in docs:
        if doc.chunks is not None and not doc.text:
            if doc.id in nodes:
                nodes[doc.id][1].extend(doc.chunks)
                continue
            nodes[doc.id] = (len(out), list(doc.chunks))
        out.append(doc)
    for place, chunks in nodes.values():  # each merged once: linear in the nodes
        if len(chunks) != len(out[place].chunks or ()):
            out[place] = out[place].model_copy(update={"chunks": tuple(chunks)})
    return out
