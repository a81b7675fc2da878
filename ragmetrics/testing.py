"""A fake LLM provider on a real loopback socket, for tests, benchmarks and users' own CI.

:class:`FakeLLMServer` owns a threaded HTTP server on ``127.0.0.1`` (port 0, a background daemon
thread) that the real ``openai`` and ``anthropic`` SDKs, and instructor on top of them, talk to over
real HTTP through ``base_url``. It speaks OpenAI Chat Completions (``/v1/chat/completions``),
Anthropic Messages (``/v1/messages``), OpenAI embeddings (``/v1/embeddings``) and model listings
(``GET /v1/models``); the wire formats live in :mod:`ragmetrics._fake_wire`.

What answers a request, first match wins:

1. a rule added with :meth:`FakeLLMServer.on` whose predicate matches it;
2. the next reply queued with :meth:`FakeLLMServer.enqueue` (chat and messages requests only);
3. a random fault drawn from :meth:`FakeLLMServer.faults`, when set (POST requests only);
4. the default answer: ragmetrics' own prompts are answered by the offline judge. The response
   schema's name (tool, function or ``json_schema`` name, or the schema's title in JSON modes) names the
   task (``ClaimExtraction`` -> ``claims.extract``), the variables are read back from the rendered user
   message, and ``ragmetrics.judge.offline.answer(task, variables)`` gives the JSON. A schema with no
   task and no script gets HTTP 400. Embeddings are hashed bags of words, deterministic and normalised.

Token usage is estimated as ``ceil(characters / 4)``, since no tokenizer files can be downloaded:
prompt tokens over the message texts plus the tool or ``response_format`` JSON schema (providers bill
the schema as prompt tokens), completion tokens over the returned JSON or content.

Example::

    with FakeLLMServer() as srv:
        srv.enqueue(FakeReply(status=429, retry_after=0), FakeReply(json={"claims": [], ...}))
        client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="test")
        ...
        assert srv.calls.total() == 2

In pytest, the ``fake_llm_server`` fixture gives one server per test run, reset before each test;
import it into a ``conftest.py`` (``from ragmetrics.testing import fake_llm_server``).
"""

from __future__ import annotations

import html
import json
import random
import threading
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType, TracebackType
from typing import Any, Literal

from pydantic import BaseModel

from ragmetrics import _fake_wire as wire
from ragmetrics.errors import ConfigError, MissingDependencyError
from ragmetrics.metrics._schemas import ClaimExtraction, ClaimVerification
from ragmetrics.metrics._rubric_schemas import EvaluationSteps, GEvalGrade, JudgeRating, RubricGrade
from ragmetrics.prompting import parse_blocks, parse_numbered_blocks

try:  # the fixture is optional: importing this module must not need pytest
    import pytest
except ImportError:  # pragma: no cover - exercised only without pytest installed
    pytest = None  # type: ignore[assignment]

__all__ = ["FakeLLMServer", "FakeReply", "FakeRequest", "FakeRule", "fake_llm_server"]

Endpoint = Literal["chat", "messages", "embeddings", "models"]
Source = Literal["rule", "queue", "fault", "default"]
Answerer = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]

_ENDPOINTS: Mapping[tuple[str, str], Endpoint] = MappingProxyType(
    {
        ("POST", "/v1/chat/completions"): "chat",
        ("POST", "/v1/messages"): "messages",
        ("POST", "/v1/embeddings"): "embeddings",
        ("GET", "/v1/models"): "models",
    }
)
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})
_REDACTED = "[redacted]"
_POLL = 0.05  # seconds between checks of the serve loop for a stop request


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeReply:
    """How the fake server answers one request; the fields combine.

    With no ``json`` and no ``content`` the default answer is sent (so ``FakeReply(delay=1)`` is the
    default answer, one second late). For embeddings only ``status``, ``headers``, ``retry_after``,
    ``delay``, ``hang``, ``drop`` and ``malformed`` apply.

    Attributes:
        json: The structured answer (a JSON-able value or a pydantic model): tool arguments, a
            ``tool_use`` input, or the JSON content, as the request's mode expects.
        content: Raw message text, sent as the content whatever the mode (e.g. prose, no tool call).
        status: HTTP status; 400 and above sends a provider-shaped error body.
        message: The error message for an error status.
        headers: Extra response headers.
        retry_after: Seconds for a ``Retry-After`` header.
        delay: Seconds to wait before answering (added to the server's latency).
        malformed: Send syntactically broken JSON where the answer goes (for Anthropic tools: a text
            block instead of a ``tool_use`` block); for embeddings, a broken body.
        invalid: Send well-formed JSON that fails the schema (``{}``).
        truncate: Send the answer cut in half with ``finish_reason="length"`` (OpenAI) or
            ``stop_reason="max_tokens"`` (Anthropic).
        hang: Never answer; the request waits until the client gives up or the server stops.
        drop: Close the connection without a response.
    """

    json: Any = None
    content: str | None = None
    status: int = 200
    message: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: float | None = None
    delay: float = 0.0
    malformed: bool = False
    invalid: bool = False
    truncate: bool = False
    hang: bool = False
    drop: bool = False

    def __post_init__(self) -> None:
        if self.json is not None and self.content is not None:
            raise ConfigError("FakeReply takes json or content, not both")
        if not 200 <= self.status <= 599:
            raise ConfigError(f"FakeReply status must be an HTTP status in 200..599, got {self.status}")
        if self.delay < 0:
            raise ConfigError(f"FakeReply delay must be >= 0 seconds, got {self.delay}")
        if self.hang and self.drop:
            raise ConfigError("FakeReply cannot both hang and drop")
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeRequest:
    """One request the fake server received, as rule predicates and ``requests`` see it.

    API key header values are never stored: ``headers`` holds ``[redacted]`` in their place and
    ``has_api_key`` says whether one was sent.
    """

    index: int
    """0-based arrival number since the last reset."""
    endpoint: Endpoint
    """``chat`` (OpenAI), ``messages`` (Anthropic), ``embeddings`` or ``models``."""
    method: str
    """``GET`` or ``POST``."""
    path: str
    """The URL path, e.g. ``/v1/chat/completions``."""
    headers: Mapping[str, str]
    """Request headers, lower-cased names, key values redacted."""
    has_api_key: bool
    """Whether an ``Authorization`` or ``x-api-key`` header was sent."""
    body: Mapping[str, Any]
    """The JSON body (empty for GET)."""
    model: str | None = None
    """The requested model."""
    mode: str | None = None
    """How structured output was asked for: ``tools``, ``functions``, ``json_schema``,
    ``json_object`` or ``text``."""
    schema: str | None = None
    """The response schema's name (``ClaimExtraction``)."""
    task: str | None = None
    """The ragmetrics task the schema stands for (``claims.extract``), if known."""
    variables: Mapping[str, Any] | None = None
    """The task's variables read back from the prompt, if the task is known."""
    prompt: str = ""
    """The user messages' text, joined by blank lines (embeddings: the inputs)."""
    prompt_tokens: int = 0
    """Estimated prompt tokens."""
    source: Source = "default"
    """What answered it: a ``rule``, the ``queue``, a random ``fault`` or the ``default``."""
    reply: FakeReply | None = None
    """The scripted or fault reply used (None for the default answer)."""


class FakeRule:
    """A scripted rule added by :meth:`FakeLLMServer.on`; read ``hits``, or ``cancel()`` it."""

    __slots__ = ("_match", "_reply", "_times", "hits")

    def __init__(
        self,
        match: Callable[[FakeRequest], bool],
        reply: FakeReply | Callable[[FakeRequest], FakeReply],
        times: int | None,
    ) -> None:
        self._match = match
        self._reply = reply
        self._times = times
        self.hits = 0
        """How many requests this rule answered."""

    @property
    def active(self) -> bool:
        """Whether the rule still answers requests."""
        return self._times is None or self.hits < self._times

    def cancel(self) -> None:
        """Stop answering requests with this rule."""
        self._times = self.hits


@dataclass(frozen=True, slots=True)
class _Task:
    name: str
    """The task name (``claims.extract``)."""
    read: Callable[[Sequence[str]], dict[str, Any] | None]
    """Reads the task's variables back from the user messages (None if they are not there)."""
    model: type[BaseModel]
    """The response model; its field names recognise a schema sent without a name or title."""


def _block_value(text: str | None) -> str | None:
    """A leaf block's raw value: unescaped, and None for the ``(none)`` that ``render`` writes for None.

    ``parse_blocks`` returns bodies as rendered (escaped), so they are unescaped here.
    """
    if text is None:
        return None
    text = html.unescape(text)
    return None if text == "(none)" else text


def _extract_variables(user_texts: Sequence[str]) -> dict[str, Any] | None:
    for text in user_texts:
        blocks = parse_blocks(text)
        if "answer" in blocks:
            return {
                "question": _block_value(blocks.get("question")),
                "answer": _block_value(blocks["answer"]) or "",
            }
    return None


def _verify_variables(user_texts: Sequence[str]) -> dict[str, Any] | None:
    for text in user_texts:
        if "<claims>" in text:
            return {
                "claims": parse_numbered_blocks(text, "claim"),
                "contexts": parse_numbered_blocks(text, "context"),
            }
    return None


def _blocks_reader(**names: str) -> Callable[[Sequence[str]], dict[str, Any] | None]:
    """Reads variables from leaf blocks: ``variable=block tag``; the first block must be present."""
    first = next(iter(names.values()))

    def read(user_texts: Sequence[str]) -> dict[str, Any] | None:
        for text in user_texts:
            blocks = parse_blocks(text)
            if first in blocks:
                return {var: _block_value(blocks.get(tag)) or "" for var, tag in names.items()}
        return None

    return read


def _steps_reader(user_texts: Sequence[str]) -> dict[str, Any] | None:
    found = _blocks_reader(criteria="criteria", steps="steps", input="input", output="output")(user_texts)
    if found is not None:
        found["steps"] = [s for s in found["steps"].splitlines() if s.strip()]
    return found


_TASKS: Mapping[str, _Task] = MappingProxyType(
    {
        task.model.__name__: task
        for task in (
            _Task("claims.extract", _extract_variables, ClaimExtraction),
            _Task("claims.verify", _verify_variables, ClaimVerification),
            _Task("llm_judge.grade", _blocks_reader(prediction="response", input="input", reference="reference"),
                  JudgeRating),
            _Task("llm_rubric.grade", _blocks_reader(rubric="rubric", input="input", output="output"), RubricGrade),
            _Task("g_eval.steps", _blocks_reader(criteria="criteria"), EvaluationSteps),
            _Task("g_eval.grade", _steps_reader, GEvalGrade),
        )
    }
)
"""Response schema name -> the ragmetrics task and how to read its variables back from the prompt."""


def _task_for(call: wire.Call) -> _Task | None:
    """The task a request's response schema stands for: by name, else by its field names."""
    if call.schema is not None:
        return _TASKS.get(call.schema)
    if call.fields:
        for task in _TASKS.values():
            if call.fields == frozenset(task.model.model_fields):
                return task
    return None


def _offline_answer(task: str, variables: Mapping[str, Any]) -> Mapping[str, Any]:
    from ragmetrics.judge import offline  # lazy: written in parallel, and heavier than this module

    return offline.answer(task, variables)


class _NoAnswerError(Exception):
    """No default answer exists for a request; the message says why (sent as HTTP 400)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Faults:
    cumulative: tuple[tuple[float, FakeReply], ...]


class FakeLLMServer:
    """A fake OpenAI/Anthropic provider on ``127.0.0.1`` for tests and benchmarks.

    Thread-safe; use it as a context manager or call :meth:`start` and :meth:`stop` (both
    idempotent). See the module docstring for how requests are answered.

    Args:
        host: The interface to bind.
        port: The port; 0 picks a free one.
        seed: Seeds the random latency and faults, so a run is reproducible.
        embedding_dim: Dimension of the embeddings (a request's ``dimensions`` overrides it).
        models: Model names listed by ``GET /v1/models``.
        answer: The default answerer ``(task, variables) -> JSON object``; by default
            ``ragmetrics.judge.offline.answer``.

    Raises:
        ConfigError: ``embedding_dim`` is not positive.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        seed: int = 0,
        embedding_dim: int = 256,
        models: Sequence[str] = ("fake-model", "fake-embedding"),
        answer: Answerer | None = None,
    ) -> None:
        if embedding_dim < 1:
            raise ConfigError(f"embedding_dim must be >= 1, got {embedding_dim}")
        self._address = (host, port)
        self._seed = seed
        self.embedding_dim = embedding_dim
        self._models = tuple(models)
        self._answer: Answerer = answer or _offline_answer
        self._lock = threading.RLock()  # reentrant: rule predicates and reply functions may read the server
        self._httpd: wire.LoopbackServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._clear()

    def _clear(self) -> None:
        self._queue: deque[FakeReply] = deque()
        self._rules: list[FakeRule] = []
        self._faults: _Faults | None = None
        self._fault_rng = random.Random(self._seed)
        self._latency: float | tuple[float, float] = 0.0
        self._latency_rng = random.Random(self._seed)
        self._requests: list[FakeRequest] = []
        self._calls: Counter[str] = Counter()
        self._prompt_tokens = 0
        self._completion_tokens = 0

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        """Start serving in a background thread (no-op if already running); returns ``self``."""
        with self._lock:
            if self._httpd is not None:
                return self
            self._stopping = threading.Event()
            self._httpd = wire.LoopbackServer(self._address, self._serve)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": _POLL},
                name="FakeLLMServer",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every connection, hanging requests included (no-op if stopped)."""
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return self._httpd is not None

    @property
    def port(self) -> int:
        """The bound port.

        Raises:
            ConfigError: The server is not running.
        """
        httpd = self._httpd
        if httpd is None:
            raise ConfigError("the FakeLLMServer is not running: call start() or use it in a with block")
        return int(httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The ``base_url`` for the OpenAI SDK: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The ``base_url`` for the Anthropic SDK: ``http://127.0.0.1:PORT``."""
        return self.url

    # -- scripting -------------------------------------------------------------------------------

    def enqueue(self, *replies: FakeReply) -> None:
        """Queue replies for the next chat or messages requests, first in first out."""
        for reply in replies:
            if not isinstance(reply, FakeReply):
                raise ConfigError(f"enqueue takes FakeReply values, got {type(reply).__name__}")
        with self._lock:
            self._queue.extend(replies)

    def on(
        self,
        match: str | Callable[[FakeRequest], bool],
        reply: FakeReply | Callable[[FakeRequest], FakeReply],
        *,
        times: int | None = None,
    ) -> FakeRule:
        """Answer the requests that ``match`` with ``reply``; rules are tried in the order added.

        Args:
            match: A predicate over :class:`FakeRequest`, or a string naming a task
                (``claims.verify``), a response schema (``ClaimVerification``) or an endpoint
                (``embeddings``).
            reply: The reply, or a function building it from the request.
            times: Answer at most this many requests (None: no limit).

        Returns:
            The rule, whose ``hits`` count its answers.
        """
        if times is not None and times < 1:
            raise ConfigError(f"times must be >= 1 or None, got {times}")
        if isinstance(match, str):
            name = match

            def predicate(req: FakeRequest) -> bool:
                return name in (req.task, req.schema, req.endpoint)

        else:
            predicate = match
        rule = FakeRule(predicate, reply, times)
        with self._lock:
            self._rules.append(rule)
        return rule

    def faults(
        self,
        *,
        rate_429: float = 0.0,
        rate_500: float = 0.0,
        rate_503: float = 0.0,
        malformed: float = 0.0,
        hang: float = 0.0,
        drop: float = 0.0,
        retry_after: float | None = 0,
        seed: int | None = None,
    ) -> None:
        """Inject random faults into POST requests that no rule or queued reply answers.

        Each such request draws one number from a generator seeded with ``seed``, so the n-th
        unscripted request gets the same fault on every run. Calling it again replaces the rates;
        calling it with no rates turns faults off.

        Args:
            rate_429: Share answered 429 (with ``Retry-After: retry_after`` unless it is None).
            rate_500: Share answered 500.
            rate_503: Share answered 503 (with ``Retry-After`` as for 429).
            malformed: Share answered with broken JSON.
            hang: Share never answered (until the client times out).
            drop: Share whose connection is closed without a response.
            retry_after: Seconds in the ``Retry-After`` header of 429 and 503 replies.
            seed: Seed of the fault draws (None: the server's seed).

        Raises:
            ConfigError: A rate is outside [0, 1] or the rates add up to more than 1.
        """
        note = "fault injected by FakeLLMServer"
        kinds = (
            (
                rate_429,
                FakeReply(status=429, retry_after=retry_after, message=f"Rate limit reached ({note})"),
            ),
            (rate_500, FakeReply(status=500, message=f"Internal server error ({note})")),
            (
                rate_503,
                FakeReply(status=503, retry_after=retry_after, message=f"Service unavailable ({note})"),
            ),
            (malformed, FakeReply(malformed=True)),
            (hang, FakeReply(hang=True)),
            (drop, FakeReply(drop=True)),
        )
        total = 0.0
        cumulative = []
        for rate, reply in kinds:
            if not 0.0 <= rate <= 1.0:
                raise ConfigError(f"fault rates must lie in [0, 1], got {rate}")
            if rate:
                total += rate
                cumulative.append((total, reply))
        if total > 1.0 + 1e-9:
            raise ConfigError(f"fault rates add up to {total:.3f}, more than 1")
        with self._lock:
            self._faults = _Faults(cumulative=tuple(cumulative)) if cumulative else None
            self._fault_rng = random.Random(self._seed if seed is None else seed)

    @property
    def latency(self) -> float | tuple[float, float]:
        """Seconds added to every request: a number, or ``(min, max)`` drawn uniformly (seeded)."""
        return self._latency

    @latency.setter
    def latency(self, value: float | tuple[float, float]) -> None:
        try:
            low, high = (value, value) if isinstance(value, int | float) else value
            valid = 0 <= low <= high
        except (TypeError, ValueError):
            valid = False
        if not valid:
            raise ConfigError(
                f"latency must be seconds >= 0 or a (min, max) pair with min <= max, got {value}"
            )
        with self._lock:
            self._latency = value

    def reset(self) -> None:
        """Forget scripts, rules, faults, latency, recorded requests and counters."""
        with self._lock:
            self._clear()

    # -- introspection ---------------------------------------------------------------------------

    @property
    def requests(self) -> list[FakeRequest]:
        """The requests received since the last reset, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def calls(self) -> Counter[str]:
        """POST requests received per task (or schema name, or endpoint); ``calls.total()`` sums them."""
        with self._lock:
            return Counter(self._calls)

    @property
    def prompt_tokens(self) -> int:
        """Estimated prompt tokens of every successful reply since the last reset."""
        return self._prompt_tokens

    @property
    def completion_tokens(self) -> int:
        """Estimated completion tokens of every successful reply since the last reset."""
        return self._completion_tokens

    @property
    def pending(self) -> int:
        """Queued replies not used yet."""
        return len(self._queue)

    # -- serving (runs on handler threads) -------------------------------------------------------

    def _serve(self, handler: wire.Handler, method: str) -> None:
        endpoint: str = "chat"
        try:
            raw = handler.read_body()
            path = handler.path.split("?", 1)[0]
            found = _ENDPOINTS.get((method, path))
            if found is None:
                endpoint = "messages" if "anthropic-version" in handler.headers else "chat"
                known = ", ".join(f"{m} {p}" for m, p in _ENDPOINTS)
                handler.send_error_body(
                    endpoint, 404, f"FakeLLMServer has no {method} {path}; it serves {known}"
                )
                return
            endpoint = found
            try:
                body = json.loads(raw) if raw else {}
            except ValueError as exc:
                handler.send_error_body(endpoint, 400, f"the request body is not JSON: {exc}")
                return
            if not isinstance(body, dict):
                handler.send_error_body(endpoint, 400, "the request body must be a JSON object")
                return
            self._exchange(handler, found, method, path, body)
        except OSError:
            raise  # the client went away; the server drops the connection quietly
        except Exception as exc:  # a bug, or a raising predicate: tell the client, keep serving
            traceback.print_exc()
            try:
                handler.send_error_body(endpoint, 500, f"FakeLLMServer failed: {exc!r}")
            except OSError:
                pass

    def _read_request(
        self, handler: wire.Handler, endpoint: Endpoint, method: str, path: str, body: dict[str, Any]
    ) -> tuple[FakeRequest, wire.Call | None]:
        """Build the request record (API key values redacted) and, for chat/messages, what it asks."""
        headers = {}
        has_key = False
        for name, value in handler.headers.items():
            name = name.lower()
            if name in _SECRET_HEADERS:
                has_key = True
                value = _REDACTED
            headers[name] = value
        call: wire.Call | None = None
        task: _Task | None = None
        if endpoint in ("chat", "messages"):
            call = wire.read_call(endpoint, body)
            task = _task_for(call)
            texts = list(call.user_texts)
            prompt_tokens = wire.estimate_tokens(call.prompt_chars)
        else:
            texts = wire.texts_of(body.get("input"))
            prompt_tokens = wire.estimate_tokens(sum(map(len, texts)))
        request = FakeRequest(
            index=0,
            endpoint=endpoint,
            method=method,
            path=path,
            headers=headers,
            has_api_key=has_key,
            body=body,
            model=body.get("model"),
            mode=call.mode if call else None,
            schema=(task.model.__name__ if task else call.schema) if call else None,
            task=task.name if task else None,
            variables=task.read(call.user_texts) if task and call else None,
            prompt="\n\n".join(texts),
            prompt_tokens=prompt_tokens,
        )
        return request, call

    def _exchange(
        self, handler: wire.Handler, endpoint: Endpoint, method: str, path: str, body: dict[str, Any]
    ) -> None:
        request, call = self._read_request(handler, endpoint, method, path, body)
        request, reply, wait = self._admit(request)
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
        extra = dict(reply.headers)
        if reply.retry_after is not None:
            extra["Retry-After"] = f"{reply.retry_after:g}"
        if reply.status >= 400:
            message = reply.message or f"HTTP {reply.status} scripted by FakeLLMServer"
            handler.send_error_body(endpoint, reply.status, message, extra)
            return
        if endpoint == "models":
            handler.send(
                reply.status,
                wire.dumps(wire.models_body(self._models, anthropic="anthropic-version" in request.headers)),
            )
            return
        if endpoint == "embeddings":
            self._send_embeddings(handler, request, reply, extra)
            return
        assert call is not None
        if body.get("stream"):
            handler.send_error_body(endpoint, 400, "FakeLLMServer does not stream; send stream=false")
            return
        try:
            value, text, raw_content = self._answer_text(request, reply)
        except _NoAnswerError as exc:
            handler.send_error_body(endpoint, 400, str(exc))
            return
        completion_tokens = wire.estimate_tokens(len(text))
        with self._lock:
            self._prompt_tokens += request.prompt_tokens
            self._completion_tokens += completion_tokens
        payload = wire.completion_body(
            endpoint,
            call=call,
            model=request.model or "fake-model",
            text=text,
            value=value,
            raw_content=raw_content,
            truncated=reply.truncate,
            prompt_tokens=request.prompt_tokens,
            completion_tokens=completion_tokens,
            seq=request.index,
        )
        handler.send(reply.status, wire.dumps(payload), extra)

    def _admit(self, request: FakeRequest) -> tuple[FakeRequest, FakeReply, float]:
        """Pick the reply and the wait for a request, and record it (one lock hold)."""
        chosen: FakeReply | Callable[[FakeRequest], FakeReply] | None = None
        source: Source = "default"
        with self._lock:
            request = replace(request, index=len(self._requests))
            for rule in self._rules:
                if rule.active and rule._match(request):
                    rule.hits += 1
                    chosen, source = rule._reply, "rule"
                    break
            else:
                if self._queue and request.endpoint in ("chat", "messages"):
                    chosen, source = self._queue.popleft(), "queue"
                elif self._faults is not None and request.method == "POST":
                    draw = self._fault_rng.random()
                    for bound, fault in self._faults.cumulative:
                        if draw < bound:
                            chosen, source = fault, "fault"
                            break
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
            self._requests.append(request)
        return request, reply, latency + reply.delay

    def _answer_text(self, request: FakeRequest, reply: FakeReply) -> tuple[Any, str, bool]:
        """The answer as (JSON value or None, its text, whether it is raw content)."""
        if reply.content is not None:
            text = reply.content
            return None, (text[: len(text) // 2] if reply.truncate else text), True
        if reply.malformed:
            base = json.dumps(reply.json, ensure_ascii=False) if reply.json is not None else '{"claims": ['
            return None, wire.broken_json(base), False
        if reply.invalid:
            value: Any = {}
        elif reply.json is not None:
            value = reply.json.model_dump(mode="json") if hasattr(reply.json, "model_dump") else reply.json
        else:
            value = self._default_answer(request)
        text = json.dumps(value, ensure_ascii=False)
        if reply.truncate:
            text = text[: max(1, len(text) // 2)]
        return value, text, False

    def _default_answer(self, request: FakeRequest) -> Any:
        if request.schema is None:
            raise _NoAnswerError(
                "FakeLLMServer has no default answer for a request without a response schema (no tools, "
                "no response_format, no JSON schema in the prompt); script one with enqueue(...) or on(...)"
            )
        if request.task is None:
            known = ", ".join(sorted(_TASKS))
            raise _NoAnswerError(
                f"FakeLLMServer has no default answer for response schema {request.schema!r} "
                f"(it answers {known}); script one with enqueue(FakeReply(json=...)) or on(...)"
            )
        if request.variables is None:
            raise _NoAnswerError(
                f"FakeLLMServer could not read the {request.task} variables back from the prompt; "
                "was it rendered from the package's prompt files?"
            )
        try:
            return dict(self._answer(request.task, request.variables))
        except ImportError as exc:
            raise _NoAnswerError(f"the default answerer is not available ({exc}); script a reply") from exc
        except Exception as exc:
            raise _NoAnswerError(f"the default answer for {request.task} failed: {exc!r}") from exc

    def _send_embeddings(
        self, handler: wire.Handler, request: FakeRequest, reply: FakeReply, extra: Mapping[str, str]
    ) -> None:
        if reply.malformed:
            handler.send(reply.status, wire.BROKEN_EMBEDDINGS, extra)
            return
        texts = wire.texts_of(request.body.get("input"))
        dim = request.body.get("dimensions") or self.embedding_dim
        if not isinstance(dim, int) or dim < 1:
            handler.send_error_body("embeddings", 400, f"dimensions must be a positive integer, got {dim!r}")
            return
        payload, tokens = wire.embeddings_body(
            texts,
            model=request.model or "fake-embedding",
            dim=dim,
            encoding=request.body.get("encoding_format") or "float",
        )
        with self._lock:
            self._prompt_tokens += tokens
        handler.send(reply.status, wire.dumps(payload), extra)


if pytest is not None:
    _SERVER_KEY = pytest.StashKey[FakeLLMServer]()

    @pytest.fixture
    def fake_llm_server(request: pytest.FixtureRequest) -> Iterator[FakeLLMServer]:
        """A running :class:`FakeLLMServer`, shared by the test run and reset around each test.

        Make it available with ``from ragmetrics.testing import fake_llm_server`` in a ``conftest.py``.
        """
        server = request.config.stash.get(_SERVER_KEY, None)
        if server is None:
            server = FakeLLMServer().start()
            request.config.stash[_SERVER_KEY] = server
            request.config.add_cleanup(server.stop)
        server.reset()
        yield server
        server.reset()

else:  # pragma: no cover - exercised only without pytest installed

    def fake_llm_server() -> None:  # type: ignore[misc]
        """The pytest fixture; needs pytest."""
        raise MissingDependencyError("pytest", "test", "the fake_llm_server fixture")
