"""Judges around a LangChain chat model or a LlamaIndex LLM (``llm=ChatOpenAI(...)``, ``OpenAILike(...)``).

RAGAS users pass such objects (wrapped in ``LangchainLLMWrapper`` / ``LlamaIndexLLMWrapper``, which are
unwrapped here). An object is recognised by its classes' modules and names, so nothing here imports
LangChain or LlamaIndex until the object is used. How a call is made, retried and metered:
:class:`FrameworkJudge`. The user's object is never closed.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from ragmetrics._check import check_int, check_number
from ragmetrics.errors import ConfigError, JudgeError, JudgeOutputError, shorten
from ragmetrics.judge.base import JudgeReply, JudgeRequest, Message, ModelT
from ragmetrics.judge.pricing import cost_usd, load_prices
from ragmetrics.score import JudgeInfo, Usage
from ragmetrics.settings import check_judge_options

__all__ = ["FrameworkJudge", "framework_kind", "judge_for_framework"]

Framework = Literal["langchain", "llamaindex"]
_BASES: Mapping[tuple[str, str], Framework] = {
    ("langchain_core", "BaseChatModel"): "langchain",
    ("llama_index", "LLM"): "llamaindex",
}
"""(top-level package, class name) of the base classes taken as ``llm=``."""
_WRAPPERS = {"LangchainLLMWrapper": "langchain_llm", "LlamaIndexLLMWrapper": "llm"}
"""RAGAS's wrapper classes and the attribute holding the framework object."""
_OPTIONS = ("max_concurrency", "timeout_s", "reasks", "prices")


def unwrap(obj: Any) -> Any:
    """The framework object inside a RAGAS wrapper (``LangchainLLMWrapper(ChatOpenAI(...))``), or ``obj``."""
    attr = _WRAPPERS.get(type(obj).__name__)
    if attr is not None and type(obj).__module__.split(".", 1)[0] == "ragas":
        return getattr(obj, attr, obj)
    return obj


def framework_kind(obj: object) -> Framework | None:
    """``langchain`` or ``llamaindex`` for such an LLM object (or a RAGAS wrapper of one), else None."""
    obj = unwrap(obj)
    for cls in type(obj).__mro__:
        found = _BASES.get((cls.__module__.split(".", 1)[0], cls.__name__))
        if found is not None:
            return found
    return None


def _model_name(obj: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    metadata = getattr(obj, "metadata", None)
    value = getattr(metadata, "model_name", None)
    if isinstance(value, str) and value.strip() and value != "unknown":
        return value.strip()
    return type(obj).__name__


def _base_url(obj: Any) -> str | None:
    for attr in ("openai_api_base", "api_base", "base_url"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value.startswith(("http://", "https://")):
            return value.rstrip("/")
    return None


def judge_for_framework(llm: Any, **options: Any) -> FrameworkJudge:
    """A judge that asks a LangChain chat model or a LlamaIndex LLM.

    Args:
        llm: A LangChain ``BaseChatModel``, a LlamaIndex ``LLM``, or a RAGAS wrapper of either.
        **options: ``max_concurrency`` (default 16), ``timeout_s`` (60), ``reasks`` (2) and ``prices``;
            the sampling settings (temperature, max tokens, retries) are the object's own.

    Raises:
        ConfigError: An option it does not take.
    """
    kind = framework_kind(llm)
    assert kind is not None, "resolve_judge() takes only framework models here"
    check_judge_options(options, owner="llm", extra=("prices",))
    other = sorted(set(options) - set(_OPTIONS))
    if other:
        raise ConfigError(
            f"llm: a {type(unwrap(llm)).__name__} carries its own {', '.join(other)}: set them when "
            f"creating it (ragmetrics applies only {', '.join(_OPTIONS)} to it)"
        )
    return FrameworkJudge(unwrap(llm), kind, **options)


class FrameworkJudge:
    """The Judge protocol over a LangChain chat model or a LlamaIndex LLM.

    - **LangChain** ``BaseChatModel``: ``with_structured_output(response_model, include_raw=True)``, so
      the model's own structured-output method is used (tool calling or JSON schema, as its integration
      chooses), and the raw ``AIMessage`` gives the tokens (``usage_metadata``).
    - **LlamaIndex** ``LLM``: for a function-calling model, one forced tool call (``chat_with_tools``
      with the response model as the tool, what its ``structured_predict`` does), else ``chat`` with the
      JSON schema in the last message; the ``ChatResponse`` gives the tokens. Its prompt-template
      helpers are not used: they would read braces in sample text as template variables.

    Calls go through the objects' blocking methods (``invoke``, ``chat_with_tools``, ``chat``) on worker
    threads, ``max_concurrency`` of them: their async clients are bound to the event loop that first
    used them, and ``evaluate_sync`` gives every run a loop of its own, so a second run through the
    async methods fails with a connection error (LangChain's ``ChatOpenAI``, LlamaIndex's ``OpenAI``).

    Every call counts one attempt on the reply's usage, with the tokens when the object reports them
    (cost from the price table when its model is in it); a reply that fails validation is re-asked
    (``reasks``, default 2) with the problem named. Retries on 429s and timeouts are the framework
    object's own (its ``max_retries``); ``timeout_s`` bounds each call and ``max_concurrency`` the calls
    in flight. The user's object is never closed.
    """

    def __init__(
        self,
        llm: Any,
        kind: Framework,
        *,
        max_concurrency: int = 16,
        timeout_s: float = 60.0,
        reasks: int = 2,
        prices: Any = None,
    ) -> None:
        check_int(max_concurrency, "max_concurrency", "llm", minimum=1)
        check_int(reasks, "reasks", "llm", minimum=0)
        check_number(timeout_s, "timeout_s", "llm", low=0, low_open=True)
        self._llm = llm
        self.kind = kind
        self.max_concurrency = max_concurrency
        self.timeout_s = float(timeout_s)
        self.reasks = reasks
        self._prices = prices if prices is not None else load_prices()
        self.info = JudgeInfo(
            provider=kind, model=_model_name(llm), base_url=_base_url(llm), temperature=None
        )
        self._limits: dict[int, asyncio.Semaphore] = {}
        """One semaphore per event loop (``evaluate_sync`` runs each call in a loop of its own)."""
        self._threads: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FrameworkJudge({self.kind}: {type(self._llm).__name__}, model={self.info.model!r})"

    def _limit(self) -> asyncio.Semaphore:
        loop = id(asyncio.get_running_loop())
        if loop not in self._limits:
            self._limits = {loop: asyncio.Semaphore(self.max_concurrency)}  # older loops are gone
        return self._limits[loop]

    async def aclose(self) -> None:
        """Stop the worker threads (they start again on next use); the user's object is theirs to close."""
        with self._lock:
            threads, self._threads = self._threads, None
        if threads is not None:
            threads.shutdown(wait=False)

    async def _blocking(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` on a worker thread."""
        with self._lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="ragmetrics-llm")
            threads = self._threads
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(threads, lambda: fn(*args, **kwargs))

    async def complete(self, request: JudgeRequest[ModelT]) -> JudgeReply[ModelT]:
        """Ask the object for a ``request.response_model``, re-asking on invalid output.

        Raises:
            JudgeError: The object raised (or timed out); its usage so far is on the error.
            JudgeOutputError: No valid reply after the re-asks.
        """
        started = time.perf_counter()
        usage = Usage()
        messages = list(request.messages)
        problem = ""
        last = ""
        for attempt in range(self.reasks + 1):
            if attempt:
                messages.append(
                    Message(
                        role="user",
                        content=f"Your reply was not valid: {problem}. Reply again, following the schema.",
                    )
                )
            try:
                async with self._limit():
                    value, raw, spent = await asyncio.wait_for(
                        self._ask(request.response_model, messages), self.timeout_s
                    )
            except asyncio.TimeoutError:
                raise self._error(
                    f"no reply within timeout_s={self.timeout_s:g}",
                    usage + Usage(calls=1, unmetered=1),
                    "timeout",
                ) from None
            except (JudgeError, ConfigError):
                raise
            except Exception as exc:  # the framework's own errors: no import of them here
                raise self._error(
                    f"{type(exc).__name__}: {exc}", usage + Usage(calls=1, unmetered=1)
                ) from exc
            usage = usage + spent + Usage(reasks=1 if attempt else 0)
            last = raw
            try:
                checked = request.response_model.model_validate(value)
            except PydanticValidationError as exc:
                problem = shorten(str(exc), 600)
                continue
            usage = usage + Usage(succeeded=1)
            latency = (time.perf_counter() - started) * 1000.0
            return JudgeReply(value=checked, usage=usage, latency_ms=latency)
        raise JudgeOutputError(
            f"no valid {request.response_model.__name__} after {self.reasks} re-ask(s): {problem}",
            provider=self.info.provider,
            model=self.info.model,
            attempts=usage.calls,
            reasks=usage.reasks,
            last_reply=last,
            problems=[problem],
            usage=usage,
        )

    def _error(self, message: str, usage: Usage, status: Any = "provider_error") -> JudgeError:
        return JudgeError(
            message,
            provider=self.info.provider,
            model=self.info.model,
            attempts=usage.calls,
            reasks=usage.reasks,
            status=status,
            usage=usage,
        )

    def _usage(self, prompt: int | None, completion: int | None) -> Usage:
        if prompt is None and completion is None:
            return Usage(calls=1, unmetered=1)
        p, c = prompt or 0, completion or 0
        provider = "openai" if self.info.base_url is None or "openai.com" in self.info.base_url else ""
        cost = cost_usd(self._prices, provider, self.info.model, p, c) if provider else 0.0
        return Usage(calls=1, prompt_tokens=p, completion_tokens=c, cost_usd=cost)

    async def _ask(self, model: type[BaseModel], messages: list[Message]) -> tuple[Any, str, Usage]:
        """One call: the reply's value (to validate), its text (for errors) and its usage."""
        if self.kind == "langchain":
            return await self._ask_langchain(model, messages)
        return await self._ask_llamaindex(model, messages)

    async def _ask_langchain(self, model: type[BaseModel], messages: list[Message]) -> tuple[Any, str, Usage]:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

        kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
        chain = self._llm.with_structured_output(model, include_raw=True)
        out = await self._blocking(chain.invoke, [kinds[m.role](content=m.content) for m in messages])
        raw = out.get("raw") if isinstance(out, Mapping) else None
        meta = getattr(raw, "usage_metadata", None) or {}
        usage = self._usage(meta.get("input_tokens"), meta.get("output_tokens"))
        parsed = out.get("parsed") if isinstance(out, Mapping) else out
        text = _langchain_text(raw)
        if parsed is None:
            error = out.get("parsing_error") if isinstance(out, Mapping) else None
            return _json_or_text(text, error), text, usage
        return parsed.model_dump() if isinstance(parsed, BaseModel) else parsed, text, usage

    async def _ask_llamaindex(
        self, model: type[BaseModel], messages: list[Message]
    ) -> tuple[Any, str, Usage]:
        from llama_index.core.base.llms.types import ChatMessage

        chat = [ChatMessage(role=m.role, content=m.content) for m in messages]
        metadata = getattr(self._llm, "metadata", None)
        if getattr(metadata, "is_function_calling_model", False) and hasattr(self._llm, "chat_with_tools"):
            from llama_index.core.program.function_program import get_function_tool

            tool = get_function_tool(model)
            response = await self._blocking(
                self._llm.chat_with_tools,
                [tool],
                chat_history=chat,
                tool_required=True,
                allow_parallel_tool_calls=False,
            )
            calls = self._llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
            text = str(getattr(response.message, "content", "") or "")
            value: Any = calls[0].tool_kwargs if calls else _json_or_text(text, "no tool call")
            return value, json.dumps(value, default=str) if calls else text, _llamaindex_usage(self, response)
        schema = json.dumps(model.model_json_schema(), ensure_ascii=False)
        last = chat[-1]
        chat[-1] = ChatMessage(
            role=last.role,
            content=f"{last.content}\n\nReply with one JSON object only, valid under this json_schema:\n"
            f"{schema}",
        )
        response = await self._blocking(self._llm.chat, chat)
        text = str(getattr(response.message, "content", "") or "")
        return _json_or_text(text, None), text, _llamaindex_usage(self, response)


def _langchain_text(raw: Any) -> str:
    if raw is None:
        return ""
    calls = getattr(raw, "tool_calls", None)
    if calls:
        return json.dumps(calls[0].get("args", {}), default=str)
    content = getattr(raw, "content", "")
    return content if isinstance(content, str) else json.dumps(content, default=str)


def _json_or_text(text: str, error: Any) -> Any:
    """The JSON object in ``text`` (a code fence around it allowed), else the text.

    The text then fails validation, with the problem named in the re-ask.
    """
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    start, end = body.find("{"), body.rfind("}")
    if start != -1 and end > start:
        try:
            return json.loads(body[start : end + 1])
        except ValueError:
            pass
    return text if error is None else f"{text} ({error})"


def _llamaindex_usage(judge: FrameworkJudge, response: Any) -> Usage:
    """Tokens from a LlamaIndex ``ChatResponse``: its ``additional_kwargs`` or the raw reply's usage."""
    extra = getattr(response, "additional_kwargs", None) or {}
    prompt, completion = extra.get("prompt_tokens"), extra.get("completion_tokens")
    if prompt is None and completion is None:
        raw = getattr(response, "raw", None)
        found = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
        if isinstance(found, Mapping):
            prompt, completion = found.get("prompt_tokens"), found.get("completion_tokens")
        elif found is not None:
            prompt = getattr(found, "prompt_tokens", None)
            completion = getattr(found, "completion_tokens", None)
    as_int = [v if isinstance(v, int) and not isinstance(v, bool) else None for v in (prompt, completion)]
    return judge._usage(as_int[0], as_int[1])
