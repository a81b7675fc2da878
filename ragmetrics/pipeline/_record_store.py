"""The records of a finished run in dataset order: as objects for a small run, in a temporary file past that.

Up to ``in_memory`` records are kept as objects. Past that, the store writes them all to an unnamed
temporary file (one JSON line each, as :func:`~ragmetrics.pipeline.export.write_jsonl`
writes them) and keeps only each record's
dataset index and file offset in compact arrays, so a long run's memory does not grow with its records
(nor does the time garbage collection spends on them). A record read back from the file is a new object
at every access; the marks of an untrusted judge, known only when the run ends, are set on reading.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import weakref
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, overload

from ragmetrics.pipeline.export import dump_json, load_json_model
from ragmetrics.pipeline.records import EvaluationResult
from ragmetrics.pipeline.trust import mark_untrusted

__all__ = ["RECORDS_IN_MEMORY", "RecordStore"]

log = logging.getLogger(__name__)

RECORDS_IN_MEMORY = 5_000
"""Records ``evaluate()`` keeps as objects; a longer run's records go to a temporary file."""


class RecordStore(Sequence[EvaluationResult]):
    """Records added in any order, read in dataset order once :meth:`seal` is called."""

    def __init__(self, in_memory: int | None = RECORDS_IN_MEMORY) -> None:
        self._limit = in_memory
        self._objects: list[EvaluationResult] = []
        self._file: IO[bytes] | None = None
        self._indexes = array("q")  # per record written, in the order written: its dataset index
        self._offsets = array("q", [0])  # where each written record starts; the last entry is the end
        self._order = array("q")  # written records' positions, in dataset order (after seal)
        self._why: dict[str, str] = {}
        self._lock = threading.Lock()  # one reader at a time: a read is a seek and a read

    @classmethod
    def of(cls, records: Sequence[EvaluationResult]) -> RecordStore:
        """A store holding ``records`` as objects, in the order given."""
        store = cls(None)
        store._objects = list(records)
        return store

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) as its records, in dataset order, held in memory."""
        return (RecordStore.of, (list(self),))

    @property
    def in_file(self) -> bool:
        """True when the records are in the temporary file, not in memory."""
        return self._file is not None

    def add(self, record: EvaluationResult) -> None:
        """Keep one finished record."""
        if self._file is not None:
            self._write(record)
            return
        self._objects.append(record)
        if self._limit is not None and len(self._objects) > self._limit:
            try:
                self._file = tempfile.TemporaryFile(prefix="ragmetrics-records-")  # noqa: SIM115 (kept open)
            except OSError as exc:
                log.warning(
                    "keeping every record in memory: no temporary file in %s (%s); set TMPDIR to a "
                    "writable directory",
                    tempfile.gettempdir(),
                    exc,
                )
                self._limit = None
                return
            weakref.finalize(self, self._file.close)  # deleted with the store, or at exit
            for kept in self._objects:
                self._write(kept)
            self._objects = []

    def _write(self, record: EvaluationResult) -> None:
        assert self._file is not None
        line = dump_json(record).encode("utf-8") + b"\n"
        self._file.write(line)
        self._indexes.append(record.index)
        self._offsets.append(self._offsets[-1] + len(line))

    def seal(self, why: Mapping[str, str]) -> int:
        """Put the records in dataset order; set aside the scores of the judges in ``why`` (judge -> reason).

        Returns the number of records changed (for records in the file: all of them when ``why`` names a
        judge, as they are marked when read back).
        """
        self._why = dict(why)
        if self._file is None:
            self._objects.sort(key=lambda r: r.index)
            return sum(mark_untrusted(r, self._why) for r in self._objects)
        self._file.flush()
        self._order = array("q", sorted(range(len(self._indexes)), key=self._indexes.__getitem__))
        return len(self._indexes) if self._why else 0

    def __len__(self) -> int:
        return len(self._indexes) if self._file is not None else len(self._objects)

    @overload
    def __getitem__(self, index: int) -> EvaluationResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[EvaluationResult]: ...

    def __getitem__(self, index: int | slice) -> EvaluationResult | list[EvaluationResult]:
        if self._file is None:
            return self._objects[index]
        if isinstance(index, slice):
            return [self._read(i) for i in range(*index.indices(len(self)))]
        count = len(self)
        if not -count <= index < count:
            raise IndexError(f"record {index} of {count}")
        return self._read(index % count)

    def __iter__(self) -> Iterator[EvaluationResult]:
        if self._file is None:
            yield from self._objects
            return
        for i in range(len(self)):
            yield self._read(i)

    def _read(self, i: int) -> EvaluationResult:
        assert self._file is not None
        at = self._order[i]
        start, end = self._offsets[at], self._offsets[at + 1]
        with self._lock:
            self._file.seek(start)
            line = self._file.read(end - start)
        record = load_json_model(EvaluationResult, line)
        mark_untrusted(record, self._why)
        return record
