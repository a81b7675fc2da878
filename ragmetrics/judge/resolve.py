"""The one place an ``llm`` argument becomes a judge.

:func:`llm_form` classifies what ``llm=`` may be (a spec string or None, a Judge, an async openai /
anthropic SDK client, a LangChain chat model or LlamaIndex LLM) and refuses anything else, and the
keywords that do not fit the form; each of those messages is written here only. :func:`make_judge`
builds the bare judge a spec names, :func:`resolve_judge` the caching judge for any form, and
:class:`LazyJudge` checks a form at once and resolves it on first use, once (what a metric holds).

Ownership: a judge ragmetrics builds (from a spec or around a client) is closed by ragmetrics after
each run; a Judge object or SDK client the user passed in is never closed by it.
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ragmetrics.errors import ConfigError, OfflineJudgeWarning
from ragmetrics.judge.base import Judge
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.judge.pricing import PriceTable, load_prices
from ragmetrics.settings import (
    check_judge_options,
    default_cache_dir,
    default_judge_spec,
    nothing_configured,
    parse_judge_spec,
    prices_file,
)

__all__ = ["OFFLINE_DEFAULT_MESSAGE", "LazyJudge", "LlmForm", "llm_form", "make_judge", "resolve_judge"]

LlmForm: TypeAlias = Literal["spec", "judge", "client", "framework"]
"""What an ``llm`` argument is: a spec string or None (the default), a Judge, an SDK client, a framework
model."""
Cache: TypeAlias = "bool | str | Path"
"""True for the default cache folder, a path for another, False for memory only."""

OFFLINE_DEFAULT_MESSAGE = (
    "no judge configured, so ragmetrics is scoring with the offline heuristic judge (lexical overlap, "
    "not an LLM). To use an LLM judge set OPENAI_API_KEY or ANTHROPIC_API_KEY (or RAGMETRICS_JUDGE to a "
    "spec such as 'azure:DEPLOYMENT@https://NAME.openai.azure.com'), or pass llm='openai:gpt-4o-mini' "
    "or llm=<your AsyncOpenAI / AsyncAnthropic client>; pass llm='offline' to keep the heuristic "
    "without this warning"
)
_ACCESS = ("api_key", "base_url", "model")
"""The keywords that say how to reach a judge, kept apart from its settings (the key is never in a repr)."""


def llm_form(
    llm: object,
    *,
    owner: str = "resolve_judge()",
    api_key: object = None,
    base_url: object = None,
    model: object = None,
) -> LlmForm:
    """What ``llm`` is, checking that the access keywords given fit it.

    Args:
        llm: The ``llm`` argument.
        owner: Who took it (the metric or function), named first in every message.
        api_key: The provider key, for a spec string only.
        base_url: The server's base URL, for a spec string only.
        model: The model (Azure: the deployment), for a client object only.

    Raises:
        ConfigError: ``llm`` is none of the accepted forms (or a synchronous SDK client), an access
            keyword is not a string, or one does not fit the form of ``llm``.
    """
    keywords = (("api_key", api_key), ("base_url", base_url), ("model", model))
    given = {name: value for name, value in keywords if value is not None}
    for name, value in given.items():
        if not isinstance(value, str):
            raise ConfigError(f"{owner}: {name} must be a string, got {type(value).__name__}")
    names = ", ".join(given)
    if llm is None or isinstance(llm, str):
        if "model" in given:
            raise ConfigError(
                f"{owner}: model= goes with a client object; a spec string names the model ('openai:MODEL')"
            )
        return "spec"
    if isinstance(llm, Judge):
        if given:
            raise ConfigError(
                f"{owner}: llm is a ready Judge ({type(llm).__name__}); {names} cannot be applied to it "
                "(configure the judge itself)"
            )
        return "judge"
    from ragmetrics.judge.providers.clients import async_twin, client_provider
    from ragmetrics.judge.providers.frameworks import framework_kind

    if framework_kind(llm) is not None:
        if given:
            raise ConfigError(
                f"{owner}: a {type(llm).__name__} carries its own key, URL and model; {names} cannot be "
                "applied to it (set them when creating it)"
            )
        return "framework"
    twin = async_twin(llm)
    if twin is not None:
        raise ConfigError(
            f"{owner}: llm is a synchronous {type(llm).__name__} client; pass its async twin ({twin}) "
            "with the same arguments"
        )
    if client_provider(llm) is None:
        raise ConfigError(
            f"{owner}: llm must be a judge spec string, a Judge, an async openai / anthropic client "
            "(AsyncOpenAI, AsyncAzureOpenAI, AsyncAnthropic, AsyncAnthropicBedrock, AsyncAnthropicVertex), "
            f"a LangChain chat model or a LlamaIndex LLM, got {type(llm).__name__}"
        )
    if "api_key" in given or "base_url" in given:
        raise ConfigError(
            f"{owner}: a {type(llm).__name__} client carries its own key and URL; set api_key / base_url "
            "when creating the client"
        )
    return "client"


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
    table = _prices(prices)
    if settings.provider in ("anthropic", "bedrock", "vertex"):
        from ragmetrics.judge.providers.anthropic import AnthropicJudge

        return AnthropicJudge(settings, prices=table, api_key=api_key, require_key=require_key)
    from ragmetrics.judge.providers.openai_compat import OpenAIJudge

    return OpenAIJudge(settings, prices=table, api_key=api_key, require_key=require_key)


def _prices(prices: PriceTable | None) -> PriceTable | None:
    """The price table: the one given, else ``RAGMETRICS_PRICES``'s file, else None (the bundled one)."""
    path = prices_file()
    if prices is None and path is not None:
        return load_prices(path)
    return prices


def resolve_judge(
    llm: Any = None,
    *,
    cache: Cache = True,
    api_key: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    owner: str = "resolve_judge()",
    **options: Any,
) -> CachingJudge:
    """A caching judge for a spec string, a provider SDK client, a framework model, a Judge, or the default.

    Args:
        llm: A spec string; an ``openai.AsyncOpenAI`` / ``AsyncAzureOpenAI`` / ``anthropic.AsyncAnthropic``
            / ``AsyncAnthropicBedrock`` / ``AsyncAnthropicVertex`` client; a LangChain chat model or a
            LlamaIndex LLM (or a RAGAS wrapper of one, see
            :mod:`~ragmetrics.judge.providers.frameworks`); a Judge (a caching one is returned as it
            is); or None for the default (``RAGMETRICS_JUDGE``, a keyed provider, else ``offline`` with
            an :class:`~ragmetrics.errors.OfflineJudgeWarning`).
        cache: True for the default cache folder, a path for another, False for memory only.
        api_key: The provider key for a spec string (default: its environment variable).
        base_url: The base URL for a spec string (as ``@URL``).
        model: The model for a client object (Azure: the deployment).
        owner: Who asks, named first in the error messages.
        **options: Judge settings (temperature, max_concurrency, timeout_s, ...).

    Raises:
        ConfigError: A bad spec or option, a missing key, or keywords that do not fit the ``llm`` form.
    """
    form = llm_form(llm, owner=owner, api_key=api_key, base_url=base_url, model=model)
    if form == "judge":
        if isinstance(llm, CachingJudge):
            return llm
        return CachingJudge(llm, _cache_dir(cache), owns_inner=False)  # the user's: never closed by us
    if form == "spec":
        if llm is None:
            llm = default_judge_spec()
            if llm == "offline" and nothing_configured() and api_key is None and base_url is None:
                warnings.warn(OfflineJudgeWarning(OFFLINE_DEFAULT_MESSAGE), stacklevel=2)
        judge = make_judge(llm, api_key=api_key, base_url=base_url, **options)
        return CachingJudge(judge, _cache_dir(cache), owns_inner=True)
    prices = _prices(options.pop("prices", None))
    if form == "framework":
        from ragmetrics.judge.providers.frameworks import judge_for_framework

        return CachingJudge(judge_for_framework(llm, prices=prices, **options), _cache_dir(cache))
    from ragmetrics.judge.providers.clients import judge_for_client

    judge = judge_for_client(llm, model=model, prices=prices, **options)  # a copy per loop: ours to close
    return CachingJudge(judge, _cache_dir(cache), owns_inner=True)


def _cache_dir(cache: Cache | None) -> Path | None:
    if cache is True:
        return default_cache_dir()
    if cache is False or cache is None:
        return None
    return Path(cache)


class LazyJudge:
    """An ``llm`` argument checked at once and resolved into a caching judge on first use, once."""

    def __init__(self, llm: object, *, owner: str, cache: Cache = True, **judge_options: Any) -> None:
        """Check ``llm`` and the judge options now; build nothing.

        Args:
            llm: Any form :func:`resolve_judge` takes.
            owner: Who holds it (a metric's name), named first in the error messages.
            cache: As for :func:`resolve_judge`.
            **judge_options: Judge settings, plus ``prices``, ``api_key`` and ``base_url`` (spec
                strings) and ``model`` (clients); an access keyword given as None counts as not given.

        Raises:
            ConfigError: ``llm`` is no accepted form; a keyword does not fit it; an unknown or invalid
                judge option; a malformed spec.
        """
        options = dict(judge_options)
        access = {k: options.pop(k) for k in _ACCESS if k in options}
        access = {k: v for k, v in access.items() if v is not None}
        llm_form(llm, owner=owner, **access)
        check_judge_options(options, owner=owner, extra=("prices",))
        if llm is None or isinstance(llm, str):  # the default judge is named later: check the values now
            parse_judge_spec(llm or "offline", **{k: v for k, v in options.items() if k != "prices"})
        self.llm = llm
        """The ``llm`` argument as given."""
        self._cache = cache
        self._owner = owner
        self._access: dict[str, str] = access
        """api_key / base_url / model: kept apart from the settings, so the key is never in a repr."""
        self._options = options
        self.resolved: CachingJudge | None = None
        """The caching judge once resolved (or given by :meth:`use`), else None."""

    @property
    def judge(self) -> CachingJudge:
        """The caching judge, resolved on first use (which is when a missing API key is reported)."""
        if self.resolved is None:
            self.resolved = resolve_judge(
                self.llm, cache=self._cache, owner=self._owner, **self._access, **self._options
            )
        return self.resolved

    def use(self, judge: CachingJudge) -> None:
        """Answer with ``judge`` from now on (a judge shared with other metrics)."""
        self.resolved = judge

    def key(self) -> tuple[object, ...]:
        """What identifies the judge: holders with equal keys can share one judge object."""
        llm = self.llm if self.llm is None or isinstance(self.llm, str) else id(self.llm)
        cache = str(self._cache) if not isinstance(self._cache, bool) else self._cache
        access = tuple(
            (k, hashlib.sha256(v.encode()).hexdigest() if k == "api_key" else v)
            for k, v in sorted(self._access.items())
        )
        return (llm, cache, access, tuple(sorted((k, repr(v)) for k, v in self._options.items())))

    @property
    def spec(self) -> str | None:
        """The spec string given, else a Judge's own spec, else None."""
        if isinstance(self.llm, str):
            return self.llm
        spec = getattr(getattr(self.llm, "info", None), "spec", None)
        return spec if isinstance(spec, str) else None
