"""Settings: judge specs, provider keys and the cache location. The only module that reads the environment.

A judge is named by a spec string:

- ``openai:MODEL`` (key from ``OPENAI_API_KEY``, base URL from ``OPENAI_BASE_URL`` if set)
- ``openai:MODEL@http://localhost:11434/v1`` (any OpenAI-compatible server: Ollama, vLLM,
  llama.cpp, LM Studio; no key needed unless the server wants one)
- ``anthropic:MODEL`` (key from ``ANTHROPIC_API_KEY``, base URL from ``ANTHROPIC_BASE_URL`` if set)
- ``anthropic:MODEL@https://proxy.example/`` (an Anthropic-compatible server or gateway)
- ``offline`` (the deterministic heuristic judge: no key, no network)

With no spec, ``RAGMETRICS_JUDGE`` is used if set, else the first provider whose key is set, else
``offline``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Literal

from ragmetrics.errors import ConfigError

__all__ = [
    "DEFAULT_MODELS",
    "JUDGE_MODES",
    "JudgeSettings",
    "api_key_for",
    "default_cache_dir",
    "default_judge_spec",
    "parse_judge_spec",
    "prices_file",
]

PROVIDERS = ("openai", "anthropic", "offline")
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
BASE_URL_VARIABLES = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
"""The base-URL variables the provider SDKs read; read here instead, so that the URL is part of the
judge's name and cache key (two servers behind the same variable never share cache entries)."""
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
_INTS = ("max_tokens", "max_tokens_cap", "max_concurrency", "max_attempts", "reasks")
_FLOATS = ("temperature", "timeout_s", "backoff_initial_s", "backoff_max_s")
_OPTIONAL: dict[str, type] = {"seed": int, "requests_per_minute": float, "tokens_per_minute": float}


def _type_problem(name: str, value: object, kind: type) -> str | None:
    """Why ``value`` is not a valid ``kind`` setting (bools are not numbers; floats are finite)."""
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name} must be a whole number, got {value!r}"
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"{name} must be a finite number, got {value!r}"
    return None


JUDGE_MODES = ("auto", "tools", "json_schema", "json_object_schema", "json")
"""The structured-output modes of :attr:`JudgeSettings.mode`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeSettings:
    """How to reach and drive one judge model."""

    provider: Literal["openai", "anthropic", "offline"]
    model: str
    base_url: str | None = None
    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int = 2048
    """Completion token limit of the first attempt; doubled (up to ``max_tokens_cap``) on truncation."""
    max_tokens_cap: int = 8192
    timeout_s: float = 60.0
    """Per-request timeout."""
    max_concurrency: int = 16
    """LLM requests in flight at once for this judge (lowered automatically on 429s)."""
    max_attempts: int = 6
    """Attempts per request for transient failures (429, 5xx, timeouts, connection errors)."""
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    reasks: int = 2
    """Re-asks when the reply fails schema validation."""
    mode: Literal["auto", "tools", "json_schema", "json_object_schema", "json"] = "auto"
    """How the response schema is sent (OpenAI-compatible servers; Anthropic always uses tool use).

    ``tools``: a forced tool call, ``strict: true``. ``json_schema``: ``response_format`` of type
    ``json_schema``, ``strict: true`` (OpenAI, vLLM, Ollama). ``json_object_schema``: ``response_format``
    ``{"type": "json_object", "schema": ...}`` (llama-cpp-python's server). ``json``: plain JSON mode,
    the schema only in the prompt. ``auto`` starts with tools and, when a server rejects a form with
    HTTP 400/422, moves to the next in that order, remembering per server what worked."""
    requests_per_minute: float | None = None
    """Optional cap on requests started per minute (a token bucket; not part of the cache key)."""
    tokens_per_minute: float | None = None
    """Optional cap on prompt + completion tokens per minute (estimated before, settled after)."""

    def __post_init__(self) -> None:
        kinds: list[tuple[str, type]] = [(n, int) for n in _INTS] + [(n, float) for n in _FLOATS]
        kinds += [(n, k) for n, k in _OPTIONAL.items() if getattr(self, n) is not None]
        for name, kind in kinds:
            problem = _type_problem(name, getattr(self, name), kind)
            if problem:
                raise ConfigError(f"judge settings for '{self.provider}:{self.model}': {problem}")
        checks = [
            (self.provider in PROVIDERS, f"provider must be one of {PROVIDERS}"),
            (bool(self.model), "model must not be empty"),
            (0.0 <= self.temperature <= 2.0, "temperature must lie in [0, 2]"),
            (self.max_tokens >= 16, "max_tokens must be at least 16"),
            (self.max_tokens_cap >= self.max_tokens, "max_tokens_cap must be >= max_tokens"),
            (self.timeout_s > 0, "timeout_s must be positive"),
            (self.max_concurrency >= 1, "max_concurrency must be at least 1"),
            (self.max_attempts >= 1, "max_attempts must be at least 1"),
            (self.backoff_initial_s >= 0 and self.backoff_max_s >= 0, "backoff times must be >= 0"),
            (self.reasks >= 0, "reasks must be >= 0"),
            (
                self.mode in JUDGE_MODES,
                f"mode must be one of {', '.join(JUDGE_MODES)} (got {self.mode!r})",
            ),
            (
                self.requests_per_minute is None or self.requests_per_minute > 0,
                "requests_per_minute must be > 0",
            ),
            (self.tokens_per_minute is None or self.tokens_per_minute > 0, "tokens_per_minute must be > 0"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(f"judge settings for '{self.provider}:{self.model}': {message}")

    @property
    def spec(self) -> str:
        """The spec string naming this judge."""
        if self.provider == "offline":
            return "offline+semantic" if "minilm" in self.model else "offline"
        return f"{self.provider}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")

    def with_options(self, **changes: object) -> JudgeSettings:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def judge_option_names() -> list[str]:
    """The options a judge spec takes: every :class:`JudgeSettings` field but those the spec names."""
    return [f.name for f in fields(JudgeSettings) if f.name not in ("provider", "model", "base_url")]


def check_judge_options(options: Mapping[str, object], *, owner: str, extra: tuple[str, ...] = ()) -> None:
    """Refuse options that are no judge setting, naming them and listing the valid ones.

    Raises:
        ConfigError: An unknown option.
    """
    valid = [*judge_option_names(), *extra]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ConfigError(
            f"{owner}: unknown judge option(s) {', '.join(map(repr, unknown))}; "
            f"valid options: {', '.join(sorted(valid))}"
        )


def parse_judge_spec(spec: str, **options: object) -> JudgeSettings:
    """Turn a judge spec (``openai:MODEL[@BASE_URL]``, ``anthropic:MODEL``, ``offline``) into settings.

    ``offline+semantic`` is the offline judge with the local MiniLM model's semantic similarity
    (model ``lexical-v3+minilm``; needs the ``embeddings`` extra when the judge is built).

    Args:
        spec: The spec string.
        **options: Any :class:`JudgeSettings` field (temperature, max_concurrency, timeout_s, ...).

    Raises:
        ConfigError: The spec is malformed, names an unknown provider, or an option is unknown or invalid.
    """
    check_judge_options(options, owner=f"judge {spec!r}")
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"judge spec must be a non-empty string like 'openai:gpt-4o-mini', got {spec!r}")
    text = spec.strip()
    if text == "offline":
        return JudgeSettings(provider="offline", model="lexical-v3", **options)  # type: ignore[arg-type]
    if text == "offline+semantic":
        return JudgeSettings(provider="offline", model="lexical-v3+minilm", **options)  # type: ignore[arg-type]
    provider, sep, rest = text.partition(":")
    if not sep or provider not in ("openai", "anthropic"):
        raise ConfigError(
            f"unknown judge spec {spec!r}: use 'openai:MODEL', 'openai:MODEL@http://host:port/v1', "
            "'anthropic:MODEL', 'offline' or 'offline+semantic'"
        )
    model, base_url = rest, None
    if "@" in rest:
        model, _, base_url = rest.partition("@")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"judge spec {spec!r}: the part after '@' must be an http(s) base URL")
    model = model.strip() or DEFAULT_MODELS[provider]
    if base_url is None:
        base_url = base_url_from_env(provider)
    return JudgeSettings(provider=provider, model=model, base_url=base_url, **options)  # type: ignore[arg-type]


def base_url_from_env(provider: str) -> str | None:
    """The provider's base URL from ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``, or None when unset."""
    var = BASE_URL_VARIABLES.get(provider)
    return (os.environ.get(var) or None) if var else None


def default_judge_spec(env: Mapping[str, str] | None = None) -> str:
    """The judge used when none is named: ``RAGMETRICS_JUDGE``, else a keyed provider, else ``offline``."""
    env = os.environ if env is None else env
    if env.get("RAGMETRICS_JUDGE"):
        return env["RAGMETRICS_JUDGE"]
    if env.get("OPENAI_API_KEY"):
        return f"openai:{DEFAULT_MODELS['openai']}"
    if env.get("ANTHROPIC_API_KEY"):
        return f"anthropic:{DEFAULT_MODELS['anthropic']}"
    return "offline"


def api_key_for(settings: JudgeSettings) -> str:
    """The API key for a provider judge, from its usual environment variable.

    OpenAI-compatible servers at a custom base URL often need no key; a placeholder is sent then.

    Raises:
        ConfigError: The provider's key variable is not set (naming the variable to set).
    """
    var = KEY_VARIABLES[settings.provider]
    key = os.environ.get(var)
    if key:
        return key
    if settings.provider == "openai" and settings.base_url:
        return "not-needed"
    raise ConfigError(
        f"judge '{settings.spec}' needs an API key: set the {var} environment variable "
        "(or use --judge offline / llm='offline' to run without one)"
    )


def default_cache_dir() -> Path:
    """``RAGMETRICS_CACHE_DIR`` if set, else the platform's user cache directory for ragmetrics."""
    if os.environ.get("RAGMETRICS_CACHE_DIR"):
        return Path(os.environ["RAGMETRICS_CACHE_DIR"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("ragmetrics", appauthor=False))


def prices_file() -> Path | None:
    """A price table that overrides the bundled one: ``RAGMETRICS_PRICES`` (a JSON file), if set."""
    value = os.environ.get("RAGMETRICS_PRICES")
    return Path(value).expanduser() if value else None
