"""The batch side: run metrics over a dataset, summarise, export, estimate; snapshots and their rendering.

``EvaluationPipeline`` (runner), ``EvaluationResult`` / ``Report`` (report), ``Dataset`` (dataset),
``estimate`` (estimate), ``ProgressBar`` (progress); snapshots and rendering live in ``snapshot`` and
``render``.
"""

from __future__ import annotations

from ragmetrics.pipeline.dataset import Dataset
from ragmetrics.pipeline.estimate import Estimate, estimate
from ragmetrics.pipeline.progress import ProgressBar
from ragmetrics.pipeline.report import (
    ErrorRecord,
    EvaluationResult,
    MetricAggregate,
    Report,
    RunStats,
    ScoreSpread,
    read_jsonl,
)
from ragmetrics.pipeline.runner import (
    EvaluationPipeline,
    EvaluationResults,
    PipelineEvent,
    PipelineRun,
    failure_record,
)

__all__ = [
    "Dataset",
    "ErrorRecord",
    "Estimate",
    "EvaluationPipeline",
    "EvaluationResult",
    "EvaluationResults",
    "MetricAggregate",
    "PipelineEvent",
    "PipelineRun",
    "ProgressBar",
    "Report",
    "RunStats",
    "ScoreSpread",
    "estimate",
    "failure_record",
    "read_jsonl",
]
