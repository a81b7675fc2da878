"""``ragmetrics.evaluate(data, metrics=[...], llm=...)``: a whole run in one call.

:func:`evaluate` is the top-level facade: metric names (the CLI's ``--metrics``) are built with ``llm=``
as their judge, metric objects are used as they are; the data is anything
:class:`~ragmetrics.pipeline.dataset.Dataset` reads, or production traces (``traces=``: read here by
:mod:`ragmetrics.observe`, handed to the pipeline as rows). Judge options go to the metrics built by
name, the others to :class:`~ragmetrics.pipeline.runner.EvaluationPipeline`; anything else is a
``ConfigError`` naming the valid options, with the closest one ("did you mean").
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics._aio import run_sync
from ragmetrics.errors import ConfigError
from ragmetrics.metrics import metric_from_name
from ragmetrics.pipeline import EvaluationPipeline, EvaluationResults
from ragmetrics.settings import judge_option_names

__all__ = ["DEFAULT_METRICS", "evaluate", "evaluate_sync"]

DEFAULT_METRICS = ("faithfulness", "relevancy", "groundedness")
"""The metrics of ``evaluate()`` when none are named (as ``ragmetrics eval``)."""


_ACCESS_OPTIONS = ("api_key", "base_url", "model", "cache", "prices", "context_budget_tokens", "embeddings")
"""Options of the metrics built by name besides the judge settings: the judge's key, URL and model, the
cache, prices, the claim metrics' context budget, and the embedder of ``cosine_similarity``."""


def _pipeline_option_names() -> list[str]:
    params = inspect.signature(EvaluationPipeline.__init__).parameters
    return [n for n in params if n not in ("self", "metrics")]


def _split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` as (pipeline options, judge options).

    Raises:
        ConfigError: An option that is neither, naming the valid ones and the closest ("did you mean").
    """
    pipeline_names = _pipeline_option_names()
    judge_names = [*judge_option_names(), *_ACCESS_OPTIONS]
    unknown = [k for k in options if k not in pipeline_names and k not in judge_names]
    if unknown:
        valid = sorted({*pipeline_names, *judge_names, "llm", "threshold", "columns"})
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, valid, n=1)
            hints.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
        raise ConfigError(
            f"evaluate(): unknown option(s) {', '.join(hints)}; valid options: {', '.join(valid)}"
        )
    pipeline = {k: v for k, v in options.items() if k in pipeline_names}
    judge = {k: v for k, v in options.items() if k not in pipeline_names}
    return pipeline, judge


def _build(metrics: Any, llm: Any, threshold: float | None, judge_options: dict[str, Any]) -> list[Any]:
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, Sequence) or not metrics:
        raise ConfigError("evaluate(): metrics= must be a non-empty list of metric names or metric objects")
    if judge_options and not any(isinstance(m, str) for m in metrics):
        raise ConfigError(
            f"evaluate(): {', '.join(sorted(judge_options))} apply to the metrics given by name, and "
            "every metric here is an object: configure the objects instead"
        )
    return [
        metric_from_name(m, llm=llm, threshold=threshold, **judge_options) if isinstance(m, str) else m
        for m in metrics
    ]


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
    traces: Any = None,
    **options: Any,
) -> EvaluationResults:
    """Score ``data`` with ``metrics`` and return the records, their summary and exports.

    Example:
        >>> results = await ragmetrics.evaluate(frame, metrics=["faithfulness", "relevancy"], llm="offline")
        >>> results.to_pandas()          # your columns, then a score, status and reason per metric

    Args:
        data: A list of dicts or Samples, a ``.jsonl``/``.json``/``.csv`` path, a pandas DataFrame or a
            Hugging Face dataset (RAGAS, DeepEval and LlamaIndex column names are recognised); or None
            with the column lists ``questions=``, ``answers=``, ``contexts=``... A record with ``messages``
            (or a :class:`~ragmetrics.sample.Conversation`) is a conversation: one record per assistant
            turn (``retrieval_tools=`` and ``history_budget_tokens=`` say how turns are read), and
            ``results.summary().conversations`` gathers them per conversation.
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
        traces: An OTLP JSON file of OpenTelemetry traces (instead of ``data``), or
            ``"phoenix:http://HOST:PORT[/PROJECT]"`` for a Phoenix server's spans: one sample per trace,
            see :mod:`ragmetrics.observe`; or the rows ``select_traces`` kept (sampled, filtered).
        options: Judge options of the metrics given by name (``api_key``, ``base_url``, ``model``,
            ``cache``, ``timeout_s``, ``max_concurrency``, ``temperature``, ``max_attempts``..., and
            ``embeddings`` for ``cosine_similarity``), and
            :class:`~ragmetrics.pipeline.runner.EvaluationPipeline` options (``concurrency``,
            ``max_cost_usd``, ``timeout_per_sample_s``, ``repeats``, ``progress``...); the known-answer
            probes go to each judge first (at most 4 cached calls), ``canaries=False`` leaves them out.

    Raises:
        ConfigError: An unknown metric name or option (naming the closest valid one), bad data or
            columns, an ambiguous column, an invalid option value.
    """
    if traces is not None:
        if data is not None:
            raise ConfigError("evaluate(): give data= or traces=, not both")
        from ragmetrics.observe import trace_rows  # imported only for traces

        data = trace_rows(traces) if isinstance(traces, (str, os.PathLike)) else list(traces)
    pipeline_options, judge_options = _split_options(options)
    pipeline = EvaluationPipeline(metrics=_build(metrics, llm, threshold, judge_options), **pipeline_options)
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
