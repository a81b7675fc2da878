"""What a suite file may name: judge hosts, cache folders and cost settings.

A suite file is data nobody vetted (it arrives with a pull request), so unless the user allows more:
an ``llm`` or ``embeddings`` spec may name only the provider's own host or a base URL the user
configured (``--allow-judge-url``); a ``cache:`` path must lie inside the user's cache folder
(``--allow-suite-cache``); settings that multiply calls, tokens or time must lie in
:data:`SUITE_RANGES`, size caps may only be lowered and ``prices`` may not be set
(``--allow-suite-settings``). ``RAGMETRICS_SUITE_ALLOW=judge_url,cache,settings`` allows the same from
the environment. A refusal is a :class:`~ragmetrics.errors.ConfigError` naming the file, the field
and the flag.
"""

from __future__ import annotations

import fnmatch
import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from ragmetrics.errors import ConfigError
from ragmetrics.metrics.evaluators.factory import EVALUATOR_TYPES
from ragmetrics.settings import (
    PROVIDER_HOSTS,
    default_cache_dir,
    default_judge_spec,
    suite_allowances,
    user_base_urls,
)

__all__ = ["SUITE_CAPS", "SUITE_RANGES", "SuiteTrust"]

SUITE_RANGES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "reasks": (0, 3),  # re-asks per request on invalid output (default 2)
        "max_attempts": (1, 10),  # attempts per request on 429/5xx/timeouts (default 6)
        "context_budget_tokens": (2000, 1_000_000),  # below 2000 one long case splits into many calls
        "timeout_s": (0, 300),  # seconds per LLM request (default 60)
        "max_concurrency": (1, 64),  # requests in flight per judge (default 16)
        "max_tokens": (16, 8192),  # completion tokens of a first attempt (default 2048)
        "max_tokens_cap": (16, 16384),  # completion tokens after truncation doublings (default 8192)
        "backoff_initial_s": (0, 10),
        "backoff_max_s": (0, 120),
        "requests_per_minute": (10, math.inf),  # a lower cap holds a CI job for hours
        "tokens_per_minute": (10_000, math.inf),
        "cache_size": (0, 100_000),  # vectors kept in memory per cosine_similarity evaluator
        "timeout": (0, 30),  # seconds: regex (default 1) and custom JavaScript (default 5)
        "memory_limit_mb": (1, 256),  # custom JavaScript's heap (default 64)
    }
)
"""Inclusive ranges of the settings a suite may give without ``allow_suite_settings``."""
SUITE_CAPS = ("max_chars", "max_depth")
"""Size caps a suite may lower but not raise past the evaluator's default (they bound CPU and memory)."""
_NEVER = ("prices",)
"""Settings a suite never gives without ``allow_suite_settings`` (prices decide what a budget counts)."""
_ALLOW_HINT = {
    "judge_url": "--allow-judge-url (allow_judge_url=True in Python, RAGMETRICS_SUITE_ALLOW=judge_url)",
    "cache": "--allow-suite-cache (allow_suite_cache=True in Python, RAGMETRICS_SUITE_ALLOW=cache)",
    "settings": "--allow-suite-settings (allow_suite_settings=True in Python, "
    "RAGMETRICS_SUITE_ALLOW=settings)",
}


def _origin(url: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) of an http(s) URL, the port filled in; None when it is not one."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    return scheme, parts.hostname.lower().rstrip("."), port or (443 if scheme == "https" else 80)


def _host_matches(host: str, pattern: str) -> bool:
    """Whether ``host`` matches ``pattern`` label by label (``*`` never spans a dot)."""
    labels, wanted = host.split("."), pattern.split(".")
    return len(labels) == len(wanted) and all(map(fnmatch.fnmatchcase, labels, wanted))


def _provider_of(spec: str, *, embeddings: bool) -> str:
    """The provider whose key a spec would send: embeddings specs are all OpenAI's wire."""
    return "openai" if embeddings else spec.partition(":")[0].strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class SuiteTrust:
    """What one suite load lets the file name beyond the defaults (see the module docstring)."""

    judge_url: bool = False
    """Any judge or embedding host."""
    cache: bool = False
    """Cache folders outside the user's cache folder."""
    settings: bool = False
    """Settings outside :data:`SUITE_RANGES`, raised size caps, and ``prices``."""
    user_urls: tuple[tuple[str, str], ...] = ()
    """(provider, base URL) pairs the user gave in Python (a spec string passed as ``llm=``)."""

    @classmethod
    def resolve(
        cls,
        *,
        allow_judge_url: bool | None = None,
        allow_suite_cache: bool | None = None,
        allow_suite_settings: bool | None = None,
        llm: Any = None,
        embeddings: Any = None,
    ) -> SuiteTrust:
        """The trust of one load: the arguments given, else ``RAGMETRICS_SUITE_ALLOW``.

        Args:
            allow_judge_url: Let the file name any judge or embedding host (None: the environment's).
            allow_suite_cache: Let it name cache folders anywhere (None: the environment's).
            allow_suite_settings: Let it set any setting (None: the environment's).
            llm: The judge the user gave in Python; a spec's ``@URL`` counts as configured by the user.
            embeddings: The embedder the user gave in Python (likewise).

        Raises:
            ConfigError: ``RAGMETRICS_SUITE_ALLOW`` lists an unknown name.
        """
        env = suite_allowances()
        given = {"judge_url": allow_judge_url, "cache": allow_suite_cache, "settings": allow_suite_settings}
        flags = {k: bool(v) if v is not None else k in env for k, v in given.items()}
        urls = []
        for value, is_embedder in ((llm, False), (embeddings, True)):
            if isinstance(value, str) and "@" in value:
                urls.append((_provider_of(value, embeddings=is_embedder), value.partition("@")[2].strip()))
        return cls(**flags, user_urls=tuple(urls))

    # -- hosts ----------------------------------------------------------------------------------
    def _host_allowed(self, provider: str, url: str) -> bool:
        origin = _origin(url)
        if origin is None:
            return True  # not an http(s) URL: the spec parser refuses it with its own message
        if (
            origin[0] == "https"
            and origin[2] == 443
            and any(_host_matches(origin[1], pattern) for pattern in PROVIDER_HOSTS.get(provider, ()))
        ):
            return True
        configured = [*user_base_urls(provider), *(u for p, u in self.user_urls if p == provider)]
        return any(_origin(u) == origin for u in configured)

    def check_spec(self, spec: Any, where: str, *, embeddings: bool = False, base_url: Any = None) -> None:
        """Refuse a spec (or a ``base_url``) naming a host the user did not configure.

        Raises:
            ConfigError: The host is neither the provider's own nor one the user configured.
        """
        if self.judge_url or not isinstance(spec, str):
            return
        urls = [spec.partition("@")[2].strip()] if "@" in spec else []
        if isinstance(base_url, str) and base_url.strip():
            urls.append(base_url.strip())
        provider = _provider_of(spec, embeddings=embeddings)
        for url in urls:
            if not self._host_allowed(provider, url):
                origin = _origin(url)
                host = f"{origin[1]}:{origin[2]}" if origin else url
                what = "embeddings" if embeddings else "llm"
                variable = "OPENAI_BASE_URL" if provider == "openai" else f"{provider}'s base-URL variable"
                raise ConfigError(
                    f"{where}: {what} {spec!r} sends requests (and the provider's API key) to {host}, which "
                    f"is neither {provider}'s own host nor a base URL you configured; a suite file may not "
                    f"choose where a key goes. Set {variable} to that URL, or pass {_ALLOW_HINT['judge_url']}"
                )

    # -- entries --------------------------------------------------------------------------------
    def check_entry(self, type_name: Any, options: Mapping[str, Any], where: str) -> None:
        """Check one evaluator entry's own options: hosts, cache folder, cost settings.

        Raises:
            ConfigError: An option the file may not give without the user's consent.
        """
        if "llm" in options or "base_url" in options:
            self.check_spec(
                options.get("llm") or default_judge_spec(), where, base_url=options.get("base_url")
            )
        if "embeddings" in options:
            self.check_spec(options["embeddings"], where, embeddings=True)
        if "cache" in options:
            self.check_cache(options["cache"], where)
        if not self.settings:
            problems = self._setting_problems(type_name, options)
            if problems:
                raise ConfigError(
                    f"{where}: {'; '.join(problems)}: a suite file may not ask for that much without your "
                    f"consent; change the value or pass {_ALLOW_HINT['settings']}"
                )

    def check_cache(self, value: Any, where: str) -> None:
        """Refuse a cache folder outside the user's cache folder.

        Raises:
            ConfigError: ``value`` is a path outside :func:`~ragmetrics.settings.default_cache_dir`.
        """
        if self.cache or isinstance(value, bool) or not isinstance(value, (str, Path)):
            return
        root = default_cache_dir().expanduser().resolve()
        target = Path(value).expanduser().resolve()
        if target != root and root not in target.parents:
            raise ConfigError(
                f"{where}: cache {str(value)!r} is outside your cache folder {root}; a suite file may "
                f"not point a cache at a folder of its choosing (use cache: true or false), or pass "
                f"{_ALLOW_HINT['cache']}"
            )

    @staticmethod
    def _setting_problems(type_name: Any, options: Mapping[str, Any]) -> list[str]:
        problems = [f"{name} (a suite may not set it)" for name in _NEVER if name in options]
        for name, value in options.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue  # not a number: the constructor refuses it with its own message
            if name in SUITE_RANGES:
                low, high = SUITE_RANGES[name]
                if not low <= value <= high:
                    shown = f"{low:g}-{high:g}" if math.isfinite(high) else f"{low:g} or more"
                    problems.append(f"{name}: {value:g} is outside {shown}")
            elif name in SUITE_CAPS and isinstance(type_name, str) and type_name in EVALUATOR_TYPES:
                default = inspect.signature(EVALUATOR_TYPES[type_name].__init__).parameters.get(name)
                if default is not None and isinstance(default.default, int) and value > default.default:
                    problems.append(f"{name}: {value:g} raises the default cap {default.default:g}")
        return problems
