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


def run_app(
    path: Path, questions: Sequence[tuple[str, str, str]], *, retriever: bool = True, content: bool = True
) -> list[str]:
    """Answer each (question, topic, answer) under a CHAIN span with RETRIEVER and LLM children; returns
    the trace ids (hex) in order. ``content=False``: the retriever records each document's id and score,
    not its text."""
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
                        if content:
                            span.set_attribute(f"retrieval.documents.{i}.document.content", doc)
                        span.set_attribute(f"retrieval.documents.{i}.document.id", f"{topic}-{i}")
                        span.set_attribute(f"retrieval.documents.{i}.document.score", 0.9 - i / 10)
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


GENAI_VARIANTS = ("attributes", "details_event", "message_events", "prompt_events")
"""How a GenAI-conventions app records its chat messages: as span attributes (semantic conventions 1.37
and later), on a ``gen_ai.client.inference.operation.details`` span event, as one event per message
(1.28 to 1.36), or on ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events (before 1.28)."""


def run_genai_app(
    target: Path | str,
    question: str,
    answer: str,
    docs: Sequence[str],
    variant: str,
    project: str = "default",
    *,
    content: bool = True,
) -> str:
    """One trace in the GenAI semantic conventions (no OpenInference attribute): a root span, a retrieval
    span and a chat span whose messages are recorded as ``variant`` says; returns its trace id (hex).

    ``target``: an OTLP JSON file, or an OTLP/HTTP traces endpoint (``http://.../v1/traces``: Phoenix,
    with ``project`` as its ``openinference.project.name``). ``content=False``: the documents are
    recorded as the conventions' own example does, ``{"id", "score"}`` each (content capture off).
    """
    resource = Resource.create({"service.name": "genai-app", "openinference.project.name": project})
    provider = TracerProvider(resource=resource)
    if isinstance(target, str):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=target)))
    else:
        provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(target)))
    tracer = provider.get_tracer("tests.genai_app")
    system = "Answer from the context."
    inputs = [
        {"role": "system", "parts": [{"type": "text", "content": system}]},
        {"role": "user", "parts": [{"type": "text", "content": question}]},
    ]
    outputs = [{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]
    with tracer.start_as_current_span("invoke_agent rag") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("retrieval docs") as span:
            span.set_attribute("gen_ai.operation.name", "retrieval")
            span.set_attribute("gen_ai.retrieval.query.text", question)
            documents = [
                {"id": f"doc-{i}", "content": d} if content else {"id": f"doc-{i}", "score": 0.9 - i / 10}
                for i, d in enumerate(docs)
            ]
            span.set_attribute("gen_ai.retrieval.documents", json.dumps(documents))
        with tracer.start_as_current_span("chat gpt-4o-mini") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            if variant == "attributes":
                span.set_attribute("gen_ai.input.messages", json.dumps(inputs))
                span.set_attribute("gen_ai.output.messages", json.dumps(outputs))
            elif variant == "details_event":
                span.add_event(
                    "gen_ai.client.inference.operation.details",
                    {
                        "gen_ai.input.messages": json.dumps(inputs),
                        "gen_ai.output.messages": json.dumps(outputs),
                    },
                )
            elif variant == "message_events":
                span.add_event("gen_ai.system.message", {"content": system})
                span.add_event("gen_ai.user.message", {"content": question})
                span.add_event(
                    "gen_ai.choice", {"index": 0, "finish_reason": "stop", "message.content": answer}
                )
            else:
                prompt = [{"role": "system", "content": system}, {"role": "user", "content": question}]
                span.add_event("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps(prompt)})
                completion = [{"role": "assistant", "content": answer}]
                span.add_event("gen_ai.content.completion", {"gen_ai.completion": json.dumps(completion)})
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    return trace_id
