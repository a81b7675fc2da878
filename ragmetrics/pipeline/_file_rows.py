"""Dataset files as text: encodings and BOMs, one line at a time, and CSV records that parse cleanly.

A file is split into lines before decoding, so an undecodable byte spoils only its own line:
:func:`read_lines` gives each line with its byte offset and any problem (naming the bytes). UTF-8
unless the caller names another encoding; a byte order mark always wins for the UTF family. Lines and
cells are capped at :data:`MAX_LINE_BYTES` / :data:`MAX_CELL_CHARS`. :func:`csv_records` parses
strictly (an unclosed quote or a wrong cell count is that record's problem, and the lines it took are
parsed again), raising ``csv.field_size_limit`` only while a record is parsed.
"""

from __future__ import annotations

import codecs
import csv
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ragmetrics.errors import ConfigError

__all__ = [
    "MAX_CELL_CHARS",
    "MAX_LINE_BYTES",
    "CsvRecord",
    "Line",
    "TextEncoding",
    "csv_records",
    "detect_encoding",
    "read_lines",
    "read_text",
]

MAX_LINE_BYTES = 32 * 1024 * 1024
"""A line (one JSONL row, one physical CSV line) longer than this is an error on its row."""
MAX_CELL_CHARS = 32 * 1024 * 1024
"""A CSV cell longer than this (in characters) is an error on its row."""
_LONE_CR = re.compile(r"(?<=\r)(?!\n)")  # a line break of old Mac files (CSV from Excel 2011)
_CHUNK = 1 << 16  # a multiple of every code unit size, so reads stay aligned
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32 LE"),  # before UTF-16 LE: it starts with the same bytes
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32 BE"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16 BE"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TextEncoding:
    """How a file's bytes become text."""

    codec: str
    """The Python codec each line is decoded with."""
    label: str
    """The encoding's name in messages."""
    start: int
    """Bytes skipped at the start (the byte order mark)."""
    newline: bytes
    """The encoded line feed (one code unit)."""
    chosen: bool
    """Whether the caller named the encoding (messages suggest one only when not)."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a file, decoded."""

    number: int
    """1-based line number."""
    offset: int
    """Byte offset of the line's first byte in the file."""
    text: str
    """The text, line ending included; undecodable bytes are U+FFFD, an over-long line is empty."""
    problem: str | None = None
    """Why the line could not be read (names the byte offset), or None."""


@dataclass(frozen=True, slots=True)
class CsvRecord:
    """One CSV record (the header is the first), or why it could not be parsed."""

    line: int
    """The line it starts on."""
    fields: list[str] | None
    """Its cells, or None when it could not be parsed."""
    problem: str | None = None
    """What is wrong with it (names the line, and the byte offset for encoding errors)."""


def detect_encoding(path: Path, encoding: str | None) -> TextEncoding:
    """The encoding of ``path``: its byte order mark, else ``encoding``, else UTF-8.

    Raises:
        ConfigError: ``encoding`` is unknown, or not one whose lines end in a line-feed byte.
    """
    name = None
    if encoding is not None:
        try:
            name = codecs.lookup(encoding).name
            "\n".encode(name)
        except (LookupError, TypeError) as exc:
            raise ConfigError(
                f"dataset file {path}: unknown text encoding {encoding!r}; use a Python codec name "
                "such as 'utf-8', 'latin-1', 'cp1252' or 'utf-16'"
            ) from exc
    with path.open("rb") as fh:
        head = fh.read(4)
    if name is None or (name.startswith("utf") and name != "utf-7"):
        for bom, codec, label in _BOMS:
            if head.startswith(bom):
                return TextEncoding(
                    codec=codec, label=label, start=len(bom), newline="\n".encode(codec), chosen=True
                )
    if name is None and len(head) == 4 and head.count(0) >= 2:
        guessed = _guess_utf16_32(head)  # no BOM, but NUL bytes where ASCII text in UTF-16/32 has them
        if guessed is not None:
            codec, label = guessed
            return TextEncoding(codec=codec, label=label, start=0, newline="\n".encode(codec), chosen=False)
    if name is None or name in ("utf-8", "utf-8-sig"):
        return TextEncoding(codec="utf-8", label="UTF-8", start=0, newline=b"\n", chosen=name is not None)
    if name in ("utf-16", "utf-32"):
        name = f"{name}-le"  # no byte order mark: little endian, as Python reads it on this machine
    newline = "\n".encode(name)
    if len(newline) == 1 and newline != b"\n":
        raise ConfigError(
            f"dataset file {path}: encoding {encoding!r} is not supported (its lines do not end in a "
            "line-feed byte); convert the file to UTF-8"
        )
    return TextEncoding(codec=name, label=encoding or name, start=0, newline=newline, chosen=True)


def _guess_utf16_32(head: bytes) -> tuple[str, str] | None:
    """The UTF-16/32 form whose zero bytes match ``head`` (4 bytes starting with ASCII text), or None.

    A JSONL or CSV file starts with ASCII (``{``, ``[`` or a column name), so its first character
    gives the byte pattern away, as RFC 4627 noted for JSON.
    """
    zero = (head[0] == 0, head[1] == 0, head[2] == 0, head[3] == 0)
    patterns = {
        (False, True, True, True): ("utf-32-le", "UTF-32 LE (no byte order mark)"),
        (True, True, True, False): ("utf-32-be", "UTF-32 BE (no byte order mark)"),
        (False, True, False, True): ("utf-16-le", "UTF-16 LE (no byte order mark)"),
        (True, False, True, False): ("utf-16-be", "UTF-16 BE (no byte order mark)"),
    }
    return patterns.get(zero)


def _raw_lines(path: Path, enc: TextEncoding) -> Iterator[tuple[int, bytes | None]]:
    """(offset, bytes with their line ending) per line; None for a line over :data:`MAX_LINE_BYTES`."""
    unit = len(enc.newline)
    with path.open("rb") as fh:
        fh.seek(enc.start)
        offset = enc.start
        pending: list[bytes] = []
        size = 0
        too_long = False
        while chunk := fh.read(_CHUNK):
            pos = 0
            while True:
                end = chunk.find(enc.newline, pos)
                while end != -1 and end % unit:
                    end = chunk.find(enc.newline, end + 1)
                if end == -1:
                    break
                end += unit
                size += end - pos
                line = None if too_long or size > MAX_LINE_BYTES else b"".join([*pending, chunk[pos:end]])
                yield offset, line
                offset += size
                pending, size, too_long, pos = [], 0, False, end
            size += len(chunk) - pos
            if too_long or size > MAX_LINE_BYTES:
                pending, too_long = [], True  # the rest of this line is skipped, never held
            else:
                pending.append(chunk[pos:])
        if size:
            yield offset, None if too_long else b"".join(pending)


def read_lines(path: Path, enc: TextEncoding) -> Iterator[Line]:
    """Every line of ``path``, decoded one by one; a bad line carries its problem instead of raising."""
    for number, (offset, raw) in enumerate(_raw_lines(path, enc), 1):
        if raw is None:
            yield Line(number, offset, "", f"the line is over the limit of {MAX_LINE_BYTES:,} bytes")
            continue
        try:
            yield Line(number, offset, raw.decode(enc.codec))
        except UnicodeDecodeError as exc:
            problem = decode_problem(exc, offset, enc)
            yield Line(number, offset, raw.decode(enc.codec, errors="replace"), problem)


def decode_problem(exc: UnicodeDecodeError, offset: int, enc: TextEncoding) -> str:
    """What a decoding error means, naming the bytes and their byte offset (``offset`` + position)."""
    bad = exc.object[exc.start : exc.end][:8]
    where = offset + exc.start
    text = f"byte{'s' if len(bad) > 1 else ''} {bad.hex(' ')} at byte offset {where} "
    text += f"{'are' if len(bad) > 1 else 'is'} not valid {enc.label} ({exc.reason})"
    if enc.chosen:
        return f"{text}; check the file's encoding"
    return (
        f"{text}; if the file is not UTF-8, pass its encoding, e.g. Dataset(path, encoding='cp1252') "
        "or --encoding cp1252"
    )


def read_text(path: Path, enc: TextEncoding) -> str:
    """The whole file as text (a ``.json`` file is one value: it has no rows to set aside).

    Raises:
        ConfigError: A byte cannot be decoded; the message names its byte offset.
    """
    data = path.read_bytes()[enc.start :]
    try:
        return data.decode(enc.codec)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"dataset file {path}: {decode_problem(exc, enc.start, enc)}") from exc


class _FieldLimit:
    """Raises ``csv.field_size_limit`` to :data:`MAX_CELL_CHARS` while any of our records is parsed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._saved = 0

    @contextmanager
    def raised(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                self._saved = csv.field_size_limit()
                if self._saved < MAX_CELL_CHARS:
                    csv.field_size_limit(MAX_CELL_CHARS)
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0 and self._saved < MAX_CELL_CHARS == csv.field_size_limit():
                    csv.field_size_limit(self._saved)


_FIELD_LIMIT = _FieldLimit()  # one per process, like the limit it guards


class _Feed:
    """The lines the csv reader reads, remembering those of the current record."""

    def __init__(self, lines: Iterator[Line]) -> None:
        self._lines = lines
        self.taken: list[Line] = []

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        self.taken.append(line)
        return line.text


def _span(taken: list[Line]) -> str:
    if len(taken) > 1:
        return f"lines {taken[0].number}-{taken[-1].number}"
    return f"line {taken[0].number}" if taken else "the end of the file"


def _csv_problem(exc: csv.Error, taken: list[Line]) -> str:
    message = str(exc)
    if "unexpected end of data" in message:
        return f"a quoted cell opened on {_span(taken[:1])} is never closed"
    if "field larger than field limit" in message:
        return f"a cell is over the limit of {MAX_CELL_CHARS:,} characters"
    return f"the CSV does not parse on {_span(taken)}: {message} (a stray or unclosed quote?)"


def _record(fields: list[str], taken: list[Line], width: int | None) -> CsvRecord | None:
    """The record of ``fields`` read from ``taken``: None for a blank line, else checked."""
    if not fields:
        return None
    first = taken[0].number
    bad = next((line for line in taken if line.problem), None)
    if bad is not None:
        where = "" if bad.number == first else f"line {bad.number}: "
        return CsvRecord(first, None, f"{where}{bad.problem}")
    if width is not None and len(fields) != width:
        verb = "have" if len(taken) > 1 else "has"
        return CsvRecord(
            first,
            None,
            f"{_span(taken)} {verb} {len(fields)} cells, the header has {width} columns "
            "(a stray or unclosed quote, or a missing or extra comma?)",
        )
    return CsvRecord(first, fields)


def _one_by_one(lines: list[Line], width: int | None) -> Iterator[CsvRecord]:
    """Lines after a record that did not parse, each parsed on its own (no cell spans lines here).

    Parsing them again as a stream could let the next stray quote swallow them again, and again:
    quadratic in the file. On their own, each is parsed once more at most.
    """
    for line in lines:
        try:
            with _FIELD_LIMIT.raised():
                fields = next(csv.reader([line.text], strict=True), [])
        except csv.Error as exc:
            yield CsvRecord(line.number, None, _csv_problem(exc, [line]))
            continue
        record = _record(fields, [line], width)
        if record is not None:
            yield record


def _cr_lines(lines: Iterator[Line]) -> Iterator[Line]:
    """Lines split at a lone carriage return too, as the csv module expects (numbered again)."""
    number = 0
    for line in lines:
        parts = _LONE_CR.split(line.text) if "\r" in line.text else [line.text]
        for part in parts:
            if part:
                number += 1
                yield Line(number, line.offset, part, line.problem)


def csv_records(lines: Iterator[Line]) -> Iterator[CsvRecord]:
    """The header, then every record, parsed strictly; blank lines are skipped.

    A record that does not parse, or whose number of cells differs from the header's, is a
    :class:`CsvRecord` with a problem; the other lines it took are then parsed one by one.
    """
    feed = _Feed(_cr_lines(lines))
    reader = csv.reader(feed, strict=True)
    width: int | None = None
    while True:
        feed.taken = []
        try:
            with _FIELD_LIMIT.raised():
                fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            taken = feed.taken
            yield CsvRecord(taken[0].number if taken else 0, None, _csv_problem(exc, taken))
            yield from _one_by_one(taken[1:], width)
            reader = csv.reader(feed, strict=True)
            continue
        taken = feed.taken
        record = _record(fields, taken, width)
        if record is None:
            continue
        yield record
        if record.fields is not None:
            width = len(fields) if width is None else width
        elif len(taken) > 1 and len(fields) != width:
            yield from _one_by_one(taken[1:], width)
