"""What every judged metric shares: checking the judge argument, resolving it lazily, and sharing it.

The RAG metrics and the model-graded evaluators hold a judge the same way; the pipeline relies on
``judge_key()`` and ``use_judge()`` to give metrics that name the same judge one caching judge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from ragmetrics.errors import ConfigError
from ragmetrics.judge import CachingJudge, Judge, resolve_judge
from ragmetrics.settings import check_judge_options, parse_judge_spec

__all__ = ["JudgeHolder"]

_T = TypeVar("_T")


class JudgeHolder:
    """Holds a judge spec or object and resolves it into a caching judge on first use."""

    def _init_judge(
        self, owner: str, llm: Any, cache: bool | str | Path, judge_options: dict[str, Any]
    ) -> None:
        """Check and store the judge settings.

        ``llm`` is a spec string, a Judge, an async openai / anthropic SDK client, or None (the default
        judge). ``judge_options`` may hold ``api_key`` and ``base_url`` (spec strings) and ``model``
        (clients) besides the judge settings.

        Raises:
            ConfigError: ``llm`` is none of those forms (or a synchronous SDK client); a malformed spec;
                an unknown or invalid judge option; a keyword that does not fit the form of ``llm``.
        """
        options = dict(judge_options)
        access = {k: options.pop(k) for k in ("api_key", "base_url", "model") if options.get(k) is not None}
        for name in ("api_key", "base_url", "model"):
            options.pop(name, None)
            if name in access and not isinstance(access[name], str):
                raise ConfigError(f"{owner}: {name} must be a string, got {type(access[name]).__name__}")
        if llm is not None and not isinstance(llm, (str, Judge)):
            from ragmetrics.judge.providers.clients import client_provider
            from ragmetrics.judge.providers.frameworks import framework_kind

            framework = framework_kind(llm) is not None
            if not framework and client_provider(llm, owner=owner) is None:
                raise ConfigError(
                    f"{owner}: llm must be a judge spec string, a Judge, an async openai / anthropic "
                    f"client (AsyncOpenAI, AsyncAzureOpenAI, AsyncAnthropic, AsyncAnthropicBedrock, "
                    f"AsyncAnthropicVertex), a LangChain chat model or a LlamaIndex LLM, "
                    f"got {type(llm).__name__}"
                )
            if framework and access:
                raise ConfigError(
                    f"{owner}: a {type(llm).__name__} carries its own key, URL and model; "
                    f"{', '.join(sorted(access))} cannot be applied to it (set them when creating it)"
                )
            if "api_key" in access or "base_url" in access:
                raise ConfigError(
                    f"{owner}: a {type(llm).__name__} client carries its own key and URL; set api_key / "
                    "base_url when creating the client"
                )
        elif isinstance(llm, Judge) and access:
            raise ConfigError(
                f"{owner}: llm is a ready Judge ({type(llm).__name__}); "
                f"{', '.join(sorted(access))} cannot be applied to it (configure the judge itself)"
            )
        elif "model" in access:
            raise ConfigError(
                f"{owner}: model= goes with a client object; a spec string names the model ('openai:MODEL')"
            )
        check_judge_options(options, owner=owner, extra=("prices",))
        if llm is None or isinstance(llm, str):  # the default judge is named later: check the values now
            parse_judge_spec(llm or "offline", **{k: v for k, v in options.items() if k != "prices"})
        self._llm = llm
        self._cache = cache
        self._access = access
        """api_key / base_url / model: kept apart from the settings, so the key is never in a repr."""
        self._judge_options = options
        self._judge: CachingJudge | None = None

    @property
    def judge(self) -> CachingJudge:
        """The caching judge, resolved on first use (which is when a missing API key is reported)."""
        if self._judge is None:
            self._judge = resolve_judge(self._llm, cache=self._cache, **self._access, **self._judge_options)
        return self._judge

    def judge_key(self) -> tuple[object, ...]:
        """What identifies this metric's judge: metrics with equal keys can share one judge object."""
        llm = self._llm if self._llm is None or isinstance(self._llm, str) else id(self._llm)
        cache = str(self._cache) if not isinstance(self._cache, bool) else self._cache
        access = tuple(
            (k, hashlib.sha256(v.encode()).hexdigest() if k == "api_key" else v)
            for k, v in sorted(self._access.items())
        )
        return (llm, cache, access, tuple(sorted((k, repr(v)) for k, v in self._judge_options.items())))

    async def _closing(self, coro: Awaitable[_T]) -> _T:
        """Await ``coro``, then close the judge (the ``*_sync`` twins end their event loop after this)."""
        try:
            return await coro
        finally:
            if self._judge is not None:
                await self._judge.aclose()  # its HTTP clients and disk cache (both reopen on next use)

    def use_judge(self, judge: CachingJudge) -> None:
        """Share ``judge`` with other metrics (the pipeline does this, so claims are extracted once)."""
        self._judge = judge

    def _judge_spec(self) -> str | None:
        if isinstance(self._llm, str):
            return self._llm
        return getattr(getattr(self._llm, "info", None), "spec", None)
