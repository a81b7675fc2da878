"""Metrics: the claim-based RAG metrics and the classic evaluators, and the name table of built-ins.

``BUILTIN_METRICS`` maps each snake_case name used in reports, config files and the CLI
(``faithfulness``, ``exact_match``, ``g_eval``...) to its class. It is the only registry; user metrics
are passed in, never registered.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ragmetrics.errors import ConfigError, shorten
from ragmetrics.metrics.base import Metric
from ragmetrics.metrics.claims.faithfulness import FaithfulnessMetric
from ragmetrics.metrics.claims.groundedness import GroundednessMetric
from ragmetrics.metrics.claims.relevancy import RelevancyMetric
from ragmetrics.metrics.evaluators.base import Evaluator
from ragmetrics.metrics.evaluators.factory import EVALUATOR_TYPES

__all__ = ["BUILTIN_METRICS", "BY_NAME", "RAG_METRICS", "Evaluator", "Metric", "metric_from_name"]

RAG_METRICS: Mapping[str, type] = MappingProxyType(
    {cls.name: cls for cls in (FaithfulnessMetric, RelevancyMetric, GroundednessMetric)}
)
"""The claim-based RAG metrics by name."""

BUILTIN_METRICS: Mapping[str, type] = MappingProxyType({**RAG_METRICS, **EVALUATOR_TYPES})
"""Every built-in metric and evaluator by its snake_case name (the evaluators from their one table)."""

BY_NAME = tuple(sorted([*RAG_METRICS, *(n for n, cls in EVALUATOR_TYPES.items() if cls.by_name)]))
"""The metric names accepted in place of a metric object (the CLI's ``--metrics``, ``evaluate()``)."""


def metric_from_name(
    name: str, *, llm: Any = None, threshold: float | None = None, cache: bool = True, **options: Any
) -> Any:
    """A built-in metric from its name, as the CLI's ``--metrics`` and ``evaluate(metrics=[...])`` build it.

    Args:
        name: One of :data:`BY_NAME` (``faithfulness``, ``relevancy``, ``groundedness``, ``rouge``...).
        llm: The judge of the RAG metrics (a spec, a ``Judge`` or a client); None: from the environment.
        threshold: The pass mark (RAG metrics and graded evaluators; None: the metric's default).
        cache: Whether the RAG metrics use the judge cache.
        options: More judge options of the RAG metrics (``max_concurrency``, ``timeout_s``...).

    Raises:
        ConfigError: The name is unknown (or needs options only a metric object can take).
    """
    if name in RAG_METRICS:
        judge = {} if llm is None else {"llm": llm}
        return RAG_METRICS[name](threshold=threshold, cache=cache, **judge, **options)
    if name in BY_NAME:
        cls = EVALUATOR_TYPES[name]
        graded = "threshold" in inspect.signature(cls).parameters  # others keep their own pass mark
        return cls(threshold=threshold) if graded else cls()
    raise ConfigError(
        f"unknown metric {shorten(name, 80)!r}; choose from {', '.join(BY_NAME)} "
        "(other evaluators need options: pass a metric object, or use a suite file)"
    )
