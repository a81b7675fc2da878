"""The shapes of the fake server's batch APIs: stored files and batches, what the APIs return, what they read.

:mod:`ragmetrics._fake.batches` keeps the state and answers the requests; this module holds the
records (:class:`BatchFile`, :class:`BatchRecord`, :class:`FakeBatchPlan`) and turns them into the
providers' JSON (OpenAI ``FileObject`` and ``Batch``, Anthropic ``MessageBatch`` and its results JSONL),
and reads what clients send (a multipart upload, an OpenAI batch input file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email import policy
from email.parser import BytesParser
from typing import Any, Literal

from ragmetrics._check import check_choice, check_int, check_number
from ragmetrics._fake.wire import dumps

__all__ = [
    "CUSTOM_ID",
    "MAX_LINES",
    "BatchError",
    "BatchFile",
    "BatchRecord",
    "FakeBatchPlan",
    "Outcome",
    "anthropic_results",
    "batch_view",
    "file_json",
    "json_object",
    "multipart",
    "read_jsonl",
]

Outcome = Literal["completed", "expired", "failed", "cancelled"]
_OUTCOMES = ("completed", "expired", "failed", "cancelled")
_WINDOW_S = 24 * 3600
CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""What Anthropic accepts as a ``custom_id``."""
MAX_LINES = 50_000
"""Requests per batch the fake server takes (OpenAI's limit; Anthropic's is 100,000)."""


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
        lose_creates: The next this many batch creations (``POST /v1/batches``, ``POST
            /v1/messages/batches``) are carried out, but their replies are lost: the server closes the
            connection without answering, as when a reply is lost on its way back. The batch exists
            and is listed; a client that simply retries creates another one.
        edit_line: Rewrites each line of an OpenAI batch's output and error files as it is written
            (bytes in, bytes out, no newline): damaged lines, for tests of what a client reads.
    """

    polls: int = 2
    seconds: float | None = None
    outcome: Outcome = "completed"
    lose_creates: int = 0
    edit_line: Callable[[bytes], bytes] | None = None

    def __post_init__(self) -> None:
        check_int(self.polls, "polls", "batch_plan", minimum=1)
        check_number(self.seconds, "seconds", "batch_plan", low=0, optional=True)
        check_int(self.lose_creates, "lose_creates", "batch_plan", minimum=0)
        check_choice(self.outcome, "outcome", "batch_plan", _OUTCOMES)


@dataclass(slots=True)
class BatchFile:
    """An uploaded (or output) file."""

    id: str
    filename: str
    purpose: str
    data: bytes
    created: int


@dataclass(slots=True)
class BatchRecord:
    """A batch and everything the fake server knows of it."""

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


def batch_view(batch: BatchRecord, headers: Mapping[str, str]) -> dict[str, Any]:
    """A batch as its API returns it: OpenAI's ``Batch`` or Anthropic's ``MessageBatch``."""
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


def _anthropic_view(batch: BatchRecord, host: str) -> dict[str, Any]:
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


def anthropic_results(batch: BatchRecord) -> bytes:
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


def file_json(file: BatchFile) -> dict[str, Any]:
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


def json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise BatchError(400, f"the request body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BatchError(400, "the request body must be a JSON object")
    return body


def multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
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


def read_jsonl(data: bytes, endpoint: str) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
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
    if len(lines) > MAX_LINES:
        error(0, "too_many_requests", f"at most {MAX_LINES} requests per batch, got {len(lines)}")
    return lines, errors
