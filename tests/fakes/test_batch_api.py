"""FakeLLMServer's batch APIs, driven by the real openai and anthropic SDKs over loopback HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from ragmetrics.errors import ConfigError
from ragmetrics.testing import FakeLLMServer, FakeReply

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["yes", "no"]}, "reason": {"type": "string"}},
    "required": ["verdict", "reason"],
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(answer="schema") as srv:
        yield srv


@pytest.fixture
def srv(server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    server.reset()
    yield server
    server.reset()


def chat_body(text: str) -> dict[str, Any]:
    tool = {"type": "function", "function": {"name": "Verdict", "parameters": SCHEMA}}
    return {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": text}],
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "Verdict"}},
    }


def messages_body(text: str) -> dict[str, Any]:
    return {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": text}],
        "tools": [{"name": "Verdict", "input_schema": SCHEMA}],
        "tool_choice": {"type": "tool", "name": "Verdict"},
    }


def jsonl(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def line(custom_id: str, text: str) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": chat_body(text)}


async def _openai_batch(srv: FakeLLMServer, data: bytes, polls: int) -> tuple[list[str], Any, Any]:
    client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
    async with client:
        file = await client.files.create(file=("in.jsonl", data, "application/jsonl"), purpose="batch")
        batch = await client.batches.create(
            input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        statuses = [batch.status]
        for _ in range(polls):
            batch = await client.batches.retrieve(batch.id)
            statuses.append(batch.status)
        out = (await client.files.content(batch.output_file_id)).text if batch.output_file_id else ""
        err = (await client.files.content(batch.error_file_id)).text if batch.error_file_id else ""
    return (
        statuses,
        batch,
        ([json.loads(x) for x in out.splitlines()], [json.loads(x) for x in err.splitlines()]),
    )


def test_openai_batch_walks_through_its_statuses_and_answers_each_line_as_real_time(srv):
    srv.batch_plan(polls=3)
    data = jsonl(line("a", "is the sky blue"), line("b", "is grass red"))
    statuses, batch, (out, err) = asyncio.run(_openai_batch(srv, data, polls=3))
    assert statuses == ["validating", "in_progress", "finalizing", "completed"]
    assert batch.request_counts.total == 2 and batch.request_counts.completed == 2 and not err
    assert {o["custom_id"] for o in out} == {"a", "b"}
    for row in out:
        assert row["response"]["status_code"] == 200 and row["error"] is None
        call = row["response"]["body"]["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call["name"] == "Verdict" and json.loads(call["arguments"])["verdict"] in ("yes", "no")
    # each line is recorded like a real-time request, with its batch and custom ids
    lines = [r for r in srv.requests if r.batch_id == batch.id and r.endpoint == "chat"]
    assert sorted(r.custom_id for r in lines) == ["a", "b"] and all(r.schema == "Verdict" for r in lines)
    assert srv.calls["files"] == 1 and srv.calls["batches"] == 1  # POSTs only: polls are GETs
    assert [(b.id, b.custom_ids, b.ended) for b in srv.batches] == [(batch.id, ("a", "b"), True)]


def test_openai_partial_failure_goes_to_the_error_file_and_unprocessed_lines_expire(srv):
    srv.batch_plan(polls=1)
    srv.on(lambda r: "grass" in r.prompt, FakeReply(status=500, message="boom"))
    srv.on(lambda r: "snow" in r.prompt, FakeReply(hang=True))
    data = jsonl(line("ok", "is the sky blue"), line("err", "is grass red"), line("exp", "is snow hot"))
    _, batch, (out, err) = asyncio.run(_openai_batch(srv, data, polls=1))
    assert batch.status == "expired" and batch.request_counts.failed == 2
    assert [o["custom_id"] for o in out] == ["ok"]
    errors = {e["custom_id"]: e for e in err}
    assert errors["err"]["response"]["status_code"] == 500
    assert errors["err"]["response"]["body"]["error"]["message"] == "boom"
    assert errors["exp"]["response"] is None and errors["exp"]["error"]["code"] == "batch_expired"


def test_openai_input_that_fails_validation_fails_the_batch_with_line_errors(srv):
    srv.batch_plan(polls=1)
    bad = {"custom_id": "a", "method": "GET", "url": "/v1/chat/completions", "body": {}}
    data = jsonl(line("a", "x"), line("a", "y"), bad)
    _, batch, (out, err) = asyncio.run(_openai_batch(srv, data, polls=1))
    assert batch.status == "failed" and not out and not err
    codes = [e.code for e in batch.errors.data]
    assert "duplicate_custom_id" in codes
    assert not [r for r in srv.requests if r.endpoint == "chat"]  # nothing was answered


def test_openai_refuses_an_upload_with_the_wrong_purpose_and_unknown_files(srv):
    async def go() -> None:
        client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test", max_retries=0)
        async with client:
            file = await client.files.create(
                file=("x.jsonl", jsonl(line("a", "q")), "application/jsonl"), purpose="user_data"
            )
            with pytest.raises(openai.BadRequestError, match="not 'batch'"):
                await client.batches.create(
                    input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h"
                )
            with pytest.raises(openai.NotFoundError):
                await client.batches.retrieve("batch_nope")

    asyncio.run(go())


async def _anthropic_batch(
    srv: FakeLLMServer, requests: list[dict[str, Any]], polls: int
) -> tuple[list[str], Any, list[Any]]:
    client = anthropic.AsyncAnthropic(base_url=srv.anthropic_base_url, api_key="sk-ant-test", max_retries=0)
    async with client:
        batch = await client.messages.batches.create(requests=requests)
        statuses = [batch.processing_status]
        for _ in range(polls):
            batch = await client.messages.batches.retrieve(batch.id)
            statuses.append(batch.processing_status)
        results = [r async for r in await client.messages.batches.results(batch.id)]
    return statuses, batch, results


def test_anthropic_message_batch_ends_with_succeeded_errored_and_expired_results(srv):
    srv.batch_plan(polls=2)
    srv.on(lambda r: "grass" in r.prompt, FakeReply(status=429, message="slow down"))
    srv.on(lambda r: "snow" in r.prompt, FakeReply(drop=True))
    requests = [
        {"custom_id": "ok", "params": messages_body("is the sky blue")},
        {"custom_id": "err", "params": messages_body("is grass red")},
        {"custom_id": "exp", "params": messages_body("is snow hot")},
    ]
    statuses, batch, results = asyncio.run(_anthropic_batch(srv, requests, polls=2))
    assert statuses == ["in_progress", "in_progress", "ended"]
    counts = batch.request_counts
    assert (counts.succeeded, counts.errored, counts.expired, counts.processing) == (1, 1, 1, 0)
    by_id = {r.custom_id: r.result for r in results}
    assert by_id["ok"].type == "succeeded" and by_id["ok"].message.content[0].type == "tool_use"
    assert by_id["err"].type == "errored" and by_id["err"].error.error.type == "rate_limit_error"
    assert by_id["exp"].type == "expired"


def test_anthropic_refuses_bad_custom_ids_and_results_before_the_end(srv):
    async def go() -> None:
        client = anthropic.AsyncAnthropic(
            base_url=srv.anthropic_base_url, api_key="sk-ant-test", max_retries=0
        )
        async with client:
            with pytest.raises(anthropic.BadRequestError, match="custom_id"):
                await client.messages.batches.create(
                    requests=[{"custom_id": "has space", "params": messages_body("q")}]
                )
            batch = await client.messages.batches.create(
                requests=[{"custom_id": "a", "params": messages_body("q")}]
            )
            with pytest.raises(anthropic.AnthropicError, match="results_url"):
                await client.messages.batches.results(batch.id)

    asyncio.run(go())


@pytest.mark.parametrize("outcome", ["expired", "cancelled", "failed"])
def test_a_batch_wide_outcome_leaves_no_request_answered(srv, outcome):
    srv.batch_plan(polls=1, outcome=outcome)
    requests = [{"custom_id": "a", "params": messages_body("is the sky blue")}]
    _, _, results = asyncio.run(_anthropic_batch(srv, requests, polls=1))
    kind = {"expired": "expired", "cancelled": "canceled", "failed": "errored"}[outcome]
    assert [r.result.type for r in results] == [kind]
    assert not [r for r in srv.requests if r.endpoint == "messages" and r.batch_id]


def test_seconds_end_a_batch_by_time_and_the_plan_is_checked(srv):
    srv.batch_plan(polls=1000, seconds=0)
    _, batch, (out, _) = asyncio.run(_openai_batch(srv, jsonl(line("a", "q")), polls=1))
    assert batch.status == "completed" and len(out) == 1
    with pytest.raises(ConfigError, match="polls"):
        srv.batch_plan(polls=0)
    with pytest.raises(ConfigError, match="outcome"):
        srv.batch_plan(outcome="lost")  # type: ignore[arg-type]
    srv.reset()
    assert srv.batches == []
