"""The Anthropic judge: instructor's tool mode over the official ``anthropic`` SDK.

As with OpenAI, the SDK's own retries are off and transient failures (429, 529 overloaded, 5xx,
timeouts, dropped connections) go through :mod:`ragmetrics.judge.retry`. The tool's input schema is
the per-request response schema (the contract is in it); no validation ``context`` is passed to
instructor, which would otherwise render every message as a Jinja2 template.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.judge._instructor import classify_call_error, prepared, reask_policy, total_tokens
from ragmetrics.judge._provider import CallOutcome, ProviderJudge
from ragmetrics.judge.base import JudgeRequest
from ragmetrics.judge.retry import Failure
from ragmetrics.settings import JudgeSettings, api_key_for

__all__ = ["AnthropicJudge"]


def sdk_takes_temperature() -> bool:
    """Whether the installed ``anthropic`` SDK still sends a sampling temperature (2.0 dropped it).

    Read from the package's version, without importing it: constructing a judge must stay cheap
    (the SDK is imported on the first call). A test checks this against the SDK's real signature.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        major = version("anthropic").split(".", 1)[0]
    except PackageNotFoundError:  # not installed: the first call says so
        return True
    return not major.isdigit() or int(major) < 2


class AnthropicJudge(ProviderJudge):
    """A judge on the Anthropic Messages API."""

    def __init__(self, settings: JudgeSettings, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self._api_key = api_key_for(settings)
        if not sdk_takes_temperature():  # the model's own default applies; say so rather than claim 0
            self.info = self.info.model_copy(update={"temperature": None})

    def __repr__(self) -> str:
        return f"AnthropicJudge({self.info.spec!r})"

    def _make_client(self) -> Any:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(
            api_key=self._api_key,
            base_url=self.settings.base_url,
            max_retries=0,
            timeout=self.settings.timeout_s,
        )

    async def _call(self, client: Any, request: JudgeRequest, max_tokens: int) -> CallOutcome:
        import instructor

        wrapped = instructor.from_anthropic(client, mode=instructor.Mode.TOOLS)
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        messages = [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"]
        policy = reask_policy(self.settings.reasks)
        extra: dict[str, Any] = {}
        if self.info.temperature is not None:
            extra["temperature"] = self.info.temperature
        value, completion = await wrapped.messages.create_with_completion(
            model=self.settings.model,
            system=system,
            messages=messages,
            response_model=prepared(request.response_model),
            max_retries=policy,
            max_tokens=max_tokens,
            **extra,
        )
        prompt, completion_tokens = total_tokens(value, completion)
        attempts = int(policy.statistics.get("attempt_number", 1))
        return CallOutcome(value, prompt, completion_tokens, attempts)

    def _classify(self, exc: BaseException) -> Failure | None:
        import anthropic

        return classify_call_error(
            exc,
            anthropic,
            host=self.settings.base_url or "api.anthropic.com",
            timeout_s=self.settings.timeout_s,
            secret=self._api_key,
            hints={
                401: "check the ANTHROPIC_API_KEY environment variable",
                404: f"check the model name in '{self.info.spec}'",
            },
            text=lambda e: str(getattr(e, "message", e)),
        )
