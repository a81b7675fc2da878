"""Production traces in: OpenTelemetry spans (OTLP JSON files) as samples to score.

``ragmetrics eval --traces traces.json`` and ``evaluate(traces=...)`` read what a running RAG app
exported (OpenInference or GenAI attributes, see :mod:`ragmetrics.traces.samples`), with sampling, time
and attribute filters and an incremental cursor (:mod:`ragmetrics.traces.select`).
"""

from ragmetrics.traces.otlp import trace_rows
from ragmetrics.traces.samples import MAX_VALUE_CHARS, trace_sample
from ragmetrics.traces.select import Cursor, parse_time, parse_where, select_traces

__all__ = [
    "MAX_VALUE_CHARS",
    "Cursor",
    "parse_time",
    "parse_where",
    "select_traces",
    "trace_rows",
    "trace_sample",
]
