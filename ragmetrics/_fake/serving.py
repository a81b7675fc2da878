"""How the fake LLM server answers one request: read it, pick the reply, record it, send the bytes.

:class:`Serving` is the request-answering half of :class:`ragmetrics.testing.FakeLLMServer`, run on
the connection threads of the loopback server; the public class holds the state it reads (scripts,
rules, faults, latency, counters, all under one reentrant lock) and the methods that set it.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ragmetrics._fake.batches import KNOWN as BATCH_PATHS
from ragmetrics._fake.batches import BatchError, BatchRoute, BatchStore, batch_route
from ragmetrics._fake.dialects import Rejection, adapt, reject
from ragmetrics._fake.embeddings import BROKEN_EMBEDDINGS, embeddings_body, texts_of
from ragmetrics._fake.placeholder import placeholder
from ragmetrics._fake.providers import completion_body, error_body, models_body, read_call
from ragmetrics._fake.records import Endpoint, FakeReply, FakeRequest, FakeRule, Faults, Source
from ragmetrics._fake.routes import ENDPOINTS, KNOWN, route
from ragmetrics._fake.schema_fill import SchemaFillError, fill, prompt_words
from ragmetrics._fake.tasks import TASKS, Answerer, Task, task_for
from ragmetrics._fake.transport import Handler
from ragmetrics._fake.wire import Answer, Call, broken_json, dumps
from ragmetrics.errors import ConfigError
from ragmetrics.text import CHARS_PER_TOKEN, tokens_for_chars

__all__ = ["ENDPOINTS", "NoAnswerError", "Serving"]

PROBE_HEADER = "x-ragmetrics-probe"
"""The header of ragmetrics' server-kind probe: such a request is recorded in ``probes``, not ``requests``."""
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})
_REDACTED = "[redacted]"


class NoAnswerError(Exception):
    """No default answer exists for a request; the message says why (sent as HTTP 400)."""


class Serving:
    """Answers requests from the state of a fake server (a base of ``FakeLLMServer``, not used alone)."""

    embedding_dim: int
    _models: Sequence[str]
    _answer: Answerer
    _by_schema: bool
    _placeholder: bool
    _dialect: str
    _seed: int
    _lock: threading.RLock
    _stopping: threading.Event
    _queue: deque[FakeReply]
    _rules: list[FakeRule]
    _faults: Faults | None
    _fault_rng: random.Random
    _latency: float | tuple[float, float]
    _latency_rng: random.Random
    _requests: list[FakeRequest]
    _probes: list[FakeRequest]
    _calls: Counter[str]
    _prompt_tokens: int
    _completion_tokens: int
    _batches: BatchStore

    def _serve(self, handler: Handler, method: str) -> None:
        endpoint: str = "chat"
        try:
            raw = handler.read_body()
            path = handler.path.split("?", 1)[0]
            batch = batch_route(method, path)
            if batch is not None:
                endpoint = "messages" if batch.provider == "anthropic" else "chat"
                self._serve_batch(handler, method, path, batch, raw)
                return
            found = route(method, handler.path)
            if found is None:
                endpoint = "messages" if "anthropic-version" in handler.headers else "chat"
                handler.send_error_body(
                    endpoint, 404, f"FakeLLMServer has no {method} {path}; it serves {KNOWN}, {BATCH_PATHS}"
                )
                return
            endpoint = found.endpoint
            if found.problem is not None:
                handler.send_error_body(endpoint, 404, found.problem)
                return
            try:
                body = json.loads(raw) if raw else {}
            except ValueError as exc:
                handler.send_error_body(endpoint, 400, f"the request body is not JSON: {exc}")
                return
            if not isinstance(body, dict):
                handler.send_error_body(endpoint, 400, "the request body must be a JSON object")
                return
            self._exchange(handler, endpoint, method, path, body, found.model)
        except OSError:
            raise  # the client went away; the server drops the connection quietly
        except Exception as exc:  # a bug, or a raising predicate: tell the client, keep serving
            traceback.print_exc()
            try:
                handler.send_error_body(endpoint, 500, f"FakeLLMServer failed: {exc!r}")
            except OSError:
                pass

    def _serve_batch(self, handler: Handler, method: str, path: str, found: BatchRoute, raw: bytes) -> None:
        """A batch API request: recorded (rules and faults apply), then answered by the batch store."""
        shape = "messages" if found.provider == "anthropic" else "chat"
        headers = dict(handler.headers.items())
        content_type = headers.get("Content-Type") or headers.get("content-type") or ""
        body: dict[str, Any] = {}
        if method == "POST" and content_type.startswith("application/json") and raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else {}
            except ValueError:
                body = {}
        request, _ = self._read_request(headers, found.resource, method, path, body)
        request = replace(request, batch_id=found.item if found.resource == "batches" else None)
        request, reply, wait = self._admit(request, None)
        if wait > 0 and self._stopping.wait(wait):
            handler.close_connection = True
            return
        if reply.hang:
            handler.hang(self._stopping)
            return
        if reply.drop:
            handler.drop()
            return
        extra = dict(reply.headers)
        if reply.retry_after is not None:
            extra["Retry-After"] = f"{reply.retry_after:g}"
        if reply.status >= 400:
            message = reply.message or f"HTTP {reply.status} scripted by FakeLLMServer"
            handler.send_error_body(shape, reply.status, message, extra)
            return
        lower = {k.lower(): v for k, v in headers.items()}
        try:
            status, payload, kind = self._batches.serve(found, lower, raw, self._batch_line)
        except BatchError as exc:
            handler.send_error_body(shape, exc.status, exc.message)
            return
        if status == 0:  # FakeBatchPlan(lose_creates=...): done, and the reply is lost
            handler.drop()
            return
        handler.send(status, payload, extra, content_type=kind)

    def _batch_line(
        self, endpoint: str, body: dict[str, Any], custom_id: str, batch_id: str
    ) -> tuple[int, dict[str, Any]] | None:
        return self.answer_line(
            "messages" if endpoint == "messages" else "chat", body, custom_id=custom_id, batch_id=batch_id
        )

    def _read_request(
        self,
        raw_headers: Mapping[str, str],
        endpoint: Endpoint,
        method: str,
        path: str,
        body: dict[str, Any],
        path_model: str | None = None,
    ) -> tuple[FakeRequest, Call | None]:
        """Build the request record (API key values redacted) and, for chat/messages, what it asks."""
        headers = {}
        has_key = False
        for name, value in raw_headers.items():
            name = name.lower()
            if name in _SECRET_HEADERS:
                has_key = True
                value = _REDACTED
            headers[name] = value
        call: Call | None = None
        task: Task | None = None
        if endpoint in ("chat", "messages"):
            call = adapt(self._dialect, body, read_call(endpoint, body))
            task = task_for(call)
            texts = list(call.user_texts)
            prompt_tokens = tokens_for_chars(call.prompt_chars)
        else:
            texts = texts_of(body.get("input"))
            prompt_tokens = tokens_for_chars(sum(map(len, texts)))
        request = FakeRequest(
            index=0,
            endpoint=endpoint,
            method=method,
            path=path,
            headers=headers,
            has_api_key=has_key,
            body=body,
            model=body.get("model") if isinstance(body.get("model"), str) else path_model,
            mode=call.mode if call else None,
            schema=(task.model.__name__ if task else call.schema) if call else None,
            task=task.name if task else None,
            variables=task.read(call.user_texts) if task and call else None,
            prompt="\n\n".join(texts),
            prompt_tokens=prompt_tokens,
            received_at=time.monotonic(),
        )
        return request, call

    def _exchange(
        self,
        handler: Handler,
        endpoint: Endpoint,
        method: str,
        path: str,
        body: dict[str, Any],
        path_model: str | None = None,
    ) -> None:
        request, call = self._read_request(
            dict(handler.headers.items()), endpoint, method, path, body, path_model
        )
        rejection = reject(self._dialect, endpoint, body)
        request, reply, wait = self._admit(request, rejection)
        stopping = self._stopping
        if wait > 0 and stopping.wait(wait):
            handler.close_connection = True
            return
        if reply.hang:
            handler.hang(stopping)
            return
        if reply.drop:
            handler.drop()
            return
        if reply.trickle is not None:
            handler.pace(reply.trickle, stopping)
        if rejection is not None:
            handler.send(rejection.status, dumps(rejection.body))
            return
        extra = dict(reply.headers)
        if reply.retry_after is not None:
            extra["Retry-After"] = f"{reply.retry_after:g}"
        if reply.body is not None:
            raw = reply.body.encode("utf-8") if isinstance(reply.body, str) else reply.body
            handler.send(reply.status, raw, extra)
            return
        if reply.status >= 400:
            message = reply.message or f"HTTP {reply.status} scripted by FakeLLMServer"
            handler.send_error_body(endpoint, reply.status, message, extra)
            return
        if endpoint == "models":
            handler.send(
                reply.status,
                dumps(
                    models_body(
                        self._models, anthropic="anthropic-version" in request.headers, dialect=self._dialect
                    )
                ),
            )
            return
        if endpoint == "embeddings":
            self._send_embeddings(handler, request, reply, extra)
            return
        assert call is not None
        status, payload = self._completion(endpoint, request, call, reply)
        handler.send(
            status if status >= 400 else reply.status, dumps(payload), extra if status < 400 else None
        )

    def _completion(
        self, endpoint: Endpoint, request: FakeRequest, call: Call, reply: FakeReply
    ) -> tuple[int, dict[str, Any]]:
        """The HTTP status and body answering a chat or messages request (an error body for 400)."""
        if request.body.get("stream"):
            return 400, error_body(endpoint, 400, "FakeLLMServer does not stream; send stream=false")
        try:
            value, text, raw_content = self._answer_text(request, call, reply)
        except NoAnswerError as exc:
            return 400, error_body(endpoint, 400, str(exc))
        completion_tokens = tokens_for_chars(len(text))
        llama_tool = call.mode == "tools"  # llama-cpp-python 0.3.x says "tool_calls" even when cut
        with self._lock:
            self._prompt_tokens += request.prompt_tokens
            self._completion_tokens += completion_tokens
        answer = Answer(
            call=call,
            model=request.model or "fake-model",
            text=text,
            value=value,
            raw_content=raw_content,
            truncated=reply.truncate or (reply.ramble and not (self._dialect == "llama-cpp" and llama_tool)),
            prompt_tokens=request.prompt_tokens,
            completion_tokens=completion_tokens,
            seq=request.index,
        )
        payload = completion_body(endpoint, answer)
        if reply.usage is not None:
            payload["usage"] = dict(reply.usage)
            if not reply.usage:  # an empty mapping: a server that sends no usage at all
                del payload["usage"]
        return 200, payload

    def answer_line(
        self, endpoint: Endpoint, body: dict[str, Any], *, custom_id: str, batch_id: str
    ) -> tuple[int, dict[str, Any]] | None:
        """Answer one request of a provider batch as the same request in real time would be answered.

        Rules, queued replies and faults apply as to real-time requests (without latency). Returns the
        HTTP status and body, or None when the request is left unprocessed (a ``hang`` or ``drop``
        reply: the line expires).
        """
        path = "/v1/messages" if endpoint == "messages" else "/v1/chat/completions"
        request, call = self._read_request({}, endpoint, "POST", path, body)
        request = replace(request, custom_id=custom_id, batch_id=batch_id)
        rejection = reject(self._dialect, endpoint, body)
        request, reply, _ = self._admit(request, rejection)
        if reply.hang or reply.drop:
            return None
        if rejection is not None:
            return rejection.status, dict(rejection.body)
        if reply.status >= 400:
            message = reply.message or f"HTTP {reply.status} scripted by FakeLLMServer"
            return reply.status, error_body(endpoint, reply.status, message)
        assert call is not None
        return self._completion(endpoint, request, call, reply)

    def _admit(
        self, request: FakeRequest, rejection: Rejection | None
    ) -> tuple[FakeRequest, FakeReply, float]:
        """Pick the reply and the wait for a request, and record it (one lock hold).

        A request the server's dialect rejects is answered by the rejection, whatever is scripted.
        """
        chosen: FakeReply | Callable[[FakeRequest], FakeReply] | None = None
        source: Source = "dialect"
        probe = request.headers.get(PROBE_HEADER) is not None
        with self._lock:
            request = replace(request, index=len(self._probes if probe else self._requests))
            if rejection is None:
                chosen, source = self._choose(request)
            latency = self._latency
            if isinstance(latency, tuple):
                latency = self._latency_rng.uniform(*latency)
            if request.method == "POST":
                self._calls[request.task or request.schema or request.endpoint] += 1
            if callable(chosen):
                chosen = chosen(request)
                if not isinstance(chosen, FakeReply):
                    raise ConfigError(
                        f"a rule's reply function returned {type(chosen).__name__}, not FakeReply"
                    )
            reply = chosen if chosen is not None else FakeReply()
            request = replace(request, source=source, reply=chosen)
            (self._probes if probe else self._requests).append(request)
        return request, reply, latency + reply.delay

    def _choose(
        self, request: FakeRequest
    ) -> tuple[FakeReply | Callable[[FakeRequest], FakeReply] | None, Source]:
        """The first matching rule, else the next queued reply, else a drawn fault (lock held)."""
        for rule in self._rules:
            if rule.active and rule._match(request):
                rule.hits += 1
                return rule._reply, "rule"
        if self._queue and request.endpoint in ("chat", "messages"):
            return self._queue.popleft(), "queue"
        if self._faults is not None and request.method == "POST":
            draw = self._fault_rng.random()
            for bound, fault in self._faults.cumulative:
                if draw < bound:
                    return fault, "fault"
        return None, "default"

    def _answer_text(self, request: FakeRequest, call: Call, reply: FakeReply) -> tuple[Any, str, bool]:
        """The answer as (JSON value or None, its text, whether it is raw content)."""
        if reply.ramble:
            limit = request.body.get("max_tokens")
            limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else 2048
            opening = '{"claims": [{"text": "'
            return None, (opening + "and the " * limit)[: limit * CHARS_PER_TOKEN], False
        if reply.content is not None:
            text = reply.content
            return None, (text[: len(text) // 2] if reply.truncate else text), True
        if reply.malformed:
            base = json.dumps(reply.json, ensure_ascii=False) if reply.json is not None else '{"claims": ['
            return None, broken_json(base), False
        if reply.invalid:
            value: Any = {}
        elif reply.json is not None:
            value = reply.json.model_dump(mode="json") if hasattr(reply.json, "model_dump") else reply.json
        elif self._by_schema:
            value = self._schema_answer(request, call)
        elif self._placeholder:
            value = self._placeholder_answer(call)
        else:
            value = self._default_answer(request)
        text = json.dumps(value, ensure_ascii=False)
        if reply.truncate:
            text = text[: max(1, len(text) // 2)]
        return value, text, False

    def _schema_answer(self, request: FakeRequest, call: Call) -> Any:
        """An arbitrary instance of the request's schema, strings drawn from the prompt's words.

        Seeded by the server's seed and the request's content (not its arrival order), so the same
        request gets the same instance however many requests run concurrently.
        """
        if call.json_schema is None:
            raise NoAnswerError(
                "FakeLLMServer(answer='schema') found no JSON schema in the request (no tools, no "
                "response_format schema, no JSON schema in the prompt); script a reply with "
                "enqueue(...) or on(...)"
            )
        digest = hashlib.sha256(
            f"{self._seed}\0{request.endpoint}\0".encode() + dumps(call.json_schema) + dumps(call.user_texts)
        ).digest()
        try:
            return fill(
                call.json_schema,
                words=prompt_words(call.user_texts),
                seed=int.from_bytes(digest[:8], "big"),
            )
        except SchemaFillError as exc:
            raise NoAnswerError(
                f"FakeLLMServer(answer='schema') cannot fill the request's schema: {exc}"
            ) from exc

    def _placeholder_answer(self, call: Call) -> Any:
        """The request's schema filled with fixed placeholders, as a generic mock server fills it."""
        if call.json_schema is None:
            raise NoAnswerError(
                "FakeLLMServer(answer='placeholder') found no JSON schema in the request; script a reply "
                "with enqueue(...) or on(...)"
            )
        try:
            return placeholder(call.json_schema)
        except SchemaFillError as exc:
            raise NoAnswerError(
                f"FakeLLMServer(answer='placeholder') cannot fill the request's schema: {exc}"
            ) from exc

    def _default_answer(self, request: FakeRequest) -> Any:
        if request.schema is None:
            raise NoAnswerError(
                "FakeLLMServer has no default answer for a request without a response schema (no tools, "
                "no response_format, no JSON schema in the prompt); script one with enqueue(...) or on(...)"
            )
        if request.task is None:
            known = ", ".join(sorted(TASKS))
            raise NoAnswerError(
                f"FakeLLMServer has no default answer for response schema {request.schema!r} "
                f"(it answers {known}); script one with enqueue(FakeReply(json=...)) or on(...)"
            )
        if request.variables is None:
            raise NoAnswerError(
                f"FakeLLMServer could not read the {request.task} variables back from the prompt; "
                "was it rendered from the package's prompt files?"
            )
        try:
            return dict(self._answer(request.task, request.variables))
        except ImportError as exc:
            raise NoAnswerError(f"the default answerer is not available ({exc}); script a reply") from exc
        except Exception as exc:
            raise NoAnswerError(f"the default answer for {request.task} failed: {exc!r}") from exc

    def _send_embeddings(
        self, handler: Handler, request: FakeRequest, reply: FakeReply, extra: Mapping[str, str]
    ) -> None:
        if reply.malformed:
            handler.send(reply.status, BROKEN_EMBEDDINGS, extra)
            return
        texts = texts_of(request.body.get("input"))
        dim = request.body.get("dimensions") or self.embedding_dim
        if not isinstance(dim, int) or dim < 1:
            handler.send_error_body("embeddings", 400, f"dimensions must be a positive integer, got {dim!r}")
            return
        payload, tokens = embeddings_body(
            texts,
            model=request.model or "fake-embedding",
            dim=dim,
            encoding=request.body.get("encoding_format") or "float",
        )
        with self._lock:
            self._prompt_tokens += tokens
        handler.send(reply.status, dumps(payload), extra)
