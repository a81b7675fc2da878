"""``ragmetrics.evaluate(data, metrics=[...], llm=...)``: a whole run in one call.

The metrics are names (those of the CLI's ``--metrics``: ``faithfulness``, ``relevancy``,
``groundedness``, ``rouge``...) built with ``llm=`` as their judge, or metric objects used as they are;
the data is anything :class:`~ragmetrics.pipeline.dataset.Dataset` reads. Everything else goes to
:class:`~ragmetrics.pipeline.runner.EvaluationPipeline`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics._aio import run_sync
from ragmetrics.errors import ConfigError
from ragmetrics.metrics import metric_from_name
from ragmetrics.pipeline._results import EvaluationResults
from ragmetrics.pipeline.runner import EvaluationPipeline

__all__ = ["DEFAULT_METRICS", "evaluate", "evaluate_sync"]

DEFAULT_METRICS = ("faithfulness", "relevancy", "groundedness")
"""The metrics of ``evaluate()`` when none are named (as ``ragmetrics eval``)."""


def _build(metrics: Any, llm: Any, threshold: float | None) -> list[Any]:
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, Sequence) or not metrics:
        raise ConfigError("evaluate(): metrics= must be a non-empty list of metric names or metric objects")
    return [metric_from_name(m, llm=llm, threshold=threshold) if isinstance(m, str) else m for m in metrics]


async def evaluate(
    data: Any = None,
    metrics: Sequence[Any] | str = DEFAULT_METRICS,
    *,
    llm: Any = None,
    threshold: float | None = None,
    columns: Mapping[str, str] | None = None,
    questions: Sequence[Any] | None = None,
    answers: Sequence[Any] | None = None,
    contexts: Sequence[Any] | None = None,
    references: Sequence[Any] | None = None,
    ids: Sequence[Any] | None = None,
    **pipeline_options: Any,
) -> EvaluationResults:
    """Score ``data`` with ``metrics`` and return the records, their summary and exports.

    Example:
        >>> results = await ragmetrics.evaluate(frame, metrics=["faithfulness", "relevancy"], llm="offline")
        >>> results.to_pandas()          # your columns, then a score, status and reason per metric

    Args:
        data: A list of dicts or Samples, a ``.jsonl``/``.json``/``.csv`` path, a pandas DataFrame or a
            Hugging Face dataset (RAGAS, DeepEval and LlamaIndex column names are recognised); or None
            with the column lists ``questions=``, ``answers=``, ``contexts=``...
        metrics: Metric names (``"faithfulness"``, ``"rouge"``...) or metric objects, or one name.
        llm: The judge of the metrics given by name: a spec (``"openai:gpt-4o-mini"``, ``"offline"``), a
            ``Judge`` or what metrics accept as ``llm=``; None: from the environment. Metric objects
            keep their own.
        threshold: The pass mark of the metrics given by name (None: each metric's default).
        columns: Sample field -> your column name, when yours is none of the recognised names.
        questions: Column list (instead of ``data``).
        answers: Column list.
        contexts: Column list (one list of passages per row).
        references: Column list.
        ids: Column list.
        pipeline_options: :class:`~ragmetrics.pipeline.runner.EvaluationPipeline` options
            (``concurrency``, ``max_cost_usd``, ``timeout_per_sample_s``, ``repeats``, ``progress``...).

    Raises:
        ConfigError: An unknown metric name, bad data or columns, an ambiguous column, an invalid option.
    """
    pipeline = EvaluationPipeline(metrics=_build(metrics, llm, threshold), **pipeline_options)
    return await pipeline.evaluate(
        data,
        questions=questions,
        answers=answers,
        contexts=contexts,
        references=references,
        ids=ids,
        columns=columns,
    )


def evaluate_sync(
    data: Any = None, metrics: Sequence[Any] | str = DEFAULT_METRICS, **options: Any
) -> EvaluationResults:
    """Blocking twin of :func:`evaluate` (works inside Jupyter's running event loop too)."""
    return run_sync(evaluate(data, metrics, **options))
