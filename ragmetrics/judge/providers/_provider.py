"""What every network judge shares.

The concurrency bound, the retry loop, truncation handling, usage and cost accounting, and
per-event-loop SDK clients. Usage counts every HTTP attempt (a :class:`~ragmetrics.judge.metering.Meter`
fed by hooks on the SDK's HTTP client) and rides on the reply, on the failed request's
:class:`~ragmetrics.errors.JudgeError`, or on the row's :func:`~ragmetrics.judge.metering.unclaimed`
tally. Subclasses build an SDK client, make one structured call through instructor, and classify an
SDK exception into a :class:`~ragmetrics.judge.retry.Failure`. A user's own SDK client is never
changed or closed: each event loop gets a copy (``with_options``), and only the copy is closed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import time
import weakref
from abc import ABC, abstractmethod
from contextvars import ContextVar
from typing import Any, ClassVar

from pydantic import BaseModel
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from ragmetrics._aio import release_collector
from ragmetrics.errors import JudgeError, JudgeOutputError
from ragmetrics.judge import metering
from ragmetrics.judge.base import JudgeReply, JudgeRequest, ModelT
from ragmetrics.judge.breaker import DeadJudgeBreaker
from ragmetrics.judge.limits import AdaptiveLimiter, RateGate, RateLimiter
from ragmetrics.judge.pricing import PriceTable, cost_usd, load_prices
from ragmetrics.judge.providers._deadline import deadline_client
from ragmetrics.judge.providers._instructor import hit_token_limit
from ragmetrics.judge.retry import (
    REFUSED_WAIT_S,
    Failure,
    RetryPolicy,
    TransientFailure,
    WaitRetryAfterOrBackoff,
)
from ragmetrics.score import JudgeInfo, Usage
from ragmetrics.settings import JudgeSettings, api_key_for
from ragmetrics.text import tokens_for_chars

__all__ = ["CallOutcome", "ProviderJudge"]

log = logging.getLogger("ragmetrics.judge")

_IN_OUR_CALL: ContextVar[bool] = ContextVar("ragmetrics_in_judge_call", default=False)


class _NotDuringOurCalls(logging.Filter):
    """Drops instructor's per-attempt retry logs inside ragmetrics' own calls, and only there.

    instructor logs every failed attempt at ERROR; ours are retried and reported once, as a result's
    status and message. A user's own instructor calls (no ragmetrics call in their context) keep
    their logs, and the logger's level is never touched.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not _IN_OUR_CALL.get()


_INSTRUCTOR_FILTER = _NotDuringOurCalls()


def _quiet_instructor_retries_in_our_calls() -> None:
    logger = logging.getLogger("instructor.v2.retry")
    if _INSTRUCTOR_FILTER not in logger.filters:
        logger.addFilter(_INSTRUCTOR_FILTER)


class CallOutcome:
    """What one structured call returned."""

    __slots__ = ("attempts", "completion_tokens", "prompt_tokens", "value")

    def __init__(self, value: Any, prompt_tokens: int, completion_tokens: int, attempts: int) -> None:
        self.value = value
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.attempts = attempts


class _Truncated(Exception):
    """The reply hit the token limit; retry with more room."""


class ProviderJudge(ABC):
    """Base class of the OpenAI-compatible and Anthropic judges."""

    _reopens_after_aclose: ClassVar[bool] = True
    """:meth:`aclose` only releases the running loop's client; the next call opens another. So a
    cache may close this judge after a run even when the user built it (see ``CachingJudge``)."""

    def __init__(
        self, settings: JudgeSettings, *, prices: PriceTable | None = None, client: Any = None
    ) -> None:
        self.settings = settings
        self._user_client = client
        """The user's own SDK client, if the judge was built around one (never mutated or closed)."""
        self.info = JudgeInfo(
            provider=settings.provider,
            model=settings.model,
            base_url=settings.base_url,
            temperature=settings.temperature,
            seed=settings.seed,
            max_tokens=settings.max_tokens,
        )
        self.limiter = AdaptiveLimiter(maximum=settings.max_concurrency)
        rpm = settings.requests_per_minute
        tpm = settings.tokens_per_minute
        self.rate: RateGate | None = RateLimiter(rpm, tpm) if (rpm or tpm) else None
        """Optional requests/tokens-per-minute caps (None: uncapped); a shared limit may replace it."""
        self.policy = RetryPolicy(
            max_attempts=settings.max_attempts,
            initial_s=settings.backoff_initial_s,
            maximum_s=settings.backoff_max_s,
        )
        self.prices = prices if prices is not None else load_prices()
        self.retries = 0
        """Transient failures retried so far (all requests)."""
        self.local = False
        """Whether the judge talks to a local server (set by adapters that detect or are told so)."""
        self.halted: Failure | None = None
        """Set while a run has halted this judge (a local judge that failed its canaries): every
        call fails at once with it, sending nothing."""
        self.breaker = DeadJudgeBreaker()
        """Fails calls at once when the judge is unreachable or refuses the key (see judge/breaker.py)."""
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, bool]] = (
            weakref.WeakKeyDictionary()
        )
        """Per event loop: the SDK client and whether this judge closes it."""

    def _take_key(self, api_key: str | None, *, require_key: bool) -> bool:
        """Take the API key: a user's client's (kept only to redact it), the one given, or the environment's.

        Returns:
            Whether the key was checked now; False for a user's client, and for ``require_key=False``
            (estimates, which call nothing), where :meth:`_key` checks it at the first call.

        Raises:
            ConfigError: No key, naming the variable to set.
        """
        self._given_key = api_key
        self._api_key: str | None = None
        if self._user_client is not None:
            self._api_key = str(getattr(self._user_client, "api_key", "") or "")
            return False
        if require_key:
            self._api_key = api_key_for(self.settings, api_key)
            return True
        return False

    def _key(self) -> str:
        """The API key for a client this judge builds (read now if it was deferred)."""
        if self._api_key is None:
            self._api_key = api_key_for(self.settings, self._given_key)
        return self._api_key

    # -- subclass hooks -------------------------------------------------------------------------
    @abstractmethod
    def _make_client(self) -> Any:
        """Build the raw SDK client (called once per event loop)."""

    @abstractmethod
    async def _call(self, client: Any, request: JudgeRequest[BaseModel], max_tokens: int) -> CallOutcome:
        """One structured call through instructor (which may re-ask on invalid output)."""

    @abstractmethod
    def _classify(self, exc: BaseException) -> Failure | None:
        """Map an SDK/instructor exception to a Failure; None means 'not ours, re-raise'."""

    def halt(self, failure: Failure | None) -> None:
        """Fail every later call at once with ``failure`` (None: lift the halt)."""
        self.halted = failure

    async def detect_local(self) -> bool:
        """Whether a local server serves this judge, asking the server when the adapter must."""
        return self.local

    async def _reply_bound(self, request: JudgeRequest[BaseModel]) -> int | None:
        """Completion tokens a reply to ``request`` can need, on a local server; None elsewhere.

        A judge with a bound starts there and retries a cut reply once with twice the room (up to
        ``max_tokens_cap``); a second cut fails the call as rambling (:mod:`ragmetrics.judge.local`).
        """
        return None

    def _local_failure(self, failure: Failure) -> Failure:
        """``failure`` as a local server's: a timeout is not re-sent (the server is still computing it)."""
        if failure.status != "timeout" or not self.local:
            return failure
        return dataclasses.replace(
            failure,
            transient=False,
            message=f"{failure.message}; not re-sent: a local server goes on computing an abandoned "
            "request, so the same request would queue behind it and take as long again",
            hint="raise timeout_s, lower max_concurrency (a local server answers one request at a "
            "time), or use a faster model",
        )

    # -- the shared machinery ---------------------------------------------------------------------
    def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is None:
            _quiet_instructor_retries_in_our_calls()
            entry = self._copy_user_client() if self._user_client is not None else (self._make_client(), True)
            self._clients[loop] = entry
        return entry[0]

    def _copy_user_client(self) -> tuple[Any, bool]:
        """This loop's copy of the user's client, and whether closing the copy is ours to do."""
        user = self._user_client
        options: dict[str, Any] = {"max_retries": 0, "timeout": self.settings.timeout_s}
        if type(getattr(user, "_client", None)).__name__ == "AsyncHttpxClientWrapper":  # the SDK's default
            sdk = importlib.import_module(type(user).__module__.split(".", 1)[0])
            return user.with_options(http_client=self._http_client(sdk), **options), True
        return user.with_options(**options), False  # shares the user's own http_client: never close it

    async def aclose(self) -> None:
        """Close the SDK client of the running loop (others are closed by their own loops).

        A user's own client is never closed: only the copy this judge made of it, and only when the
        copy has an HTTP client of its own.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        entry = self._clients.pop(loop, None)
        if entry is not None and entry[1]:
            await entry[0].close()

    def _cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        settings = self.settings
        return cost_usd(self.prices, settings.provider, settings.model, prompt_tokens, completion_tokens)

    def _http_client(self, sdk: Any) -> Any:
        """The SDK's default async HTTP client with the metering hooks (``sdk``: openai or anthropic).

        Each request on it ends within ``timeout_s`` of wall clock, however slowly the server sends.
        """
        return deadline_client(sdk, self.settings.timeout_s, event_hooks=metering.event_hooks())

    def _spent(self, meter: metering.Meter, calls: int, outcome: CallOutcome | None) -> Usage:
        """The request's usage: the meter's, or the loop's own count if the client has no hooks."""
        if meter.calls or outcome is None:
            return meter.usage(self._cost)
        prompt, completion = outcome.prompt_tokens, outcome.completion_tokens
        return Usage(
            calls=calls,
            downgraded=meter.downgraded,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=self._cost(prompt, completion),
        )

    def _backstop_s(self) -> float | None:
        """The limit on one structured call, re-asks included, for a user's own HTTP client.

        None (no limit) on the HTTP clients this judge builds, where each attempt ends at ``timeout_s``
        (:mod:`~ragmetrics.judge.providers._deadline`): a bound on the whole call would also count the
        SDKs' first-call imports, seconds on a loaded machine.
        """
        entry = self._clients.get(asyncio.get_running_loop())
        if entry is not None and entry[1]:
            return None
        return self.settings.timeout_s * (self.settings.reasks + 1) + 5

    def _error(self, failure: Failure, attempts: int) -> JudgeError:
        meter = metering.current()
        usage = meter.usage(self._cost) if meter is not None and meter.calls else Usage(calls=attempts)
        kind = JudgeOutputError if failure.status in ("judge_output_invalid", "truncated") else JudgeError
        return kind(
            failure.message,
            provider=self.settings.provider,
            model=self.settings.model,
            attempts=usage.calls,
            reasks=usage.reasks,
            status=failure.status,
            http_status=failure.http_status,
            hint=failure.hint,
            usage=usage,
        )

    async def complete(self, request: JudgeRequest[ModelT]) -> JudgeReply[ModelT]:
        """Answer one request, retrying transient failures and truncated output.

        The reply's usage counts every HTTP attempt made for it; so does a raised error's ``usage``.

        Raises:
            JudgeError: Retries exhausted or a fatal provider error (status says which).
            JudgeOutputError: The output never validated, or stayed truncated at the token cap.
        """
        started = time.perf_counter()
        with metering.metering() as meter:
            try:
                outcome, calls = await self._complete(request, meter)
            except asyncio.CancelledError:
                metering.note_unclaimed(meter.usage(self._cost))
                raise
            except JudgeError:
                raise  # carries its usage
            except Exception:  # not classified: its attempts still count, on the row
                metering.note_unclaimed(meter.usage(self._cost))
                raise
            usage = self._spent(meter, calls, outcome).model_copy(update={"succeeded": 1})
        return JudgeReply(
            value=outcome.value, usage=usage, latency_ms=(time.perf_counter() - started) * 1000.0
        )

    async def _complete(
        self, request: JudgeRequest[BaseModel], meter: metering.Meter
    ) -> tuple[CallOutcome, int]:
        """The truncation loop around :meth:`_with_retries`; returns the outcome and the loop's call count."""
        max_tokens = request.max_tokens or self.settings.max_tokens
        bound = await self._reply_bound(request)  # a local server's: one retry with room, no more
        first = max_tokens = max_tokens if bound is None else max(16, min(max_tokens, bound))
        calls = 0
        while True:
            try:
                outcome, used = await self._with_retries(request, max_tokens, meter)
            except _Truncated as exc:
                calls += 1
                if bound is not None and max_tokens > first:
                    raise self._error(_rambling(first, max_tokens), calls) from None
                if max_tokens >= self.settings.max_tokens_cap:
                    raise self._error(
                        Failure(
                            status="truncated",
                            transient=False,
                            message=f"output cut off at the {max_tokens}-token limit {exc}",
                            hint="raise max_tokens_cap, or split the input (context_budget_tokens)",
                        ),
                        calls,
                    ) from None
                max_tokens = min(self.settings.max_tokens_cap, max_tokens * 2)
                log.info("%s: output truncated; retrying with max_tokens=%d", self.info.spec, max_tokens)
                meter.resend()
                continue
            return outcome, calls + used + outcome.attempts - 1

    async def _with_retries(
        self, request: JudgeRequest[BaseModel], max_tokens: int, meter: metering.Meter
    ) -> tuple[CallOutcome, int]:
        """Run the call under the limiter, retrying transient failures; returns (outcome, attempts)."""
        attempt_no = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.max_attempts),
            wait=WaitRetryAfterOrBackoff(self.policy),
            retry=retry_if_exception_type(TransientFailure),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempt_no = attempt.retry_state.attempt_number
                    await self.limiter.acquire()
                    refused = self.halted or self.breaker.check() or _cap_refusal()
                    if (
                        refused is not None
                    ):  # a dead judge, or max_calls reached: fail at once, sending nothing
                        await self.limiter.release()
                        raise self._error(refused, attempt_no - 1)
                    if attempt_no > 1:
                        self.retries += 1
                        meter.resend()
                    try:
                        client = self._client()  # built before the rate grant, so the grant is used at once
                        if self.rate is not None:
                            await self.rate.acquire(_prompt_estimate(request))
                        release_collector()  # the command's start-up ends with its first call
                        marked = _IN_OUR_CALL.set(True)  # copied into the task wait_for makes
                        try:  # a backstop: each HTTP attempt ends at timeout_s on our HTTP clients
                            outcome = await asyncio.wait_for(
                                self._call(client, request, max_tokens), timeout=self._backstop_s()
                            )
                        finally:
                            _IN_OUR_CALL.reset(marked)
                    except _Truncated:
                        raise
                    except asyncio.TimeoutError as exc:
                        self.limiter.on_rate_limited()  # a server too slow to answer is overloaded too
                        backstop = self._local_failure(
                            Failure(
                                status="timeout",
                                transient=True,
                                message=f"no complete reply within {self._backstop_s() or 0:g} s "
                                f"(timeout_s={self.settings.timeout_s:g} for each of up to "
                                f"{self.settings.reasks + 1} attempts, re-asks included)",
                                min_wait_s=self.settings.timeout_s / 4,
                            )
                        )
                        if not backstop.transient:
                            raise self._error(backstop, attempt_no) from exc
                        raise TransientFailure(backstop) from exc
                    except Exception as exc:
                        if _refused_by_cap(exc):  # the cap filled as this attempt left: it was not sent
                            raise self._error(_cap_failure(metering.current_cap()), attempt_no - 1) from exc
                        failure = self._classify(exc)
                        if failure is None:
                            raise
                        failure = self._local_failure(failure)
                        self.breaker.on_failure(failure)
                        if failure.transient and self.breaker.tripped:  # dead: no more retries
                            raise self._error(self.breaker.check() or failure, attempt_no) from exc
                        if failure.refused and not self.breaker.answered:  # nothing listens there
                            failure = dataclasses.replace(failure, max_wait_s=REFUSED_WAIT_S)
                        if failure.status == "judge_output_invalid" and hit_token_limit(exc, max_tokens):
                            failure = Failure(
                                status="truncated",
                                transient=False,
                                message=f"the reply used all {max_tokens} tokens and did not parse",
                            )
                        if failure.status == "truncated":
                            raise _Truncated(failure.message) from exc
                        if failure.status in ("rate_limited", "timeout"):
                            self.limiter.on_rate_limited(failure.retry_after_s)
                        if failure.transient:
                            raise TransientFailure(failure) from exc
                        raise self._error(failure, attempt_no) from exc
                    finally:
                        await self.limiter.release()
                    self.limiter.on_success()
                    self.breaker.on_success()
                    if self.rate is not None:
                        self.rate.record(
                            outcome.completion_tokens
                            + max(0, outcome.prompt_tokens - _prompt_estimate(request))
                        )
                    return outcome, attempt_no
        except TransientFailure as exc:
            raise self._error(exc.failure, attempt_no) from exc
        raise AssertionError("unreachable")  # pragma: no cover


def _rambling(first: int, last: int) -> Failure:
    """The failure of a local judge whose reply was cut at its bound and again at twice the bound."""
    return Failure(
        status="truncated",
        transient=False,
        message=f"the judge rambles: its reply ran to the token limit at {first} tokens (what a reply "
        f"to this request can need) and again at {last}; not sent a third time",
        hint="use a larger model, or set max_tokens_cap higher and server='openai' to lift the bound "
        "on a local server's replies",
    )


def _refused_by_cap(exc: BaseException) -> bool:
    """Whether ``exc`` is (or wraps, as an SDK's connection error does) our hook's ``CallCapReached``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, metering.CallCapReached):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _cap_refusal() -> Failure | None:
    """The failure of an attempt the run's ``max_calls`` leaves no room for (None: room left)."""
    cap = metering.current_cap()
    if cap is None or not cap.full:
        return None
    cap.refused += 1
    return _cap_failure(cap)


def _cap_failure(cap: metering.CallCap | None) -> Failure:
    """The failure of an attempt not sent because the run's ``max_calls`` were all sent."""
    limit = cap.max_calls if cap is not None else "?"
    return Failure(
        status="provider_error",
        transient=False,
        message=f"not sent: the run's max_calls={limit} calls were all sent",
        hint="raise --max-calls / max_calls",
    )


def _prompt_estimate(request: JudgeRequest[BaseModel]) -> int:
    """Prompt tokens of a request, estimated (for the tokens-per-minute cap)."""
    return tokens_for_chars(sum(len(m.content) for m in request.messages))
