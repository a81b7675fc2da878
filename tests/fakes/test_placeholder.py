"""FakeLLMServer(answer="placeholder"): a generic mock server's fixed filler, through the real openai SDK.

The judge-gate test and ``benchmarks/judge_health.py`` use this mode as "the peers' kind of generic
schema-filling server"; these tests pin what it answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from ragmetrics.testing import FakeLLMServer

VERDICT = {
    "type": "object",
    "$defs": {
        "Why": {"type": "object", "properties": {"quote": {"type": "string"}, "ok": {"type": "boolean"}}}
    },
    "properties": {
        "claim": {"type": "integer", "minimum": 2},
        "verdict": {"enum": ["supported", "contradicted", "not_found"]},
        "context": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "why": {"$ref": "#/$defs/Why"},
        "spans": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "score": {"type": ["number", "null"]},
        "nothing": {"type": "null"},
    },
    "required": ["claim", "verdict"],
}
EXPECTED = {
    "claim": 2,
    "verdict": "supported",
    "context": 0,
    "why": {"quote": "string", "ok": True},
    "spans": ["string", "string"],
    "score": 0,
    "nothing": None,
}


@pytest.fixture
def client() -> Iterator[openai.OpenAI]:
    with FakeLLMServer(answer="placeholder") as srv:
        yield openai.OpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)


def ask(client: openai.OpenAI, **kwargs: Any) -> Any:
    return client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Is it supported?"}], **kwargs
    )


def test_response_format_schema_gets_the_fixed_placeholders(client: openai.OpenAI) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "Verdict", "schema": VERDICT}}
    reply = ask(client, response_format=fmt)
    assert json.loads(reply.choices[0].message.content or "") == EXPECTED


def test_a_forced_tool_call_gets_them_as_arguments(client: openai.OpenAI) -> None:
    tool = {"type": "function", "function": {"name": "Verdict", "parameters": VERDICT}}
    reply = ask(client, tools=[tool], tool_choice={"type": "function", "function": {"name": "Verdict"}})
    call = (reply.choices[0].message.tool_calls or [])[0]
    assert json.loads(call.function.arguments) == EXPECTED  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"type": "array", "items": {"type": "string"}, "minItems": 10**9},
        {"$ref": "http://x/y"},
    ],
    ids=["ref-loop", "too-many-values", "remote-ref"],
)
def test_a_schema_it_cannot_fill_is_http_400(client: openai.OpenAI, schema: Any) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "Bad", "schema": schema}}
    with pytest.raises(openai.BadRequestError, match="answer='placeholder'"):
        ask(client, response_format=fmt)
