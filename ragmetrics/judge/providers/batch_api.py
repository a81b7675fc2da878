"""The providers' batch APIs through their real SDKs: submit requests, poll a batch, read its results.

:class:`OpenAIBatches` uploads a JSONL file and creates a batch over it; :class:`AnthropicBatches`
uses ``client.messages.batches``. A result is a reply as :mod:`ragmetrics.judge.providers._replay`
replays it, ``(HTTP status, JSON body)``, or a *lost* marker for a request never answered. Management
calls use the SDK's own retries, then raise :class:`~ragmetrics.errors.JudgeError`. The create, the
one call that costs money, carries an idempotency key and is never retried blindly: a create whose
reply is lost is looked up in the provider's list of batches first (:meth:`BatchAPI.submit`).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmetrics.errors import ConfigError, JudgeError
from ragmetrics.judge.providers._provider import ProviderJudge
from ragmetrics.judge.retry import Failure

__all__ = [
    "BATCH_PROVIDERS",
    "AnthropicBatches",
    "BatchAPI",
    "BatchState",
    "Intent",
    "OpenAIBatches",
    "batch_api_for",
]

BATCH_PROVIDERS = ("openai", "anthropic")
"""Judge providers with a batch API ragmetrics drives (Azure, Bedrock, Vertex and Gemini are not wired)."""

_ANTHROPIC_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
"""HTTP status of an errored Anthropic batch result, by its error type (as the Messages API answers)."""

Reply = tuple[int, dict[str, Any]] | dict[str, str]
"""One request's result: ``(status, body)``, or ``{"lost": why, "message": text}``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Intent:
    """A batch about to be created, as the ledger records it before the create is sent."""

    id: str
    """Unique per submission: the ``Idempotency-Key`` header, and OpenAI's ``metadata.ragmetrics_intent``."""
    started_at: float
    """Unix time the intent was recorded (a batch created for it is not older, give or take clock skew)."""
    requests: int
    """How many requests the batch holds."""
    known: frozenset[str] = frozenset()
    """Batch ids the ledger already has (never taken for this intent)."""


_CREATE_ATTEMPTS = 3
"""Creates sent for one intent in one run; each one after the first follows a lookup that found nothing."""
_CLOCK_SKEW_S = 600.0
"""How much older than its intent a batch found by lookup may look (the provider's clock is not ours)."""


def _maybe_created(exc: BaseException) -> bool:
    """Whether a failed create may have created the batch: no reply (connection, timeout) or a 5xx."""
    status = getattr(exc, "status_code", None)
    return not isinstance(status, int) or status >= 500


@dataclass(frozen=True, slots=True)
class BatchState:
    """What a poll of a batch says."""

    id: str
    ended: bool
    """Whether the batch is done (its results can be read)."""
    status: str
    """The provider's own status word."""
    progress: str
    """Request counts, for progress lines (``40/100 done, 2 failed``)."""


class BatchAPI(ABC):
    """One judge's provider batch API (its key, base URL and model)."""

    def __init__(self, judge: ProviderJudge) -> None:
        self.judge = judge
        self._sdk_client: Any = None
        self._owned = True

    def _client(self) -> Any:
        if self._sdk_client is None:
            user = self.judge._user_client
            if user is not None:  # a user's own client: a copy with retries, never closed by us
                self._sdk_client, self._owned = user.with_options(max_retries=3), False
            else:
                self._sdk_client = self._make_client()
        return self._sdk_client

    @abstractmethod
    def _make_client(self) -> Any: ...

    def _fail(self, what: str, exc: BaseException) -> JudgeError:
        failure = self.judge._classify(exc)
        message = failure.message if failure is not None else f"{type(exc).__name__}: {exc}"
        return self.judge._error(
            Failure(
                status="provider_error",
                transient=False,
                message=f"the batch API failed to {what}: {message}",
                http_status=failure.http_status if failure is not None else None,
                hint=failure.hint if failure is not None else None,
            ),
            1,
        )

    async def submit(
        self,
        items: Sequence[tuple[str, Mapping[str, Any]]],
        intent: Intent,
        not_created: Callable[[], Any] = lambda: None,
    ) -> str:
        """Send ``(custom_id, body)`` requests as one batch (recorded as ``intent``); returns the batch id.

        The create is sent without the SDK's blind retries and with ``intent.id`` as its idempotency
        key. When its reply is lost (no reply, a timeout, a 5xx), the batch may exist: it is looked up
        (:meth:`find`) before any other create is sent, so one submission makes at most one batch.
        ``not_created`` is called before raising when no batch can exist (the upload failed, or the
        create was refused with a 4xx).

        Raises:
            JudgeError: The upload or create failed, or the lookup after a lost reply did (the intent
                stays in the ledger, and the next run looks the batch up before sending anything).
        """
        what = f"submit {len(items)} requests"
        try:
            prepared = await self._prepare(items)
        except Exception as exc:
            not_created()
            raise self._fail(what, exc) from exc
        last: BaseException | None = None
        for _ in range(_CREATE_ATTEMPTS):
            try:
                return await self._create(prepared, intent)
            except Exception as exc:
                if not _maybe_created(exc):
                    not_created()
                    raise self._fail(what, exc) from exc
                last = exc
            try:
                found = await self.find(intent)
            except JudgeError as exc:
                raise self._fail(
                    f"{what} (the reply to the create was lost and the lookup failed, so the batch may "
                    "exist: the ledger keeps its intent, and the next run with --resume looks it up "
                    "before sending anything)",
                    exc,
                ) from exc
            if found is not None:
                return found
        assert last is not None
        raise self._fail(f"{what} ({_CREATE_ATTEMPTS} creates, none answered and none found)", last) from last

    @abstractmethod
    async def _prepare(self, items: Sequence[tuple[str, Mapping[str, Any]]]) -> Any:
        """What the create sends (OpenAI: the uploaded file's id; Anthropic: the requests)."""

    @abstractmethod
    async def _create(self, prepared: Any, intent: Intent) -> str:
        """One create, no SDK retries; returns the batch id."""

    async def find(self, intent: Intent) -> str | None:
        """The id of the batch created for ``intent``, or None if the provider has none.

        Raises:
            JudgeError: The provider's list of batches cannot be read.
        """
        try:
            return await self._find(intent)
        except Exception as exc:
            raise self._fail("list batches", exc) from exc

    @abstractmethod
    async def _find(self, intent: Intent) -> str | None: ...

    @abstractmethod
    async def poll(self, batch_id: str) -> BatchState:
        """The batch's state now."""

    @abstractmethod
    async def results(self, batch_id: str, custom_ids: Sequence[str]) -> dict[str, Reply]:
        """Every submitted request's result (lost ``missing`` for one the batch does not report)."""

    async def aclose(self) -> None:
        """Close the SDK client this object built (a user's client is left alone)."""
        client, self._sdk_client = self._sdk_client, None
        if client is not None and self._owned:
            await client.close()


class OpenAIBatches(BatchAPI):
    """OpenAI's Batch API (files + batches), for ``/v1/chat/completions`` requests."""

    endpoint = "/v1/chat/completions"

    def _make_client(self) -> Any:
        import openai

        settings = self.judge.settings
        return openai.AsyncOpenAI(
            api_key=self.judge._key(),
            base_url=settings.base_url,
            max_retries=3,
            timeout=max(60.0, settings.timeout_s),
        )

    async def _prepare(self, items: Sequence[tuple[str, Mapping[str, Any]]]) -> Any:
        """Upload the requests as one JSONL file; returns its id."""
        lines = (
            json.dumps(
                {"custom_id": cid, "method": "POST", "url": self.endpoint, "body": body},
                ensure_ascii=False,
                separators=(",", ":"),
            ).encode("utf-8")
            + b"\n"
            for cid, body in items
        )
        data = b"".join(lines)
        file = await self._client().files.create(
            file=("ragmetrics-batch.jsonl", data, "application/jsonl"), purpose="batch"
        )
        return str(file.id)

    async def _create(self, prepared: Any, intent: Intent) -> str:
        """Create the batch over the uploaded file, tagged with the intent (metadata and header)."""
        batch = (
            await self._client()
            .with_options(max_retries=0)
            .batches.create(
                input_file_id=prepared,
                endpoint=self.endpoint,
                completion_window="24h",
                metadata={"created_by": "ragmetrics", "ragmetrics_intent": intent.id},
                extra_headers={"Idempotency-Key": intent.id},
            )
        )
        return str(batch.id)

    async def _find(self, intent: Intent) -> str | None:
        """The batch whose ``metadata.ragmetrics_intent`` is the intent's id (newest first, back to it)."""
        async for batch in self._client().batches.list(limit=100):
            metadata = batch.metadata if isinstance(batch.metadata, dict) else {}
            if metadata.get("ragmetrics_intent") == intent.id:
                return str(batch.id)
            if (
                isinstance(batch.created_at, int | float)
                and batch.created_at < intent.started_at - _CLOCK_SKEW_S
            ):
                return None
        return None

    async def poll(self, batch_id: str) -> BatchState:
        """Retrieve the batch; it has ended once completed, failed, expired or cancelled."""
        try:
            batch = await self._client().batches.retrieve(batch_id)
        except Exception as exc:
            raise self._fail(f"retrieve batch {batch_id}", exc) from exc
        counts = batch.request_counts
        progress = f"{counts.completed}/{counts.total} done, {counts.failed} failed" if counts else ""
        ended = batch.status in ("completed", "failed", "expired", "cancelled")
        return BatchState(id=batch_id, ended=ended, status=str(batch.status), progress=progress)

    async def results(self, batch_id: str, custom_ids: Sequence[str]) -> dict[str, Reply]:
        """Read the output and error files; requests in neither are lost (``failed`` or ``missing``)."""
        client = self._client()
        try:
            batch = await client.batches.retrieve(batch_id)
            texts = [
                (await client.files.content(fid)).text
                for fid in (batch.output_file_id, batch.error_file_id)
                if fid
            ]
        except Exception as exc:
            raise self._fail(f"read the results of batch {batch_id}", exc) from exc
        found: dict[str, Reply] = {}
        for text in texts:
            for raw in text.split("\n"):
                line = _json_line(raw)
                custom_id = line.get("custom_id")
                if isinstance(custom_id, str):
                    found[custom_id] = _openai_reply(line)
                elif raw.strip():  # an unreadable line: its request's status, if its custom_id shows
                    named = _CUSTOM_ID_IN_TEXT.search(raw)
                    if named is not None:
                        found[named.group(1)] = {
                            "lost": "failed",
                            "message": "its batch output line is not JSON",
                        }
        why = "failed" if batch.status == "failed" else "missing"
        errors = getattr(batch.errors, "data", None) or []
        message = "; ".join(str(getattr(e, "message", e)) for e in errors[:3]) or f"batch {batch.status}"
        lost: Reply = {"lost": why, "message": f"not in the results of batch {batch_id} ({message})"}
        return {cid: found.get(cid, lost) for cid in custom_ids}


def _json_line(raw: str) -> dict[str, Any]:
    try:
        line = json.loads(raw)
    except ValueError:
        return {}
    return line if isinstance(line, dict) else {}


_CUSTOM_ID_IN_TEXT = re.compile(r'"custom_id"\s*:\s*"([A-Za-z0-9_-]{1,64})"')


def _openai_reply(line: Mapping[str, Any]) -> Reply:
    response = line.get("response")
    if isinstance(response, Mapping) and isinstance(response.get("body"), dict):
        status = response.get("status_code")
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
            shown = repr(status)[:40]
            return {
                "lost": "failed",
                "message": f"its batch output line has status_code {shown}, not an HTTP status",
            }
        return status, response["body"]
    raw_error = line.get("error")
    error: Mapping[str, Any] = raw_error if isinstance(raw_error, Mapping) else {}
    code = str(error.get("code") or "")
    why = "expired" if code == "batch_expired" else "cancelled" if code == "batch_cancelled" else "failed"
    return {"lost": why, "message": str(error.get("message") or code or "no response")}


class AnthropicBatches(BatchAPI):
    """Anthropic's Message Batches API."""

    def _make_client(self) -> Any:
        import anthropic

        settings = self.judge.settings
        return anthropic.AsyncAnthropic(
            api_key=self.judge._key(),
            base_url=settings.base_url,
            max_retries=3,
            timeout=max(60.0, settings.timeout_s),
        )

    async def _prepare(self, items: Sequence[tuple[str, Mapping[str, Any]]]) -> Any:
        return [{"custom_id": cid, "params": dict(body)} for cid, body in items]

    async def _create(self, prepared: Any, intent: Intent) -> str:
        """Create a message batch of the requests, with the intent as its idempotency key."""
        batch = (
            await self._client()
            .with_options(max_retries=0)
            .messages.batches.create(requests=prepared, extra_headers={"Idempotency-Key": intent.id})
        )
        return str(batch.id)

    async def _find(self, intent: Intent) -> str | None:
        """The oldest batch of the intent's size created since it, that the ledger does not know yet.

        Message batches carry no metadata, so this is a match on size and time: two runs submitting
        batches of the same size at the same moment with the same key could take each other's.
        """
        found: str | None = None
        async for batch in self._client().messages.batches.list(limit=100):
            created = batch.created_at.timestamp()
            if created < intent.started_at - _CLOCK_SKEW_S:
                break
            c = batch.request_counts
            size = c.processing + c.succeeded + c.errored + c.canceled + c.expired
            if size == intent.requests and batch.id not in intent.known:
                found = str(batch.id)  # newest first: keep going to the oldest match
        return found

    async def poll(self, batch_id: str) -> BatchState:
        """Retrieve the batch; it has ended once ``processing_status`` is ``ended``."""
        try:
            batch = await self._client().messages.batches.retrieve(batch_id)
        except Exception as exc:
            raise self._fail(f"retrieve batch {batch_id}", exc) from exc
        c = batch.request_counts
        done = c.succeeded + c.errored + c.canceled + c.expired
        progress = f"{done}/{done + c.processing} done, {c.errored + c.canceled + c.expired} failed"
        return BatchState(
            id=batch_id,
            ended=batch.processing_status == "ended",
            status=str(batch.processing_status),
            progress=progress,
        )

    async def results(self, batch_id: str, custom_ids: Sequence[str]) -> dict[str, Reply]:
        """Read the results JSONL; requests it does not report are lost (``missing``)."""
        found: dict[str, Reply] = {}
        try:
            async for item in await self._client().messages.batches.results(batch_id):
                found[item.custom_id] = _anthropic_reply(item.result)
        except Exception as exc:
            raise self._fail(f"read the results of batch {batch_id}", exc) from exc
        lost: Reply = {"lost": "missing", "message": f"not in the results of batch {batch_id}"}
        return {cid: found.get(cid, lost) for cid in custom_ids}


def _anthropic_reply(result: Any) -> Reply:
    kind = getattr(result, "type", "")
    if kind == "succeeded":
        return 200, result.message.model_dump(mode="json", exclude_none=True)
    if kind == "errored":
        body = result.error.model_dump(mode="json", exclude_none=True)
        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        return _ANTHROPIC_STATUS.get(str(error.get("type")), 500), body
    why = "cancelled" if kind == "canceled" else "expired" if kind == "expired" else "failed"
    return {"lost": why, "message": f"the batch request {kind or 'was not answered'}"}


def batch_api_for(judge: Any) -> BatchAPI:
    """The batch API of a provider judge.

    Raises:
        ConfigError: The judge has no batch API here (the offline judge, a user's Judge object, or an
            Azure, Bedrock, Vertex or Gemini judge).
    """
    provider = getattr(getattr(judge, "info", None), "provider", None)
    if not isinstance(judge, ProviderJudge) or provider not in BATCH_PROVIDERS:
        name = getattr(getattr(judge, "info", None), "spec", None) or type(judge).__name__
        hint = (
            "the offline judge makes no API calls, so there is nothing to batch: drop batch=True / --batch"
            if provider == "offline"
            else f"batch mode drives the OpenAI and Anthropic batch APIs ({', '.join(BATCH_PROVIDERS)} "
            "judges); run this judge in real time (drop batch=True / --batch)"
        )
        raise ConfigError(f"batch mode: judge {name} has no batch API; {hint}")
    return AnthropicBatches(judge) if provider == "anthropic" else OpenAIBatches(judge)
