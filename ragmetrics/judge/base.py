"""The Judge seam: one async structured call in, one validated pydantic value out.

Metrics build a :class:`JudgeRequest` (rendered messages, a response model, the raw variables the
offline judge reads) and a :class:`Judge` answers it with a :class:`JudgeReply` that carries the
value, the usage and the latency. Both are generic in the response model: a
``JudgeRequest[ClaimExtraction]`` is answered by a ``JudgeReply[ClaimExtraction]``, so ``reply.value``
is typed. Provider adapters, the offline judge and the caching wrapper all implement this one protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from ragmetrics.prompting import Prompt
from ragmetrics.score import JudgeInfo, Usage

__all__ = ["Judge", "JudgeReply", "JudgeRequest", "Message", "ModelT"]

ModelT = TypeVar("ModelT", bound=BaseModel, covariant=True)
"""The response model a request asks for and its reply carries. Covariant: requests and replies are
frozen, so a ``JudgeRequest[JudgeRating]`` is a ``JudgeRequest[JudgeRating | JudgeReplyText]``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One chat message as sent to the judge."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeRequest(Generic[ModelT]):
    """Everything a judge needs to answer one structured request for a ``ModelT``."""

    task: str
    """What is asked, e.g. ``claims.extract``; the offline judge dispatches on it."""
    prompts: tuple[Prompt, ...]
    """The prompt files the messages were rendered from (their hashes enter the cache key)."""
    messages: tuple[Message, ...]
    """The rendered messages, system first."""
    response_model: type[ModelT]
    """The pydantic model the reply must validate against."""
    variables: Mapping[str, Any] = field(default_factory=dict)
    """The raw (unescaped) inputs, for judges that do not read prompts (the offline judge)."""
    context: Mapping[str, object] = field(default_factory=dict)
    """Pydantic validation context (``info.context`` in a validator of ``response_model``), for a
    user's own response models; ragmetrics' metrics leave it empty. Passed as ``context=`` to
    ``response_model.model_validate`` only where ragmetrics validates a reply itself: the offline
    judge, and replies replayed from the judge cache. Provider judges never pass it (instructor given
    a context renders every message as a Jinja2 template, so sample text would stop being data), and
    it is not part of the cache key (the messages and the schema are). So a contract that must hold
    for every judge belongs in a per-request response model whose validators close over its numbers
    (as ``verification_model(n_claims, n_contexts)`` does), not here."""
    version: str = "1"
    """Version of the metric logic that consumes the reply; part of the cache key."""
    max_tokens: int | None = None
    """Completion token limit for this request (None: the judge's default)."""
    repeat: int = 0
    """Repeat index for ``repeats=N`` stability runs; repeats beyond 0 get their own cache entries."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeReply(Generic[ModelT]):
    """A validated answer and what it cost."""

    value: ModelT
    """The validated response model instance."""
    usage: Usage
    """Calls, tokens and cost of producing it (zero cost when it came from the cache)."""
    latency_ms: float = 0.0
    """Wall time of the call, retries included."""
    cached: bool = False
    """True when the reply came from the disk cache or an identical request in flight."""


@runtime_checkable
class Judge(Protocol):
    """Anything that answers structured requests: a provider adapter, the offline judge, a cache."""

    info: JudgeInfo

    async def complete(self, request: JudgeRequest[ModelT]) -> JudgeReply[ModelT]:
        """Answer one request with a validated value of its response model.

        Raises:
            JudgeError: The call failed after retries (its ``status`` says how).
            JudgeOutputError: The judge never produced output that validates.
        """
        ...

    async def aclose(self) -> None:
        """Release network clients; safe to call twice."""
        ...
