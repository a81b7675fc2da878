"""The size caps of test-set generation: per file, per document, per chunk and per run.

Each cap is a named default and a field of :class:`DocumentLimits`, which ``load_documents``,
``chunk_documents``, ``prepare`` and ``generate`` take as ``limits=`` (to raise or lower them). Going
past one is a :class:`~ragmetrics.errors.ConfigError` naming the file or document and the cap, raised
while the documents are read, before any LLM call: a test set built from part of the documents would
misstate its coverage, so nothing is dropped quietly. A file is measured (``stat``) before it is read,
and read no further than its cap.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragmetrics._check import check_int
from ragmetrics.errors import ConfigError
from ragmetrics.text import CHARS_PER_TOKEN

__all__ = [
    "MAX_CHUNKS",
    "MAX_CHUNK_CHARS",
    "MAX_DOCUMENT_CHARS",
    "MAX_FILE_BYTES",
    "MAX_TOTAL_CHARS",
    "DocumentLimits",
    "RunTally",
    "limits_or_default",
]

MAX_FILE_BYTES = 32 * 1024 * 1024
"""Bytes of one document file (``.txt``, ``.md``, ``.html``, ``.pdf``, ``.jsonl`` of chunks)."""
MAX_DOCUMENT_CHARS = 8_000_000
"""Characters of text in one document (after HTML or PDF extraction; a book of ~3,000 pages)."""
MAX_TOTAL_CHARS = 16_000_000
"""Characters of text in all the documents of one run (about 18,000 chunks at the default size)."""
MAX_CHUNKS = 20_000
"""Chunks in one run (cut here or ready-made): slot planning reads every chunk's terms."""
MAX_CHUNK_CHARS = 32_768
"""Characters in one chunk: ``chunk_tokens`` at most this / 4, and ready chunks no longer (a chunk is
sent whole in a prompt)."""


def _raise_it(field: str) -> str:
    return f"raise it with limits=DocumentLimits({field}=...) in Python"


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentLimits:
    """How much a test-set run reads; each field defaults to the cap of the same name.

    Raises:
        ConfigError: A field that is not an integer >= 1.
    """

    file_bytes: int = MAX_FILE_BYTES
    """Bytes of one document file (:data:`MAX_FILE_BYTES`)."""
    document_chars: int = MAX_DOCUMENT_CHARS
    """Characters of one document's text (:data:`MAX_DOCUMENT_CHARS`)."""
    total_chars: int = MAX_TOTAL_CHARS
    """Characters of all documents together (:data:`MAX_TOTAL_CHARS`)."""
    chunks: int = MAX_CHUNKS
    """Chunks in the run (:data:`MAX_CHUNKS`)."""
    chunk_chars: int = MAX_CHUNK_CHARS
    """Characters of one chunk (:data:`MAX_CHUNK_CHARS`)."""

    def __post_init__(self) -> None:
        for name in ("file_bytes", "document_chars", "total_chars", "chunks", "chunk_chars"):
            check_int(getattr(self, name), name, "DocumentLimits", minimum=1)


def limits_or_default(limits: DocumentLimits | None) -> DocumentLimits:
    """``limits``, or the defaults when None.

    Raises:
        ConfigError: ``limits`` is something else.
    """
    if limits is None:
        return DocumentLimits()
    if not isinstance(limits, DocumentLimits):
        raise ConfigError(f"limits must be a DocumentLimits, got {type(limits).__name__}")
    return limits


class RunTally:
    """Counts the characters and chunks of one run against its caps, raising at the first one passed."""

    def __init__(self, limits: DocumentLimits) -> None:
        self.limits = limits
        self.chars = 0
        self.chunks = 0

    def document(self, where: str, chars: int) -> None:
        """Count one document's text (``where`` names it in the message).

        Raises:
            ConfigError: The document, or the run so far, holds too many characters.
        """
        cap = self.limits
        if chars > cap.document_chars:
            raise ConfigError(
                f"{where}: {chars:,} characters of text, over the cap of {cap.document_chars:,} per "
                f"document (MAX_DOCUMENT_CHARS); split the document, or {_raise_it('document_chars')}"
            )
        self.chars += chars
        self._check_total(where)

    def _check_total(self, where: str) -> None:
        cap = self.limits.total_chars
        if self.chars > cap:
            raise ConfigError(
                f"{where}: the documents so far hold {self.chars:,} characters of text, over the cap of "
                f"{cap:,} per run (MAX_TOTAL_CHARS); generate from fewer documents, or "
                f"{_raise_it('total_chars')}"
            )

    def text(self, where: str, chars: int) -> None:
        """Count text that is not a whole document (ready chunks) towards the run's total.

        Raises:
            ConfigError: The run so far holds too many characters.
        """
        self.chars += chars
        self._check_total(where)

    def chunk(self, where: str, chars: int) -> None:
        """Count one chunk of ``chars`` characters (``where`` names its file and line, or its id).

        Raises:
            ConfigError: The chunk is too long, or the run holds too many chunks.
        """
        cap = self.limits
        if chars > cap.chunk_chars:
            raise ConfigError(
                f"{where}: a chunk of {chars:,} characters, over the cap of {cap.chunk_chars:,} "
                f"(MAX_CHUNK_CHARS, about {cap.chunk_chars // CHARS_PER_TOKEN:,} tokens); cut it smaller, or "
                f"{_raise_it('chunk_chars')}"
            )
        self.chunks += 1
        if self.chunks > cap.chunks:
            raise ConfigError(
                f"{where}: more than {cap.chunks:,} chunks in the run (MAX_CHUNKS); generate from fewer "
                f"documents or with larger chunks (chunk_tokens), or {_raise_it('chunks')}"
            )
