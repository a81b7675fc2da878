"""LLM access: the Judge protocol, provider adapters, the offline judge and the cache.

:func:`resolve_judge` turns a spec string (``openai:gpt-4o-mini``, ``anthropic:...``,
``openai:MODEL@http://localhost:11434/v1``, ``azure:...``, ``gemini:...``, ``bedrock:...``,
``vertex:...``, ``offline``), a provider SDK client object or a Judge object into a caching judge.
Provider SDKs are imported only when a provider judge makes its first call.

Modules: ``base`` (the Judge protocol, requests and replies), ``cache`` (the judge cache) over
``store`` (the in-memory LRU memo and the disk folder, shared with the embedding cache), ``schema``
(response schemas in strict form), ``retry``, ``limits``, ``breaker``, ``metering`` and ``pricing``
(what every network call goes through), ``providers/`` (the SDK adapters) and ``offline/`` (the
heuristic judge).

Ownership: a judge ragmetrics builds (from a spec or around a client) is closed by ragmetrics after
each run; a Judge object or SDK client the user passed in is never closed by it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError, OfflineJudgeWarning
from ragmetrics.judge.base import Judge, JudgeReply, JudgeRequest, Message
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.judge.pricing import load_prices
from ragmetrics.settings import (
    default_cache_dir,
    default_judge_spec,
    nothing_configured,
    parse_judge_spec,
    prices_file,
)

__all__ = ["CachingJudge", "Judge", "JudgeReply", "JudgeRequest", "Message", "make_judge", "resolve_judge"]

OFFLINE_DEFAULT_MESSAGE = (
    "no judge configured, so ragmetrics is scoring with the offline heuristic judge (lexical overlap, "
    "not an LLM). To use an LLM judge set OPENAI_API_KEY or ANTHROPIC_API_KEY (or RAGMETRICS_JUDGE to a "
    "spec such as 'azure:DEPLOYMENT@https://NAME.openai.azure.com'), or pass llm='openai:gpt-4o-mini' "
    "or llm=<your AsyncOpenAI / AsyncAnthropic client>; pass llm='offline' to keep the heuristic "
    "without this warning"
)


def make_judge(
    spec: str, *, api_key: str | None = None, base_url: str | None = None, **options: Any
) -> Judge:
    """Build the bare judge a spec names (no cache).

    Args:
        spec: ``openai:MODEL[@BASE_URL]``, ``anthropic:MODEL``, ``azure:DEPLOYMENT@ENDPOINT``,
            ``gemini:MODEL``, ``bedrock:MODEL``, ``vertex:MODEL``, ``offline`` or ``offline+semantic``.
        api_key: The provider key (default: the provider's environment variable); never stored in
            the judge's name, cache keys, logs or reports.
        base_url: The server's base URL, as ``@URL`` in the spec would set it.
        **options: :class:`~ragmetrics.settings.JudgeSettings` fields, plus ``prices`` (a price table;
            default: the bundled table, updated by the JSON file named in ``RAGMETRICS_PRICES``) and
            ``require_key`` (default True; False defers a missing API key to the first call, for
            estimates, which call nothing).

    Raises:
        ConfigError: Malformed spec, bad option, or the provider's API key is not set.
        MissingDependencyError: ``offline+semantic`` without the ``embeddings`` extra.
    """
    prices = options.pop("prices", None)
    require_key = bool(options.pop("require_key", True))
    settings = parse_judge_spec(spec, **options)
    if base_url is not None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"judge {spec!r}: base_url must be an http(s) URL, got {base_url!r}")
        if "@" in spec and settings.base_url != base_url:
            raise ConfigError(
                f"judge {spec!r}: the spec names a base URL already; drop base_url= or the '@URL'"
            )
        settings = settings.with_options(base_url=base_url)
    if settings.provider == "offline":
        if api_key is not None or base_url is not None:
            raise ConfigError("the offline judge takes no api_key or base_url")
        from ragmetrics.judge.offline.judge import SEMANTIC_MODEL, OfflineJudge

        return OfflineJudge(semantic=settings.model == SEMANTIC_MODEL)
    prices = _prices(prices)
    if settings.provider in ("anthropic", "bedrock", "vertex"):
        from ragmetrics.judge.providers.anthropic import AnthropicJudge

        return AnthropicJudge(settings, prices=prices, api_key=api_key, require_key=require_key)
    from ragmetrics.judge.providers.openai_compat import OpenAIJudge

    return OpenAIJudge(settings, prices=prices, api_key=api_key, require_key=require_key)


def _prices(prices: Any) -> Any:
    """The price table: the one given, else ``RAGMETRICS_PRICES``'s file, else None (the bundled one)."""
    if prices is None and prices_file() is not None:
        return load_prices(prices_file())
    return prices


def resolve_judge(
    llm: Any = None,
    *,
    cache: bool | str | Path = True,
    api_key: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    **options: Any,
) -> CachingJudge:
    """A caching judge for a spec string, a provider SDK client, a Judge object, or the default judge.

    Args:
        llm: A spec string; an ``openai.AsyncOpenAI`` / ``AsyncAzureOpenAI`` / ``anthropic.AsyncAnthropic``
            / ``AsyncAnthropicBedrock`` / ``AsyncAnthropicVertex`` client; a LangChain chat model or a
            LlamaIndex LLM (or a RAGAS wrapper of one, see
            :mod:`~ragmetrics.judge.providers.frameworks`); a Judge; or None for the
            default (``RAGMETRICS_JUDGE``, a keyed provider, else ``offline`` with an
            :class:`~ragmetrics.errors.OfflineJudgeWarning`).
        cache: True for the default cache folder, a path for another, False for memory only.
        api_key: The provider key for a spec string (default: its environment variable).
        base_url: The base URL for a spec string (as ``@URL``).
        model: The model for a client object (Azure: the deployment).
        **options: Judge settings (temperature, max_concurrency, timeout_s, ...).

    Raises:
        ConfigError: A bad spec or option, a missing key, or keywords that do not fit the ``llm`` form.
    """
    if isinstance(llm, CachingJudge):
        _refuse_keywords(llm, api_key=api_key, base_url=base_url, model=model, options=options)
        return llm
    owned = True
    if llm is None or isinstance(llm, str):
        if model is not None:
            raise ConfigError(
                "model= goes with a client object; a spec string names the model ('openai:MODEL')"
            )
        if llm is None:
            llm = default_judge_spec()
            if llm == "offline" and nothing_configured() and api_key is None and base_url is None:
                warnings.warn(OfflineJudgeWarning(OFFLINE_DEFAULT_MESSAGE), stacklevel=2)
        judge: Judge = make_judge(llm, api_key=api_key, base_url=base_url, **options)
    elif isinstance(llm, Judge):
        _refuse_keywords(llm, api_key=api_key, base_url=base_url, model=model, options=options)
        judge, owned = llm, False
    else:
        from ragmetrics.judge.providers.clients import client_provider, judge_for_client
        from ragmetrics.judge.providers.frameworks import framework_kind, judge_for_framework

        if framework_kind(llm) is not None:
            given = [n for n, v in (("api_key", api_key), ("base_url", base_url), ("model", model)) if v]
            if given:
                raise ConfigError(
                    f"llm: a {type(llm).__name__} carries its own key, URL and model; "
                    f"{', '.join(given)} cannot be applied to it (set them when creating it)"
                )
            prices = _prices(options.pop("prices", None))
            return CachingJudge(
                judge_for_framework(llm, prices=prices, **options), _cache_dir(cache), owns_inner=False
            )
        if client_provider(llm) is None:
            raise ConfigError(
                f"llm must be a judge spec string, a Judge, or an async openai / anthropic SDK client, "
                f"got {type(llm).__name__}"
            )
        if api_key is not None or base_url is not None:
            raise ConfigError(
                f"llm: a {type(llm).__name__} client carries its own key and URL; set api_key / base_url "
                "when creating the client, not here"
            )
        prices = _prices(options.pop("prices", None))
        judge = judge_for_client(llm, model=model, prices=prices, **options)
    return CachingJudge(judge, _cache_dir(cache), owns_inner=owned)


def _cache_dir(cache: bool | str | Path | None) -> Path | None:
    if cache is True:
        return default_cache_dir()
    if cache is False or cache is None:
        return None
    return Path(cache)


def _refuse_keywords(
    llm: object, *, api_key: str | None, base_url: str | None, model: str | None, options: dict[str, Any]
) -> None:
    """A ready Judge carries its own settings: refuse keywords that would be silently ignored."""
    given = [n for n, v in (("api_key", api_key), ("base_url", base_url), ("model", model)) if v is not None]
    if given:
        raise ConfigError(
            f"llm: {type(llm).__name__} is a ready Judge; {', '.join(given)} cannot be applied to it "
            "(configure the judge itself)"
        )
