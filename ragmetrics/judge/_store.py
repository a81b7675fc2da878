"""What the judge cache and the embedding cache share: an LRU memo and a diskcache folder.

Both keep recent entries in memory and everything on disk; a disk failure is a
:class:`~ragmetrics.errors.CacheError` naming the folder and what to do, never a bare sqlite error.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from ragmetrics.errors import CacheError

__all__ = ["DiskStore", "LruMemo"]

V = TypeVar("V")


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
