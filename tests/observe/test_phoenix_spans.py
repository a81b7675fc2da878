"""Phoenix's span JSON as trace spans, and LangChain's message dumps as answers (no server needed)."""

from __future__ import annotations

import json

from ragmetrics.observe.phoenix import _span, parse_phoenix_url
from ragmetrics.observe.samples import trace_sample
from ragmetrics.observe.spans import TraceSpan


def test_a_langchain_message_dump_on_the_root_is_read_as_its_content() -> None:
    dump = json.dumps({"type": "ai", "data": {"content": "Paris is the capital of France.", "id": "x"}})
    root = TraceSpan(
        trace_id="t" * 32,
        span_id="a" * 16,
        parent_id="",
        name="RunnableSequence",
        start_ns=1,
        attributes={"input.value": "What is the capital of France?", "output.value": dump},
    )
    retriever = TraceSpan(
        trace_id="t" * 32,
        span_id="b" * 16,
        parent_id="a" * 16,
        name="Docs",
        start_ns=2,
        attributes={
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.content": "Paris is the capital of France.",
        },
    )
    values, problem = trace_sample("t" * 32, [root, retriever])
    assert problem is None
    assert values["answer"] == "Paris is the capital of France."


def test_a_phoenix_span_keeps_its_ids_start_kind_and_the_attributes_read() -> None:
    span = _span(
        {
            "name": "TopicRetriever",
            "context": {"trace_id": "A0179465D234CF5898E60A2850F05E37", "span_id": "d3510e84294a5bdf"},
            "span_kind": "RETRIEVER",
            "parent_id": "4fda25a2f4383f03",
            "start_time": "2026-12-02T20:44:12.961273+00:00",
            "attributes": {
                "retrieval.documents.0.document.content": "Paris is the capital of France.",
                "huge": "x" * 10_000,
            },
        }
    )
    assert span.trace_id == "a0179465d234cf5898e60a2850f05e37" and span.parent_id == "4fda25a2f4383f03"
    assert span.start_ns == 1796244252961273000
    assert span.attributes == {
        "retrieval.documents.0.document.content": "Paris is the capital of France.",
        "openinference.span.kind": "RETRIEVER",
    }
    assert _span({"name": 3, "context": None, "attributes": [1]}).trace_id == ""  # no crash: no trace


def test_the_url_names_the_project_or_the_default_one() -> None:
    assert parse_phoenix_url("phoenix:http://127.0.0.1:6006") == ("http://127.0.0.1:6006", "default")
    assert parse_phoenix_url("phoenix:https://px.example/rag-app/") == ("https://px.example", "rag-app")
