"""FakeLLMServer(dialect="llama-cpp") answers as llama-cpp-python's server 0.3.x does.

The expected bodies are what llama-cpp-python 0.3.36 (FastAPI 0.165, SmolLM2-135M-Instruct's GGUF
chat template) returned to the same requests.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import instructor
import openai
import pytest
from instructor.core import InstructorRetryException

from ragmetrics.metrics.evaluators._rubric_schemas import JudgeRating
from ragmetrics.testing import FakeLLMServer, FakeReply

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
TOOLS: Any = [{"type": "function", "function": {"name": "A", "parameters": SCHEMA}}]
MESSAGES: Any = [{"role": "user", "content": "Give a as 3 in JSON"}]
REAL_JSON_SCHEMA_ERROR = (  # llama-cpp-python 0.3.36's message, but for the path of its app.py
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \""
)


@pytest.fixture(params=["schema", "offline"])
def srv(request: pytest.FixtureRequest) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(dialect="llama-cpp", answer=request.param) as server:
        yield server


@pytest.fixture
async def oai(srv: FakeLLMServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
    yield client
    await client.close()


def post(srv: FakeLLMServer, path: str, body: dict[str, Any]) -> httpx2.Response:
    return httpx2.post(f"{srv.url}{path}", json=body, timeout=10)


async def test_json_schema_response_format_is_the_real_http_500(srv: FakeLLMServer) -> None:
    srv.enqueue(FakeReply(json={"a": 1}))  # a dialect's refusal comes before any script
    body = {
        "model": "x",
        "messages": MESSAGES,
        "response_format": {"type": "json_schema", "json_schema": {"name": "A", "schema": SCHEMA}},
    }

    response = post(srv, "/v1/chat/completions", body)

    assert response.status_code == 500
    error = response.json()["error"]
    assert error["message"].startswith(REAL_JSON_SCHEMA_ERROR)
    assert error["message"].endswith("in create_chat_completion\n    POST /v1/chat/completions")
    assert (error["type"], error["param"], error["code"]) == ("internal_server_error", None, None)
    (request,) = srv.requests
    assert (request.source, srv.pending, srv.calls.total()) == ("dialect", 1, 1)


async def test_the_sdk_sees_an_internal_server_error(oai: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as raised:
        await oai.chat.completions.create(
            model="x",
            messages=MESSAGES,
            response_format={"type": "json_schema", "json_schema": {"name": "A", "schema": SCHEMA}},
        )

    assert raised.value.status_code == 500
    assert isinstance(raised.value.body, dict) and raised.value.body["type"] == "internal_server_error"
    assert raised.value.body["message"].startswith(REAL_JSON_SCHEMA_ERROR)


async def test_json_object_with_a_schema_is_accepted(srv: FakeLLMServer, oai: openai.AsyncOpenAI) -> None:
    srv.on(lambda r: r.mode == "json_object", FakeReply(json={"a": 3}))  # the offline judge knows no "A"
    completion = await oai.chat.completions.create(
        model="x",
        messages=MESSAGES,
        response_format={"type": "json_object", "schema": SCHEMA},  # type: ignore[typeddict-unknown-key]
    )

    content = completion.choices[0].message.content
    assert content is not None and isinstance(json.loads(content)["a"], int)


async def test_a_named_tool_choice_gets_a_tool_call(srv: FakeLLMServer, oai: openai.AsyncOpenAI) -> None:
    srv.on("A", FakeReply(json={"a": 3}))
    completion = await oai.chat.completions.create(
        model="x", messages=MESSAGES, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "A"}}
    )

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls or []
    assert isinstance(json.loads(call.function.arguments)["a"], int)  # type: ignore[union-attr]
    assert choice.message.function_call is not None  # the real server repeats it there
    assert choice.message.function_call.arguments == call.function.arguments  # type: ignore[union-attr]


@pytest.mark.parametrize("choice", [None, "auto", "required"])
async def test_tools_without_a_named_choice_are_ignored(
    srv: FakeLLMServer, oai: openai.AsyncOpenAI, choice: str | None
) -> None:
    srv.on("A", FakeReply(json={"a": 3}))
    extra: Any = {} if choice is None else {"tool_choice": choice}

    completion = await oai.chat.completions.create(model="x", messages=MESSAGES, tools=TOOLS, **extra)

    message = completion.choices[0].message
    assert message.tool_calls is None and message.content is not None
    assert completion.choices[0].finish_reason == "stop"


async def test_a_missing_tool_choice_is_the_real_http_500(srv: FakeLLMServer) -> None:
    body = {
        "messages": MESSAGES,
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": "B"}},
    }

    response = post(srv, "/v1/chat/completions", body)

    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "message": "Tool choice 'B' not found in tools.",
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    }


def test_there_is_no_anthropic_route(srv: FakeLLMServer) -> None:
    response = post(srv, "/v1/messages", {"model": "x", "max_tokens": 5, "messages": MESSAGES})

    assert (response.status_code, response.json()) == (404, {"detail": "Not Found"})


async def test_instructor_json_mode_works_and_json_schema_mode_does_not(
    srv: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    srv.on("JudgeRating", FakeReply(json={"reasoning": "fine", "score": 7}))
    json_mode = instructor.from_openai(oai, mode=instructor.Mode.JSON)
    schema_mode = instructor.from_openai(oai, mode=instructor.Mode.JSON_SCHEMA)
    messages: Any = [{"role": "user", "content": "Rate the answer 'Paris' to 'Capital of France?'"}]

    rating = await json_mode.chat.completions.create(
        model="x", messages=messages, response_model=JudgeRating, max_retries=0
    )
    assert rating.model_dump() == {"reasoning": "fine", "score": 7.0}
    with pytest.raises(InstructorRetryException, match="Error code: 500 .*internal_server_error") as raised:
        await schema_mode.chat.completions.create(
            model="x", messages=messages, response_model=JudgeRating, max_retries=0
        )
    assert isinstance(raised.value.__cause__, openai.InternalServerError)
