"""LangChain adapter: a callback handler that scores each run of a RAG chain in the background.

:class:`RagMetricsCallbackHandler` maps every callback to its top-level run (through ``run_id`` and
``parent_run_id``), so nested chains, batches and concurrent calls never share state. For each run the
question is its input (or one of ``question_keys``), the contexts the documents of its retrievers,
the answer its output (or one of ``answer_keys``, else the last model call), the reference the run's
``reference`` metadata or the handler's ``references``. A run with no retrieval, no answer or an error
is recorded as skipped with a reason. Scoring happens off the app's path
(:mod:`ragmetrics.integrations._scoring`) and nothing raised there reaches the chain. Without
LangChain, building the handler raises :class:`~ragmetrics.errors.MissingDependencyError`.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import UUID

from ragmetrics.errors import MissingDependencyError, shorten
from ragmetrics.integrations._langchain_text import (
    ANSWER_KEYS,
    QUESTION_KEYS,
    answer_from,
    generation_text,
    question_from,
)
from ragmetrics.integrations._records import References
from ragmetrics.integrations._scoring import BackgroundScorer, Capture, RunResult, ScoredHandler, json_safe
from ragmetrics.metrics.base import MetricLike

try:
    from langchain_core.callbacks import BaseCallbackHandler as _HandlerBase

    _MISSING: ImportError | None = None
except ImportError as _exc:  # the extra is not installed: the handler raises when built
    _MISSING = _exc

    class _HandlerBase:  # type: ignore[no-redef]
        """Stands in for ``langchain_core``'s handler base when LangChain is not installed."""


__all__ = ["RagMetricsCallbackHandler", "RunResult"]

logger = logging.getLogger("ragmetrics.integrations")

_F = TypeVar("_F", bound=Callable[..., None])


def _require_langchain(feature: str) -> None:
    if _MISSING is not None:
        raise MissingDependencyError("langchain-core", "langchain", feature) from _MISSING


@dataclass(slots=True)
class _Trace:
    """What one top-level run has shown so far (guarded by the handler's lock)."""

    run_id: UUID
    kind: str
    name: str | None
    tags: list[str]
    metadata: dict[str, Any]
    raw_input: Any = None
    kinds: dict[UUID, str] = field(default_factory=dict)
    parents: dict[UUID, UUID | None] = field(default_factory=dict)
    retrievals: dict[UUID, list[str] | None] = field(default_factory=dict)
    """Outermost retriever runs in start order -> their documents' text (None until they end)."""
    retriever_queries: list[str] = field(default_factory=list)
    last_llm_text: str | None = None
    problem: str | None = None
    """Set when capturing failed for this run: it is skipped with this reason."""


def _guarded(what: str) -> Callable[[_F], _F]:
    """Make a callback never raise: a failure is logged and the run is skipped with the reason."""

    def wrap(method: _F) -> _F:
        @functools.wraps(method)
        def guarded(self: RagMetricsCallbackHandler, *args: Any, **kwargs: Any) -> None:
            try:
                method(self, *args, **kwargs)
            except Exception as exc:
                self._guard(kwargs.get("run_id"), what, exc)

        return guarded  # type: ignore[return-value]

    return wrap


class RagMetricsCallbackHandler(_HandlerBase, ScoredHandler):  # type: ignore[misc, valid-type]
    """Scores each top-level run of a LangChain RAG app with ragmetrics metrics, in the background.

    Pass it in ``config={"callbacks": [handler]}`` (or to a runnable's ``with_config``). It works in sync
    and async runs: LangChain calls it on the event loop's thread in async runs (``run_inline``), so
    scoring is scheduled on the app's loop; in sync runs it goes to a background thread with its own
    loop. The callbacks only record what they see and return at once.

    Args:
        metrics: ragmetrics metrics (``FaithfulnessMetric(llm=...)``, ...), built-in names
            (``"context_recall"``, judged by the judge from the environment) or functions of a Sample;
            claim metrics with the same judge share it, so a run's claims are extracted once.
        references: Reference answers by question (a mapping, or a function ``question -> reference
            or None``) for the metrics that need one; a run's metadata ``reference`` comes first.
        sink: None, a JSONL file path (one :class:`RunResult` per line, appended), or a callable (sync or
            async) called with each :class:`RunResult`.
        question_keys: Input keys that may hold the question, tried in order.
        answer_keys: Output keys that may hold the answer, tried in order.
        concurrency: Captured runs scored at once (per event loop).
        timeout_per_sample_s: Wall-time limit for scoring one run (None: the judges' timeouts only).
        max_pending: Runs waiting for scoring beyond which new ones are skipped with a reason.

    Raises:
        MissingDependencyError: ``langchain-core`` is not installed.
        ConfigError: No metrics, a bad metric, sink or limit.
    """

    run_inline = True
    """Called directly on the loop's thread in async runs (not in an executor), in event order."""
    raise_error = False
    """LangChain logs, and never raises, an error of this handler (none is expected: callbacks catch)."""

    def __init__(
        self,
        metrics: Sequence[MetricLike],
        *,
        references: References = None,
        sink: object = None,
        question_keys: Sequence[str] = QUESTION_KEYS,
        answer_keys: Sequence[str] = ANSWER_KEYS,
        concurrency: int = 8,
        timeout_per_sample_s: float | None = None,
        max_pending: int = 1000,
    ) -> None:
        _require_langchain("RagMetricsCallbackHandler")
        super().__init__()
        self.question_keys = tuple(question_keys)
        self.answer_keys = tuple(answer_keys)
        self._scorer = BackgroundScorer(
            metrics,
            source="langchain",
            references=references,
            sink=sink,
            concurrency=concurrency,
            timeout_per_sample_s=timeout_per_sample_s,
            max_pending=max_pending,
        )
        self._lock = threading.Lock()
        self._traces: dict[UUID, _Trace] = {}
        self._root_of: dict[UUID, UUID] = {}

    def __repr__(self) -> str:
        names = [getattr(m, "name", type(m).__name__) for m in self._scorer.metrics]
        return f"RagMetricsCallbackHandler(metrics={names}, results={len(self._scorer.results)})"

    # results, flush, close: from ScoredHandler

    # -- run bookkeeping -----------------------------------------------------------------------------------
    def _start(
        self,
        kind: str,
        run_id: UUID,
        parent_run_id: UUID | None,
        inputs: Any,
        tags: Any,
        metadata: Any,
        kwargs: Mapping[str, Any],
    ) -> _Trace:
        """Register a run under its top-level run (a run whose parent is unknown is top-level)."""
        with self._lock:
            root = self._root_of.get(parent_run_id) if parent_run_id is not None else None
            if root is None:
                root = run_id
                self._traces[run_id] = _Trace(
                    run_id=run_id,
                    kind=kind,
                    name=kwargs.get("name"),
                    tags=list(tags or []),
                    metadata=dict(metadata or {}),
                    raw_input=inputs,
                )
            self._root_of[run_id] = root
            trace = self._traces[root]
            trace.kinds[run_id] = kind
            trace.parents[run_id] = parent_run_id
            return trace

    def _trace_of(self, run_id: UUID | None) -> _Trace | None:
        root = self._root_of.get(run_id) if run_id is not None else None
        return self._traces.get(root) if root is not None else None

    def _guard(self, run_id: UUID | None, what: str, exc: BaseException) -> None:
        """Capturing failed: log it, and skip the run with the reason rather than score a wrong triple."""
        logger.warning("ragmetrics: capturing %s of run %s failed: %r", what, run_id, exc)
        with self._lock:
            trace = self._trace_of(run_id)
            if trace is not None and trace.problem is None:
                trace.problem = f"capturing the {what} failed: {type(exc).__name__}: {shorten(str(exc), 200)}"

    def _end(
        self,
        run_id: UUID,
        *,
        outputs: Any = None,
        inputs: Any = None,
        error: BaseException | None = None,
        llm_text: str | None = None,
    ) -> None:
        """A run ended; if it is a top-level run, build its capture and hand it to the scorer."""
        with self._lock:
            trace = self._traces.get(run_id)
            if trace is None:
                return
            del self._traces[run_id]
            for member in trace.kinds:
                self._root_of.pop(member, None)
        self._scorer.submit(
            self._capture(trace, outputs=outputs, inputs=inputs, error=error, llm_text=llm_text)
        )

    def _capture(
        self, trace: _Trace, *, outputs: Any, inputs: Any, error: BaseException | None, llm_text: str | None
    ) -> Capture:
        done = [docs for docs in trace.retrievals.values() if docs is not None]
        contexts = [text for docs in done for text in docs]
        meta = json_safe(
            {
                "run_name": trace.name,
                "run_type": trace.kind,
                "tags": trace.tags,
                "metadata": trace.metadata,
                "retrievals": len(done),
            }
        )
        cap = Capture(
            run_id=str(trace.run_id),
            source="langchain",
            contexts=contexts,
            reference=trace.metadata.get("reference"),
            meta=meta,
        )
        try:
            # a streamed run starts with a placeholder input; the real one comes with its end
            for raw in (inputs, trace.raw_input):
                question = question_from(raw, self.question_keys) if raw is not None else None
                if question is not None and question.strip():
                    cap.question = question
                    break
            else:
                cap.question = trace.retriever_queries[0] if trace.retriever_queries else None
            cap.answer = answer_from(outputs, self.answer_keys) if outputs is not None else None
            if cap.answer is None:
                cap.answer = llm_text if llm_text is not None else trace.last_llm_text
        except Exception as exc:
            trace.problem = trace.problem or f"capturing the triple failed: {type(exc).__name__}: {exc}"
        if trace.problem is not None:
            cap.skip_reason = f"not scored: {trace.problem}"
        elif error is not None:
            cap.skip_reason = f"not scored: the run raised {type(error).__name__}: {shorten(str(error), 300)}"
        elif not done:
            cap.skip_reason = (
                "not scored: the run retrieved nothing (no retriever finished in it), so there are "
                "no contexts to judge the answer against"
            )
        elif cap.answer is None:
            cap.skip_reason = (
                f"not scored: no answer found: the run's output is a {type(outputs).__name__} (not a "
                f"string, a message or a dict with one of {list(self.answer_keys)}) and no LLM ran; "
                "pass answer_keys="
            )
        return cap

    def _nested_in_retriever(self, trace: _Trace, parent: UUID | None) -> bool:
        while parent is not None:
            if trace.kinds.get(parent) == "retriever":
                return True
            parent = trace.parents.get(parent)
        return False

    # -- LangChain callbacks (each records and returns at once; none raises) --------------------------------
    @_guarded("chain start")
    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register a chain run; a top-level one keeps its input."""
        self._start("chain", run_id, parent_run_id, inputs, tags, metadata, kwargs)

    @_guarded("chain end")
    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A chain ended: a top-level one is captured and scored."""
        self._end(run_id, outputs=outputs, inputs=kwargs.get("inputs"))

    @_guarded("chain error")
    def on_chain_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A chain raised: a top-level one is recorded as skipped."""
        self._end(run_id, error=error)

    @_guarded("retriever start")
    def on_retriever_start(
        self,
        serialized: Any,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Reserve the retriever's place in the run's contexts (start order)."""
        trace = self._start("retriever", run_id, parent_run_id, query, tags, metadata, kwargs)
        with self._lock:
            if not self._nested_in_retriever(trace, parent_run_id):
                trace.retrievals[run_id] = None
                if isinstance(query, str):
                    trace.retriever_queries.append(query)

    @_guarded("retriever end")
    def on_retriever_end(
        self, documents: Sequence[Any], *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Keep the retrieved documents' text; a top-level retriever run ends here."""
        texts = [str(getattr(d, "page_content", d)) for d in documents]
        with self._lock:
            trace = self._trace_of(run_id)
            if trace is not None and run_id in trace.retrievals:
                trace.retrievals[run_id] = texts
        self._end(run_id)

    @_guarded("retriever error")
    def on_retriever_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A retriever raised: it adds no contexts."""
        with self._lock:
            trace = self._trace_of(run_id)
            if trace is not None:
                trace.retrievals.pop(run_id, None)
        self._end(run_id, error=error)

    @_guarded("LLM start")
    def on_llm_start(
        self,
        serialized: Any,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register an LLM run."""
        self._start("llm", run_id, parent_run_id, prompts[-1] if prompts else None, tags, metadata, kwargs)

    @_guarded("chat model start")
    def on_chat_model_start(
        self,
        serialized: Any,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register a chat model run."""
        self._start("llm", run_id, parent_run_id, messages[-1] if messages else None, tags, metadata, kwargs)

    @_guarded("LLM end")
    def on_llm_end(
        self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Keep the text of the run's latest LLM output (the answer when the chain's output holds none)."""
        text = generation_text(response)
        with self._lock:
            trace = self._trace_of(run_id)
            if trace is not None and text is not None:
                trace.last_llm_text = text
        self._end(run_id, llm_text=text)

    @_guarded("LLM error")
    def on_llm_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """An LLM call raised."""
        self._end(run_id, error=error)

    @_guarded("tool start")
    def on_tool_start(
        self,
        serialized: Any,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register a tool run (its retrievers belong to the same top-level run)."""
        self._start("tool", run_id, parent_run_id, kwargs.get("inputs", input_str), tags, metadata, kwargs)

    @_guarded("tool end")
    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A tool ended."""
        self._end(run_id, outputs=output)

    @_guarded("tool error")
    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A tool raised."""
        self._end(run_id, error=error)
