"""The provider batch APIs of the fake LLM server: OpenAI's Batch API and Anthropic's Message Batches.

OpenAI: ``POST /v1/files`` (multipart, ``purpose=batch``, a JSONL file of ``{custom_id, method, url,
body}`` lines), ``GET /v1/files/{id}`` and ``/v1/files/{id}/content``, ``POST /v1/batches``
(``input_file_id``, ``endpoint``, ``completion_window``), ``GET /v1/batches/{id}`` (``validating`` ->
``in_progress`` -> ``finalizing`` -> ``completed``, or ``failed`` / ``expired`` / ``cancelled``) and
``POST /v1/batches/{id}/cancel``. A finished batch has an ``output_file_id`` (lines ``{id, custom_id,
response: {status_code, request_id, body}, error: null}`` for the requests answered 200) and an
``error_file_id`` (the others: a ``response`` with the error status and body, or ``response: null``
with ``error.code`` ``batch_expired`` / ``batch_cancelled`` for requests never processed).

Anthropic: ``POST /v1/messages/batches`` (``requests: [{custom_id, params}]``), ``GET
/v1/messages/batches/{id}`` (``processing_status`` ``in_progress`` -> ``ended``, ``request_counts``,
``results_url``), ``GET .../{id}/results`` (JSONL of ``{custom_id, result: {type: succeeded | errored |
canceled | expired, ...}}``) and ``POST .../{id}/cancel``.

Each request inside a batch is answered when the batch ends, exactly as the same request sent in real
time would be (rules, queued replies and faults apply; latency does not), and recorded among the
server's requests with its ``batch_id`` and ``custom_id``. A ``hang`` or ``drop`` reply leaves the
request unprocessed: it expires. When a batch ends is set by :class:`FakeBatchPlan` (after N polls or
T seconds), and so is a batch-wide outcome (``expired``, ``failed``, ``cancelled``).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email import policy
from email.parser import BytesParser
from typing import Any, Literal

from ragmetrics._fake.wire import dumps
from ragmetrics.errors import ConfigError

__all__ = ["BatchRoute", "BatchStore", "FakeBatch", "FakeBatchPlan", "batch_route"]

Outcome = Literal["completed", "expired", "failed", "cancelled"]
_OUTCOMES = ("completed", "expired", "failed", "cancelled")
_WINDOW_S = 24 * 3600
_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_MAX_LINES = 50_000  # both providers' limit on requests per batch (Anthropic: 100,000; OpenAI: 50,000)

LineAnswer = Callable[[str, dict[str, Any], str, str], "tuple[int, dict[str, Any]] | None"]
"""``(endpoint, body, custom_id, batch_id) -> (status, body)``, or None for an unprocessed request."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeBatchPlan:
    """When the batches created from now on end, and how (see :meth:`FakeLLMServer.batch_plan`).

    Attributes:
        polls: The batch ends at this retrieve (``GET``) of it: 1 ends it at the first poll.
        seconds: If set, the batch ends once this many seconds have passed since it was created
            (at the first poll after that), whatever ``polls`` says.
        outcome: ``completed`` (every request answered), ``expired`` (none processed: each one
            expires), ``failed`` (OpenAI: the batch fails validation, no output; Anthropic: each request
            errors with ``api_error``), or ``cancelled`` (none processed: each one is cancelled).
    """

    polls: int = 2
    seconds: float | None = None
    outcome: Outcome = "completed"

    def __post_init__(self) -> None:
        if isinstance(self.polls, bool) or not isinstance(self.polls, int) or self.polls < 1:
            raise ConfigError(f"batch_plan: polls must be an int >= 1, got {self.polls!r}")
        if self.seconds is not None and not (isinstance(self.seconds, int | float) and self.seconds >= 0):
            raise ConfigError(f"batch_plan: seconds must be >= 0 or None, got {self.seconds!r}")
        if self.outcome not in _OUTCOMES:
            raise ConfigError(f"batch_plan: outcome must be one of {_OUTCOMES}, got {self.outcome!r}")


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
    "POST /v1/files, GET /v1/files/ID[/content], POST /v1/batches, GET /v1/batches/ID, "
    "POST /v1/batches/ID/cancel, POST /v1/messages/batches, GET /v1/messages/batches/ID[/results], "
    "POST /v1/messages/batches/ID/cancel"
)
"""The batch API paths, for the server's 404 message."""


def batch_route(method: str, path: str) -> BatchRoute | None:
    """The batch API route of ``method`` + ``path`` (no query), or None."""
    for verb, pattern, provider, resource in _ROUTES:
        match = pattern.fullmatch(path)
        if verb == method and match is not None:
            groups = match.groupdict()
            return BatchRoute(provider, resource, groups.get("item") or None, groups.get("action"))
    return None


@dataclass(slots=True)
class _File:
    id: str
    filename: str
    purpose: str
    data: bytes
    created: int


@dataclass(slots=True)
class _Batch:
    id: str
    provider: Literal["openai", "anthropic"]
    plan: FakeBatchPlan
    lines: list[tuple[str, dict[str, Any]]]
    endpoint: str
    created: int
    started: float
    input_file_id: str = ""
    metadata: Any = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    polls: int = 0
    cancelling: bool = False
    ended: bool = False
    status: str = ""
    ended_at: int | None = None
    results: dict[str, tuple[int, dict[str, Any]] | str] = field(default_factory=dict)
    """custom_id -> (HTTP status, body), or the word for an unprocessed request (expired/cancelled)."""
    output_file_id: str | None = None
    error_file_id: str | None = None


class BatchError(Exception):
    """A batch API request the fake server refuses: the HTTP status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class BatchStore:
    """The uploaded files and the batches of one fake server (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._files: dict[str, _File] = {}
        self._batches: dict[str, _Batch] = {}
        self._seq = 0
        self.plan = FakeBatchPlan()

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
                return 200, dumps(_file_json(file)), "application/json"
            if route.item is None:
                body = _json_object(raw)
                if route.provider == "openai":
                    return 200, dumps(self._create_openai(body)), "application/json"
                return 200, dumps(self._create_anthropic(body)), "application/json"
            batch = self._batches.get(route.item)
            if batch is None or batch.provider != route.provider:
                raise BatchError(404, f"No such batch: {route.item}")
            if route.action == "cancel":
                if not batch.ended:
                    batch.cancelling = True
                    batch.status = "cancelling" if batch.provider == "openai" else "canceling"
                return 200, dumps(self._view(batch, headers)), "application/json"
            if route.action == "results":
                if not batch.ended:
                    raise BatchError(
                        400, f"batch {batch.id} is still {batch.status}; its results are not ready"
                    )
                return 200, _anthropic_results(batch), "application/binary"
            batch.polls += 1
            if self._due(batch):
                self._finish(batch, answer)
            return 200, dumps(self._view(batch, headers)), "application/json"

    # -- OpenAI -----------------------------------------------------------------------------------
    def _upload(self, headers: Mapping[str, str], raw: bytes) -> dict[str, Any]:
        parts = _multipart(headers.get("content-type", ""), raw)
        purpose = parts.get("purpose", (None, b""))[1].decode("utf-8", "replace")
        if "file" not in parts:
            raise BatchError(400, "the upload has no 'file' part (send multipart/form-data)")
        if purpose not in ("batch", "assistants", "fine-tune", "vision", "user_data", "evals"):
            raise BatchError(400, f"'purpose' must be one of batch, assistants, ...; got {purpose!r}")
        filename, data = parts["file"]
        file = _File(self._next("file-"), filename or "upload.jsonl", purpose, data, int(time.time()))
        self._files[file.id] = file
        return _file_json(file)

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
        lines, errors = _read_jsonl(file.data, str(endpoint))
        batch = _Batch(
            id=self._next("batch_"),
            provider="openai",
            plan=self.plan,
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
        return self._view(batch, {})

    # -- Anthropic --------------------------------------------------------------------------------
    def _create_anthropic(self, body: Mapping[str, Any]) -> dict[str, Any]:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            raise BatchError(400, "requests: a non-empty list of {custom_id, params} is required")
        if len(requests) > _MAX_LINES:
            raise BatchError(413, f"requests: at most {_MAX_LINES} per batch, got {len(requests)}")
        lines: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for n, item in enumerate(requests):
            custom_id = item.get("custom_id") if isinstance(item, Mapping) else None
            params = item.get("params") if isinstance(item, Mapping) else None
            if not isinstance(custom_id, str) or not _CUSTOM_ID.fullmatch(custom_id):
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
        batch = _Batch(
            id=self._next("msgbatch_"),
            provider="anthropic",
            plan=self.plan,
            lines=lines,
            endpoint="/v1/messages",
            created=int(time.time()),
            started=time.monotonic(),
            status="in_progress",
        )
        self._batches[batch.id] = batch
        return self._view(batch, {})

    # -- progression ------------------------------------------------------------------------------
    def _due(self, batch: _Batch) -> bool:
        if batch.ended:
            return False
        if batch.cancelling:
            return True
        if batch.plan.seconds is not None:
            return time.monotonic() - batch.started >= batch.plan.seconds
        return batch.polls >= batch.plan.polls

    def _finish(self, batch: _Batch, answer: LineAnswer) -> None:
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
                data = b"".join(dumps(r) + b"\n" for r in rows)
                file = _File(
                    self._next("file-"),
                    f"batch_{batch.id}_{kind}.jsonl",
                    "batch_output",
                    data,
                    int(time.time()),
                )
                self._files[file.id] = file
                setattr(batch, f"{kind}_file_id", file.id)

    # -- views ------------------------------------------------------------------------------------
    def _view(self, batch: _Batch, headers: Mapping[str, str]) -> dict[str, Any]:
        if batch.provider == "anthropic":
            return _anthropic_view(batch, headers.get("host", "127.0.0.1"))
        if not batch.ended and not batch.cancelling:
            left = batch.plan.polls - batch.polls
            batch.status = "validating" if batch.polls == 0 else "finalizing" if left <= 1 else "in_progress"
        answered = [r for r in batch.results.values() if not isinstance(r, str)]
        done = sum(1 for status, _ in answered if status == 200)
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": {"object": "list", "data": batch.errors} if batch.status == "failed" else None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": batch.created,
            "in_progress_at": batch.created if batch.polls else None,
            "expires_at": batch.created + _WINDOW_S,
            "finalizing_at": batch.ended_at if batch.status == "completed" else None,
            "completed_at": batch.ended_at if batch.status == "completed" else None,
            "failed_at": batch.ended_at if batch.status == "failed" else None,
            "expired_at": batch.ended_at if batch.status == "expired" else None,
            "cancelling_at": batch.ended_at if batch.status == "cancelled" else None,
            "cancelled_at": batch.ended_at if batch.status == "cancelled" else None,
            "request_counts": {
                "total": len(batch.lines),
                "completed": done,
                "failed": len(batch.results) - done,
            },
            "metadata": batch.metadata,
        }


def _rfc3339(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def _anthropic_view(batch: _Batch, host: str) -> dict[str, Any]:
    counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    if not batch.ended:
        counts["processing"] = len(batch.lines)
    for result in batch.results.values():
        if isinstance(result, str):
            counts["canceled" if result == "cancelled" else "expired"] += 1
        else:
            counts["succeeded" if result[0] == 200 else "errored"] += 1
    return {
        "id": batch.id,
        "type": "message_batch",
        "processing_status": batch.status,
        "request_counts": counts,
        "ended_at": _rfc3339(batch.ended_at),
        "created_at": _rfc3339(batch.created),
        "expires_at": _rfc3339(batch.created + _WINDOW_S),
        "cancel_initiated_at": _rfc3339(batch.created) if batch.cancelling else None,
        "archived_at": None,
        "results_url": f"http://{host}/v1/messages/batches/{batch.id}/results" if batch.ended else None,
    }


def _anthropic_results(batch: _Batch) -> bytes:
    rows = []
    for custom_id, result in batch.results.items():
        if isinstance(result, str):
            rows.append(
                {
                    "custom_id": custom_id,
                    "result": {"type": "canceled" if result == "cancelled" else "expired"},
                }
            )
        elif result[0] == 200:
            rows.append({"custom_id": custom_id, "result": {"type": "succeeded", "message": result[1]}})
        else:
            rows.append({"custom_id": custom_id, "result": {"type": "errored", "error": result[1]}})
    return b"".join(dumps(r) + b"\n" for r in rows)


def _file_json(file: _File) -> dict[str, Any]:
    return {
        "id": file.id,
        "object": "file",
        "bytes": len(file.data),
        "created_at": file.created,
        "filename": file.filename,
        "purpose": file.purpose,
        "status": "processed",
        "expires_at": None,
        "status_details": None,
    }


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise BatchError(400, f"the request body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BatchError(400, "the request body must be a JSON object")
    return body


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The parts of a ``multipart/form-data`` body: name -> (filename, bytes)."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise BatchError(
            400, f"a file upload must be multipart/form-data, got {content_type or 'no content type'!r}"
        )
    message = BytesParser(policy=policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + raw
    )
    parts: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        raise BatchError(400, "the multipart body could not be read")
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            parts[name] = (part.get_filename(), payload)
    return parts


def _read_jsonl(data: bytes, endpoint: str) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
    """The requests of an OpenAI batch input file, and its validation errors (as the batch reports them)."""
    lines: list[tuple[str, dict[str, Any]]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    models: set[str] = set()

    def error(n: int, code: str, message: str) -> None:
        if len(errors) < 100:
            errors.append({"code": code, "message": message, "param": None, "line": n})

    content = data.decode("utf-8", "replace")
    content = content[:-1] if content.endswith("\n") else content
    for n, text in enumerate(content.split("\n"), start=1):  # JSONL lines end at \n only (not U+2028...)
        text = text.removesuffix("\r")
        if not text.strip():
            error(n, "invalid_json_line", "blank lines are not allowed")
            continue
        try:
            line = json.loads(text)
        except ValueError:
            error(n, "invalid_json_line", "this line is not valid JSON")
            continue
        if not isinstance(line, dict):
            error(n, "invalid_json_line", "each line must be a JSON object")
            continue
        custom_id, body = line.get("custom_id"), line.get("body")
        if not isinstance(custom_id, str) or not custom_id:
            error(n, "missing_required_parameter", "custom_id is required")
        elif custom_id in seen:
            error(n, "duplicate_custom_id", f"the custom_id {custom_id!r} appears more than once")
        elif line.get("method") != "POST":
            error(n, "invalid_method", "method must be 'POST'")
        elif line.get("url") != endpoint:
            error(n, "mismatched_endpoint", f"url must be the batch's endpoint {endpoint!r}")
        elif not isinstance(body, dict):
            error(n, "missing_required_parameter", "body must be a JSON object")
        else:
            seen.add(custom_id)
            models.add(str(body.get("model")))
            lines.append((custom_id, body))
    if not lines and not errors:
        error(0, "empty_file", "the input file has no requests")
    if len(models) > 1:
        error(0, "mismatched_model", f"every request of a batch must use one model, got {sorted(models)}")
    if len(lines) > _MAX_LINES:
        error(0, "too_many_requests", f"at most {_MAX_LINES} requests per batch, got {len(lines)}")
    return lines, errors
