"""The embedding cache: a disk cache, an in-memory memo and single-flight around any Embedder.

It works like the judge cache (:mod:`ragmetrics.judge.cache`). One entry per text: the key is the sha256
of canonical JSON of the key format, the embedder's identity (``provider``, ``model``, ``base_url``,
``dimensions``: whatever its ``cache_identity`` holds) and the text. Left out on purpose: API keys,
timeouts, retries. Only texts missing from memory, disk and the requests in flight are sent to the
inner embedder, in one batch; concurrent requests for the same text make one call.

An embedder is written to disk only if it names its vectors through a ``cache_identity`` mapping.
Embedders without one (user objects) and those that return None (:class:`FakeEmbeddings`: free and
deterministic) are memoised in memory only, so a cache can never serve vectors of another model.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics.errors import CacheError
from ragmetrics.judge.cache import canonical_sha256
from ragmetrics.judge.store import CacheCounts, DiskStore, LruMemo
from ragmetrics.score import Usage

__all__ = [
    "CachingEmbedder",
    "EmbeddingCacheStats",
    "EmbeddingCountError",
    "embedding_cache_key",
    "embedding_identity",
]

KEY_FORMAT = 1


def embedding_identity(embedder: Any) -> dict[str, Any] | None:
    """What names ``embedder``'s vectors (provider, model, base URL, dimensions), or None if unnamed."""
    identity = getattr(embedder, "cache_identity", None)
    if identity is None:
        return None
    if not isinstance(identity, Mapping):
        kind = type(identity).__name__
        raise CacheError(f"{embedder!r}: cache_identity must be a mapping or None, got {kind}")
    return dict(identity)


def embedding_cache_key(identity: Mapping[str, Any], text: str) -> str:
    """The cache key of ``text`` embedded by the embedder named ``identity`` (never an API key)."""
    return canonical_sha256(
        {"format": KEY_FORMAT, "kind": "embedding", "embedder": dict(identity), "text": text}
    )


@dataclass(slots=True)
class EmbeddingCacheStats(CacheCounts):
    """Texts served and embedded by one caching embedder (one lookup per text), and the requests sent.

    ``hits`` are texts served from memory or disk, ``shared`` texts that joined an identical request
    already in flight, ``misses`` texts sent to the inner embedder.
    """

    calls: int = 0
    """Requests sent to the inner embedder."""


def _is_vector(value: Any) -> bool:
    """Whether a value read from disk is a vector (finite numbers), as the embedding cache writes."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in value)
    )


class EmbeddingCountError(Exception):
    """The inner embedder returned a different number of vectors than texts."""


class CachingEmbedder:
    """Wraps an embedder with the disk cache, a memo and single-flight of identical texts.

    Args:
        inner: The embedder that answers misses.
        directory: The disk cache folder; None keeps only the in-memory memo. Ignored (memory only)
            when ``inner`` has no ``cache_identity``.
        memo_size: Vectors kept in memory (least recently used are dropped).
    """

    def __init__(self, inner: Any, directory: str | Path | None = None, *, memo_size: int = 10_000) -> None:
        self.inner = inner
        self.identity = embedding_identity(inner)
        self.directory = Path(directory) if directory is not None and self.identity is not None else None
        self.stats = EmbeddingCacheStats()
        self._memo: LruMemo[list[float]] = LruMemo(memo_size)
        self._inflight: dict[tuple[int, str], asyncio.Future[list[float]]] = {}
        self._store: DiskStore[list[float]] = DiskStore(
            self.directory,
            what="embedding cache",
            hint="pass cache=False to run without it",
            check=_is_vector,
        )

    @property
    def name(self) -> str:
        """The inner embedder's name (enters signatures)."""
        return str(getattr(self.inner, "name", type(self.inner).__name__))

    def __repr__(self) -> str:
        where = str(self.directory) if self.directory else None
        return f"CachingEmbedder({self.inner!r}, directory={where!r})"

    def key(self, text: str) -> str:
        """The cache key of ``text`` for the inner embedder."""
        return embedding_cache_key(self.identity or {}, text)  # unnamed: this object's memo only

    def _lookup(self, key: str) -> list[float] | None:
        vector = self._memo.get(key, touch=True)
        if vector is not None:
            return vector
        vector = self._store.get(key)  # only vectors are ever stored
        if vector is not None:
            self._memo.put(key, vector)
        return vector

    # -- the Embedder protocol --------------------------------------------------------------------------
    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts``: from memory or disk if possible, else one batch to the inner embedder."""
        vectors, _ = await self.embed_with_usage(texts)
        return vectors

    async def embed_with_usage(self, texts: list[str]) -> tuple[list[list[float]], Usage]:
        """Embed ``texts`` and say what it cost.

        Returns:
            The vectors in order, and the usage: ``calls`` requests sent (0 or 1) with the prompt tokens
            the provider reported, or ``cached_calls=1`` when every text came from the cache or from an
            identical request in flight.

        Raises:
            JudgeError: The inner embedder failed (also raised in every request that joined it).
            EmbeddingCountError: The inner embedder returned the wrong number of vectors.
            CacheError: The disk cache cannot be opened, read or written.
        """
        loop = asyncio.get_running_loop()
        usage = Usage()
        keys = {t: self.key(t) for t in dict.fromkeys(texts)}
        found: dict[str, list[float]] = {}
        pending = list(keys)
        while pending:
            missing: list[str] = []
            waiting: dict[str, asyncio.Future[list[float]]] = {}
            for text in pending:
                vector = self._lookup(keys[text])
                if vector is not None:
                    self.stats.hits += 1
                    found[text] = vector
                elif (future := self._inflight.get((id(loop), keys[text]))) is not None:
                    waiting[text] = future
                else:
                    missing.append(text)
            if missing:
                usage += await self._fetch(missing, keys, found)
            pending = []
            for text, future in waiting.items():
                try:
                    found[text] = await asyncio.shield(future)
                except asyncio.CancelledError:
                    if not future.cancelled():
                        raise  # this request itself was cancelled
                    pending.append(text)  # the request we joined was cancelled: embed it ourselves
                    continue
                self.stats.shared += 1
        if usage.calls == 0:
            usage = Usage(cached_calls=1)
        return [found[t] for t in texts], usage

    async def _fetch(self, missing: list[str], keys: dict[str, str], found: dict[str, list[float]]) -> Usage:
        loop = asyncio.get_running_loop()
        futures = {text: loop.create_future() for text in missing}
        for text, future in futures.items():
            self._inflight[(id(loop), keys[text])] = future
        self.stats.misses += len(missing)
        self.stats.calls += 1
        try:
            vectors, usage = await _call(self.inner, missing)
            if len(vectors) != len(missing):
                raise EmbeddingCountError(
                    f"the embedder returned {len(vectors)} vectors for {len(missing)} texts"
                )
        except asyncio.CancelledError:
            for future in futures.values():
                future.cancel()  # joined requests notice and embed the text themselves
            raise
        except BaseException as exc:
            for future in futures.values():
                future.set_exception(exc)
                future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            for text in missing:
                self._inflight.pop((id(loop), keys[text]), None)
        to_store: dict[str, list[float]] = {}
        for text, raw in zip(missing, vectors, strict=True):
            vector = [float(v) for v in raw]
            found[text] = vector
            futures[text].set_result(vector)
            if vector and all(map(math.isfinite, vector)):  # a broken vector is never kept
                self._memo.put(keys[text], vector)
                to_store[keys[text]] = vector
        self._store.set_many(to_store)
        return usage

    async def aclose(self) -> None:
        """Close the inner embedder's client (if it has ``aclose``) and the disk cache; safe twice."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
        self._store.close()


async def _call(inner: Any, texts: list[str]) -> tuple[list[list[float]], Usage]:
    """One request to ``inner``: its own usage if it reports one, else one call without tokens."""
    with_usage = getattr(inner, "embed_with_usage", None)
    if with_usage is not None:
        vectors, usage = await with_usage(texts)
        return list(vectors), usage
    return list(await inner.embed(texts)), Usage(calls=1)
