"""What the judge cache and the embedding cache share: an LRU memo, a store folder, the counters.

Both keep recent entries in memory and everything on disk as JSON (:mod:`ragmetrics.judge.rows`: no
pickles); a disk failure is a :class:`~ragmetrics.errors.CacheError` naming the folder and what to do,
never a bare sqlite error, and a damaged value is a miss.
Both count their lookups in one :class:`CacheCounts` (hits, shared, misses), which the pipeline reads
for a run's statistics and its progress bar.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from ragmetrics.judge.rows import DamagedValueError, JsonRows, warn_old_store

__all__ = ["CacheCounts", "DiskStore", "LruMemo"]

V = TypeVar("V")
log = logging.getLogger("ragmetrics.cache")


@dataclass(slots=True)
class CacheCounts:
    """Lookups of one cache, by outcome: every lookup is exactly one of hit, shared or miss."""

    hits: int = 0
    """Answered from the disk, or from memory when an earlier run stored it."""
    shared: int = 0
    """Answered by an identical lookup of this run (in flight, or already answered): not a hit."""
    misses: int = 0
    """Sent to the judge or embedder behind the cache."""

    @property
    def lookups(self) -> int:
        """Every lookup: ``hits + shared + misses``."""
        return self.hits + self.shared + self.misses

    @property
    def hit_rate(self) -> float | None:
        """``hits / lookups`` (shared lookups are not hits); None before any lookup."""
        total = self.lookups
        return self.hits / total if total else None

    def since(self, baseline: CacheCounts) -> CacheCounts:
        """The lookups made after ``baseline`` was copied (see :meth:`copy`)."""
        return CacheCounts(
            hits=self.hits - baseline.hits,
            shared=self.shared - baseline.shared,
            misses=self.misses - baseline.misses,
        )

    def __add__(self, other: CacheCounts) -> CacheCounts:
        return CacheCounts(
            hits=self.hits + other.hits, shared=self.shared + other.shared, misses=self.misses + other.misses
        )

    def copy(self) -> CacheCounts:
        """These counts as they are now (the live counters go on counting)."""
        return CacheCounts(hits=self.hits, shared=self.shared, misses=self.misses)


class LruMemo(Generic[V]):
    """At most ``size`` entries in memory; storing one past that drops the least recently stored or used."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str, *, touch: bool = False) -> V | None:
        """The entry for ``key`` or None; ``touch`` marks it as just used."""
        value = self._items.get(key)
        if value is not None and touch:
            self._items.move_to_end(key)
        return value

    def put(self, key: str, value: V) -> None:
        """Store ``value`` as the most recent entry, dropping the oldest past ``size``."""
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


class DiskStore(Generic[V]):
    """A store folder (:class:`~ragmetrics.judge.rows.JsonRows`), opened on first use, closed by close().

    Values are JSON; one that does not parse, or fails ``check``, is a miss (logged as a warning and
    replaced by the next write), never an error and never executed.

    Args:
        directory: The folder; None stores nothing (every ``get`` misses).
        what: What the store holds, for messages (``judge cache``, ``embedding cache``).
        hint: What to do when the folder cannot be opened.
        check: Whether a value read back has the shape this store writes.
    """

    def __init__(
        self,
        directory: Path | None,
        *,
        what: str,
        hint: str,
        check: Callable[[Any], bool] = lambda value: value is not None,
    ) -> None:
        self.directory = directory
        self._what = what
        self._check = check
        self._rows = JsonRows(directory, what=what, hint=hint) if directory is not None else None
        self._told = False

    def get(self, key: str) -> V | None:
        """The stored value for ``key``, or None (also when there is no folder or the value is damaged)."""
        if self._rows is None:
            return None
        if not self._told:
            self._told = True
            warn_old_store(self._rows.directory, self._what)
        try:
            value = self._rows.get(key)
        except DamagedValueError as exc:
            log.warning("%s", exc)
            return None
        if value is None:
            return None
        if not self._check(value):
            log.warning(
                "the %s at %s holds a value of the wrong shape under %r: ignored",
                self._what,
                self._rows.path,
                key[:64],
            )
            return None
        stored: V = value
        return stored

    def set_many(self, items: Mapping[str, V]) -> None:
        """Store every item, in one transaction."""
        if self._rows is not None and items:
            self._rows.set_many(items)

    def close(self) -> None:
        """Close the folder if it is open (the next access reopens it); safe twice."""
        if self._rows is not None:
            self._rows.close()
