"""A small RAG app instrumented with the real OpenTelemetry SDK, exporting OTLP JSON as the Collector's
file exporter writes it (one ExportTraceServiceRequest per line, hex ids)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

DOCS = {
    "paris": ["Paris is the capital of France.", "The Seine flows through Paris."],
    "rome": ["Rome is the capital of Italy.", "The Tiber flows through Rome."],
}


def _hex(node: object) -> object:
    """protobuf's JSON mapping writes bytes as base64; the Collector writes trace and span ids as hex."""
    import base64

    if isinstance(node, dict):
        return {
            k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else _hex(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex(v) for v in node]
    return node


class OtlpJsonFileExporter(SpanExporter):
    def __init__(self, path: Path) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        document = _hex(MessageToDict(encode_spans(spans)))
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(document) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def run_app(path: Path, questions: Sequence[tuple[str, str, str]], *, retriever: bool = True) -> list[str]:
    """Answer each (question, topic, answer) under a CHAIN span with RETRIEVER and LLM children; returns
    the trace ids (hex) in order."""
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(path)))
    tracer = provider.get_tracer("tests.rag_app")
    ids = []
    for n, (question, topic, answer) in enumerate(questions):
        with tracer.start_as_current_span("rag-query") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", question)
            if retriever:
                with tracer.start_as_current_span("retrieve") as span:
                    span.set_attribute("openinference.span.kind", "RETRIEVER")
                    span.set_attribute("input.value", question)
                    for i, doc in enumerate(DOCS[topic]):
                        span.set_attribute(f"retrieval.documents.{i}.document.content", doc)
                        span.set_attribute(f"retrieval.documents.{i}.document.id", f"{topic}-{i}")
            with tracer.start_as_current_span("llm") as span:
                span.set_attribute("openinference.span.kind", "LLM")
                span.set_attribute("llm.input_messages.0.message.role", "system")
                span.set_attribute("llm.input_messages.0.message.content", "Answer from the context.")
                span.set_attribute("llm.input_messages.1.message.role", "user")
                span.set_attribute("llm.input_messages.1.message.content", question)
                span.set_attribute("llm.output_messages.0.message.role", "assistant")
                span.set_attribute("llm.output_messages.0.message.content", answer)
                span.set_attribute("gen_ai.response.id", f"chatcmpl-{n}")
            root.set_attribute("output.value", answer)
            ids.append(format(root.get_span_context().trace_id, "032x"))
    provider.shutdown()
    return ids
