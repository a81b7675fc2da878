"""The judge cache: a disk cache, an in-memory memo and single-flight around any Judge.

The key is the sha256 of canonical JSON of everything that changes the output (key format, provider,
base URL, model, decoding parameters, each prompt's id and hash, the schema's hash, the task, the
rendered messages, the repeat index); API keys, retries, timeouts and concurrency are left out. Only
validated replies are stored; offline judges are memoised in memory only. A reply read from disk or
an earlier run is a cache hit (``Usage.cached_calls``); one shared with an identical request of this
run is *shared* (``Usage.shared_calls``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ragmetrics.errors import JudgeError
from ragmetrics.judge.base import Judge, JudgeReply, JudgeRequest, ModelT
from ragmetrics.judge.store import CacheCounts, DiskStore, LruMemo
from ragmetrics.score import Usage

__all__ = ["CacheStats", "CachingJudge", "cache_key", "canonical_sha256"]

KEY_FORMAT = 1


@cache
def schema_hash(model: type[BaseModel]) -> str:
    """sha256 of a response model's JSON schema."""
    schema = json.dumps(model.model_json_schema(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(schema.encode()).hexdigest()


def cache_key(judge: Judge, request: JudgeRequest[BaseModel]) -> str:
    """The cache key of ``request`` sent to ``judge`` (never holds an API key)."""
    info = judge.info
    payload = {
        "format": KEY_FORMAT,
        "provider": info.provider,
        "base_url": info.base_url,
        "model": info.model,
        "temperature": info.temperature,
        "seed": info.seed,
        "max_tokens": request.max_tokens or info.max_tokens,
        "prompts": [[p.id, p.sha256] for p in request.prompts],
        "schema": [request.response_model.__name__, schema_hash(request.response_model)],
        "version": request.version,
        "task": request.task,
        "messages": [[m.role, m.content] for m in request.messages],
        "repeat": request.repeat,
    }
    return canonical_sha256(payload)


def canonical_sha256(payload: Any) -> str:
    """sha256 of canonical JSON (sorted keys, compact, UTF-8): how every cache key is made."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _is_entry(value: Any) -> bool:
    """Whether a value read from disk has the shape the judge cache writes."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("value"), dict)
        and isinstance(value.get("usage"), dict)
    )


CacheStats = CacheCounts
"""Hits, shared requests and misses of one caching judge (the counters every cache keeps)."""


class CachingJudge:
    """Wraps a judge with the disk cache, a memo and single-flight of identical requests."""

    def __init__(
        self,
        inner: Judge,
        directory: str | Path | None = None,
        *,
        memo_size: int = 4096,
        owns_inner: bool = False,
    ) -> None:
        """Wrap ``inner``.

        Args:
            inner: The judge that answers misses.
            directory: The disk cache folder; None keeps only the in-memory memo.
            memo_size: Replies kept in memory (least recently used are dropped).
            owns_inner: Whether :meth:`aclose` closes ``inner`` too: true for judges ragmetrics built
                from a spec or around a client, false for a Judge object the user passed in (whose
                ``aclose`` may end it for good). ragmetrics' own judges, whose ``aclose`` only releases
                the running event loop's client, are closed either way.
        """
        self.inner = inner
        self.owns_inner = owns_inner
        self.info = inner.info
        self.directory = Path(directory) if directory is not None and not inner.info.heuristic else None
        self.stats = CacheStats()
        self._memo: LruMemo[dict[str, Any]] = LruMemo(memo_size)
        self._seen: LruMemo[int] = LruMemo(memo_size)
        """Key -> the last run (``_run``) in which this judge answered it (by a call, disk or memo)."""
        self._run = 0
        """Counts :meth:`aclose` calls: each pipeline run or ``*_sync`` call ends with one."""
        self._inflight: dict[tuple[int, str], asyncio.Future[dict[str, Any]]] = {}
        self._store: DiskStore[dict[str, Any]] = DiskStore(
            self.directory,
            what="judge cache",
            hint="pass cache=False (or --no-cache) to run without it",
            check=_is_entry,
        )

    def __repr__(self) -> str:
        return f"CachingJudge({self.inner!r}, directory={str(self.directory) if self.directory else None!r})"

    def peek(self, request: JudgeRequest[BaseModel]) -> dict[str, Any] | None:
        """The stored entry for ``request`` (memory, then disk), without calling or counting anything."""
        key = cache_key(self.inner, request)
        return self._memo.get(key) or self._store.get(key)

    def store(self, request: JudgeRequest[Any], reply: JudgeReply[Any]) -> None:
        """Keep a validated reply obtained elsewhere (a provider batch) under the request's real-time key.

        A later real-time request for it is then a cache hit, as if this judge had made the call.
        """
        key = cache_key(self.inner, request)
        entry = {"value": reply.value.model_dump(mode="json"), "usage": reply.usage.model_dump()}
        self._memo.put(key, entry)
        self._store.set_many({key: entry})

    # -- the Judge protocol -----------------------------------------------------------------------------
    async def complete(self, request: JudgeRequest[ModelT]) -> JudgeReply[ModelT]:
        """Answer from memory or disk if possible, else join an identical call in flight, else call."""
        started = time.perf_counter()
        key = cache_key(self.inner, request)
        entry = self._memo.get(key)
        if entry is not None and self._seen.get(key) == self._run:
            self.stats.shared += 1  # already answered in this run: shared, not a cache hit
            return self._reply(request, entry, started, shared=True)
        if entry is None:
            entry = self._store.get(key)
            if entry is not None:
                try:
                    reply = self._reply(request, entry, started)
                except ValueError:  # a stored value this response model refuses: a miss
                    entry = None
                else:
                    self._memo.put(key, entry)
                    self._seen.put(key, self._run)
                    self.stats.hits += 1
                    return reply
        if entry is not None:
            self._seen.put(key, self._run)
            self.stats.hits += 1
            return self._reply(request, entry, started)
        flight_key = (id(asyncio.get_running_loop()), key)
        pending = self._inflight.get(flight_key)
        while pending is not None:
            try:
                entry = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this request itself was cancelled
                # the request we joined was cancelled (its sample timed out): make the call ourselves
                pending = self._inflight.get(flight_key)
                continue
            self.stats.shared += 1
            return self._reply(request, entry, started, shared=True)
        self.stats.misses += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._inflight[flight_key] = future
        try:
            reply = await self.inner.complete(request)
        except asyncio.CancelledError:
            future.cancel()  # joined requests notice and make the call themselves
            raise
        except BaseException as exc:
            # requests that joined this call spent nothing: their copy of a JudgeError carries no usage
            shared = exc.with_usage(Usage(shared_calls=1)) if isinstance(exc, JudgeError) else exc
            future.set_exception(shared)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            self._inflight.pop(flight_key, None)
        entry = {"value": reply.value.model_dump(mode="json"), "usage": reply.usage.model_dump()}
        self._memo.put(key, entry)
        self._seen.put(key, self._run)
        self._store.set_many({key: entry})
        future.set_result(entry)
        return reply

    def _reply(
        self, request: JudgeRequest[ModelT], entry: dict[str, Any], started: float, *, shared: bool = False
    ) -> JudgeReply[ModelT]:
        value = request.response_model.model_validate(entry["value"], context=dict(request.context))
        return JudgeReply(
            value=value,
            usage=Usage(shared_calls=1) if shared else Usage(cached_calls=1),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            cached=True,
        )

    async def aclose(self) -> None:
        """Close the disk cache, and the inner judge's clients when they are ours to close."""
        self._run += 1
        try:
            if self.owns_inner or getattr(type(self.inner), "_reopens_after_aclose", False):
                await self.inner.aclose()
        finally:
            self._store.close()

    def close_disk(self) -> None:
        """Close the disk cache only (it reopens on next use); synchronous, unlike :meth:`aclose`."""
        self._store.close()
