"""Scores out to OpenTelemetry: one ``gen_ai.evaluation.result`` event per metric result, over OTLP/HTTP.

The event is the one the OpenTelemetry GenAI semantic conventions define (1.38.0, status *development*):
a log record with ``event_name = "gen_ai.evaluation.result"`` in the evaluated span's trace context (a
sample read from traces is linked by ``meta.trace_id`` / ``meta.span_id``; others are sent unlinked),
with the attributes :func:`evaluation_events` lists. The exporter is the OpenTelemetry SDK's
``OTLPLogExporter``, configured by the standard ``OTEL_EXPORTER_OTLP_*`` variables; the resource's
``service.name`` is ``ragmetrics`` unless ``OTEL_SERVICE_NAME`` or ``OTEL_RESOURCE_ATTRIBUTES`` names
one. Needs the ``otel`` extra: ``pip install 'ragmetrics[otel]'``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragmetrics.errors import ExportError, MissingDependencyError
from ragmetrics.observe.sessions import session_summaries

__all__ = ["EVENT_NAME", "SEMCONV_VERSION", "evaluation_events", "export_otel"]

EVENT_NAME = "gen_ai.evaluation.result"
SEMCONV_VERSION = "1.38.0"
_BATCH = 512  # events per OTLP/HTTP request


def evaluation_events(records: Iterable[Any]) -> list[dict[str, Any]]:
    """The events to send: per record and metric, the attributes and the span they belong to.

    The attributes:

    * ``gen_ai.evaluation.name``: the metric's name (``faithfulness``);
    * ``gen_ai.evaluation.score.value``: the score (absent when the metric produced none);
    * ``gen_ai.evaluation.score.label``: ``pass`` or ``fail`` at the metric's threshold (absent without one);
    * ``gen_ai.evaluation.explanation``: the result's reason (absent when it has none);
    * ``gen_ai.response.id``: the evaluated completion's id, when the trace's LLM span recorded one;
    * ``ragmetrics.status``: our status (``ok``, ``missing_input``, ``provider_error``...).

    A turn of a session read from traces is linked to its own trace's root span; then, per session
    and metric, one more event, in no span's context, carries the session's mean over its turns
    (:func:`~ragmetrics.observe.sessions.session_summaries`): ``gen_ai.conversation.id`` and
    ``session.id`` (the session id), ``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value`` (the
    mean; absent when no turn has a score), ``ragmetrics.scope = session``, ``ragmetrics.turns`` and
    ``ragmetrics.turns.scored``.
    """
    records = list(records)
    events = []
    for record in records:
        meta = record.sample.meta if record.sample is not None else record.extra
        trace_id, span_id = meta.get("trace_id"), meta.get("span_id")
        for metric in record.scores:
            result = record.results.get(metric)
            attributes: dict[str, Any] = {
                "gen_ai.evaluation.name": metric,
                "ragmetrics.status": record.status_of(metric),
                "ragmetrics.sample.id": record.id,
            }
            score = record.scores.get(metric)
            if score is not None:
                attributes["gen_ai.evaluation.score.value"] = float(score)
            if result is not None and result.passed is not None:
                attributes["gen_ai.evaluation.score.label"] = "pass" if result.passed else "fail"
            reason = result.reason if result is not None else None
            if reason is None:
                reason = next((e.message for e in record.errors if e.metric in (metric, None)), None)
            if reason:
                attributes["gen_ai.evaluation.explanation"] = reason[:4000]
            if isinstance(meta.get("response_id"), str):
                attributes["gen_ai.response.id"] = meta["response_id"]
            events.append({"trace_id": trace_id, "span_id": span_id, "attributes": attributes})
    for summary in session_summaries(records):
        attributes = {
            "gen_ai.evaluation.name": summary["metric"],
            "gen_ai.conversation.id": summary["session_id"],
            "session.id": summary["session_id"],
            "ragmetrics.scope": "session",
            "ragmetrics.turns": summary["turns"],
            "ragmetrics.turns.scored": summary["scored"],
            "ragmetrics.status": "ok" if summary["mean"] is not None else "unscored",
        }
        if summary["mean"] is not None:
            attributes["gen_ai.evaluation.score.value"] = summary["mean"]
        events.append({"trace_id": None, "span_id": None, "attributes": attributes})
    return events


def export_otel(records: Iterable[Any], *, endpoint: str | None = None, timeout_s: float = 10.0) -> int:
    """Send one ``gen_ai.evaluation.result`` event per metric result; returns how many were sent.

    Raises:
        MissingDependencyError: The ``otel`` extra is not installed.
    """
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
    except ImportError as exc:
        raise MissingDependencyError(
            "opentelemetry-sdk", "otel", "exporting scores to OpenTelemetry"
        ) from exc

    from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

    otlp = OTLPLogExporter(endpoint=endpoint, timeout=timeout_s) if endpoint else OTLPLogExporter()
    failed = [0]

    class _Checked(LogRecordExporter):  # the SDK logs a failed export and goes on; count it instead
        def export(self, batch: Any) -> Any:
            result = otlp.export(batch)
            if result != LogRecordExportResult.SUCCESS:
                failed[0] += len(batch)
            return result

        def shutdown(self) -> None:
            otlp.shutdown()  # type: ignore[no-untyped-call]

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return True

    events = evaluation_events(records)
    resource = Resource.create()  # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES apply; else "ragmetrics"
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "ragmetrics"}))
    provider = LoggerProvider(resource=resource)
    # batches of 512 per POST (one POST per event before); the queue holds every event, so none is dropped,
    # and shutdown() below sends what is left
    batches = BatchLogRecordProcessor(
        _Checked(),
        schedule_delay_millis=60_000,
        max_export_batch_size=_BATCH,
        max_queue_size=max(len(events), _BATCH),
        export_timeout_millis=timeout_s * 1000,
    )
    provider.add_log_record_processor(batches)
    logger = provider.get_logger(
        "ragmetrics", schema_url=f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
    )
    try:
        for event in events:
            context = None
            if event["trace_id"] and event["span_id"]:
                try:
                    span = SpanContext(
                        int(event["trace_id"], 16),
                        int(event["span_id"], 16),
                        is_remote=True,
                        trace_flags=TraceFlags(TraceFlags.SAMPLED),
                    )
                    context = trace.set_span_in_context(NonRecordingSpan(span))
                except ValueError:
                    context = None
            logger.emit(event_name=EVENT_NAME, attributes=event["attributes"], context=context)
    finally:
        provider.shutdown()
    if failed[0]:
        where = endpoint or "the OTEL_EXPORTER_OTLP_* endpoint (default http://localhost:4318/v1/logs)"
        raise ExportError(
            f"--export otel: {failed[0]} of {len(events)} evaluation events were not accepted by {where}"
        )
    return len(events)
