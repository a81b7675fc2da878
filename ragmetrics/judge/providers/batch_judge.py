"""Judge requests answered through a provider batch: the deferring judge and the ledger it keeps on disk.

In each round of a batch run (:mod:`ragmetrics.pipeline.batch`) the metrics' judge is a
:class:`DeferringJudge`: a request already answered (by an earlier batch or the disk cache) is answered
at once; any other is deferred (its exact real-time body put in the round's outbox) and the metric
gets a :class:`DeferredError`. Batch results are added to each request's conversation in the
:class:`BatchLedger` and replayed through the real-time adapter (:mod:`ragmetrics.judge.providers._replay`),
so validation, re-asks and truncation follow real-time rules; valid replies go to the disk cache.
Transient failures are resubmitted (``resubmits``); nothing is dropped. The ledger is a folder of
JSON rows per judge, keyed by the first 48 hex digits of each request's cache key.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import CacheError, JudgeError, JudgeOutputError
from ragmetrics.judge.base import JudgeReply, JudgeRequest
from ragmetrics.judge.cache import CachingJudge, cache_key, canonical_sha256
from ragmetrics.judge.pricing import batch_cost_usd
from ragmetrics.judge.providers._provider import ProviderJudge
from ragmetrics.judge.providers._replay import Done, Send, replay
from ragmetrics.judge.retry import Failure
from ragmetrics.judge.rows import JsonRows, old_store
from ragmetrics.score import Status, Usage

__all__ = ["BatchLedger", "DeferredError", "DeferringJudge", "ledger_folder"]

_ID_CHARS = 48
_LOST_STATUS: dict[str, Status] = {
    "expired": "timeout",
    "cancelled": "provider_error",
    "missing": "provider_error",
}


class DeferredError(JudgeError):
    """A request was put in the round's outbox for the next provider batch (not a failure)."""


def ledger_folder(base: Path, judge: ProviderJudge) -> Path:
    """The ledger folder of ``judge`` under ``base``: one per provider, model and base URL."""
    info = judge.info
    digest = canonical_sha256([info.provider, info.model, info.base_url])[:12]
    return base / f"{info.provider}-{digest}"


class BatchLedger:
    """What a batch run knows on disk: each request's conversation and the batches submitted.

    Args:
        directory: The folder (created on first use).

    Raises:
        CacheError: The folder cannot be opened or written.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._rows = JsonRows(
            directory,
            what="batch ledger",
            hint=(
                "nothing was sent; its batches (listed in batches.json) are paid for: restore the file, "
                f"or delete {directory} to start over (its batches are then lost), or pass another "
                "batch directory (batch=BatchOptions(directory=...) or --batch-dir)"
            ),
            durable=True,
        )
        self._checked = False

    def _whole(self) -> JsonRows:
        """The ledger's rows, once checked: a ledger that vanished but left traces is damage, not empty."""
        if not self._checked:
            existed = self._rows.path.exists()
            listed = self._listed()
            if not existed and (listed or old_store(self.directory) is not None):
                why = (
                    f"batches.json lists {listed} batch(es)"
                    if listed
                    else "it holds an old-format ledger (cache.db, pickled values) that is never read"
                )
                raise CacheError(
                    f"the batch ledger at {self._rows.path} is missing but {why}; nothing was sent. "
                    f"Collect those batches with the ragmetrics that submitted them, or delete "
                    f"{self.directory} to start over (its batches are then paid for and lost)"
                )
            self._checked = True
        return self._rows

    def _listed(self) -> int:
        try:
            listed = json.loads((self.directory / "batches.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0
        return len(listed) if isinstance(listed, list) else 0

    def _get(self, key: str) -> Any:
        return self._whole().get(key)

    def _set(self, key: str, value: Any) -> None:
        self._whole().set_many({key: value})

    # -- conversations --------------------------------------------------------------------------
    def conversation(self, cid: str) -> dict[str, Any] | None:
        """The conversation of request ``cid`` (a copy), or None."""
        value = self._get(f"c:{cid}")
        return dict(value) if isinstance(value, dict) else None

    def save(self, cid: str, conversation: dict[str, Any]) -> None:
        """Store a conversation."""
        self._set(f"c:{cid}", conversation)

    def forget(self, cids: Sequence[str]) -> None:
        """Drop finished conversations (their replies are in the judge cache by now)."""
        self._whole().delete_many(f"c:{cid}" for cid in cids)

    def add_reply(self, custom_id: str, reply: Any) -> bool:
        """File a batch result with the conversation waiting for it; False if none is (a stale result)."""
        cid = custom_id.rsplit("-", 1)[0]
        conversation = self.conversation(cid)
        if conversation is None or conversation.get("pending") != custom_id:
            return False
        conversation["replies"] = [*conversation["replies"], reply]
        conversation["pending"] = None
        self.save(cid, conversation)
        return True

    # -- batches ----------------------------------------------------------------------------------
    def batches(self) -> list[dict[str, Any]]:
        """Every batch submitted through this ledger, oldest first."""
        value = self._get("batches")
        return [dict(b) for b in value] if isinstance(value, list) else []

    def open_batches(self) -> list[dict[str, Any]]:
        """The batches whose results have not been read yet."""
        return [b for b in self.batches() if not b.get("collected")]

    def custom_ids(self, batch_id: str) -> list[str]:
        """The custom_ids submitted in a batch."""
        value = self._get(f"b:{batch_id}")
        return list(value) if isinstance(value, list) else []

    # -- intents: batches about to be created -----------------------------------------------------
    def intents(self) -> list[dict[str, Any]]:
        """Batches whose create was sent (or about to be) and whose id is not known yet, oldest first."""
        value = self._get("intents")
        return [dict(i) for i in value] if isinstance(value, list) else []

    def add_intent(self, custom_ids: Sequence[str]) -> dict[str, Any]:
        """Record, before creating it, that a batch of ``custom_ids`` is about to be created."""
        record = {
            "id": f"ragmetrics-{uuid.uuid4().hex}",
            "started_at": time.time(),
            "requests": len(custom_ids),
            "custom_ids": list(custom_ids),
        }
        self._set("intents", [*self.intents(), record])
        return record

    def drop_intent(self, intent_id: str) -> None:
        """Forget an intent whose batch was never created (the lookup found none)."""
        self._set("intents", [i for i in self.intents() if i.get("id") != intent_id])

    def add_batch(
        self,
        batch_id: str,
        provider: str,
        judge: str,
        custom_ids: Sequence[str],
        *,
        intent: str | None = None,
    ) -> None:
        """Record a submitted batch (and that ``intent``, if given, is now this batch), in one transaction."""
        record = {
            "id": batch_id,
            "provider": provider,
            "judge": judge,
            "requests": len(custom_ids),
            "submitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "collected": False,
        }
        batches = [b for b in self.batches() if b["id"] != batch_id]
        extra: dict[str, Any] = {f"b:{batch_id}": list(custom_ids)}
        if intent is not None:
            extra["intents"] = [i for i in self.intents() if i.get("id") != intent]
        self._write_batches([*batches, record], extra)

    def mark_collected(self, batch_id: str, status: str) -> None:
        """Record that a batch's results were read."""
        batches = self.batches()
        for record in batches:
            if record["id"] == batch_id:
                record["collected"] = True
                record["status"] = status
        self._write_batches(batches)

    def _write_batches(self, batches: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> None:
        self._whole().set_many({**(extra or {}), "batches": batches})
        try:
            (self.directory / "batches.json").write_text(json.dumps(batches, indent=2), encoding="utf-8")
        except OSError as exc:
            raise CacheError(f"cannot write {self.directory / 'batches.json'}: {exc}") from exc

    def close(self) -> None:
        """Close the folder (it reopens on next use)."""
        self._rows.close()


def _tokens(reply: Any) -> tuple[int, int]:
    """(prompt, completion) tokens a batch reply reports (0, 0 for errors and lost requests)."""
    if not isinstance(reply, list | tuple) or not isinstance(reply[1], dict):
        return 0, 0
    usage = reply[1].get("usage")
    if not isinstance(usage, dict):
        return 0, 0
    prompt = usage.get("prompt_tokens", usage.get("input_tokens", 0))
    completion = usage.get("completion_tokens", usage.get("output_tokens", 0))
    return _count(prompt), _count(completion)


def _count(value: Any) -> int:
    """A token count a reply reports, or 0 when it is not a whole number >= 0 (text, NaN, 1e999, -1)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return 0
    return int(value)


class DeferringJudge:
    """The judge of a batch round: answers what is answered, defers the rest to the next batch.

    Args:
        inner: The provider judge whose real-time requests are batched.
        real: The caching judge the metrics used before the batch run: read for replies cached by
            earlier runs, and given every reply a batch brings back.
        ledger: The ledger of ``inner``.
        resubmits: How many times a request that failed transiently is sent again.
    """

    _reopens_after_aclose = True  # aclose does nothing: the runner closes the real judge once, at the end

    def __init__(
        self, inner: ProviderJudge, real: CachingJudge, ledger: BatchLedger, *, resubmits: int = 2
    ) -> None:
        self.inner = inner
        self.real = real
        self.ledger = ledger
        self.resubmits = resubmits
        self.info = inner.info
        self.outbox: dict[str, dict[str, Any]] = {}
        """custom_id -> request body: what this round defers, for the next batch."""
        self.touched: set[str] = set()
        """Conversations this run read or wrote (forgotten when the run ends)."""
        self.last_round = False
        """Defer nothing: a request that still needs a batch fails (the run is out of rounds)."""
        self.in_flight: set[str] = set()
        """custom_ids in batches submitted and not collected yet (the runner keeps this up to date). A
        conversation waiting for a custom_id outside it was left by a run stopped between deferring and
        submitting: its request is deferred again."""

    def take_outbox(self) -> list[tuple[str, dict[str, Any]]]:
        """The requests deferred since the last call, emptying the outbox."""
        items, self.outbox = list(self.outbox.items()), {}
        return items

    async def complete(self, request: JudgeRequest[Any]) -> JudgeReply[Any]:
        """Answer from the batch ledger or the cache, else defer the request to the next batch.

        Raises:
            DeferredError: The request goes in the next batch.
            JudgeError: The request failed for good (its status says how).
        """
        started = time.perf_counter()
        cid = cache_key(self.inner, request)[:_ID_CHARS]
        conversation = self.ledger.conversation(cid)
        if conversation is None:
            entry = self.real.peek(request)
            if entry is not None:  # answered by an earlier run (real time or batch)
                try:
                    value = request.response_model.model_validate(
                        entry["value"], context=dict(request.context)
                    )
                except ValueError:  # a cached value this model refuses: ask again
                    pass
                else:
                    return JudgeReply(value=value, usage=Usage(cached_calls=1), cached=True)
            conversation = {
                "max_tokens": request.max_tokens or self.inner.settings.max_tokens,
                "replies": [],
                "pending": None,
                "sent": 0,
                "resubmits": 0,
                "retries": 0,
                "spent": [0, 0, 0],
            }
        self.touched.add(cid)
        if conversation["pending"] is not None:
            if conversation["pending"] in self.in_flight:
                raise self._deferred()  # sent in a batch that has not ended yet
            conversation["pending"] = None  # never submitted: defer it again, under a new custom_id
        while True:
            replies = conversation["replies"]
            if replies and isinstance(replies[-1], dict):  # the last request was never answered
                lost = replies[-1]
                failure = Failure(
                    status=_LOST_STATUS.get(lost.get("lost", ""), "provider_error"),
                    transient=lost.get("lost") != "failed",
                    message=f"batch request {lost.get('lost')}: {lost.get('message')}",
                )
            else:
                step = await replay(self.inner, request, conversation["max_tokens"], replies)
                if isinstance(step, Done):
                    return self._answered(cid, conversation, request, step, started)
                if isinstance(step, Send):
                    return self._queue(cid, conversation, step.body)
                failure = step.failure
            if not self._again(conversation, failure):
                self.ledger.save(cid, conversation)
                raise self._failed(conversation, failure)

    def _again(self, conversation: dict[str, Any], failure: Failure) -> bool:
        """Whether a failed request is sent again (the conversation is changed for it)."""
        settings = self.inner.settings
        replies = conversation["replies"]
        if failure.status == "truncated" and conversation["max_tokens"] < settings.max_tokens_cap:
            drop, conversation["replies"] = replies, []
            conversation["max_tokens"] = min(settings.max_tokens_cap, conversation["max_tokens"] * 2)
        elif failure.transient and conversation["resubmits"] < self.resubmits and replies:
            drop, conversation["replies"] = replies[-1:], replies[:-1]
            conversation["resubmits"] += 1
        else:
            return False
        spent = conversation["spent"]
        for reply in drop:
            prompt, completion = _tokens(reply)
            spent = [spent[0] + 1, spent[1] + prompt, spent[2] + completion]
        conversation["spent"] = spent
        conversation["retries"] += 1
        return True

    def _queue(self, cid: str, conversation: dict[str, Any], body: dict[str, Any]) -> JudgeReply[Any]:
        if self.last_round:
            self.ledger.save(cid, conversation)
            raise self._failed(
                conversation,
                Failure(
                    status="provider_error",
                    transient=False,
                    message="the request still needed another batch when the run ran out of rounds",
                    hint="raise BatchOptions(max_rounds=...)",
                ),
            )
        custom_id = f"{cid}-{conversation['sent']}"
        conversation["sent"] += 1
        conversation["pending"] = custom_id
        self.ledger.save(cid, conversation)
        self.outbox[custom_id] = body
        raise self._deferred()

    def _usage(self, conversation: dict[str, Any], prompt: int, completion: int, **extra: int) -> Usage:
        calls, spent_prompt, spent_completion = conversation["spent"]
        prompt += spent_prompt
        completion += spent_completion
        info = self.info
        return Usage(
            calls=len(conversation["replies"]) + calls,
            retries=conversation["retries"],
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=batch_cost_usd(self.inner.prices, info.provider, info.model, prompt, completion),
            **extra,
        )

    def _answered(
        self, cid: str, conversation: dict[str, Any], request: JudgeRequest[Any], step: Done, started: float
    ) -> JudgeReply[Any]:
        outcome = step.outcome
        usage = self._usage(
            conversation,
            outcome.prompt_tokens,
            outcome.completion_tokens,
            succeeded=1,
            reasks=max(0, outcome.attempts - 1),
        )
        reply = JudgeReply(
            value=outcome.value, usage=usage, latency_ms=(time.perf_counter() - started) * 1000
        )
        self.real.store(request, reply)
        return reply

    def _failed(self, conversation: dict[str, Any], failure: Failure) -> JudgeError:
        prompt = completion = 0
        for reply in conversation["replies"]:
            p, c = _tokens(reply)
            prompt, completion = prompt + p, completion + c
        replies = conversation["replies"]
        reasks = sum(1 for r in replies[:-1] if isinstance(r, tuple | list) and r[0] == 200)
        usage = self._usage(conversation, prompt, completion, reasks=reasks)
        kind = JudgeOutputError if failure.status in ("judge_output_invalid", "truncated") else JudgeError
        return kind(
            f"{failure.message} (through the {self.info.provider} batch API)",
            provider=self.info.provider,
            model=self.info.model,
            attempts=usage.calls,
            reasks=usage.reasks,
            status=failure.status,
            http_status=failure.http_status,
            hint=failure.hint,
            usage=usage,
        )

    def _deferred(self) -> DeferredError:
        return DeferredError(
            "deferred to the next provider batch",
            provider=self.info.provider,
            model=self.info.model,
            attempts=0,
        )

    def conversations(self) -> Iterator[str]:
        """The conversations this run touched."""
        return iter(sorted(self.touched))

    async def aclose(self) -> None:
        """Nothing to close: the real judge is closed by the batch runner when the run ends."""
