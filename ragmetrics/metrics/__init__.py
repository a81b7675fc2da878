"""Metrics: the claim-based RAG metrics and the classic evaluators, and the name table of built-ins.

``BUILTIN_METRICS`` maps each snake_case name used in reports, config files and the CLI
(``faithfulness``, ``exact_match``, ``g_eval``...) to its class. It is the only registry; user metrics
are passed in, never registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ragmetrics.metrics.base import Metric
from ragmetrics.metrics.custom import CustomEvaluator
from ragmetrics.metrics.embedding import EmbeddingDistanceEvaluator
from ragmetrics.metrics.evaluators import Evaluator
from ragmetrics.metrics.faithfulness import FaithfulnessMetric
from ragmetrics.metrics.groundedness import GroundednessMetric
from ragmetrics.metrics.overlap import BleuEvaluator, RougeEvaluator
from ragmetrics.metrics.relevancy import RelevancyMetric
from ragmetrics.metrics.rubric import GEvalEvaluator, LLMJudgeEvaluator, LLMRubricEvaluator
from ragmetrics.metrics.structured import HtmlValidationEvaluator, JsonMatchEvaluator, JsonValidityEvaluator
from ragmetrics.metrics.text import (
    ContainsEvaluator,
    ExactMatchEvaluator,
    F1Evaluator,
    LevenshteinEvaluator,
    RegexMatchEvaluator,
)

__all__ = ["BUILTIN_METRICS", "RAG_METRICS", "Evaluator", "Metric"]

RAG_METRICS: Mapping[str, type] = MappingProxyType(
    {cls.name: cls for cls in (FaithfulnessMetric, RelevancyMetric, GroundednessMetric)}
)
"""The claim-based RAG metrics by name."""

BUILTIN_METRICS: Mapping[str, type] = MappingProxyType(
    {
        **RAG_METRICS,
        **{
            cls.name: cls
            for cls in (
                ExactMatchEvaluator,
                ContainsEvaluator,
                RegexMatchEvaluator,
                JsonValidityEvaluator,
                JsonMatchEvaluator,
                HtmlValidationEvaluator,
                RougeEvaluator,
                BleuEvaluator,
                F1Evaluator,
                LevenshteinEvaluator,
                EmbeddingDistanceEvaluator,
                LLMJudgeEvaluator,
                LLMRubricEvaluator,
                GEvalEvaluator,
                CustomEvaluator,
            )
        },
    }
)
"""Every built-in metric and evaluator by its snake_case name."""
