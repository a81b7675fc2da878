"""What the judge cache and the embedding cache share: an LRU memo, a diskcache folder, the counters.

Both keep recent entries in memory and everything on disk; a disk failure is a
:class:`~ragmetrics.errors.CacheError` naming the folder and what to do, never a bare sqlite error.
Both count their lookups in one :class:`CacheCounts` (hits, shared, misses), which the pipeline reads
for a run's statistics and its progress bar.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from ragmetrics.errors import CacheError

__all__ = ["CacheCounts", "DiskStore", "LruMemo"]

V = TypeVar("V")


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
    """A diskcache folder, opened on first use and closed (reopenable) by :meth:`close`.

    Args:
        directory: The folder; None stores nothing (every ``get`` misses).
        what: What the store holds, for messages (``judge cache``, ``embedding cache``).
        hint: What to do when the folder cannot be opened.
    """

    def __init__(self, directory: Path | None, *, what: str, hint: str) -> None:
        self.directory = directory
        self._what = what
        self._hint = hint
        self._disk: Any = None

    def _open(self) -> Any:
        if self._disk is None and self.directory is not None:
            try:
                import diskcache

                self.directory.mkdir(parents=True, exist_ok=True)
                self._disk = diskcache.Cache(str(self.directory), size_limit=2**33, eviction_policy="none")
            except Exception as exc:  # diskcache raises sqlite3 and OS errors
                raise CacheError(
                    f"cannot open the {self._what} at {self.directory}: {exc}; {self._hint}"
                ) from exc
        return self._disk

    def get(self, key: str) -> V | None:
        """The stored value for ``key``, or None (also when there is no folder)."""
        disk = self._open()
        if disk is None:
            return None
        try:
            value: V | None = disk.get(key)  # only what set_many stored, so only V
            return value
        except Exception as exc:
            raise CacheError(f"cannot read the {self._what} at {self.directory}: {exc}") from exc

    def set_many(self, items: Mapping[str, V]) -> None:
        """Store every item, in one transaction when there are several."""
        disk = self._open()
        if disk is None or not items:
            return
        try:
            if len(items) == 1:
                disk.set(*next(iter(items.items())))
                return
            with disk.transact():
                for key, value in items.items():
                    disk.set(key, value)
        except Exception as exc:
            raise CacheError(f"cannot write the {self._what} at {self.directory}: {exc}") from exc

    def close(self) -> None:
        """Close the folder if it is open (the next access reopens it); safe twice."""
        if self._disk is not None:
            disk, self._disk = self._disk, None
            disk.close()
