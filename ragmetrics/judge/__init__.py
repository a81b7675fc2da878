"""LLM access: the Judge protocol, provider adapters, the offline judge and the cache.

:func:`resolve_judge` turns a spec string (``openai:gpt-4o-mini``, ``anthropic:...``,
``openai:MODEL@http://localhost:11434/v1``, ``offline``) or a Judge object into a caching judge.
Provider SDKs are imported only when a provider judge makes its first call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmetrics.judge.base import Judge, JudgeReply, JudgeRequest, Message
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.settings import default_cache_dir, default_judge_spec, parse_judge_spec, prices_file

__all__ = ["CachingJudge", "Judge", "JudgeReply", "JudgeRequest", "Message", "make_judge", "resolve_judge"]


def make_judge(spec: str, **options: Any) -> Judge:
    """Build the bare judge a spec names (no cache).

    Args:
        spec: ``openai:MODEL[@BASE_URL]``, ``anthropic:MODEL``, ``offline`` or ``offline+semantic``.
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
    if prices is None and settings.provider != "offline" and prices_file() is not None:
        from ragmetrics.judge.pricing import load_prices

        prices = load_prices(prices_file())
    if settings.provider == "offline":
        from ragmetrics.judge.offline import SEMANTIC_MODEL, OfflineJudge

        return OfflineJudge(semantic=settings.model == SEMANTIC_MODEL)
    if settings.provider == "anthropic":
        from ragmetrics.judge.anthropic import AnthropicJudge

        return AnthropicJudge(settings, prices=prices, require_key=require_key)
    from ragmetrics.judge.openai_compat import OpenAIJudge

    return OpenAIJudge(settings, prices=prices, require_key=require_key)


def resolve_judge(
    llm: str | Judge | None = None,
    *,
    cache: bool | str | Path = True,
    **options: Any,
) -> CachingJudge:
    """A caching judge for a spec string, a Judge object, or the default judge.

    Args:
        llm: A spec string, a Judge, or None for the default (``RAGMETRICS_JUDGE``, a keyed
            provider, else ``offline``).
        cache: True for the default cache folder, a path for another, False for memory only.
        **options: Judge settings for spec strings (temperature, max_concurrency, timeout_s, ...).
    """
    if isinstance(llm, CachingJudge):
        return llm
    judge = (
        make_judge(llm if llm is not None else default_judge_spec(), **options)
        if (llm is None or isinstance(llm, str))
        else llm
    )
    if cache is True:
        directory: Path | None = default_cache_dir()
    elif cache is False or cache is None:
        directory = None
    else:
        directory = Path(cache)
    return CachingJudge(judge, directory)
