"""A fake LLM provider on a real loopback socket, for tests, benchmarks and users' own CI.

:class:`FakeLLMServer` owns a threaded HTTP server on ``127.0.0.1`` (port 0) that the real ``openai``
and ``anthropic`` SDKs reach through ``base_url``: chat completions, messages, embeddings, model
listings and both providers' batch APIs. A request is answered by the first match of: a rule added
with :meth:`FakeLLMServer.on`, a reply queued with :meth:`FakeLLMServer.enqueue`, a random fault from
:meth:`FakeLLMServer.faults`, then the default answer (ragmetrics' own prompts answered by the offline
judge; ``answer="schema"``, ``"placeholder"`` or ``"copycat"`` fill the request's JSON schema instead).
``dialect="llama-cpp"`` mimics that server's refusals. Token usage is ``ceil(characters / 4)``.
The ``fake_llm_server`` fixture gives one server per test run, reset before each test. The wire
formats and request handling live in the private :mod:`ragmetrics._fake` package.
"""

from __future__ import annotations

import random
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Literal

from ragmetrics._check import check_choice, check_int, check_unit
from ragmetrics._fake.batch_wire import FakeBatchPlan, Outcome
from ragmetrics._fake.batches import BatchStore, FakeBatch
from ragmetrics._fake.copycat import copycat_answer
from ragmetrics._fake.dialects import DIALECTS
from ragmetrics._fake.records import Endpoint as Endpoint  # re-exported: the type of FakeRequest.endpoint
from ragmetrics._fake.records import FakeReply, FakeRequest, FakeRule, Faults
from ragmetrics._fake.records import Source as Source  # re-exported: the type of FakeRequest.source
from ragmetrics._fake.serving import Serving
from ragmetrics._fake.tasks import Answerer, offline_answer
from ragmetrics._fake.transport import LoopbackServer
from ragmetrics.errors import ConfigError, MissingDependencyError

try:  # the fixture is optional: importing this module must not need pytest
    import pytest
except ImportError:  # pragma: no cover - exercised only without pytest installed
    pytest = None  # type: ignore[assignment]

__all__ = [
    "FakeBatch",
    "FakeBatchPlan",
    "FakeLLMServer",
    "FakeReply",
    "FakeRequest",
    "FakeRule",
    "fake_llm_server",
]

for _public in (
    FakeBatch,
    FakeBatchPlan,
    FakeReply,
    FakeRequest,
    FakeRule,
):  # defined in ragmetrics._fake; documented here
    _public.__module__ = __name__

_POLL = 0.05  # seconds between checks of the serve loop for a stop request


class FakeLLMServer(Serving):
    """A fake OpenAI/Anthropic provider on ``127.0.0.1`` for tests and benchmarks.

    Thread-safe; use it as a context manager or call :meth:`start` and :meth:`stop` (both
    idempotent). See the module docstring for how requests are answered.

    Args:
        host: The interface to bind.
        port: The port; 0 picks a free one.
        seed: Seeds the random latency and faults, so a run is reproducible.
        embedding_dim: Dimension of the embeddings (a request's ``dimensions`` overrides it).
        models: Model names listed by ``GET /v1/models``.
        answer: The default answerer: a function ``(task, variables) -> JSON object``,
            ``"offline"`` (the default: ``ragmetrics.judge.offline.judge.answer``), ``"schema"`` (ignore
            the prompt, reply with an arbitrary instance of the request's JSON schema) or
            ``"placeholder"`` (the schema filled with fixed placeholders) or ``"copycat"`` (claims
            extracted honestly, every verification ``supported`` with a random real quote; the bundled
            canary answered honestly); see the module docstring.
        dialect: ``"openai"`` (the default), or ``"llama-cpp"`` to answer as llama-cpp-python's
            server 0.3.x (HTTP 500 for ``response_format`` type ``json_schema``, tools ignored
            unless ``tool_choice`` names one, no ``/v1/messages``).

    Raises:
        ConfigError: ``embedding_dim`` is not positive, or ``answer`` or ``dialect`` is unknown.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        seed: int = 0,
        embedding_dim: int = 256,
        models: Sequence[str] = ("fake-model", "fake-embedding"),
        answer: Answerer | Literal["offline", "schema", "placeholder", "copycat"] | None = None,
        dialect: Literal["openai", "llama-cpp"] = "openai",
    ) -> None:
        check_int(embedding_dim, "embedding_dim", "FakeLLMServer", minimum=1)
        if not callable(answer):
            modes = ("offline", "schema", "placeholder", "copycat")
            check_choice(
                answer,
                "answer",
                "FakeLLMServer",
                (*modes, None),
                expected=f"{', '.join(map(repr, modes))} or a function",
            )
        check_choice(dialect, "dialect", "FakeLLMServer", DIALECTS)
        self._address = (host, port)
        self._seed = seed
        self.embedding_dim = embedding_dim
        self._models = tuple(models)
        self._answer: Answerer = (
            copycat_answer
            if answer == "copycat"
            else offline_answer
            if answer is None or isinstance(answer, str)
            else answer
        )
        self._by_schema = answer == "schema"
        self._placeholder = answer == "placeholder"
        self._dialect = dialect
        self._lock = threading.RLock()  # reentrant: rule predicates and reply functions may read the server
        self._httpd: LoopbackServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._clear()

    def _clear(self) -> None:
        self._queue: deque[FakeReply] = deque()
        self._rules: list[FakeRule] = []
        self._faults: Faults | None = None
        self._fault_rng = random.Random(self._seed)
        self._latency: float | tuple[float, float] = 0.0
        self._latency_rng = random.Random(self._seed)
        self._requests: list[FakeRequest] = []
        self._probes: list[FakeRequest] = []
        self._calls: Counter[str] = Counter()
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._batches = BatchStore()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        """Start serving in a background thread (no-op if already running); returns ``self``."""
        with self._lock:
            if self._httpd is not None:
                return self
            self._stopping = threading.Event()
            self._httpd = LoopbackServer(self._address, self._serve)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": _POLL},
                name="FakeLLMServer",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every connection, hanging requests included (no-op if stopped)."""
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return self._httpd is not None

    @property
    def port(self) -> int:
        """The bound port.

        Raises:
            ConfigError: The server is not running.
        """
        httpd = self._httpd
        if httpd is None:
            raise ConfigError("the FakeLLMServer is not running: call start() or use it in a with block")
        return int(httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The ``base_url`` for the OpenAI SDK: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The ``base_url`` for the Anthropic SDK: ``http://127.0.0.1:PORT``."""
        return self.url

    # -- scripting -------------------------------------------------------------------------------

    def enqueue(self, *replies: FakeReply) -> None:
        """Queue replies for the next chat or messages requests, first in first out."""
        for reply in replies:
            if not isinstance(reply, FakeReply):
                raise ConfigError(f"enqueue takes FakeReply values, got {type(reply).__name__}")
        with self._lock:
            self._queue.extend(replies)

    def on(
        self,
        match: str | Callable[[FakeRequest], bool],
        reply: FakeReply | Callable[[FakeRequest], FakeReply],
        *,
        times: int | None = None,
    ) -> FakeRule:
        """Answer the requests that ``match`` with ``reply``; rules are tried in the order added.

        Args:
            match: A predicate over :class:`FakeRequest`, or a string naming a task
                (``claims.verify``), a response schema (``ClaimVerification``) or an endpoint
                (``embeddings``).
            reply: The reply, or a function building it from the request.
            times: Answer at most this many requests (None: no limit).

        Returns:
            The rule, whose ``hits`` count its answers.
        """
        check_int(times, "times", "FakeLLMServer.on", minimum=1, optional=True)
        predicate: Callable[[FakeRequest], bool]
        if isinstance(match, str):
            name = match

            def predicate(req: FakeRequest) -> bool:
                return name in (req.task, req.schema, req.endpoint)

        else:
            predicate = match
        rule = FakeRule(predicate, reply, times)
        with self._lock:
            self._rules.append(rule)
        return rule

    def faults(
        self,
        *,
        rate_429: float = 0.0,
        rate_500: float = 0.0,
        rate_503: float = 0.0,
        malformed: float = 0.0,
        hang: float = 0.0,
        drop: float = 0.0,
        retry_after: float | None = 0,
        seed: int | None = None,
    ) -> None:
        """Inject random faults into POST requests that no rule or queued reply answers.

        Each such request draws one number from a generator seeded with ``seed``, so the n-th
        unscripted request gets the same fault on every run. Calling it again replaces the rates;
        calling it with no rates turns faults off.

        Args:
            rate_429: Share answered 429 (with ``Retry-After: retry_after`` unless it is None).
            rate_500: Share answered 500.
            rate_503: Share answered 503 (with ``Retry-After`` as for 429).
            malformed: Share answered with broken JSON.
            hang: Share never answered (until the client times out).
            drop: Share whose connection is closed without a response.
            retry_after: Seconds in the ``Retry-After`` header of 429 and 503 replies.
            seed: Seed of the fault draws (None: the server's seed).

        Raises:
            ConfigError: A rate is outside [0, 1] or the rates add up to more than 1.
        """
        note = "fault injected by FakeLLMServer"
        kinds = (
            (
                rate_429,
                FakeReply(status=429, retry_after=retry_after, message=f"Rate limit reached ({note})"),
            ),
            (rate_500, FakeReply(status=500, message=f"Internal server error ({note})")),
            (
                rate_503,
                FakeReply(status=503, retry_after=retry_after, message=f"Service unavailable ({note})"),
            ),
            (malformed, FakeReply(malformed=True)),
            (hang, FakeReply(hang=True)),
            (drop, FakeReply(drop=True)),
        )
        total = 0.0
        cumulative = []
        for rate, reply in kinds:
            check_unit(rate, "a fault rate", "FakeLLMServer.faults")
            if rate:
                total += rate
                cumulative.append((total, reply))
        if total > 1.0 + 1e-9:
            raise ConfigError(f"fault rates add up to {total:.3f}, more than 1")
        with self._lock:
            self._faults = Faults(cumulative=tuple(cumulative)) if cumulative else None
            self._fault_rng = random.Random(self._seed if seed is None else seed)

    @property
    def latency(self) -> float | tuple[float, float]:
        """Seconds added to every request: a number, or ``(min, max)`` drawn uniformly (seeded)."""
        return self._latency

    @latency.setter
    def latency(self, value: float | tuple[float, float]) -> None:
        try:
            low, high = (value, value) if isinstance(value, int | float) else value
            valid = 0 <= low <= high
        except (TypeError, ValueError):
            valid = False
        if not valid:
            raise ConfigError(
                f"latency must be seconds >= 0 or a (min, max) pair with min <= max, got {value}"
            )
        with self._lock:
            self._latency = value

    def batch_plan(
        self,
        *,
        polls: int = 2,
        seconds: float | None = None,
        outcome: Outcome = "completed",
        lose_creates: int = 0,
        edit_line: Callable[[bytes], bytes] | None = None,
    ) -> FakeBatchPlan:
        """Set when the batches created from now on end, and how (both batch APIs).

        A batch ends at the ``polls``-th retrieve of it (or, with ``seconds``, at the first retrieve
        once that many seconds have passed since it was created); then every request in it is answered
        as in real time: rules, queued replies and faults apply, so ``on(match, FakeReply(status=500))``
        fails some requests of a batch (an error-file line; Anthropic: ``errored``), and a ``hang`` or
        ``drop`` reply leaves a request unprocessed, so that it expires. ``outcome`` ends the whole batch
        otherwise: ``expired`` or ``cancelled`` (no request processed) or ``failed`` (OpenAI: failed
        validation, no output files; Anthropic: every request errors). ``lose_creates=N`` carries out
        the next N batch creations but loses their replies (the connection closes unanswered), as
        when a reply is lost on its way back; ``GET /v1/batches`` and ``GET /v1/messages/batches`` list
        every batch, and a create repeating an ``Idempotency-Key`` header returns the batch it made.
        ``edit_line`` rewrites each line of OpenAI output and error files (damaged results).

        Returns:
            The plan, which :meth:`reset` sets back to the default (``polls=2``, ``completed``).

        Raises:
            ConfigError: ``polls`` < 1, negative ``seconds`` or ``lose_creates``, or an unknown
                ``outcome``.
        """
        plan = FakeBatchPlan(
            polls=polls, seconds=seconds, outcome=outcome, lose_creates=lose_creates, edit_line=edit_line
        )
        with self._lock:
            self._batches.plan = plan
        return plan

    @property
    def batches(self) -> list[FakeBatch]:
        """The batches created since the last reset (both APIs), in creation order."""
        return self._batches.snapshot()

    def reset(self) -> None:
        """Forget scripts, rules, faults, latency, recorded requests, counters, files and batches."""
        with self._lock:
            self._clear()

    # -- introspection ---------------------------------------------------------------------------

    @property
    def requests(self) -> list[FakeRequest]:
        """The requests received since the last reset, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def probes(self) -> list[FakeRequest]:
        """The server-kind probes received since the last reset (a copy), kept out of ``requests``.

        A judge at a custom base URL asks ``GET /models`` once, with the header
        ``x-ragmetrics-probe: server-kind`` (:mod:`ragmetrics.judge.local`); it is no model call.
        """
        with self._lock:
            return list(self._probes)

    @property
    def calls(self) -> Counter[str]:
        """POST requests received per task (or schema name, or endpoint); ``calls.total()`` sums them."""
        with self._lock:
            return Counter(self._calls)

    @property
    def prompt_tokens(self) -> int:
        """Estimated prompt tokens of every successful reply since the last reset."""
        return self._prompt_tokens

    @property
    def completion_tokens(self) -> int:
        """Estimated completion tokens of every successful reply since the last reset."""
        return self._completion_tokens

    @property
    def pending(self) -> int:
        """Queued replies not used yet."""
        return len(self._queue)


if pytest is not None:
    _SERVER_KEY = pytest.StashKey[FakeLLMServer]()

    @pytest.fixture
    def fake_llm_server(request: pytest.FixtureRequest) -> Iterator[FakeLLMServer]:
        """A running :class:`FakeLLMServer`, shared by the test run and reset around each test.

        Make it available with ``from ragmetrics.testing import fake_llm_server`` in a ``conftest.py``.
        """
        server = request.config.stash.get(_SERVER_KEY, None)
        if server is None:
            server = FakeLLMServer().start()
            request.config.stash[_SERVER_KEY] = server
            request.config.add_cleanup(server.stop)
        server.reset()
        yield server
        server.reset()

else:  # pragma: no cover - exercised only without pytest installed

    def fake_llm_server() -> None:
        """The pytest fixture; needs pytest."""
        raise MissingDependencyError("pytest", "test", "the fake_llm_server fixture")


if __name__ == "__main__":  # python -m ragmetrics.testing: serve until Ctrl-C (see ragmetrics._fake.command)
    from ragmetrics._fake.command import main as _main

    raise SystemExit(_main(FakeLLMServer))
