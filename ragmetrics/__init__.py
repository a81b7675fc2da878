"""ragmetrics: trustworthy, cheap, evidence-backed evaluation of RAG answers.

>>> from ragmetrics import FaithfulnessMetric
>>> metric = FaithfulnessMetric(llm="offline")          # or "openai:gpt-4o-mini", "anthropic:..."
>>> result = metric.evaluate_sync(question="What is Python?",
...     answer="Python is a compiled language created in 1991.",
...     contexts=["Python is an interpreted language created by Guido van Rossum in 1991."])

Provider SDKs (openai, anthropic, instructor) are imported only when a provider judge makes its first
call, so ``import ragmetrics`` stays fast.
"""

from __future__ import annotations

from ragmetrics._version import __version__
from ragmetrics.errors import (
    CacheError,
    ConfigError,
    InvalidInputError,
    JudgeError,
    JudgeOutputError,
    MissingDependencyError,
    NoScoreError,
    PromptError,
    RagMetricsError,
    SnapshotError,
)
from ragmetrics.eval import (
    BleuEvaluator,
    ContainsEvaluator,
    CosineSimilarityEvaluator,
    CustomEvaluator,
    EmbeddingDistanceEvaluator,
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
    RegexMatchEvaluator,
    RougeEvaluator,
    make_evaluator,
)
from ragmetrics.judge import Judge, resolve_judge
from ragmetrics.metrics import BUILTIN_METRICS
from ragmetrics.metrics.faithfulness import FaithfulnessMetric
from ragmetrics.metrics.groundedness import GroundednessMetric
from ragmetrics.metrics.relevancy import RelevancyMetric
from ragmetrics.sample import Sample
from ragmetrics.score import ClaimRecord, JudgeInfo, MetricResult, Usage

EvalResult = MetricResult
"""The evaluators' name for the one result shape."""

__all__ = [
    "BUILTIN_METRICS",
    "BleuEvaluator",
    "CacheError",
    "ClaimRecord",
    "ConfigError",
    "ContainsEvaluator",
    "CosineSimilarityEvaluator",
    "CustomEvaluator",
    "EmbeddingDistanceEvaluator",
    "EvalResult",
    "ExactMatchEvaluator",
    "F1Evaluator",
    "FaithfulnessMetric",
    "FakeEmbeddings",
    "GEvalEvaluator",
    "GroundednessMetric",
    "HtmlValidationEvaluator",
    "InvalidInputError",
    "JsonMatchEvaluator",
    "JsonValidityEvaluator",
    "Judge",
    "JudgeError",
    "JudgeInfo",
    "JudgeOutputError",
    "LLMJudgeEvaluator",
    "LLMRubricEvaluator",
    "LevenshteinEvaluator",
    "MetricResult",
    "MissingDependencyError",
    "NoScoreError",
    "PromptError",
    "RagMetricsError",
    "RegexMatchEvaluator",
    "RelevancyMetric",
    "RougeEvaluator",
    "Sample",
    "SnapshotError",
    "Usage",
    "__version__",
    "make_evaluator",
    "resolve_judge",
]
