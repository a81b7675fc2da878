"""The OpenAI judge, for OpenAI itself and any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio).

Structured output goes through instructor over the official ``openai`` SDK. The SDK's own retries are
off (``max_retries=0``): transient failures are retried by :mod:`ragmetrics.judge.retry` with backoff
and Retry-After. ``mode="auto"`` starts with tool calling and, if a server rejects tools (HTTP 400
naming tools), falls back to JSON mode and remembers that for this judge.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.judge._instructor import classify_call_error, prepared, reask_policy, total_tokens
from ragmetrics.judge._provider import CallOutcome, ProviderJudge
from ragmetrics.judge.base import JudgeRequest
from ragmetrics.judge.retry import Failure
from ragmetrics.settings import JudgeSettings, api_key_for

__all__ = ["OpenAIJudge"]


class OpenAIJudge(ProviderJudge):
    """A judge on the OpenAI Chat Completions API (or a compatible server)."""

    def __init__(self, settings: JudgeSettings, *, require_key: bool = True, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        # Raises ConfigError naming the variable; ``require_key=False`` (estimates, which call
        # nothing) defers that to the first call.
        self._api_key = api_key_for(settings) if require_key else None
        self._mode = "tools" if settings.mode in ("auto", "tools") else "json"

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIJudge({self.info.spec!r}, mode={self._mode!r})"

    def _make_client(self) -> Any:
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            api_key=self._api_key or api_key_for(self.settings),
            base_url=self.settings.base_url,
            max_retries=0,
            timeout=self.settings.timeout_s,
        )

    async def _call(self, client: Any, request: JudgeRequest, max_tokens: int) -> CallOutcome:
        import instructor

        mode = instructor.Mode.TOOLS if self._mode == "tools" else instructor.Mode.JSON
        wrapped = instructor.from_openai(client, mode=mode)
        extra: dict[str, Any] = {}
        if self.settings.seed is not None:
            extra["seed"] = self.settings.seed
        policy = reask_policy(self.settings.reasks)
        try:
            value, completion = await wrapped.chat.completions.create_with_completion(
                model=self.settings.model,
                messages=[{"role": m.role, "content": m.content} for m in request.messages],
                response_model=prepared(request.response_model),
                max_retries=policy,
                context=dict(request.context),
                temperature=self.settings.temperature,
                max_tokens=max_tokens,
                **extra,
            )
        except Exception as exc:
            if self._should_fall_back(exc):
                self._mode = "json"
                return await self._call(client, request, max_tokens)
            raise
        prompt, completion_tokens = total_tokens(value, completion)
        attempts = int(policy.statistics.get("attempt_number", 1))
        return CallOutcome(value, prompt, completion_tokens, attempts)

    def _should_fall_back(self, exc: BaseException) -> bool:
        if self.settings.mode != "auto" or self._mode != "tools":
            return False
        import openai

        cause = exc.__cause__ if not isinstance(exc, openai.APIStatusError) else exc
        return isinstance(cause, openai.BadRequestError) and any(
            word in str(cause).lower() for word in ("tool", "function")
        )

    def _classify(self, exc: BaseException) -> Failure | None:
        import openai

        return classify_call_error(
            exc,
            openai,
            host=self.settings.base_url or "api.openai.com",
            timeout_s=self.settings.timeout_s,
            secret=self._api_key,
            hints={
                401: "check the OPENAI_API_KEY environment variable",
                403: "the key lacks access to this model",
                404: f"check the model name in '{self.info.spec}' and the base URL",
            },
            text=_error_text,
        )


def _error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", exc))
