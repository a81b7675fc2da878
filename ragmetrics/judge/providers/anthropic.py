"""The Anthropic judge: instructor's tool mode over the official ``anthropic`` SDK.

It also drives Claude on AWS Bedrock (``bedrock:MODEL``, ``anthropic.AsyncAnthropicBedrock``) and on
Google Vertex AI (``vertex:MODEL``, ``anthropic.AsyncAnthropicVertex``), and a user's own client of
any of the three kinds. Bedrock signs requests with AWS SigV4 (boto3) unless a Bedrock API key is
given (``api_key=`` or ``AWS_BEARER_TOKEN_BEDROCK``); Vertex takes an OAuth access token
(``api_key=``) or google-auth's default credentials.

As with OpenAI, the SDK's own retries are off and transient failures (429, 529 overloaded, 5xx,
timeouts, dropped connections) go through :mod:`ragmetrics.judge.retry`. The tool's input schema is
the per-request response schema (the contract is in it); no validation ``context`` is passed to
instructor, which would otherwise render every message as a Jinja2 template.
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic import BaseModel

from ragmetrics.errors import ConfigError
from ragmetrics.judge.base import JudgeRequest
from ragmetrics.judge.providers._instructor import classify_call_error, prepared, reask_policy, total_tokens
from ragmetrics.judge.providers._provider import CallOutcome, ProviderJudge
from ragmetrics.judge.retry import Failure
from ragmetrics.settings import JudgeSettings, aws_region, bedrock_token_set, vertex_location

__all__ = ["AnthropicJudge"]


_HOSTS = {"bedrock": "bedrock-runtime (AWS)", "vertex": "aiplatform.googleapis.com"}


def sdk_takes_temperature() -> bool:
    """Whether the installed ``anthropic`` SDK still sends a sampling temperature (2.0 dropped it).

    Read from the package's version, without importing it: constructing a judge must stay cheap
    (the SDK is imported on the first call). A test checks this against the SDK's real signature.
    """
    try:
        major = version("anthropic").split(".", 1)[0]
    except PackageNotFoundError:  # not installed: the first call says so
        return True
    return not major.isdigit() or int(major) < 2


_CREDENTIALS = {
    "anthropic": "check ANTHROPIC_API_KEY (or the api_key= given)",
    "bedrock": "check the AWS credentials (or the api_key= given)",
    "vertex": "check the Google credentials (or the api_key= given)",
}
"""What to check when the provider refuses the credentials (HTTP 401)."""


class AnthropicJudge(ProviderJudge):
    """A judge on the Anthropic Messages API."""

    def __init__(
        self, settings: JudgeSettings, *, api_key: str | None = None, require_key: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(settings, **kwargs)
        if self._take_key(api_key, require_key=require_key):  # an estimate's cloud region waits too
            self._check_cloud()
        if not sdk_takes_temperature():  # the model's own default applies; say so rather than claim 0
            self.info = self.info.model_copy(update={"temperature": None})

    def __repr__(self) -> str:
        return f"AnthropicJudge({self.info.spec!r})"

    def _check_cloud(self) -> None:
        """Bedrock and Vertex: fail now, naming what to set, rather than on the first call.

        Raises:
            ConfigError: No region, or no credentials the installed packages can use.
        """
        spec = self.info.spec
        if self.settings.provider == "bedrock":
            has_boto = importlib.util.find_spec("boto3") is not None
            if aws_region() is None and not has_boto:
                raise ConfigError(
                    f"judge '{spec}' needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION)"
                )
            if not (self._api_key or bedrock_token_set() or has_boto):
                raise ConfigError(
                    f"judge '{spec}' has no Bedrock credentials it can use: set AWS_BEARER_TOKEN_BEDROCK "
                    "(a Bedrock API key) or pass api_key=..., or install boto3 for AWS SigV4 signing "
                    "(pip install 'anthropic[bedrock]') with the usual AWS credentials"
                )
        elif self.settings.provider == "vertex":
            if vertex_location()[0] is None:
                raise ConfigError(
                    f"judge '{spec}' needs a Vertex AI region: set CLOUD_ML_REGION (e.g. us-east5)"
                )
            if not self._api_key and importlib.util.find_spec("google.auth") is None:
                raise ConfigError(
                    f"judge '{spec}' has no Google credentials it can use: pass api_key=ACCESS_TOKEN, or "
                    "install google-auth (pip install 'anthropic[vertex]') and set up application default "
                    "credentials (gcloud auth application-default login)"
                )

    def _make_client(self) -> Any:
        import anthropic

        self._key()
        common: dict[str, Any] = {
            "base_url": self.settings.base_url,
            "max_retries": 0,
            "timeout": self.settings.timeout_s,
            "http_client": self._http_client(anthropic),
        }
        if self.settings.provider == "bedrock":
            return anthropic.AsyncAnthropicBedrock(
                aws_region=aws_region(), api_key=self._api_key or None, **common
            )
        if self.settings.provider == "vertex":
            region, project = vertex_location()
            if project:
                common["project_id"] = project
            return anthropic.AsyncAnthropicVertex(
                region=region or "", access_token=self._api_key or None, **common
            )
        return anthropic.AsyncAnthropic(api_key=self._api_key, **common)

    async def _call(self, client: Any, request: JudgeRequest[BaseModel], max_tokens: int) -> CallOutcome:
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
            host=self.settings.base_url or _HOSTS.get(self.settings.provider, "api.anthropic.com"),
            timeout_s=self.settings.timeout_s,
            secret=self._api_key,
            hints={
                401: _CREDENTIALS.get(self.settings.provider, _CREDENTIALS["anthropic"]),
                404: f"check the model name in '{self.info.spec}'",
            },
            text=lambda e: str(getattr(e, "message", e)),
        )
