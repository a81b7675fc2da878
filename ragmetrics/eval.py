"""The documented import path of the classic evaluators: ``from ragmetrics.eval import RougeEvaluator``.

Everything here lives in :mod:`ragmetrics.metrics.evaluators` (built by its ``factory``); this module
only keeps the path that the README and the reference documents use.
"""

from __future__ import annotations

from ragmetrics.metrics.evaluators.factory import (
    EVALUATOR_TYPES,
    PRIMARY_OPTION,
    BleuEvaluator,
    ContainsEvaluator,
    CosineSimilarityEvaluator,
    CustomEvaluator,
    Embedder,
    EmbeddingDistanceEvaluator,
    EvalResult,
    Evaluator,
    ExactMatchEvaluator,
    F1Evaluator,
    FakeEmbeddings,
    GEvalEvaluator,
    HtmlValidationEvaluator,
    JsonMatchEvaluator,
    JsonValidityEvaluator,
    LevenshteinEvaluator,
    LLMJudgeEvaluator,
    LLMRubricEvaluator,
    OpenAIEmbeddings,
    RegexMatchEvaluator,
    RougeEvaluator,
    SentenceTransformerEmbeddings,
    evaluator_options,
    make_evaluator,
    resolve_embedder,
)

__all__ = [
    "EVALUATOR_TYPES",
    "PRIMARY_OPTION",
    "BleuEvaluator",
    "ContainsEvaluator",
    "CosineSimilarityEvaluator",
    "CustomEvaluator",
    "Embedder",
    "EmbeddingDistanceEvaluator",
    "EvalResult",
    "Evaluator",
    "ExactMatchEvaluator",
    "F1Evaluator",
    "FakeEmbeddings",
    "GEvalEvaluator",
    "HtmlValidationEvaluator",
    "JsonMatchEvaluator",
    "JsonValidityEvaluator",
    "LLMJudgeEvaluator",
    "LLMRubricEvaluator",
    "LevenshteinEvaluator",
    "OpenAIEmbeddings",
    "RegexMatchEvaluator",
    "RougeEvaluator",
    "SentenceTransformerEmbeddings",
    "evaluator_options",
    "make_evaluator",
    "resolve_embedder",
]
