"""The old import path of the OpenTelemetry export: it lives in :mod:`ragmetrics.observe.otel`."""

from ragmetrics.observe.otel import EVENT_NAME, SEMCONV_VERSION, evaluation_events, export_otel

__all__ = ["EVENT_NAME", "SEMCONV_VERSION", "evaluation_events", "export_otel"]
