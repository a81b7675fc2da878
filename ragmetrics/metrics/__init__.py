"""Metrics: the claim-based RAG metrics and the classic evaluators, and the name table of built-ins.

``BUILTIN_METRICS`` maps each snake_case name used in reports, config files and the CLI
(``faithfulness``, ``exact_match``, ``g_eval``...) to its class. It is the only registry; user metrics
are passed in, never registered: as objects, or on the CLI as an import path ``package.module:attr``
(:func:`metric_from_name` imports it).

Adding a claim metric is one file (a :class:`~ragmetrics.metrics.claims.metric.ClaimMetric` subclass:
a name, a :class:`~ragmetrics.metrics.claims.engine.ClaimTask` and a scoring function) plus one line in
``RAG_METRICS`` below.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from ragmetrics.errors import ConfigError, shorten
from ragmetrics.metrics.aliases import METRIC_ALIASES, canonical_metric_name, did_you_mean
from ragmetrics.metrics.base import JudgedMetric, Metric, Needs
from ragmetrics.metrics.claims.answer_correctness import AnswerCorrectnessMetric
from ragmetrics.metrics.claims.context_precision import ContextPrecisionMetric
from ragmetrics.metrics.claims.context_recall import ContextRecallMetric
from ragmetrics.metrics.claims.context_relevancy import ContextRelevancyMetric
from ragmetrics.metrics.claims.engine import ClaimTask
from ragmetrics.metrics.claims.faithfulness import FaithfulnessMetric
from ragmetrics.metrics.claims.groundedness import GroundednessMetric
from ragmetrics.metrics.claims.metric import ClaimMetric, ClaimScore, Found
from ragmetrics.metrics.claims.relevancy import RelevancyMetric

__all__ = [
    "BUILTIN_METRICS",
    "BY_NAME",
    "CONVERSATION_METRICS",
    "RAG_METRICS",
    "ClaimMetric",
    "ClaimScore",
    "ClaimTask",
    "Found",
    "Evaluator",
    "JudgedMetric",
    "METRIC_ALIASES",
    "Metric",
    "Needs",
    "metric_from_name",
]

RAG_METRICS: Mapping[str, type] = MappingProxyType(
    {
        cls.name: cls
        for cls in (
            FaithfulnessMetric,
            RelevancyMetric,
            GroundednessMetric,
            ContextRecallMetric,
            ContextPrecisionMetric,
            ContextRelevancyMetric,
            AnswerCorrectnessMetric,
        )
    }
)
"""The claim-based RAG metrics by name."""


class _Tables(NamedTuple):
    CONVERSATION_METRICS: Mapping[str, type]
    """The conversation-level metrics by name: one judge call per conversation each, on no turn."""
    BUILTIN_METRICS: Mapping[str, type]
    """Every built-in metric and evaluator by its snake_case name (the evaluators from their one table)."""
    BY_NAME: tuple[str, ...]
    """The metric names accepted in place of a metric object (the CLI's ``--metrics``, ``evaluate()``)."""
    EVALUATOR_TYPES: Mapping[str, type]
    """The evaluators by name (their one table, in :mod:`ragmetrics.metrics.evaluators.factory`)."""


@cache
def _tables() -> _Tables:
    """The tables that name the conversation-level metrics and the evaluators (imported on first use)."""
    from ragmetrics.metrics.conversation.session import (
        ConversationCompleteness,
        KnowledgeRetention,
        TaskCompletion,
    )
    from ragmetrics.metrics.evaluators.factory import EVALUATOR_TYPES

    conversation = {cls.name: cls for cls in (KnowledgeRetention, ConversationCompleteness, TaskCompletion)}
    by_name = [*RAG_METRICS, *conversation, *(n for n, cls in EVALUATOR_TYPES.items() if cls.by_name)]
    return _Tables(
        CONVERSATION_METRICS=MappingProxyType(conversation),
        BUILTIN_METRICS=MappingProxyType({**RAG_METRICS, **conversation, **EVALUATOR_TYPES}),
        BY_NAME=tuple(sorted(by_name)),
        EVALUATOR_TYPES=EVALUATOR_TYPES,
    )


def __getattr__(name: str) -> Any:
    """``CONVERSATION_METRICS``, ``BUILTIN_METRICS``, ``BY_NAME`` and ``Evaluator``, loaded on first use.

    A run of the claim metrics then imports neither the evaluators nor the conversation-level metrics
    before its first judge call.
    """
    if name == "Evaluator":
        from ragmetrics.metrics.evaluators.base import Evaluator

        return Evaluator
    if name in ("CONVERSATION_METRICS", "BUILTIN_METRICS", "BY_NAME"):
        return getattr(_tables(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def metric_from_name(
    name: str, *, llm: Any = None, threshold: float | None = None, cache: bool = True, **options: Any
) -> Any:
    """A built-in metric from its name, as the CLI's ``--metrics`` and ``evaluate(metrics=[...])`` build it.

    Args:
        name: One of :data:`BY_NAME` (``faithfulness``, ``relevancy``, ``groundedness``, ``rouge``...),
            ``cosine_similarity`` (with ``embeddings=``, default ``local``), another tool's name for one
            of them (:data:`METRIC_ALIASES`: ``answer_relevancy``, ``contextual_recall``...; the metric
            keeps our name), or an import path ``package.module:attr`` naming a metric object, a
            function of a Sample, or a metric class (a claim metric class gets ``llm``, ``threshold``,
            ``cache`` and the options; another class is called with no arguments).
        llm: The judge of the RAG metrics (a spec, a ``Judge`` or a client); None: from the environment.
        threshold: The pass mark (RAG metrics and graded evaluators; None: the metric's default).
        cache: Whether the RAG metrics (and ``cosine_similarity``'s embedder) use the disk cache.
        options: More judge options of the RAG metrics (``api_key``, ``base_url``, ``max_concurrency``,
            ``timeout_s``...); ``embeddings`` goes to ``cosine_similarity`` only. Metrics that take no
            judge ignore them.

    Raises:
        ConfigError: The name is unknown (naming the closest one), or needs options only a metric
            object can take, or the import path does not name an importable attribute.
    """
    if ":" in name:
        options.pop("embeddings", None)
        return _metric_from_path(name, llm=llm, threshold=threshold, cache=cache, **options)
    name = canonical_metric_name(name)
    embeddings = options.pop("embeddings", None)
    judged = RAG_METRICS.get(name) or _tables().CONVERSATION_METRICS.get(name)
    if judged is not None:
        judge = {} if llm is None else {"llm": llm}
        return judged(threshold=threshold, cache=cache, **judge, **options)
    if name == "cosine_similarity":
        from ragmetrics.metrics.evaluators.base import DEFAULT_THRESHOLD
        from ragmetrics.metrics.evaluators.embedding import EmbeddingDistanceEvaluator

        return EmbeddingDistanceEvaluator(
            embeddings="local" if embeddings is None else embeddings,
            threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
            cache=cache,
        )
    by_name = _tables().BY_NAME
    if name in by_name:
        cls = _tables().EVALUATOR_TYPES[name]
        graded = "threshold" in inspect.signature(cls).parameters  # others keep their own pass mark
        return cls(threshold=threshold) if graded else cls()
    raise ConfigError(
        f"unknown metric {shorten(name, 80)!r}{did_you_mean(name, [*by_name, 'cosine_similarity'])}; "
        f"choose from {', '.join(by_name)}, cosine_similarity (with embeddings=), or another tool's name "
        f"for one of them ({', '.join(METRIC_ALIASES)}); other evaluators need options: pass a metric "
        "object, or use a suite file"
    )


def _metric_from_path(path: str, *, llm: Any, threshold: float | None, cache: bool, **options: Any) -> Any:
    module_name, _, attr = path.partition(":")
    shown = shorten(path, 120)
    if not module_name.strip() or not attr.strip() or not all(p.isidentifier() for p in attr.split(".")):
        raise ConfigError(f"metric {shown}: an import path is 'package.module:attr'")
    try:
        target: Any = importlib.import_module(module_name.strip())
    except ImportError as exc:
        raise ConfigError(
            f"metric {shown}: cannot import module {shorten(module_name, 80)!r} ({exc}); "
            "is its folder on PYTHONPATH?"
        ) from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"metric {shown}: module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if isinstance(target, type):
        if issubclass(target, ClaimMetric):
            judge = {} if llm is None else {"llm": llm}
            return target(threshold=threshold, cache=cache, **judge, **options)
        return target()
    if not callable(target) and not callable(getattr(target, "evaluate_sample", None)):
        raise ConfigError(
            f"metric {shown} is {type(target).__name__}: name a metric object, a metric class or a "
            "function of a Sample"
        )
    return target


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from ragmetrics.metrics.evaluators.base import Evaluator

    CONVERSATION_METRICS: Mapping[str, type]
    BUILTIN_METRICS: Mapping[str, type]
    BY_NAME: tuple[str, ...]
