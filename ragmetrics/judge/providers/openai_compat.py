"""The OpenAI judge, for OpenAI itself and any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio).

The same adapter serves Azure OpenAI, Gemini's OpenAI-compatible endpoint, gateways such as LiteLLM
and a user's own ``AsyncOpenAI`` / ``AsyncAzureOpenAI`` client. Structured output goes through
instructor over the ``openai`` SDK, whose own retries are off (:mod:`ragmetrics.judge.retry` retries).
The schema is sent in one of four wire forms (``JudgeSettings.mode``): strict tool call, strict
``json_schema``, llama-cpp's ``json_object`` with a schema, or plain JSON mode; ``mode="auto"`` moves
to the next form when a server refuses one, remembering it for the server or for that schema's shape,
and counts a weaker form in ``Usage.downgraded``. No validation ``context`` is ever passed to
instructor, which would render sample text as a Jinja2 template.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections import OrderedDict
from typing import Any

from pydantic import BaseModel

from ragmetrics.judge import metering
from ragmetrics.judge.base import JudgeRequest
from ragmetrics.judge.local import (
    LOCAL_FORMS,
    LOCAL_IN_FLIGHT,
    bounded_schema,
    data_chars,
    is_local,
    reply_budget,
)
from ragmetrics.judge.providers._instructor import (
    classify_call_error,
    prepared,
    reask_policy,
    total_tokens,
    used_all,
)
from ragmetrics.judge.providers._provider import CallOutcome, ProviderJudge
from ragmetrics.judge.providers._servers import detect_kind
from ragmetrics.judge.providers._wire_forms import FORMS, next_form, weaker, wire_body, wire_schema
from ragmetrics.judge.retry import Failure
from ragmetrics.settings import KEY_VARIABLES, JudgeSettings, azure_api_version

__all__ = ["OpenAIJudge"]

log = logging.getLogger(__name__)

SHAPE_FORMS_KEPT = 256
"""Request shapes whose own (weaker) wire form a judge remembers, least recently used dropped first."""


class OpenAIJudge(ProviderJudge):
    """A judge on the OpenAI Chat Completions API (or a compatible server)."""

    def __init__(
        self, settings: JudgeSettings, *, api_key: str | None = None, require_key: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(settings, **kwargs)
        self._take_key(api_key, require_key=require_key)
        self._mode: str = "tools" if settings.mode == "auto" else settings.mode
        """The wire form of the next call: forced, or what auto found this judge's server to accept
        (a judge talks to one server; metrics and pipelines with equal judge settings share a judge)."""
        self._accepted: set[str] = set()
        """The wire forms this judge's server has answered."""
        self._shape_forms: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        """A shape's own form, after the server refused its schema in a form it takes for others."""
        self._probe_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._kind: str | None = _known_kind(settings)
        """The server kind (:data:`ragmetrics.settings.SERVER_KINDS`); None until detected."""
        if self._kind is not None:
            self._take_kind(self._kind)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIJudge({self.info.spec!r}, mode={self._mode!r}, server={self._kind or 'auto'!r})"

    @property
    def server_kind(self) -> str | None:
        """What serves this judge (``openai`` or a local kind); None until the first call detects it."""
        return self._kind

    def _take_kind(self, kind: str) -> None:
        """Use what ``kind`` of server enforces: its constrained form (auto mode) and local bounds."""
        self._kind = kind
        self.local = is_local(kind)
        if self.local and self.settings.mode == "auto":
            self._mode = weaker(self._mode, LOCAL_FORMS[kind])
        if self.local and kind != "vllm":  # it decodes one or a few at a time: the rest would queue
            self.limiter.limit = min(self.limiter.limit, LOCAL_IN_FLIGHT)

    async def detect_local(self) -> bool:  # noqa: D102
        try:
            await self._server()
        except Exception:  # no key, a bad URL...: the first call says so; the probe itself never raises
            return False
        return self.local

    async def _server(self) -> str:
        """The server kind, asking ``GET /models`` once when it is neither named nor obvious."""
        if self._kind is None:
            loop = asyncio.get_running_loop()
            lock = self._probe_locks.setdefault(loop, asyncio.Lock())
            async with lock:  # concurrent first calls wait for one probe
                if self._kind is None:
                    kind = await detect_kind(
                        self.settings.base_url or "", self._key(), timeout_s=min(5.0, self.settings.timeout_s)
                    )
                    self._take_kind(kind)
                    if self.local:
                        log.info("%s: a %s server; schemas go as %s", self.info.spec, kind, self._mode)
        return self._kind or "openai"

    async def _reply_bound(self, request: JudgeRequest[BaseModel]) -> int | None:
        if not is_local(await self._server()):
            return None
        total, _, _ = _input_sizes(request)
        return reply_budget(wire_schema(prepared(request.response_model)), total)

    def _make_client(self) -> Any:
        import openai

        common: dict[str, Any] = {
            "api_key": self._key(),
            "max_retries": 0,
            "timeout": self.settings.timeout_s,
            "http_client": self._http_client(openai),
        }
        if self.settings.provider == "azure":
            return openai.AsyncAzureOpenAI(
                azure_endpoint=self.settings.base_url or "",
                azure_deployment=self.settings.model,
                api_version=azure_api_version(),
                **common,
            )
        return openai.AsyncOpenAI(base_url=self.settings.base_url, **common)

    async def _call(self, client: Any, request: JudgeRequest[BaseModel], max_tokens: int) -> CallOutcome:
        shape = _shape(request.response_model)
        form = weaker(self._mode, self._shape_forms.get(shape, self._mode))
        model = prepared(request.response_model)
        wrapped = self._structured(client, FORMS[form])
        extra: dict[str, Any] = {}
        if self.settings.seed is not None:
            extra["seed"] = self.settings.seed
        schema = None
        if self.local:  # strings and lists bounded, so the server's grammar cannot ramble
            _, longest, words = _input_sizes(request)
            schema = bounded_schema(wire_schema(model), longest=longest, words=words)
        body = wire_body(form, model, schema)
        if body:
            extra["extra_body"] = body
        replies: list[Any] = []  # the replies instructor got: a cut one is not re-asked
        wrapped.on("completion:response", replies.append)
        policy = reask_policy(
            self.settings.reasks, lambda: bool(replies) and used_all(replies[-1], max_tokens)
        )
        try:
            value, completion = await wrapped.chat.completions.create_with_completion(
                model=self.settings.model,
                messages=[{"role": m.role, "content": m.content} for m in request.messages],
                response_model=model,
                max_retries=policy,
                temperature=self.settings.temperature,
                max_tokens=max_tokens,
                **extra,
            )
        except Exception as exc:
            fallback = self._fallback(form, exc)
            if fallback is not None:
                self._refused(form, fallback, shape)
                return await self._call(client, request, max_tokens)
            raise
        self._accepted.add(form)
        meter = metering.current()
        start = LOCAL_FORMS.get(self._kind or "", "tools")
        if meter is not None and self.settings.mode == "auto" and weaker(form, start) != start:
            meter.downgraded = 1
        prompt, completion_tokens = total_tokens(value, completion)
        attempts = int(policy.statistics.get("attempt_number", 1))
        return CallOutcome(value, prompt, completion_tokens, attempts)

    def _structured(self, client: Any, mode: str) -> Any:
        """The instructor client in ``mode`` around an SDK client.

        A user's own client is called through its ``chat.completions.create``, so wrappers and
        instrumentation on it see the judge's calls; a client this judge built, through :func:`_post_chat`.
        """
        import instructor

        how = getattr(instructor.Mode, mode)
        if self._user_client is not None:
            return instructor.from_openai(client, mode=how)
        create = instructor.patch(create=functools.partial(_post_chat, client), mode=how)
        return instructor.AsyncInstructor(
            client=client, create=create, mode=how, provider=instructor.Provider.OPENAI
        )

    def _refused(self, form: str, fallback: str, shape: tuple[Any, ...]) -> None:
        """Remember that the server refused ``form`` for a request of ``shape``.

        For the shape alone when the server has taken ``form`` before, else for the whole judge.
        """
        if form in self._accepted:
            self._shape_forms[shape] = weaker(fallback, self._shape_forms.get(shape, fallback))
            self._shape_forms.move_to_end(shape)
            while len(self._shape_forms) > SHAPE_FORMS_KEPT:
                self._shape_forms.popitem(last=False)
            log.info(
                "%s: the server refused the %s form for %s; that shape uses %s",
                self.info.spec,
                form,
                shape[0],
                fallback,
            )
            return
        if weaker(self._mode, fallback) == fallback and self._mode != fallback:
            log.warning(
                "%s: the server refused the %s form; later requests use %s", self.info.spec, form, fallback
            )
            self._mode = fallback

    def _fallback(self, form: str, exc: BaseException) -> str | None:
        """The next wire form to try when the server rejected ``form`` (auto mode only), else None."""
        return _rejected(form, exc) if self.settings.mode == "auto" else None

    def _classify(self, exc: BaseException) -> Failure | None:
        import openai

        if self.settings.mode != "auto" and _rejected(self.settings.mode, exc) is not None:
            # a forced form the server refuses will be refused again (llama.cpp says so with a 500)
            refusal = _status(exc)
            return Failure(
                status="provider_error",
                transient=False,
                message=f"the server does not accept mode={self.settings.mode!r}: {_error_text(refusal)}",
                http_status=refusal.status_code,
                hint="use mode='auto' to detect what the server takes (llama-cpp-python: json_object_schema)",
            )
        return classify_call_error(
            exc,
            openai,
            host=self.settings.base_url or "api.openai.com",
            timeout_s=self.settings.timeout_s,
            secret=self._api_key,
            hints={
                401: f"check the {KEY_VARIABLES.get(self.settings.provider, 'OPENAI_API_KEY')} "
                "environment variable (or the api_key= given)",
                403: "the key lacks access to this model",
                404: f"check the model name in '{self.info.spec}' and the base URL",
            },
            text=_error_text,
        )


_OPTIONS = {
    "extra_body": "extra_json",
    "extra_headers": "headers",
    "extra_query": "params",
    "timeout": "timeout",
}
"""``chat.completions.create``'s per-request arguments -> the SDK's request options they become."""


async def _post_chat(client: Any, **arguments: Any) -> Any:
    """``client.chat.completions.create(**arguments)``'s request, sent with the client's public ``post``.

    The same body, headers (the API key only: ``security``, as ``create`` sets it) and reply type, on
    the same retries, hooks and errors; but ``client.chat`` imports the SDK's ``resources`` package,
    every API it has (about 0.3 s with openai 3, before the first request could leave).
    """
    from openai.types.chat import ChatCompletion

    options: dict[str, Any] = {"security": {"bearer_auth": True}}
    for argument, option in _OPTIONS.items():
        if argument in arguments:
            value = arguments.pop(argument)
            if value is not None or argument == "timeout":  # timeout=None: no limit
                options[option] = value
    return await client.post("/chat/completions", body=arguments, cast_to=ChatCompletion, options=options)


def _input_sizes(request: JudgeRequest[BaseModel]) -> tuple[int, int, int]:
    """(characters, longest text, words) of the request's inputs, as ``data_chars`` counts them."""
    return data_chars(request.variables, (m.content for m in request.messages if m.role == "user"))


def _known_kind(settings: JudgeSettings) -> str | None:
    """The server kind known without asking: named, or a hosted API (no custom base URL)."""
    if settings.server != "auto":
        return settings.server
    if settings.provider != "openai" or not settings.base_url:
        return "openai"
    return None


def _shape(model: type[Any]) -> tuple[Any, ...]:
    """What identifies a request's schema: its class and the shape it was built for."""
    return (model.__qualname__, tuple(getattr(model, "model_fields", ())), getattr(model, "_shape", ()))


def _status(exc: BaseException) -> Any:
    """The SDK's status error behind ``exc`` (instructor may wrap it), or None."""
    import openai

    cause = exc if isinstance(exc, openai.APIStatusError) else exc.__cause__
    return cause if isinstance(cause, openai.APIStatusError) else None


def _rejected(form: str, exc: BaseException) -> str | None:
    """The next form to try if ``exc`` says the server rejected ``form``, else None."""
    cause = _status(exc)
    if cause is None:
        return None
    return next_form(form, cause.status_code, f"{cause} {getattr(cause, 'body', '')}")


def _error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", exc))
