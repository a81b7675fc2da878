"""The scripting values of the fake LLM server: replies, the requests it received, rules and fault tables.

:class:`FakeReply`, :class:`FakeRequest` and :class:`FakeRule` are public through
:mod:`ragmetrics.testing`; import them from there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ragmetrics._check import check_int, check_number
from ragmetrics.errors import ConfigError

__all__ = ["Endpoint", "Faults", "FakeReply", "FakeRequest", "FakeRule", "Source"]

Endpoint = Literal["chat", "messages", "embeddings", "models", "files", "batches"]
Source = Literal["rule", "queue", "fault", "default", "dialect"]


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
        body: The whole response body, sent as is with ``status`` instead of a provider reply (a
            gateway's ``{"error": ...}`` with HTTP 200, a body nested 100,000 levels deep).
        usage: Replaces the ``usage`` object of a chat or messages reply (NaN, negative or absurd
            token counts; an empty mapping omits ``usage``); the server's own token counters still
            count its estimate.
        trickle: Send the response (status line, headers and body) at this many bytes per second,
            so that no single read times out while the reply takes as long as it likes.
        ramble: Answer as a small local model that rambles: JSON whose first string never ends,
            running to the request's ``max_tokens`` (2048 when it names none) and cut there, with
            ``finish_reason="length"`` (``"tool_calls"`` for a tool call in the ``llama-cpp`` dialect,
            as llama-cpp-python 0.3.x says); the same reply to the same request, as at temperature 0.
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
    body: str | bytes | None = None
    usage: Mapping[str, Any] | None = None
    trickle: float | None = None
    ramble: bool = False

    def __post_init__(self) -> None:
        if self.json is not None and self.content is not None:
            raise ConfigError("FakeReply takes json or content, not both")
        if self.ramble and (self.json is not None or self.content is not None or self.body is not None):
            raise ConfigError("FakeReply(ramble=True) writes its own reply: give no json, content or body")
        check_int(self.status, "status", "FakeReply", minimum=200, maximum=599)
        check_number(self.delay, "delay", "FakeReply", low=0, expected="a number of seconds >= 0")
        if self.hang and self.drop:
            raise ConfigError("FakeReply cannot both hang and drop")
        if self.body is not None and (self.json is not None or self.content is not None):
            raise ConfigError("FakeReply takes body, or json/content, not both")
        check_number(self.trickle, "trickle", "FakeReply", low=0, low_open=True, optional=True)
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
    """``chat`` (OpenAI), ``messages`` (Anthropic), ``embeddings``, ``models``, or the batch APIs'
    ``files`` (OpenAI uploads and downloads) and ``batches`` (OpenAI batches, Anthropic message batches)."""
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
    """What answered it: a ``rule``, the ``queue``, a random ``fault``, the ``default``, or the
    server's ``dialect`` (a request that dialect rejects, such as llama-cpp-python's HTTP error for
    ``response_format`` type ``json_schema``)."""
    reply: FakeReply | None = None
    """The scripted or fault reply used (None for the default answer)."""
    batch_id: str | None = None
    """For a request that arrived inside a provider batch: the batch's id (None: a real-time request)."""
    custom_id: str | None = None
    """For a request inside a provider batch: its ``custom_id``."""
    received_at: float = 0.0
    """``time.monotonic()`` in the server's process when the request arrived (observed request rates)."""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Faults:
    """The fault replies of ``FakeLLMServer.faults``, each with its cumulative probability bound."""

    cumulative: tuple[tuple[float, FakeReply], ...]
