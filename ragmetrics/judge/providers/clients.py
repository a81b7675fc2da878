"""Judges around a user's own provider SDK client (``llm=openai.AsyncOpenAI(...)`` and the like).

A client is recognised by its class's module and name, so nothing here imports the SDKs; this module is
loaded only when :mod:`ragmetrics.judge.resolve` meets an ``llm`` that is no spec string and no Judge.
The judge uses a per-loop copy of the client (see :mod:`ragmetrics.judge.providers._provider`) and never
closes the user's object; what it records as the judge's identity (provider, model, base URL) comes
from the client, never its key.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.judge.providers._provider import ProviderJudge
from ragmetrics.settings import DEFAULT_MODELS, JudgeSettings, check_judge_options

__all__ = ["CLIENT_KINDS", "async_twin", "client_provider", "judge_for_client"]

CLIENT_KINDS = {
    ("openai", "AsyncAzureOpenAI"): "azure",
    ("openai", "AsyncOpenAI"): "openai",
    ("anthropic", "AsyncAnthropicBedrock"): "bedrock",
    ("anthropic", "AsyncAnthropicVertex"): "vertex",
    ("anthropic", "AsyncAnthropic"): "anthropic",
}
"""(SDK package, class name) of each async client taken as ``llm=``, and the provider it speaks to."""
_SYNC_TWINS = {
    ("openai", "OpenAI"): "AsyncOpenAI",
    ("openai", "AzureOpenAI"): "AsyncAzureOpenAI",
    ("anthropic", "Anthropic"): "AsyncAnthropic",
    ("anthropic", "AnthropicBedrock"): "AsyncAnthropicBedrock",
    ("anthropic", "AnthropicVertex"): "AsyncAnthropicVertex",
}
_DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
"""The SDKs' default base URLs: a client pointed there is named like the spec (no ``@URL``)."""


def _kind(obj: object, table: dict[tuple[str, str], str]) -> str | None:
    for cls in type(obj).__mro__:
        found = table.get((cls.__module__.split(".", 1)[0], cls.__name__))
        if found is not None:
            return found
    return None


def client_provider(obj: object) -> str | None:
    """The provider an async SDK client speaks to (``openai``, ``azure``, ...), or None for other objects."""
    return _kind(obj, CLIENT_KINDS)


def async_twin(obj: object) -> str | None:
    """The async client class to pass instead of ``obj``, a synchronous SDK client; None for other objects."""
    return _kind(obj, _SYNC_TWINS)


def judge_for_client(client: Any, *, model: str | None = None, **options: Any) -> ProviderJudge:
    """A judge that talks through ``client`` (an async openai or anthropic SDK client).

    Args:
        client: ``AsyncOpenAI``, ``AsyncAzureOpenAI``, ``AsyncAnthropic``, ``AsyncAnthropicBedrock`` or
            ``AsyncAnthropicVertex``.
        model: The model (Azure: the deployment; default: the client's deployment, else the
            provider's default model; Bedrock and Vertex need one).
        **options: :class:`~ragmetrics.settings.JudgeSettings` fields and ``prices``.

    Raises:
        ConfigError: No model where one is needed, or a bad option.
    """
    check_judge_options(options, owner="llm", extra=("prices",))
    provider = client_provider(client)
    assert provider is not None, "resolve_judge() takes only SDK clients here"
    if model is None:
        model = getattr(client, "_azure_deployment", None) if provider == "azure" else None
        model = model or DEFAULT_MODELS.get(provider)
    if not isinstance(model, str) or not model.strip():
        what = "deployment" if provider == "azure" else "model"
        raise ConfigError(
            f"llm: a {type(client).__name__} client needs the {what} named: pass model='...' with it"
        )
    base_url = str(getattr(client, "base_url", "") or "").rstrip("/") or None
    if base_url == _DEFAULT_URLS.get(provider):
        base_url = None
    prices = options.pop("prices", None)
    settings = JudgeSettings(provider=provider, model=model.strip(), base_url=base_url, **options)  # type: ignore[arg-type]
    if provider in ("openai", "azure"):
        from ragmetrics.judge.providers.openai_compat import OpenAIJudge

        return OpenAIJudge(settings, prices=prices, client=client)
    from ragmetrics.judge.providers.anthropic import AnthropicJudge

    return AnthropicJudge(settings, prices=prices, client=client)
