"""ragmetrics: trustworthy, cheap, evidence-backed evaluation of RAG answers.

>>> from ragmetrics import FaithfulnessMetric
>>> metric = FaithfulnessMetric(llm="offline")          # or "openai:gpt-4o-mini", "anthropic:..."
>>> result = metric.evaluate_sync(question="What is Python?",
...     answer="Python is a compiled language created in 1991.",
...     contexts=["Python is an interpreted language created by Guido van Rossum in 1991."])

The public names are loaded on first use, so ``import ragmetrics`` (and the pytest plugin, which
every pytest run of a project with ragmetrics installed loads) costs almost nothing; provider SDKs
(openai, anthropic, instructor) load only when a provider judge makes its first call.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ragmetrics.errors import (
    CacheError,
    ConfigError,
    InvalidInputError,
    JudgeError,
    JudgeOutputError,
    MissingDependencyError,
    NoScoreError,
    OfflineJudgeWarning,
    PromptError,
    RagMetricsError,
    RagMetricsWarning,
    SnapshotError,
)

__version__ = "0.1.0"
"""The package version (kept equal to pyproject.toml by a test); set before any lazy name loads."""

_LAZY: dict[str, str] = {
    # metrics
    "AnswerCorrectnessMetric": "ragmetrics.metrics.claims.answer_correctness",
    "ContextPrecisionMetric": "ragmetrics.metrics.claims.context_precision",
    "ContextRecallMetric": "ragmetrics.metrics.claims.context_recall",
    "ContextRelevancyMetric": "ragmetrics.metrics.claims.context_relevancy",
    "FaithfulnessMetric": "ragmetrics.metrics.claims.faithfulness",
    "GroundednessMetric": "ragmetrics.metrics.claims.groundedness",
    "RelevancyMetric": "ragmetrics.metrics.claims.relevancy",
    "BUILTIN_METRICS": "ragmetrics.metrics",
    # evaluators
    **{
        name: "ragmetrics.metrics.evaluators.factory"
        for name in (
            "BleuEvaluator",
            "ContainsEvaluator",
            "CosineSimilarityEvaluator",
            "CustomEvaluator",
            "EmbeddingDistanceEvaluator",
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
            "RegexMatchEvaluator",
            "RougeEvaluator",
            "make_evaluator",
        )
    },
    # records and judges
    "Sample": "ragmetrics.sample",
    "ClaimRecord": "ragmetrics.score",
    "JudgeInfo": "ragmetrics.score",
    "MetricResult": "ragmetrics.score",
    "Usage": "ragmetrics.score",
    "Judge": "ragmetrics.judge",
    "resolve_judge": "ragmetrics.judge",
    "JudgeReply": "ragmetrics.judge",
    "JudgeRequest": "ragmetrics.judge",
    # pipeline
    "EvaluationPipeline": "ragmetrics.pipeline",
    "EvaluationResult": "ragmetrics.pipeline",
    "Report": "ragmetrics.pipeline",
    "evaluate": "ragmetrics.evaluation",
    "evaluate_sync": "ragmetrics.evaluation",
    # test sets from documents
    "generate": "ragmetrics.testset.generator",
    "generate_sync": "ragmetrics.testset.generator",
    # eval cases and regressions
    "eval_case": "ragmetrics.regression.cases",
    "EvalCaseMeta": "ragmetrics.regression.cases",
    "CaseResult": "ragmetrics.regression.case_result",
    "EvalRegression": "ragmetrics.regression.snapshot",
    "Snapshot": "ragmetrics.regression.snapshot",
    "Diff": "ragmetrics.regression.snapshot",
    "Delta": "ragmetrics.regression.snapshot",
    # judge calibration against human labels
    "CalibrationReport": "ragmetrics.calibration",
    "calibrate": "ragmetrics.calibration",
    "calibrate_sync": "ragmetrics.calibration",
    # suites
    "Case": "ragmetrics.regression.suite",
    "Suite": "ragmetrics.regression.suite",
    "run_suite": "ragmetrics.regression.suite",
}
_ALIASES = {"EvalResult": ("ragmetrics.score", "MetricResult")}

# Spelled out (not built from _LAZY) so that type checkers and linters see the public surface, and the
# TYPE_CHECKING imports below as re-exports; tests/test_package.py checks that every name resolves.
__all__ = [
    "AnswerCorrectnessMetric",
    "BUILTIN_METRICS",
    "BleuEvaluator",
    "CacheError",
    "CalibrationReport",
    "Case",
    "CaseResult",
    "ClaimRecord",
    "ConfigError",
    "ContainsEvaluator",
    "ContextPrecisionMetric",
    "ContextRecallMetric",
    "ContextRelevancyMetric",
    "CosineSimilarityEvaluator",
    "CustomEvaluator",
    "Delta",
    "Diff",
    "EmbeddingDistanceEvaluator",
    "EvalCaseMeta",
    "EvalRegression",
    "EvalResult",
    "EvaluationPipeline",
    "EvaluationResult",
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
    "JudgeReply",
    "JudgeRequest",
    "LLMJudgeEvaluator",
    "LLMRubricEvaluator",
    "LevenshteinEvaluator",
    "MetricResult",
    "MissingDependencyError",
    "NoScoreError",
    "OfflineJudgeWarning",
    "PromptError",
    "RagMetricsError",
    "RagMetricsWarning",
    "RegexMatchEvaluator",
    "RelevancyMetric",
    "Report",
    "RougeEvaluator",
    "Sample",
    "Snapshot",
    "SnapshotError",
    "Suite",
    "Usage",
    "__version__",
    "calibrate",
    "calibrate_sync",
    "eval_case",
    "evaluate",
    "evaluate_sync",
    "generate",
    "generate_sync",
    "make_evaluator",
    "resolve_judge",
    "run_suite",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
    elif name in _ALIASES:
        module, attr = _ALIASES[name]
        value = getattr(import_module(module), attr)
    else:
        raise AttributeError(f"module 'ragmetrics' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # the public names and the module's dunders; not the helpers this file imports (Any, TYPE_CHECKING,
    # annotations, import_module) nor the submodules loaded so far, which vary with what has run
    dunders = {name for name in globals() if name.startswith("__") and name.endswith("__")}
    return sorted(dunders | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from ragmetrics.calibration import CalibrationReport, calibrate, calibrate_sync
    from ragmetrics.evaluation import evaluate, evaluate_sync
    from ragmetrics.judge import Judge, JudgeReply, JudgeRequest, resolve_judge
    from ragmetrics.metrics import BUILTIN_METRICS
    from ragmetrics.metrics.claims.answer_correctness import AnswerCorrectnessMetric
    from ragmetrics.metrics.claims.context_precision import ContextPrecisionMetric
    from ragmetrics.metrics.claims.context_recall import ContextRecallMetric
    from ragmetrics.metrics.claims.context_relevancy import ContextRelevancyMetric
    from ragmetrics.metrics.claims.faithfulness import FaithfulnessMetric
    from ragmetrics.metrics.claims.groundedness import GroundednessMetric
    from ragmetrics.metrics.claims.relevancy import RelevancyMetric
    from ragmetrics.metrics.evaluators.factory import (
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
    from ragmetrics.pipeline import EvaluationPipeline, EvaluationResult, Report
    from ragmetrics.regression.case_result import CaseResult
    from ragmetrics.regression.cases import EvalCaseMeta, eval_case
    from ragmetrics.regression.snapshot import Delta, Diff, EvalRegression, Snapshot
    from ragmetrics.regression.suite import Case, Suite, run_suite
    from ragmetrics.sample import Sample
    from ragmetrics.score import ClaimRecord, JudgeInfo, MetricResult, Usage
    from ragmetrics.score import MetricResult as EvalResult
    from ragmetrics.testset.generator import generate, generate_sync
