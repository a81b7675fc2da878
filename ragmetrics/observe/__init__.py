"""Observability: production traces in, scores out.

In: ``ragmetrics eval --traces`` and ``evaluate(traces=...)`` read OTLP JSON files (:mod:`.otlp`) or a
Phoenix server's spans (:mod:`.phoenix`) as spans (:mod:`.spans`), then one sample per trace
(:mod:`.samples`), with sampling, filters and an incremental cursor (:mod:`.select`).
Out: ``--export`` sends the scores to OpenTelemetry (:mod:`.otel`), Phoenix (:mod:`.phoenix_export`) or
MLflow (:mod:`.mlflow`). The exporters are loaded on first access, and no SDK loads before it is used.
Only the top-level facade (:mod:`ragmetrics.evaluation`) and the CLI import this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragmetrics.observe.samples import MAX_VALUE_CHARS, trace_sample
from ragmetrics.observe.select import Cursor, parse_time, parse_where, select_traces
from ragmetrics.observe.sources import trace_rows

__all__ = [
    "MAX_VALUE_CHARS",
    "Cursor",
    "export_mlflow",
    "export_otel",
    "export_phoenix",
    "parse_time",
    "parse_where",
    "select_traces",
    "trace_rows",
    "trace_sample",
]

if TYPE_CHECKING:
    from ragmetrics.observe.mlflow import export_mlflow
    from ragmetrics.observe.otel import export_otel
    from ragmetrics.observe.phoenix_export import export_phoenix

_LAZY = {
    "export_mlflow": "ragmetrics.observe.mlflow",
    "export_otel": "ragmetrics.observe.otel",
    "export_phoenix": "ragmetrics.observe.phoenix_export",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmetrics.observe' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
