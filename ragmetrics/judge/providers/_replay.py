"""Real-time calls taken apart for a provider batch: the request a call would send, and its replies replayed.

A batch request must be the very request the real-time adapter sends, and its reply read exactly as
the adapter reads one, so neither is rebuilt here: the adapter's own call
(:meth:`ProviderJudge._call`) runs on an SDK client whose transport never touches the network. It
answers the call's requests, in order, with the replies batches brought back; at the first request it
has no reply for, it stops and hands that request's body over for the next batch. So an invalid reply
makes instructor re-ask (the next request), and an error reply is classified by the adapter
(:meth:`ProviderJudge._classify`), as in real time.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmetrics.judge.base import JudgeRequest
from ragmetrics.judge.providers._instructor import hit_token_limit
from ragmetrics.judge.providers._provider import (
    _IN_OUR_CALL,
    CallOutcome,
    ProviderJudge,
    _quiet_instructor_retries_in_our_calls,
)
from ragmetrics.judge.retry import Failure

__all__ = ["Done", "Failed", "Send", "Step", "replay", "sdk_name"]

_OFFLINE_URL = "http://batch.replay.invalid"
"""The base URL of replay clients: never contacted (the transport answers every request)."""


@dataclass(frozen=True, slots=True)
class Done:
    """The replies so far make a validated value."""

    outcome: CallOutcome


@dataclass(frozen=True, slots=True)
class Send:
    """The call needs another request: send ``body`` (a Chat Completions or Messages body)."""

    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Failed:
    """The call failed for good on the replies so far (as a real-time call would have)."""

    failure: Failure


Step = Done | Send | Failed


class _Wanted(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by the transport at the first request it has no reply for."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__("request captured for a provider batch")
        self.body = body


def sdk_name(judge: ProviderJudge) -> str:
    """``openai`` or ``anthropic``: the SDK behind a provider judge."""
    from ragmetrics.judge.providers.anthropic import AnthropicJudge

    return "anthropic" if isinstance(judge, AnthropicJudge) else "openai"


def _transport(sdk: Any, replies: Sequence[tuple[int, dict[str, Any]]]) -> Any:
    base = next(c for c in type.mro(sdk.DefaultAsyncHttpxClient) if c.__name__ == "AsyncClient")
    http = importlib.import_module(base.__module__.split(".", 1)[0])  # httpx, or the fork the SDK uses

    class Replay(http.AsyncBaseTransport):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            self.served = 0

        async def handle_async_request(self, request: Any) -> Any:
            if self.served >= len(replies):
                raw = request.content or b"{}"
                raise _Wanted(json.loads(raw))
            status, body = replies[self.served]
            self.served += 1
            return http.Response(
                status,
                content=json.dumps(body).encode("utf-8"),
                headers={"content-type": "application/json"},
                request=request,
            )

    return Replay()


def _client(sdk_module: str, transport: Any) -> Any:
    sdk = importlib.import_module(sdk_module)
    http = sdk.DefaultAsyncHttpxClient(transport=transport)
    common: dict[str, Any] = {"api_key": "replay", "max_retries": 0, "http_client": http}
    if sdk_module == "anthropic":
        return sdk.AsyncAnthropic(base_url=_OFFLINE_URL, **common)
    return sdk.AsyncOpenAI(base_url=f"{_OFFLINE_URL}/v1", **common)


def _wanted(exc: BaseException) -> _Wanted | None:
    """The capture signal behind ``exc`` (the SDK and instructor wrap it), if there is one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, _Wanted):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


async def replay(
    judge: ProviderJudge,
    request: JudgeRequest[Any],
    max_tokens: int,
    replies: Sequence[tuple[int, dict[str, Any]]],
) -> Step:
    """Run ``judge``'s real-time call on ``replies`` (HTTP status, JSON body), calling nothing.

    Returns:
        :class:`Done` with the validated outcome, :class:`Send` with the body of the next request the
        call would send, or :class:`Failed` with the failure a real-time call would have reported.
    """
    sdk = importlib.import_module(sdk_name(judge))
    transport = _transport(sdk, replies)
    client = _client(sdk.__name__, transport)
    _quiet_instructor_retries_in_our_calls()
    marked = _IN_OUR_CALL.set(True)
    try:
        outcome = await judge._call(client, request, max_tokens)
    except Exception as exc:
        wanted = _wanted(exc)
        if wanted is not None:
            return Send(wanted.body)
        failure = judge._classify(exc)
        if failure is None:
            raise
        if failure.status == "judge_output_invalid" and hit_token_limit(exc, max_tokens):
            failure = Failure(
                status="truncated",
                transient=False,
                message=f"the reply used all {max_tokens} tokens and did not parse",
            )
        return Failed(failure)
    finally:
        _IN_OUR_CALL.reset(marked)
        await client.close()
    return Done(outcome)
