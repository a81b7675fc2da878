"""Settings: judge specs, provider keys and the cache location. The only module that reads the environment.

A judge is named by a spec string: ``openai:MODEL`` (optionally ``@URL`` for any OpenAI-compatible
server), ``anthropic:MODEL[@URL]``, ``azure:DEPLOYMENT@ENDPOINT``, ``gemini:MODEL``, ``bedrock:MODEL``,
``vertex:MODEL``, or ``offline`` (the deterministic heuristic judge: no key, no network). Keys, base
URLs and regions come from each provider's usual environment variables. With no spec,
``RAGMETRICS_JUDGE`` is used if set, else the first provider whose key is set, else ``offline``.
``RAGMETRICS_MAX_ATTEMPTS``, ``RAGMETRICS_TIMEOUT_S``, ``RAGMETRICS_EXPORT_TIMEOUT_S`` and
``RAGMETRICS_SUITE_ALLOW`` set defaults that options given in code override.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Literal

from ragmetrics._check import env_number
from ragmetrics.errors import ConfigError

__all__ = [
    "DEFAULT_MODELS",
    "EXPORT_TIMEOUT_S",
    "JUDGE_MODES",
    "JudgeSettings",
    "JUDGE_OPTION_VARIABLES",
    "SERVER_KINDS",
    "api_key_for",
    "missing_key_message",
    "aws_region",
    "azure_api_version",
    "bedrock_token_set",
    "default_cache_dir",
    "default_judge_spec",
    "embeddings_api_key",
    "export_timeout_s",
    "nothing_configured",
    "parse_judge_spec",
    "prices_file",
    "run_defaults",
    "suite_allowances",
    "user_base_urls",
    "vertex_location",
]

Provider = Literal["openai", "anthropic", "azure", "gemini", "bedrock", "vertex", "offline"]
PROVIDERS: tuple[str, ...] = Provider.__args__  # type: ignore[attr-defined]
OPENAI_WIRE = ("openai", "azure", "gemini")
"""Providers spoken to with the openai SDK (Chat Completions); the others but offline use anthropic's."""
KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "azure": "AZURE_OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
}
BASE_URL_VARIABLES = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "azure": "AZURE_OPENAI_ENDPOINT",
    "bedrock": "ANTHROPIC_BEDROCK_BASE_URL",
    "vertex": "ANTHROPIC_VERTEX_BASE_URL",
}
"""The base-URL variables the provider SDKs read; read here instead, so that the URL is part of the
judge's name and cache key (two servers behind the same variable never share cache entries)."""
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"
"""Gemini's OpenAI-compatible endpoint (``gemini:MODEL`` talks to it unless ``@URL`` names another)."""
AZURE_API_VERSION = "2024-10-21"
"""The Azure OpenAI API version used when ``OPENAI_API_VERSION`` is not set (a GA version with
structured outputs)."""
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "gemini": "gemini-2.5-flash"}
"""The model of a spec that names none (``openai:``); Azure, Bedrock and Vertex need one named."""
_INTS = ("max_tokens", "max_tokens_cap", "max_concurrency", "max_attempts", "reasks")
_FLOATS = ("temperature", "timeout_s", "backoff_initial_s", "backoff_max_s")
_OPTIONAL: dict[str, type] = {"seed": int, "requests_per_minute": float, "tokens_per_minute": float}
JUDGE_OPTION_VARIABLES = {"RAGMETRICS_MAX_ATTEMPTS": "max_attempts", "RAGMETRICS_TIMEOUT_S": "timeout_s"}
"""Environment variables giving judge option defaults (options given in code win)."""
_RUN_JUDGE_OPTIONS: ContextVar[tuple[tuple[str, object], ...]] = ContextVar("ragmetrics_judge", default=())
_RUN_SUITE_ALLOW: ContextVar[frozenset[str]] = ContextVar("ragmetrics_run_suite_allow", default=frozenset())


@contextmanager
def run_defaults(
    *, max_attempts: int | None = None, timeout_s: float | None = None, suite_allow: Iterable[str] = ()
) -> Iterator[None]:
    """Defaults for the judges and suite loads made while the block runs: a command's flags, as values.

    They reach judges built in the user's own code (eval cases, suites) too, in this thread and in the
    threads and tasks started from it with its context (``asyncio.to_thread``, ``asyncio.gather``).

    Args:
        max_attempts: Every judge's ``max_attempts`` (None: ``RAGMETRICS_MAX_ATTEMPTS``'s, or the default);
            options given in code win.
        timeout_s: Every judge's ``timeout_s`` likewise (None: ``RAGMETRICS_TIMEOUT_S``'s, or the default).
        suite_allow: Names added to ``RAGMETRICS_SUITE_ALLOW``'s (``judge_url``, ``cache``, ``settings``).
    """
    given = {"max_attempts": max_attempts, "timeout_s": timeout_s}
    options = {**dict(_RUN_JUDGE_OPTIONS.get()), **{k: v for k, v in given.items() if v is not None}}
    judge_token = _RUN_JUDGE_OPTIONS.set(tuple(options.items()))
    allow_token = _RUN_SUITE_ALLOW.set(_RUN_SUITE_ALLOW.get() | frozenset(suite_allow))
    try:
        yield
    finally:
        _RUN_SUITE_ALLOW.reset(allow_token)
        _RUN_JUDGE_OPTIONS.reset(judge_token)


def _judge_options_from_env() -> dict[str, object]:
    """The judge option defaults: :func:`run_defaults`'s, else those of :data:`JUDGE_OPTION_VARIABLES`.

    Raises:
        ConfigError: A variable holds no valid value (a whole number >= 1 / a finite number > 0).
    """
    options: dict[str, object] = dict(_RUN_JUDGE_OPTIONS.get())
    for var, name in JUDGE_OPTION_VARIABLES.items():
        if name in options:
            continue  # a command's flag: it wins over the variable (never read, so never refused)
        text = os.environ.get(var, "").strip()
        if not text:
            continue
        options[name] = env_number(var, text, whole=name == "max_attempts")
    return options


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

SERVER_KINDS = ("auto", "openai", "llama-cpp-python", "llama.cpp", "ollama", "vllm", "lmstudio")
"""The server kinds of :attr:`JudgeSettings.server`: ``auto`` detects, ``openai`` is a hosted API (or
a gateway in front of one), the rest are local servers (see :mod:`ragmetrics.judge.local`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeSettings:
    """How to reach and drive one judge model."""

    provider: Provider
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
    server: Literal["auto", "openai", "llama-cpp-python", "llama.cpp", "ollama", "vllm", "lmstudio"] = "auto"
    """What serves an OpenAI-compatible judge. A local server (every kind but ``openai``) gets the schema
    in the form it enforces while decoding, a schema whose strings and lists are bounded, ``max_tokens``
    sized from the request, one retry with room after a cut reply and no re-send after a timeout
    (:mod:`ragmetrics.judge.local`). ``auto`` asks a custom ``base_url``'s ``GET /models`` once (not a
    judge call) and reads the kind from its answer; a hosted API or an unknown answer is ``openai``."""
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
                self.server in SERVER_KINDS,
                f"server must be one of {', '.join(SERVER_KINDS)} (got {self.server!r})",
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
    """Turn a judge spec (``openai:MODEL[@BASE_URL]``, ``anthropic:MODEL``, ``azure:...``, ...) into settings.

    Also ``azure:DEPLOYMENT@URL``, ``gemini:MODEL``, ``bedrock:MODEL``, ``vertex:MODEL`` and ``offline``.

    ``offline+semantic`` is the offline judge with the local MiniLM model's semantic similarity
    (model ``lexical-v3+minilm``; needs the ``embeddings`` extra when the judge is built).

    Args:
        spec: The spec string.
        **options: Any :class:`JudgeSettings` field (temperature, max_concurrency, timeout_s, ...).

    Raises:
        ConfigError: The spec is malformed, names an unknown provider, or an option is unknown or invalid.
    """
    check_judge_options(options, owner=f"judge {spec!r}")
    options = {**_judge_options_from_env(), **options}
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"judge spec must be a non-empty string like 'openai:gpt-4o-mini', got {spec!r}")
    text = spec.strip()
    if text == "offline":
        return JudgeSettings(provider="offline", model="lexical-v3", **options)  # type: ignore[arg-type]
    if text == "offline+semantic":
        return JudgeSettings(provider="offline", model="lexical-v3+minilm", **options)  # type: ignore[arg-type]
    provider, sep, rest = text.partition(":")
    if not sep or provider not in PROVIDERS or provider == "offline":
        raise ConfigError(
            f"unknown judge spec {spec!r}: use 'openai:MODEL', 'openai:MODEL@http://host:port/v1', "
            "'anthropic:MODEL', 'azure:DEPLOYMENT@https://NAME.openai.azure.com', 'gemini:MODEL', "
            "'bedrock:MODEL', 'vertex:MODEL', 'offline' or 'offline+semantic'"
        )
    model, base_url = rest, None
    if "@" in rest:
        model, _, base_url = rest.partition("@")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"judge spec {spec!r}: the part after '@' must be an http(s) base URL")
    model = model.strip() or DEFAULT_MODELS.get(provider, "")
    if not model:
        what = "deployment" if provider == "azure" else "model"
        raise ConfigError(f"judge spec {spec!r}: name the {what}, e.g. '{provider}:NAME'")
    if base_url is None:
        base_url = base_url_from_env(provider)
    if provider == "gemini" and base_url is None:
        base_url = GEMINI_BASE_URL
    if provider == "azure" and base_url is None:
        raise ConfigError(
            f"judge spec {spec!r} names no Azure endpoint: write "
            "'azure:DEPLOYMENT@https://NAME.openai.azure.com' or set the AZURE_OPENAI_ENDPOINT variable"
        )
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


def api_key_for(settings: JudgeSettings, api_key: str | None = None) -> str:
    """The API key for a provider judge: ``api_key`` if given, else its usual environment variable.

    OpenAI-compatible servers at a custom base URL often need no key; a placeholder is sent then.
    Bedrock and Vertex take no key variable of ours (the SDK reads AWS / Google credentials): an
    empty string means "let the SDK find them".

    Raises:
        ConfigError: The provider's key variable is not set (naming the variable to set), or the key
            holds whitespace or control characters (a pasted trailing newline), which no HTTP header may
            carry: the SDK would fail with "Connection error" and httpcore's DEBUG log would show the key.
    """
    var = KEY_VARIABLES.get(settings.provider)
    if api_key:
        return _clean_key(api_key, "the api_key given")
    if var is None:
        return ""
    key = os.environ.get(var)
    if key:
        return _clean_key(key, f"the {var} environment variable")
    if settings.provider == "openai" and settings.base_url:
        return "not-needed"
    raise ConfigError(missing_key_message(settings))


def missing_key_message(settings: JudgeSettings, *, command_line: bool = False) -> str:
    """What to do about a judge with no API key, in the words of Python or (``command_line``) the CLI.

    The command line takes no key flag (a key on it would land in shell history and process lists), so
    there it names the environment variable and the flags that need no key.
    """
    var = KEY_VARIABLES.get(settings.provider, "API key")
    head = f"judge '{settings.spec}' needs an API key: set the {var} environment variable"
    if not command_line:
        return f"{head} or pass api_key=... (or llm='offline' to run without one)"
    local = (
        "; a local OpenAI-compatible server needs none: --judge openai:MODEL@http://localhost:11434/v1"
        if settings.provider == "openai"
        else ""
    )
    return f"{head} (e.g. export {var}=...), or pass --judge offline to score without one{local}"


def embeddings_api_key(api_key: str | None = None) -> str | None:
    """The key for OpenAI embeddings: ``api_key`` or ``OPENAI_API_KEY``, checked as judge keys are.

    None when neither is set (the SDK then says that a key is missing).

    Raises:
        ConfigError: The key holds whitespace or control characters (naming where it came from).
    """
    if api_key:
        return _clean_key(api_key, "the api_key given")
    key = os.environ.get("OPENAI_API_KEY")
    return _clean_key(key, "the OPENAI_API_KEY environment variable") if key else None


def _clean_key(key: str, where: str) -> str:
    """``key`` when it is one printable token; a ConfigError naming ``where`` (never the key) otherwise."""
    bad = [c for c in key if c.isspace() or not c.isprintable()]
    if bad:
        names = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", " ": "a space"}
        what = names.get(bad[0], f"the character U+{ord(bad[0]):04X}")
        place = "at its end" if key[-1:] in bad else ("at its start" if key[:1] in bad else "inside it")
        raise ConfigError(
            f"{where} holds {what} {place} ({len(key)} characters): an API key is one token with no "
            "whitespace or control characters; set it again without them (e.g. no trailing newline)"
        )
    return key


def azure_api_version() -> str:
    """The Azure OpenAI API version: ``OPENAI_API_VERSION`` (as the SDK reads it), else the default."""
    return os.environ.get("OPENAI_API_VERSION") or AZURE_API_VERSION


def aws_region() -> str | None:
    """The AWS region for Bedrock: ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` (None: boto3's profile says)."""
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None


def bedrock_token_set() -> bool:
    """Whether ``AWS_BEARER_TOKEN_BEDROCK`` (a Bedrock API key, read by the SDK itself) is set."""
    return bool(os.environ.get("AWS_BEARER_TOKEN_BEDROCK"))


def vertex_location() -> tuple[str | None, str | None]:
    """Vertex AI's (region, project) from ``CLOUD_ML_REGION`` and ``ANTHROPIC_VERTEX_PROJECT_ID``."""
    return os.environ.get("CLOUD_ML_REGION") or None, os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID") or None


def nothing_configured() -> bool:
    """True when no judge was named anywhere: no ``RAGMETRICS_JUDGE`` and no provider key variable."""
    return default_judge_spec() == "offline" and not os.environ.get("RAGMETRICS_JUDGE")


def default_cache_dir() -> Path:
    """``RAGMETRICS_CACHE_DIR`` if set, else the platform's user cache directory for ragmetrics."""
    if os.environ.get("RAGMETRICS_CACHE_DIR"):
        return Path(os.environ["RAGMETRICS_CACHE_DIR"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("ragmetrics", appauthor=False))


EXPORT_TIMEOUT_S = 30.0
"""Seconds an export to MLflow may take in all (``RAGMETRICS_EXPORT_TIMEOUT_S`` sets another)."""


def export_timeout_s() -> float:
    """``RAGMETRICS_EXPORT_TIMEOUT_S`` if set, else :data:`EXPORT_TIMEOUT_S`.

    Raises:
        ConfigError: The variable is not a finite number > 0.
    """
    text = os.environ.get("RAGMETRICS_EXPORT_TIMEOUT_S", "").strip()
    if not text:
        return EXPORT_TIMEOUT_S
    return env_number("RAGMETRICS_EXPORT_TIMEOUT_S", text)


def prices_file() -> Path | None:
    """A price table that overrides the bundled one: ``RAGMETRICS_PRICES`` (a JSON file), if set."""
    value = os.environ.get("RAGMETRICS_PRICES")
    return Path(value).expanduser() if value else None


PROVIDER_HOSTS: dict[str, tuple[str, ...]] = {
    "openai": ("api.openai.com",),
    "anthropic": ("api.anthropic.com",),
    "gemini": ("generativelanguage.googleapis.com",),
    "bedrock": ("bedrock-runtime.*.amazonaws.com",),
    "vertex": ("aiplatform.googleapis.com", "*-aiplatform.googleapis.com"),
}
"""The providers' own API hosts (``*`` is one DNS label): where their keys may always go. Azure has
none: each resource has its own endpoint, which the user names (``AZURE_OPENAI_ENDPOINT``, ``@URL``)."""
SUITE_ALLOWANCES = ("judge_url", "cache", "settings")
"""What ``RAGMETRICS_SUITE_ALLOW`` may list (see :mod:`ragmetrics.regression.suite_trust`)."""


def suite_allowances() -> frozenset[str]:
    """What the user lets suite files name: ``RAGMETRICS_SUITE_ALLOW``'s list and :func:`run_defaults`'s.

    Raises:
        ConfigError: The variable lists something else than ``judge_url``, ``cache``, ``settings``.
    """
    names = {n.strip() for n in os.environ.get("RAGMETRICS_SUITE_ALLOW", "").split(",") if n.strip()}
    unknown = sorted(names - set(SUITE_ALLOWANCES))
    if unknown:
        raise ConfigError(
            f"environment variable RAGMETRICS_SUITE_ALLOW lists {', '.join(map(repr, unknown))}; "
            f"it takes a comma list of {', '.join(SUITE_ALLOWANCES)}"
        )
    return frozenset(names) | _RUN_SUITE_ALLOW.get()


def user_base_urls(provider: str) -> tuple[str, ...]:
    """The base URLs the user configured for ``provider`` in the environment.

    Its base-URL variable (``OPENAI_BASE_URL``...) and the ``@URL`` of ``RAGMETRICS_JUDGE`` when that
    names the same provider (``openai`` also for embeddings).
    """
    urls = [base_url_from_env(provider)]
    judge = os.environ.get("RAGMETRICS_JUDGE", "")
    if judge.partition(":")[0].strip() == provider and "@" in judge:
        urls.append(judge.partition("@")[2].strip())
    return tuple(u for u in urls if u)
