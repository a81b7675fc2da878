"""A LangChain agent instrumented with OpenInference's LangChain instrumentor, exporting OTLP JSON.

The agent: a fake chat model bound to a real ``@tool`` (``search_docs``), scripted to call it and then
answer from its result, run for two user turns in one session (OpenInference ``using_session``), each
turn one trace. Run as ``python -m tests.observe.agent_app OUT.json SESSION`` (or ``URL/v1/traces
SESSION PROJECT``: to an OTLP/HTTP endpoint such as Phoenix's), in its own process (the instrumentor
patches LangChain for the whole process); prints the turns' root spans as JSON (``[{"trace_id",
"span_id"}]``, in turn order).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import chain
from langchain_core.tools import tool
from openinference.instrumentation import using_session
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.observe.otel_app import OtlpJsonFileExporter

DOCS = {
    "capital of France": "Paris is the capital of France.",
    "river Paris": "The Seine flows through Paris.",
}
TURNS = [
    ("What is the capital of France?", "capital of France", "Paris is the capital of France."),
    ("Which river flows through it?", "river Paris", "The Seine flows through Paris."),
]


@tool
def search_docs(query: str) -> str:
    """Search the documentation for a query."""
    return DOCS[query]


class ToolCallingFakeModel(GenericFakeChatModel):
    """GenericFakeChatModel replies in order; binding tools keeps the script (the replies name the tool)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeModel:  # type: ignore[override]
        return self


class _RootSpans(SpanProcessor):
    """Keeps each root span's trace and span id, in the order the roots end."""

    def __init__(self) -> None:
        self.spans: list[dict[str, str]] = []

    def on_end(self, span: ReadableSpan) -> None:
        if span.parent is None and span.context is not None:
            self.spans.append(
                {
                    "trace_id": format(span.context.trace_id, "032x"),
                    "span_id": format(span.context.span_id, "016x"),
                }
            )


def main(argv: list[str]) -> None:
    target, session = argv[0], argv[1]
    resource = {"service.name": "agent-app"}
    if target.startswith("http"):  # an OTLP/HTTP endpoint (Phoenix's /v1/traces), into project argv[2]
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter: Any = OTLPSpanExporter(endpoint=target)
        resource["openinference.project.name"] = argv[2]
    else:
        exporter = OtlpJsonFileExporter(Path(target))
    provider = TracerProvider(resource=Resource.create(resource))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    roots = _RootSpans()
    provider.add_span_processor(roots)
    LangChainInstrumentor().instrument(tracer_provider=provider)
    script: list[BaseMessage] = []
    for n, (_, query, answer) in enumerate(TURNS):
        call = {"name": "search_docs", "args": {"query": query}, "id": f"call_{n}"}
        script += [AIMessage("", tool_calls=[call]), AIMessage(answer)]
    model = ToolCallingFakeModel(messages=iter(script)).bind_tools([search_docs])

    @chain
    def agent(messages: list[BaseMessage]) -> BaseMessage:
        messages = list(messages)
        while True:
            reply = model.invoke(messages)
            messages.append(reply)
            if not isinstance(reply, AIMessage) or not reply.tool_calls:
                return reply
            for call in reply.tool_calls:
                messages.append(search_docs.invoke(call))  # a ToolMessage answering the call

    history: list[BaseMessage] = []
    with using_session(session):
        for question, _, _ in TURNS:
            history.append(HumanMessage(question))
            history.append(agent.invoke(history))
    provider.shutdown()
    print(json.dumps(roots.spans))


if __name__ == "__main__":
    main(sys.argv[1:])
