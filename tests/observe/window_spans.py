"""Hand-timed OpenInference traces sent to Phoenix over OTLP/HTTP by the real OpenTelemetry SDK.

Each trace is a CHAIN root (question in ``input.value``, answer in ``output.value``) with one RETRIEVER
child, at start times the test chooses, so a ``--since`` window can cut one. A trace may also hang under a
remote parent (a span of another service that never reaches Phoenix), as one behind an instrumented
HTTP server does.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags


@dataclass(frozen=True)
class Timed:
    """One trace: its root's and its retriever's start (unix ns), and whether its parent is remote."""

    root_ns: int
    child_ns: int
    remote_parent: bool = False
    answer: str | None = "default"
    """The root's ``output.value`` (``"default"``: ``Fact N is true.``; None: no answer recorded)."""


def send_timed(endpoint: str, project: str, traces: Sequence[Timed]) -> list[str]:
    """Send the traces to ``endpoint`` (``.../v1/traces``); their trace ids (hex), in order."""
    resource = Resource.create({"service.name": "rag-app", "openinference.project.name": project})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    tracer = provider.get_tracer("tests.observe.window_spans")
    rng = random.Random(7)
    ids = []
    for number, timed in enumerate(traces):
        parent = None
        if timed.remote_parent:
            remote = SpanContext(
                rng.getrandbits(128), rng.getrandbits(64), is_remote=True, trace_flags=TraceFlags(1)
            )
            parent = trace.set_span_in_context(NonRecordingSpan(remote))
        attributes = {"openinference.span.kind": "CHAIN", "input.value": f"What is fact {number}?"}
        if timed.answer is not None:
            attributes["output.value"] = (
                f"Fact {number} is true." if timed.answer == "default" else timed.answer
            )
        root = tracer.start_span("rag-query", context=parent, start_time=timed.root_ns, attributes=attributes)
        child = tracer.start_span(
            "retrieve",
            context=trace.set_span_in_context(root),
            start_time=timed.child_ns,
            attributes={
                "openinference.span.kind": "RETRIEVER",
                "retrieval.documents.0.document.content": f"Fact {number} is true.",
            },
        )
        child.end(end_time=timed.child_ns + 1_000_000)
        root.end(end_time=max(timed.root_ns, timed.child_ns) + 2_000_000)
        ids.append(format(root.get_span_context().trace_id, "032x"))
    provider.shutdown()
    return ids
