"""LlamaIndex adapter: metrics as evaluators, and a handler that scores each query as it runs.

:func:`as_llamaindex_evaluator` makes a ragmetrics metric a LlamaIndex ``BaseEvaluator``;
:class:`RagMetricsEventHandler` listens to LlamaIndex's instrumentation and scores each query of a
query engine in the background (``attach()``, then ``flush()`` or ``flush_sync()``). Events are mapped
to the outermost query span they belong to, so concurrent queries never mix. The question comes from
``QueryStartEvent``, the contexts from the response's ``source_nodes`` (else the retrievals), the
answer from ``QueryEndEvent``, the reference from the handler's ``references``. A query with no
retrieval, no answer, a streaming response or an error is recorded as skipped with a reason. Without
LlamaIndex, building an adapter raises :class:`~ragmetrics.errors.MissingDependencyError`.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import PrivateAttr

from ragmetrics._aio import run_sync
from ragmetrics.errors import ConfigError, MissingDependencyError, shorten
from ragmetrics.integrations._records import References
from ragmetrics.integrations._scoring import BackgroundScorer, Capture, RunResult, ScoredHandler, json_safe
from ragmetrics.metrics import metric_from_name
from ragmetrics.metrics.base import Metric, MetricLike, check_threshold, passed_at
from ragmetrics.sample import Sample
from ragmetrics.score import MetricResult

try:
    from llama_index.core.evaluation import BaseEvaluator as _EvaluatorBase
    from llama_index.core.evaluation import EvaluationResult as _LlamaResult

    # public path; llama_index re-exports it from llama_index_instrumentation without an __all__
    from llama_index.core.instrumentation import get_dispatcher as _get_dispatcher  # type: ignore[attr-defined]
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler as _EventHandlerBase
    from llama_index.core.instrumentation.span import SimpleSpan as _Span
    from llama_index.core.instrumentation.span_handlers import BaseSpanHandler as _SpanHandlerBase

    _MISSING: ImportError | None = None
except ImportError as _exc:  # the extra is not installed: the adapters raise when built
    _MISSING = _exc

    class _EvaluatorBase:  # type: ignore[no-redef]
        """Stands in for LlamaIndex's ``BaseEvaluator`` when LlamaIndex is not installed."""

    class _EventHandlerBase:  # type: ignore[no-redef]
        """Stands in for LlamaIndex's ``BaseEventHandler`` when LlamaIndex is not installed."""

    class _SpanHandlerBase:  # type: ignore[no-redef]
        """Stands in for LlamaIndex's ``BaseSpanHandler`` when LlamaIndex is not installed."""


__all__ = ["RagMetricsEvaluator", "RagMetricsEventHandler", "RunResult", "as_llamaindex_evaluator"]

logger = logging.getLogger("ragmetrics.integrations")


def _require_llamaindex(feature: str) -> None:
    if _MISSING is not None:
        raise MissingDependencyError("llama-index-core", "llamaindex", feature) from _MISSING


# -- metrics as LlamaIndex evaluators ---------------------------------------------------------------------


class RagMetricsEvaluator(_EvaluatorBase):  # type: ignore[misc, valid-type]
    """A ragmetrics metric as a LlamaIndex ``BaseEvaluator`` (build it with :func:`as_llamaindex_evaluator`).

    ``aevaluate(query=, response=, contexts=)`` and ``evaluate_response(query=, response=)`` return a
    LlamaIndex ``EvaluationResult``: ``score`` and ``passing`` from the ragmetrics result, ``feedback``
    its reasoning; a metric with no score gives ``invalid_result=True`` and the reason. The metric's
    full record is kept on :attr:`last_result`. A ``reference=`` keyword is passed on to the sample
    (``BatchEvalRunner.aevaluate_queries(engine, queries, reference=[...])`` gives one per query).
    """

    def __init__(self, metric: Metric | str, *, threshold: float | None = None) -> None:
        _require_llamaindex("as_llamaindex_evaluator")
        resolved: Metric = metric_from_name(metric) if isinstance(metric, str) else metric
        if not callable(getattr(resolved, "evaluate_sample", None)):
            raise ConfigError(
                f"as_llamaindex_evaluator needs a ragmetrics metric (with evaluate_sample), got "
                f"{type(metric).__name__}"
            )
        self.metric = resolved
        self.threshold = (
            check_threshold(threshold, "as_llamaindex_evaluator")
            if threshold is not None
            else getattr(resolved, "threshold", None)
        )
        self.last_result: MetricResult | None = None

    def __repr__(self) -> str:
        return f"RagMetricsEvaluator({self.metric!r}, threshold={self.threshold})"

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts_dict: Any) -> None:
        return None

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Score one answer; returns a LlamaIndex ``EvaluationResult``.

        Raises:
            InvalidInputError: A field has the wrong type, or the response is missing.
        """
        sample = Sample.from_fields(
            question=query,
            answer=response,
            contexts=list(contexts) if contexts is not None else None,
            reference=kwargs.get("reference"),
        )
        out = self.metric.evaluate_sample(sample)
        result = await out if inspect.isawaitable(out) else out
        if not isinstance(result, MetricResult):
            raise TypeError(
                f"metric {getattr(self.metric, 'name', self.metric)!r} returned {type(result).__name__}, "
                "not a MetricResult"
            )
        self.last_result = result
        passing = passed_at(result.score, self.threshold)
        return _LlamaResult(
            query=query,
            response=response,
            contexts=list(contexts) if contexts is not None else None,
            score=result.score,
            passing=passing,
            feedback=result.reasoning or result.message,
            invalid_result=result.score is None,
            invalid_reason=None if result.score is not None else f"{result.status}: {result.message}",
        )

    def evaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Blocking twin of :meth:`aevaluate` (also inside a running loop); closes the clients it opened."""
        return run_sync(
            self._closing(self.aevaluate(query=query, response=response, contexts=contexts, **kwargs))
        )

    async def _closing(self, coro: Any) -> Any:
        try:
            return await coro
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the metric judge's client on the running loop (and its cache file)."""
        judge = getattr(self.metric, "judge", None) if hasattr(self.metric, "judge_key") else None
        if judge is not None and callable(getattr(judge, "aclose", None)):
            await judge.aclose()


def as_llamaindex_evaluator(metric: Metric | str, *, threshold: float | None = None) -> RagMetricsEvaluator:
    """Wrap a ragmetrics metric as a LlamaIndex evaluator (usable in ``BatchEvalRunner``).

    Args:
        metric: A ragmetrics metric (``FaithfulnessMetric(llm=...)``, ``ContextRecallMetric(...)``), or
            a built-in metric's name (``"context_recall"``, judged by the judge from the environment).
        threshold: Pass mark for ``passing``; None uses the metric's own threshold (no threshold:
            ``passing`` is None).

    Raises:
        MissingDependencyError: ``llama-index-core`` is not installed.
        ConfigError: ``metric`` is not a ragmetrics metric (or an unknown name), or the threshold is not
            in [0, 1].
    """
    return RagMetricsEvaluator(metric, threshold=threshold)


# -- the instrumentation handler ------------------------------------------------------------------------


# BaseSpanHandler is generic, but the fallback base (no llama_index installed) cannot be subscripted
class _SpanTracker(_SpanHandlerBase):  # type: ignore[misc, valid-type, type-arg]
    """Keeps the parent of every open span: LlamaIndex events name only the span they were sent in."""

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "RagMetricsSpanTracker"

    def new_span(
        self,
        id_: str,
        bound_args: Any,
        instance: Any = None,
        parent_span_id: str | None = None,
        tags: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Remember the span and its parent."""
        return _Span(id_=id_, parent_id=parent_span_id)

    def prepare_to_exit_span(
        self, id_: str, bound_args: Any, instance: Any = None, result: Any = None, **kwargs: Any
    ) -> Any:
        """Forget the span (the base class drops what this returns)."""
        return self.open_spans.get(id_)

    def prepare_to_drop_span(
        self, id_: str, bound_args: Any, instance: Any = None, err: Any = None, **kwargs: Any
    ) -> Any:
        """Forget the span."""
        return self.open_spans.get(id_)

    def parent_of(self, span_id: str) -> str | None:
        """The parent of an open span, or None."""
        span = self.open_spans.get(span_id)
        return span.parent_id if span is not None else None


@dataclass(slots=True)
class _Query:
    """What one outermost query has shown so far (guarded by the handler's lock)."""

    span_id: str
    question: str | None
    retrievals: dict[str, list[str] | None] = field(default_factory=dict)
    """Outermost retrieval spans in start order -> their nodes' text (None until they end)."""
    problem: str | None = None


def _query_text(query: Any) -> str | None:
    if isinstance(query, str):
        return query
    text = getattr(query, "query_str", None)
    return text if isinstance(text, str) else None


def _node_text(node: Any) -> str:
    get = getattr(node, "get_content", None)
    return str(get()) if callable(get) else str(node)


def _span_name(span_id: str) -> str:
    return span_id.split("-", 1)[0]


class RagMetricsEventHandler(_EventHandlerBase, ScoredHandler):  # type: ignore[misc, valid-type]
    """Scores each query of a LlamaIndex query engine with ragmetrics metrics, in the background.

    Attach it with :meth:`attach` (or ``get_dispatcher().add_event_handler(handler)``), detach it with
    :meth:`detach`. Events are handled as they are sent (on the query's thread, on its event loop in
    async code); scoring is scheduled on that loop, or on a background thread for sync apps.

    Args:
        metrics: ragmetrics metrics, built-in names (``"context_recall"``) or functions of a Sample;
            claim metrics with the same judge share it.
        references: Reference answers by question (a mapping, or a function ``question -> reference
            or None``), for the metrics that need one (``context_recall``, ``answer_correctness``).
        sink: None, a JSONL file path (one :class:`RunResult` per line, appended), or a callable (sync or
            async) called with each :class:`RunResult`.
        concurrency: Captured queries scored at once (per event loop).
        timeout_per_sample_s: Wall-time limit for scoring one query (None: the judges' timeouts only).
        max_pending: Queries waiting for scoring beyond which new ones are skipped with a reason.

    Raises:
        MissingDependencyError: ``llama-index-core`` is not installed.
        ConfigError: No metrics, a bad metric, sink or limit.
    """

    _scorer: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default=None)
    _queries: Any = PrivateAttr(default=None)
    _tracker: Any = PrivateAttr(default=None)

    def __init__(
        self,
        metrics: Sequence[MetricLike],
        *,
        references: References = None,
        sink: object = None,
        concurrency: int = 8,
        timeout_per_sample_s: float | None = None,
        max_pending: int = 1000,
    ) -> None:
        _require_llamaindex("RagMetricsEventHandler")
        super().__init__()
        self._scorer = BackgroundScorer(
            metrics,
            source="llamaindex",
            references=references,
            sink=sink,
            concurrency=concurrency,
            timeout_per_sample_s=timeout_per_sample_s,
            max_pending=max_pending,
        )
        self._lock = threading.Lock()
        self._queries: dict[str, _Query] = {}
        self._tracker = _SpanTracker()

    def __repr__(self) -> str:
        names = [getattr(m, "name", type(m).__name__) for m in self._scorer.metrics]
        return f"RagMetricsEventHandler(metrics={names}, results={len(self._scorer.results)})"

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "RagMetricsEventHandler"

    # -- attaching ---------------------------------------------------------------------------------------
    def attach(self, dispatcher: Any = None) -> RagMetricsEventHandler:
        """Add this handler to ``dispatcher`` (default: LlamaIndex's root dispatcher); returns ``self``."""
        target = dispatcher if dispatcher is not None else _get_dispatcher()
        if not any(h is self for h in target.event_handlers):
            target.add_event_handler(self)
        self._track_spans()
        return self

    def detach(self) -> None:
        """Remove this handler (and its span tracker) from every dispatcher; runs in flight are dropped."""
        root = _get_dispatcher()
        dispatchers = list(root.manager.dispatchers.values()) if root.manager is not None else [root]
        for d in dispatchers:
            if any(h is self for h in d.event_handlers):
                d.event_handlers = [h for h in d.event_handlers if h is not self]
            if any(h is self._tracker for h in d.span_handlers):
                d.span_handlers = [h for h in d.span_handlers if h is not self._tracker]
        with self._lock:
            self._queries.clear()

    def _track_spans(self) -> None:
        root = _get_dispatcher()
        if not any(h is self._tracker for h in root.span_handlers):
            root.add_span_handler(self._tracker)

    # results, flush, close: from ScoredHandler

    # -- events ----------------------------------------------------------------------------------------
    def handle(self, event: Any, **kwargs: Any) -> None:
        """Record what a query event says; returns at once and never raises."""
        try:
            kind = event.class_name()
            span_id = getattr(event, "span_id", None)
            if not isinstance(span_id, str):
                return
            if kind == "QueryStartEvent":
                self._track_spans()  # attached with add_event_handler: learn span parents from now on
                self._on_query_start(span_id, event)
            elif kind == "RetrievalStartEvent":
                self._on_retrieval_start(span_id)
            elif kind == "RetrievalEndEvent":
                self._on_retrieval_end(span_id, event)
            elif kind == "QueryEndEvent":
                self._finish(span_id, response=getattr(event, "response", None))
            elif kind == "SpanDropEvent":
                self._on_span_drop(span_id, getattr(event, "err_str", ""))
        except Exception as exc:
            logger.warning("ragmetrics: handling %s failed: %r", type(event).__name__, exc)
            with self._lock:
                root = self._root(getattr(event, "span_id", None) or "")
                if root is not None and self._queries[root].problem is None:
                    self._queries[root].problem = f"capturing the query failed: {type(exc).__name__}: {exc}"

    def _root(self, span_id: str) -> str | None:
        """The outermost query span that ``span_id`` is in (or is), or None."""
        sid: str | None = span_id
        for _ in range(10_000):
            if sid is None:
                return None
            if sid in self._queries:
                return sid
            sid = self._tracker.parent_of(sid)
        return None

    def _on_query_start(self, span_id: str, event: Any) -> None:
        with self._lock:
            if self._root(span_id) is None:  # a query inside another query belongs to the outer one
                self._queries[span_id] = _Query(
                    span_id=span_id, question=_query_text(getattr(event, "query", None))
                )

    def _on_retrieval_start(self, span_id: str) -> None:
        with self._lock:
            root = self._root(span_id)
            if root is None:
                return
            query = self._queries[root]
            parent = self._tracker.parent_of(span_id)
            while parent is not None and parent != root:
                if parent in query.retrievals:  # a retriever inside a retriever: counted once, outside
                    return
                parent = self._tracker.parent_of(parent)
            query.retrievals[span_id] = None

    def _on_retrieval_end(self, span_id: str, event: Any) -> None:
        texts = [_node_text(n) for n in getattr(event, "nodes", None) or []]
        with self._lock:
            root = self._root(span_id)
            if root is not None and span_id in self._queries[root].retrievals:
                self._queries[root].retrievals[span_id] = texts

    def _on_span_drop(self, span_id: str, err: str) -> None:
        if span_id in self._queries:
            self._finish(span_id, error=err or "the query raised")
            return
        with self._lock:
            root = self._root(span_id)
            if root is not None:
                self._queries[root].retrievals.pop(span_id, None)  # a failed retrieval adds nothing

    def _finish(self, span_id: str, *, response: Any = None, error: str | None = None) -> None:
        with self._lock:
            query = self._queries.pop(span_id, None)
        if query is not None:
            self._scorer.submit(self._capture(query, response, error))

    def _capture(self, query: _Query, response: Any, error: str | None) -> Capture:
        done = [texts for texts in query.retrievals.values() if texts is not None]
        sources = list(getattr(response, "source_nodes", None) or [])
        cap = Capture(run_id=query.span_id, source="llamaindex", question=query.question)
        try:
            cap.contexts = (
                [_node_text(n) for n in sources] if sources else [t for texts in done for t in texts]
            )
            streaming = hasattr(response, "response_gen") or hasattr(response, "async_response_gen")
            if not streaming and response is not None:
                text = getattr(response, "response", response)
                cap.answer = text if isinstance(text, str) else (None if text is None else str(response))
        except Exception as exc:
            query.problem = query.problem or f"capturing the response failed: {type(exc).__name__}: {exc}"
            streaming = False
        cap.meta = json_safe(
            {
                "query_engine": _span_name(query.span_id).split(".", 1)[0],
                "retrievals": len(done),
                "contexts_from": "source_nodes" if sources else "retrieval_events",
            }
        )
        if query.problem is not None:
            cap.skip_reason = f"not scored: {query.problem}"
        elif error is not None:
            cap.skip_reason = f"not scored: the query raised: {shorten(error, 300)}"
        elif not done and not sources:
            cap.skip_reason = (
                "not scored: the query retrieved nothing (no retrieval finished in it), so there are "
                "no contexts to judge the answer against"
            )
        elif streaming:
            cap.skip_reason = (
                "not scored: the response is streamed, so its text exists only after the app has "
                "consumed it; score it with as_llamaindex_evaluator(...).aevaluate(...) instead"
            )
        elif cap.answer is None:
            cap.skip_reason = f"not scored: the query's response ({type(response).__name__}) holds no text"
        return cap
