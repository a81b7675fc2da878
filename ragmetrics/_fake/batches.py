"""The provider batch APIs of the fake LLM server: OpenAI's Batch API and Anthropic's Message Batches.

OpenAI: ``/v1/files`` (JSONL uploads and contents) and ``/v1/batches`` (create, retrieve, cancel;
output and error files when finished). Anthropic: ``/v1/messages/batches`` (create, retrieve,
results, cancel). Each request inside a batch is answered when the batch ends, exactly as the same
request in real time would be (rules, queued replies and faults apply), and recorded with its
``batch_id`` and ``custom_id``; a ``hang`` or ``drop`` reply leaves it unprocessed (expired). When a
batch ends, and any batch-wide outcome, is set by :class:`FakeBatchPlan`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ragmetrics._fake.batch_wire import (
    CUSTOM_ID,
    MAX_LINES,
    BatchError,
    BatchFile,
    BatchRecord,
    FakeBatchPlan,
    anthropic_results,
    batch_view,
    file_json,
    json_object,
    multipart,
    read_jsonl,
)
from ragmetrics._fake.wire import dumps

__all__ = ["BatchError", "BatchRoute", "BatchStore", "FakeBatch", "FakeBatchPlan", "batch_route"]


LineAnswer = Callable[[str, dict[str, Any], str, str], "tuple[int, dict[str, Any]] | None"]
"""``(endpoint, body, custom_id, batch_id) -> (status, body)``, or None for an unprocessed request."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeBatch:
    """A batch the fake server holds, as :attr:`FakeLLMServer.batches` shows it."""

    id: str
    """``batch_...`` (OpenAI) or ``msgbatch_...`` (Anthropic)."""
    provider: Literal["openai", "anthropic"]
    """Which batch API created it."""
    status: str
    """The provider's status word: OpenAI's ``status``, Anthropic's ``processing_status``."""
    custom_ids: tuple[str, ...]
    """The requests' ``custom_id`` values, in submission order."""
    polls: int
    """How many times it was retrieved."""
    ended: bool
    """Whether it has ended (its results are ready)."""


@dataclass(frozen=True, slots=True)
class BatchRoute:
    """A batch API path: which resource, its id and the action."""

    provider: Literal["openai", "anthropic"]
    resource: Literal["files", "batches"]
    item: str | None
    action: str | None


_ROUTES: tuple[
    tuple[str, re.Pattern[str], Literal["openai", "anthropic"], Literal["files", "batches"]], ...
] = (
    ("GET", re.compile(r"/v1/batches()"), "openai", "batches"),
    ("GET", re.compile(r"/v1/messages/batches()"), "anthropic", "batches"),
    ("POST", re.compile(r"/v1/files()"), "openai", "files"),
    ("GET", re.compile(r"/v1/files/(?P<item>[^/]+)(?:/(?P<action>content))?"), "openai", "files"),
    ("POST", re.compile(r"/v1/batches()"), "openai", "batches"),
    ("GET", re.compile(r"/v1/batches/(?P<item>[^/]+)"), "openai", "batches"),
    ("POST", re.compile(r"/v1/batches/(?P<item>[^/]+)/(?P<action>cancel)"), "openai", "batches"),
    ("POST", re.compile(r"/v1/messages/batches()"), "anthropic", "batches"),
    (
        "GET",
        re.compile(r"/v1/messages/batches/(?P<item>[^/]+)(?:/(?P<action>results))?"),
        "anthropic",
        "batches",
    ),
    ("POST", re.compile(r"/v1/messages/batches/(?P<item>[^/]+)/(?P<action>cancel)"), "anthropic", "batches"),
)

KNOWN = (
    "POST /v1/files, GET /v1/files/ID[/content], POST|GET /v1/batches, GET /v1/batches/ID, "
    "POST /v1/batches/ID/cancel, POST|GET /v1/messages/batches, GET /v1/messages/batches/ID[/results], "
    "POST /v1/messages/batches/ID/cancel"
)
LOST = (0, b"", "")
"""What :meth:`BatchStore.serve` returns for a reply the server must lose (close without answering)."""
"""The batch API paths, for the server's 404 message."""


def batch_route(method: str, path: str) -> BatchRoute | None:
    """The batch API route of ``method`` + ``path`` (no query), or None."""
    for verb, pattern, provider, resource in _ROUTES:
        match = pattern.fullmatch(path)
        if verb == method and match is not None:
            groups = match.groupdict()
            item = groups.get("item") or None
            action = "list" if verb == "GET" and item is None else groups.get("action")
            return BatchRoute(provider, resource, item, action)
    return None


class BatchStore:
    """The uploaded files and the batches of one fake server (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._files: dict[str, BatchFile] = {}
        self._batches: dict[str, BatchRecord] = {}
        self._seq = 0
        self._plan = FakeBatchPlan()
        self._lost = 0
        self._by_key: dict[str, str] = {}
        """Idempotency-Key header -> the batch its first create made."""

    @property
    def plan(self) -> FakeBatchPlan:
        """How batches created from now on end (setting it restarts the count of lost creates)."""
        return self._plan

    @plan.setter
    def plan(self, plan: FakeBatchPlan) -> None:
        with self._lock:
            self._plan = plan
            self._lost = 0

    def snapshot(self) -> list[FakeBatch]:
        """Every batch, in creation order."""
        with self._lock:
            return [
                FakeBatch(
                    id=b.id,
                    provider=b.provider,
                    status=b.status,
                    custom_ids=tuple(c for c, _ in b.lines),
                    polls=b.polls,
                    ended=b.ended,
                )
                for b in self._batches.values()
            ]

    def _next(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}fake{self._seq:06d}"

    # -- dispatch -------------------------------------------------------------------------------
    def serve(
        self, route: BatchRoute, headers: Mapping[str, str], raw: bytes, answer: LineAnswer
    ) -> tuple[int, bytes, str]:
        """Answer one batch API request: (status, body, content type).

        Raises:
            BatchError: The request is refused (sent in the provider's error shape).
        """
        with self._lock:
            if route.resource == "files":
                if route.item is None:
                    return 200, dumps(self._upload(headers, raw)), "application/json"
                file = self._files.get(route.item)
                if file is None:
                    raise BatchError(404, f"No such File object: {route.item}")
                if route.action == "content":
                    return 200, file.data, "application/octet-stream"
                return 200, dumps(file_json(file)), "application/json"
            if route.action == "list":  # every batch of this API, newest first, in one page
                newest = reversed(self._batches.values())
                views = [batch_view(b, headers) for b in newest if b.provider == route.provider]
                page = {"data": views, "has_more": False, "first_id": None, "last_id": None}
                if views:
                    page.update(first_id=views[0]["id"], last_id=views[-1]["id"])
                if route.provider == "openai":
                    page["object"] = "list"
                return 200, dumps(page), "application/json"
            if route.item is None:
                key = headers.get("idempotency-key")
                if key and key in self._by_key:  # the same create again: the batch it made
                    view = batch_view(self._batches[self._by_key[key]], headers)
                else:
                    body = json_object(raw)
                    view = (
                        self._create_openai(body)
                        if route.provider == "openai"
                        else self._create_anthropic(body)
                    )
                    if key:
                        self._by_key[key] = view["id"]
                if self._lost < self._plan.lose_creates:
                    self._lost += 1
                    return LOST
                return 200, dumps(view), "application/json"
            batch = self._batches.get(route.item)
            if batch is None or batch.provider != route.provider:
                raise BatchError(404, f"No such batch: {route.item}")
            if route.action == "cancel":
                if not batch.ended:
                    batch.cancelling = True
                    batch.status = "cancelling" if batch.provider == "openai" else "canceling"
                return 200, dumps(batch_view(batch, headers)), "application/json"
            if route.action == "results":
                if not batch.ended:
                    raise BatchError(
                        400, f"batch {batch.id} is still {batch.status}; its results are not ready"
                    )
                return 200, anthropic_results(batch), "application/binary"
            batch.polls += 1
            if self._due(batch):
                self._finish(batch, answer)
            return 200, dumps(batch_view(batch, headers)), "application/json"

    # -- OpenAI -----------------------------------------------------------------------------------
    def _upload(self, headers: Mapping[str, str], raw: bytes) -> dict[str, Any]:
        parts = multipart(headers.get("content-type", ""), raw)
        purpose = parts.get("purpose", (None, b""))[1].decode("utf-8", "replace")
        if "file" not in parts:
            raise BatchError(400, "the upload has no 'file' part (send multipart/form-data)")
        if purpose not in ("batch", "assistants", "fine-tune", "vision", "user_data", "evals"):
            raise BatchError(400, f"'purpose' must be one of batch, assistants, ...; got {purpose!r}")
        filename, data = parts["file"]
        file = BatchFile(self._next("file-"), filename or "upload.jsonl", purpose, data, int(time.time()))
        self._files[file.id] = file
        return file_json(file)

    def _create_openai(self, body: Mapping[str, Any]) -> dict[str, Any]:
        endpoint = body.get("endpoint")
        if endpoint not in ("/v1/chat/completions", "/v1/embeddings", "/v1/responses", "/v1/completions"):
            raise BatchError(
                400, f"endpoint must be '/v1/chat/completions' (or another batch endpoint), got {endpoint!r}"
            )
        if body.get("completion_window") != "24h":
            raise BatchError(400, f"completion_window must be '24h', got {body.get('completion_window')!r}")
        file = self._files.get(str(body.get("input_file_id")))
        if file is None:
            raise BatchError(400, f"No such File object: {body.get('input_file_id')}")
        if file.purpose != "batch":
            raise BatchError(400, f"file {file.id} was uploaded with purpose {file.purpose!r}, not 'batch'")
        lines, errors = read_jsonl(file.data, str(endpoint))
        batch = BatchRecord(
            id=self._next("batch_"),
            provider="openai",
            plan=self._plan,
            lines=lines,
            endpoint=str(endpoint),
            created=int(time.time()),
            started=time.monotonic(),
            input_file_id=file.id,
            metadata=body.get("metadata"),
            errors=errors,
            status="validating",
        )
        self._batches[batch.id] = batch
        return batch_view(batch, {})

    # -- Anthropic --------------------------------------------------------------------------------
    def _create_anthropic(self, body: Mapping[str, Any]) -> dict[str, Any]:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            raise BatchError(400, "requests: a non-empty list of {custom_id, params} is required")
        if len(requests) > MAX_LINES:
            raise BatchError(413, f"requests: at most {MAX_LINES} per batch, got {len(requests)}")
        lines: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for n, item in enumerate(requests):
            custom_id = item.get("custom_id") if isinstance(item, Mapping) else None
            params = item.get("params") if isinstance(item, Mapping) else None
            if not isinstance(custom_id, str) or not CUSTOM_ID.fullmatch(custom_id):
                raise BatchError(
                    400, f"requests.{n}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$, got {custom_id!r}"
                )
            if custom_id in seen:
                raise BatchError(400, f"requests.{n}.custom_id: duplicate custom_id {custom_id!r}")
            if not isinstance(params, dict) or not params.get("model") or "max_tokens" not in params:
                raise BatchError(
                    400, f"requests.{n}.params: a Messages body with model and max_tokens is required"
                )
            seen.add(custom_id)
            lines.append((custom_id, params))
        batch = BatchRecord(
            id=self._next("msgbatch_"),
            provider="anthropic",
            plan=self._plan,
            lines=lines,
            endpoint="/v1/messages",
            created=int(time.time()),
            started=time.monotonic(),
            status="in_progress",
        )
        self._batches[batch.id] = batch
        return batch_view(batch, {})

    # -- progression ------------------------------------------------------------------------------
    def _due(self, batch: BatchRecord) -> bool:
        if batch.ended:
            return False
        if batch.cancelling:
            return True
        if batch.plan.seconds is not None:
            return time.monotonic() - batch.started >= batch.plan.seconds
        return batch.polls >= batch.plan.polls

    def _finish(self, batch: BatchRecord, answer: LineAnswer) -> None:
        """End the batch: answer (or expire, fail, cancel) every request and write the results."""
        outcome = "cancelled" if batch.cancelling else batch.plan.outcome
        batch.ended = True
        batch.ended_at = int(time.time())
        if batch.provider == "openai" and (outcome == "failed" or batch.errors):
            batch.status = "failed"
            if not batch.errors:
                batch.errors = [
                    {
                        "code": "scripted_failure",
                        "message": "failed by FakeBatchPlan(outcome='failed')",
                        "param": None,
                        "line": None,
                    }
                ]
            return
        shape = "messages" if batch.provider == "anthropic" else "chat"
        for custom_id, body in batch.lines:
            if outcome in ("expired", "cancelled"):
                batch.results[custom_id] = outcome
            elif outcome == "failed":  # Anthropic has no failed batches: every request errors
                batch.results[custom_id] = (
                    500,
                    {
                        "type": "error",
                        "error": {
                            "type": "api_error",
                            "message": "failed by FakeBatchPlan(outcome='failed')",
                        },
                    },
                )
            else:
                got = answer(shape, body, custom_id, batch.id)
                batch.results[custom_id] = "expired" if got is None else got
        words = set(r for r in batch.results.values() if isinstance(r, str))
        if batch.provider == "anthropic":
            batch.status = "ended"
            return
        batch.status = (
            "cancelled" if "cancelled" in words else "expired" if "expired" in words else "completed"
        )
        out: list[dict[str, Any]] = []
        err: list[dict[str, Any]] = []
        for n, (custom_id, result) in enumerate(batch.results.items()):
            line: dict[str, Any] = {
                "id": f"batch_req_fake{n}",
                "custom_id": custom_id,
                "response": None,
                "error": None,
            }
            if isinstance(result, str):
                code = "batch_expired" if result == "expired" else "batch_cancelled"
                line["error"] = {
                    "code": code,
                    "message": f"This request was not executed: the batch was {result}.",
                }
                err.append(line)
                continue
            status, body = result
            line["response"] = {"status_code": status, "request_id": f"req_fake{n}", "body": body}
            (out if status == 200 else err).append(line)
        for kind, rows in (("output", out), ("error", err)):
            if rows:
                edit = batch.plan.edit_line or (lambda line: line)
                data = b"".join(edit(dumps(r)) + b"\n" for r in rows)
                file = BatchFile(
                    self._next("file-"),
                    f"batch_{batch.id}_{kind}.jsonl",
                    "batch_output",
                    data,
                    int(time.time()),
                )
                self._files[file.id] = file
                setattr(batch, f"{kind}_file_id", file.id)

    # -- views ------------------------------------------------------------------------------------
