"""The one on-disk format of every ragmetrics store: JSON text by key, in SQLite rows. Never pickles.

The judge cache, the embedding cache and the batch ledger are each one folder holding one SQLite file,
``ragmetrics.sqlite3``, with two tables of text: ``meta`` (the format word) and ``entries`` (key, JSON
value). Reading a value is ``json.loads`` of its text and nothing else, so a store planted beside a
suite file (``cache: ./poison``) can hold wrong data but never code: no pickle, no file paths, no
SQLite settings read back from the file. A value that does not parse is *damaged*: the caches treat
it as a miss (and log a warning), the ledger reports it (:class:`~ragmetrics.errors.CacheError`).

Folders written by ragmetrics before this format (diskcache's ``cache.db``, whose values were
pickles) are never opened: their entries are ignored (a cache starts cold once); see
:func:`old_store`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import CacheError

__all__ = ["FILE_NAME", "FORMAT", "DamagedValueError", "JsonRows", "old_store", "warn_old_store"]

FILE_NAME = "ragmetrics.sqlite3"
"""The SQLite file inside a store's folder."""
FORMAT = "ragmetrics-json-rows-1"
"""The format word in ``meta``; a file with another word is refused, not guessed at."""
_OLD_FILE = "cache.db"
_BUSY_TIMEOUT_S = 60.0

log = logging.getLogger("ragmetrics.cache")


class DamagedValueError(CacheError):
    """A stored value is not the JSON this store writes (``key`` names it)."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


def old_store(directory: Path) -> Path | None:
    """The pre-JSON store (diskcache's ``cache.db``, pickled values) in ``directory``, if there is one."""
    path = directory / _OLD_FILE
    return path if path.is_file() else None


def _journal_mode(db: sqlite3.Connection, mode: str) -> None:
    """Put the file in journal ``mode`` (``wal`` or ``delete``), unless it is in it already.

    The mode is kept in the file, so only the first opening switches it. Switching needs the file to
    itself, and SQLite answers "database is locked" at once, without its busy timeout, to a process
    switching a new file that another is opening (27 of 300 opens by three processes failed so,
    measured): the switch is retried until the busy timeout, re-reading the mode first.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    wait = 0.002
    while True:
        try:
            if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != mode:
                db.execute(f"PRAGMA journal_mode={mode}")  # one of two constants, never data
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(wait)
        wait = min(0.1, wait * 2)


class JsonRows:
    """JSON values by text key in ``directory/ragmetrics.sqlite3`` (thread-safe; processes may share it).

    Args:
        directory: The folder (created on first use).
        what: What the store holds, for messages (``judge cache``, ``batch ledger``).
        hint: What to do when the file cannot be opened or is damaged.
        durable: Commit with a rollback journal and ``synchronous=FULL`` and check the file's integrity
            on open (the ledger, which records money spent); otherwise WAL and ``synchronous=NORMAL``
            (the caches, which can be recomputed).
    """

    def __init__(self, directory: Path, *, what: str, hint: str, durable: bool = False) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self._what = what
        self._hint = hint
        self._durable = durable
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self.created = False
        """Whether the last open created the file (it was not there before)."""

    def _error(self, doing: str, exc: BaseException | str) -> CacheError:
        return CacheError(f"cannot {doing} the {self._what} at {self.path}: {exc}; {self._hint}")

    def _open(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error("open", exc) from exc
        existed = self.path.exists()
        if self._durable and existed and self.path.stat().st_size == 0:
            raise self._error("read", "the file is empty (truncated?), so what it held is lost")
        try:
            db = sqlite3.connect(
                str(self.path), timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error("open", exc) from exc
        try:
            self._prepare(db, existed)
        except BaseException:
            db.close()
            raise
        self._db = db
        self.created = not existed
        return db

    def _prepare(self, db: sqlite3.Connection, existed: bool) -> None:
        try:
            if self._durable:
                _journal_mode(db, "delete")
                db.execute("PRAGMA synchronous=FULL")
                if existed:
                    check = db.execute("PRAGMA quick_check").fetchone()
                    if not check or check[0] != "ok":
                        raise self._error("read", f"SQLite integrity check failed ({check and check[0]})")
            else:
                _journal_mode(db, "wal")
                db.execute("PRAGMA synchronous=NORMAL")
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if existed and tables and "meta" not in tables:
                raise self._error("read", "it is not a ragmetrics store (no meta table)")
            if self._durable and existed and not tables:
                raise self._error("read", "the file holds no tables (damaged or emptied)")
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                row = db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
                if row is None:
                    if existed and "entries" in tables:
                        raise self._error("read", "its format record is missing (damaged)")
                    db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
                elif row[0] != FORMAT:
                    raise self._error("read", f"it has format {row[0]!r}, not {FORMAT!r} (another version?)")
        except CacheError:
            raise
        except sqlite3.Error as exc:
            raise self._error("read", exc) from exc

    def get(self, key: str) -> Any:
        """The value stored under ``key``, or None.

        Raises:
            DamagedValueError: The stored text is not JSON.
            CacheError: The file cannot be read.
        """
        with self._lock:
            db = self._open()
            try:
                row = db.execute("SELECT value FROM entries WHERE key=?", (key,)).fetchone()
            except sqlite3.Error as exc:
                raise self._error("read", exc) from exc
        if row is None:
            return None
        text = row[0]
        try:
            if not isinstance(text, str):
                raise ValueError(f"a {type(text).__name__} value, not JSON text")
            return json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise DamagedValueError(
                f"the {self._what} at {self.path} holds a damaged value under {key[:64]!r} ({exc}); "
                f"{self._hint}",
                key=key,
            ) from None

    def set_many(self, items: Mapping[str, Any]) -> None:
        """Store every item in one transaction."""
        if not items:
            return
        try:
            rows = [(k, json.dumps(v, ensure_ascii=False, separators=(",", ":"))) for k, v in items.items()]
        except (TypeError, ValueError) as exc:
            raise self._error("write", f"a value is not JSON ({exc})") from exc
        self._write("INSERT OR REPLACE INTO entries VALUES (?, ?)", rows)

    def delete_many(self, keys: Iterable[str]) -> None:
        """Drop these keys (missing ones are fine), in one transaction."""
        self._write("DELETE FROM entries WHERE key=?", [(k,) for k in keys])

    def _write(self, statement: str, rows: Sequence[tuple[str, ...]]) -> None:
        if not rows:
            return
        with self._lock:
            db = self._open()
            try:
                with db:
                    db.execute("BEGIN IMMEDIATE")
                    db.executemany(statement, rows)
            except sqlite3.Error as exc:
                raise self._error("write", exc) from exc

    def count(self) -> int:
        """How many entries the store holds."""
        with self._lock:
            db = self._open()
            try:
                return int(db.execute("SELECT count(*) FROM entries").fetchone()[0])
            except sqlite3.Error as exc:
                raise self._error("read", exc) from exc

    def close(self) -> None:
        """Close the file if it is open (the next access reopens it); safe twice."""
        with self._lock:
            db, self._db = self._db, None
        if db is not None:
            db.close()


def warn_old_store(directory: Path, what: str) -> None:
    """Log that an old pickled store in ``directory`` is ignored (if there is one)."""
    path = old_store(directory)
    if path is not None:
        log.warning(
            "%s at %s: %s is in the old format (pickled values), which ragmetrics no longer reads; "
            "it is ignored (delete it to free the space)",
            what,
            directory,
            path.name,
        )
