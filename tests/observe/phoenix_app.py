"""A small LangChain RAG app instrumented with OpenInference's LangChain instrumentor, sending its spans
to a Phoenix server over OTLP/HTTP. Run as a script (the instrumentor patches LangChain process-wide):

    python -m tests.observe.phoenix_app OTLP_TRACES_ENDPOINT PROJECT [--bare]

It prints one JSON line: the trace ids (hex) in order. ``--bare`` leaves the retriever out (and its
contexts), so the traces have no RETRIEVER span.
"""

from __future__ import annotations

import json
import sys

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

DOCS = {
    "paris": ["Paris is the capital of France.", "The Seine flows through Paris."],
    "rome": ["Rome is the capital of Italy.", "The Tiber flows through Rome."],
}
QUESTIONS = [
    ("What is the capital of France?", "Paris is the capital of France."),
    ("Which river flows through Rome?", "The Tiber flows through Rome."),
    ("Which river flows through Paris?", "The Seine flows through Paris."),
]


class TopicRetriever(BaseRetriever):
    """Returns the documents of the city the question names."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        topic = "rome" if "Rome" in query else "paris"
        return [Document(page_content=text, id=f"{topic}-{i}") for i, text in enumerate(DOCS[topic])]


class _Roots(SpanProcessor):
    """Keeps the trace id of each root span, in the order the roots end."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def on_end(self, span: ReadableSpan) -> None:
        if span.parent is None and span.context is not None:
            self.ids.append(format(span.context.trace_id, "032x"))


def main(argv: list[str]) -> None:
    endpoint, project, bare = argv[0], argv[1], "--bare" in argv
    resource = Resource.create({"service.name": "rag-app", "openinference.project.name": project})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    roots = _Roots()
    provider.add_span_processor(roots)
    LangChainInstrumentor().instrument(tracer_provider=provider)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context:\n{context}"), ("user", "{question}")]
    )
    llm = FakeListChatModel(responses=[answer for _, answer in QUESTIONS])
    join = RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    context = RunnableLambda(lambda q: "") if bare else TopicRetriever() | join
    chain = {"context": context, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()
    for question, _ in QUESTIONS:
        chain.invoke(question)
    provider.shutdown()
    print(json.dumps(roots.ids))


if __name__ == "__main__":
    main(sys.argv[1:])
