"""FakeLLMServer, driven through the real openai / anthropic SDKs and instructor over loopback HTTP."""

from __future__ import annotations

import asyncio
import base64
import math
import struct
import time
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anthropic
import httpx2
import instructor
import openai
import pytest
from instructor.core import IncompleteOutputException

from ragmetrics.errors import ConfigError
from ragmetrics.metrics.claims.schemas import ClaimExtraction, ClaimVerification
from ragmetrics.prompting import load_prompt, numbered_blocks, render
from ragmetrics.testing import FakeLLMServer, FakeReply, FakeRequest

SECRET = "sk-test-secret-value-1234"
EXTRACTION = {
    "claims": [
        {
            "text": "Python is a compiled language.",
            "span": "Python is a compiled language",
            "relevance": "direct",
        },
        {"text": "Python was created in 1991.", "span": "created in 1991", "relevance": "direct"},
    ],
    "addresses_question": "yes",
}
MESSAGES = [
    {"role": "system", "content": "You are a judge."},
    {"role": "user", "content": "Split the answer."},
]


@pytest.fixture
async def oai(fake_llm_server: FakeLLMServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=fake_llm_server.openai_base_url, api_key=SECRET, max_retries=0)
    yield client
    await client.close()


@pytest.fixture
async def ant(fake_llm_server: FakeLLMServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(
        base_url=fake_llm_server.anthropic_base_url, api_key=SECRET, max_retries=0
    )
    yield client
    await client.close()


async def extract(
    client: openai.AsyncOpenAI, mode: instructor.Mode = instructor.Mode.TOOLS, **kw: Any
) -> Any:
    patched = instructor.from_openai(client, mode=mode)
    kw.setdefault("max_retries", 0)
    kw.setdefault("messages", MESSAGES)
    return await patched.chat.completions.create(model="gpt-fake", response_model=ClaimExtraction, **kw)


async def chat(client: openai.AsyncOpenAI, **kw: Any) -> Any:
    """A raw SDK call (instructor would wrap the SDK's errors)."""
    kw.setdefault("messages", MESSAGES)
    return await client.chat.completions.create(model="gpt-fake", **kw)


EXTRACTION_TOOLS = [
    {"type": "function", "function": {"name": "ClaimExtraction", "parameters": {"type": "object"}}}
]


# -- structured output through instructor ------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "wire_mode"),
    [
        (instructor.Mode.TOOLS, "tools"),
        (instructor.Mode.JSON, "json_object"),
        (instructor.Mode.JSON_SCHEMA, "json_schema"),
        (instructor.Mode.MD_JSON, "text"),
    ],
)
async def test_openai_instructor_modes_get_the_scripted_extraction(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI, mode: instructor.Mode, wire_mode: str
) -> None:
    fake_llm_server.enqueue(FakeReply(json=ClaimExtraction.model_validate(EXTRACTION)))

    result = await extract(oai, mode)

    assert result.model_dump() == ClaimExtraction.model_validate(EXTRACTION).model_dump()
    (request,) = fake_llm_server.requests
    assert (request.endpoint, request.mode, request.schema, request.task) == (
        "chat",
        wire_mode,
        "ClaimExtraction",
        "claims.extract",
    )
    assert request.source == "queue" and request.model == "gpt-fake"


async def test_openai_tools_reply_is_a_tool_call(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    fake_llm_server.enqueue(FakeReply(json=EXTRACTION))

    completion = await oai.chat.completions.create(
        model="gpt-fake",
        messages=MESSAGES,  # type: ignore[arg-type]
        tools=[
            {"type": "function", "function": {"name": "ClaimExtraction", "parameters": {"type": "object"}}}
        ],
        tool_choice={"type": "function", "function": {"name": "ClaimExtraction"}},
    )

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert call.function.name == "ClaimExtraction"  # type: ignore[union-attr]
    assert ClaimExtraction.model_validate_json(call.function.arguments) == ClaimExtraction(**EXTRACTION)  # type: ignore[union-attr]
    assert completion.object == "chat.completion" and completion.model == "gpt-fake" and completion.id
    assert completion.created > 0


@pytest.mark.parametrize("mode", ["TOOLS", "ANTHROPIC_TOOLS"])
async def test_anthropic_instructor_tools_get_the_scripted_extraction(
    fake_llm_server: FakeLLMServer, ant: anthropic.AsyncAnthropic, mode: str
) -> None:
    fake_llm_server.enqueue(FakeReply(json=EXTRACTION))
    with warnings.catch_warnings():  # instructor 1.17 deprecates ANTHROPIC_TOOLS in favour of TOOLS
        warnings.simplefilter("ignore", DeprecationWarning)
        client = instructor.from_anthropic(ant, mode=getattr(instructor.Mode, mode))

    result = await client.messages.create(
        model="claude-fake",
        max_tokens=1000,
        system="You are a judge.",
        messages=[{"role": "user", "content": "Split the answer."}],
        response_model=ClaimExtraction,
        max_retries=0,
    )

    assert result.model_dump() == ClaimExtraction.model_validate(EXTRACTION).model_dump()
    (request,) = fake_llm_server.requests
    assert (request.endpoint, request.mode, request.schema) == ("messages", "tools", "ClaimExtraction")


async def test_anthropic_raw_reply_is_a_tool_use_block(
    fake_llm_server: FakeLLMServer, ant: anthropic.AsyncAnthropic
) -> None:
    fake_llm_server.enqueue(FakeReply(json=EXTRACTION))

    message = await ant.messages.create(
        model="claude-fake",
        max_tokens=1000,
        messages=[{"role": "user", "content": "Split the answer."}],
        tools=[{"name": "ClaimExtraction", "input_schema": {"type": "object"}}],
        tool_choice={"type": "tool", "name": "ClaimExtraction"},
    )

    assert message.stop_reason == "tool_use"
    block = message.content[0]
    assert block.type == "tool_use" and block.name == "ClaimExtraction" and block.input == EXTRACTION
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0


# -- faults through the SDKs -----------------------------------------------------------------------


async def test_429_with_retry_after_is_a_rate_limit_error(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    fake_llm_server.enqueue(FakeReply(status=429, retry_after=7, message="slow down"))

    with pytest.raises(openai.RateLimitError) as info:
        await oai.chat.completions.create(model="gpt-fake", messages=MESSAGES)  # type: ignore[arg-type]

    assert info.value.response.headers["retry-after"] == "7"
    assert info.value.body == {
        "message": "slow down",
        "type": "rate_limit_error",
        "param": None,
        "code": "rate_limit_error",
    }


async def test_anthropic_errors_have_the_anthropic_shape(
    fake_llm_server: FakeLLMServer, ant: anthropic.AsyncAnthropic
) -> None:
    fake_llm_server.enqueue(FakeReply(status=429, retry_after=1), FakeReply(status=503))

    with pytest.raises(anthropic.RateLimitError) as info:
        await ant.messages.create(model="c", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert info.value.response.headers["retry-after"] == "1"
    assert info.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    with pytest.raises(anthropic.APIStatusError) as info_503:
        await ant.messages.create(model="c", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert info_503.value.status_code == 503


async def test_500_is_an_internal_server_error(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    fake_llm_server.enqueue(FakeReply(status=500))

    with pytest.raises(openai.InternalServerError):
        await oai.chat.completions.create(model="gpt-fake", messages=MESSAGES)  # type: ignore[arg-type]


async def test_drop_is_a_connection_error(fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI) -> None:
    fake_llm_server.enqueue(FakeReply(drop=True))

    with pytest.raises(openai.APIConnectionError) as info:
        await oai.chat.completions.create(model="gpt-fake", messages=MESSAGES)  # type: ignore[arg-type]

    assert not isinstance(info.value, openai.APITimeoutError)


async def test_hang_times_out_the_client(fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI) -> None:
    fake_llm_server.enqueue(FakeReply(hang=True))

    started = time.perf_counter()
    with pytest.raises(openai.APITimeoutError):
        await oai.with_options(timeout=0.3).chat.completions.create(model="gpt-fake", messages=MESSAGES)  # type: ignore[arg-type]

    assert time.perf_counter() - started < 5.0


async def test_stop_returns_promptly_with_hanging_requests_in_flight() -> None:
    server = FakeLLMServer().start()
    server.enqueue(*[FakeReply(hang=True)] * 4)
    client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0, timeout=30)
    try:
        calls = [
            asyncio.ensure_future(client.chat.completions.create(model="m", messages=MESSAGES))  # type: ignore[arg-type]
            for _ in range(4)
        ]
        while len(server.requests) < 4:
            await asyncio.sleep(0.01)

        started = time.perf_counter()
        await asyncio.to_thread(server.stop)
        assert time.perf_counter() - started < 5.0, "stop does not wait out the clients' 30 s timeout"

        results = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(r, openai.APIConnectionError) for r in results)
    finally:
        await client.close()
        server.stop()


async def test_malformed_json_is_reasked_once(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    fake_llm_server.enqueue(FakeReply(malformed=True), FakeReply(json=EXTRACTION))

    result = await extract(oai, max_retries=2)

    assert result.model_dump() == ClaimExtraction.model_validate(EXTRACTION).model_dump()
    assert fake_llm_server.calls.total() == 2
    assert fake_llm_server.pending == 0


async def test_invalid_json_is_reasked_through_anthropic(
    fake_llm_server: FakeLLMServer, ant: anthropic.AsyncAnthropic
) -> None:
    fake_llm_server.enqueue(FakeReply(invalid=True), FakeReply(malformed=True), FakeReply(json=EXTRACTION))
    client = instructor.from_anthropic(ant, mode=instructor.Mode.TOOLS)

    result = await client.messages.create(
        model="claude-fake",
        max_tokens=1000,
        messages=[{"role": "user", "content": "Split the answer."}],
        response_model=ClaimExtraction,
        max_retries=3,
    )

    assert result.model_dump() == ClaimExtraction.model_validate(EXTRACTION).model_dump()
    assert fake_llm_server.calls["claims.extract"] == 3


async def test_truncated_reply_raises_incomplete_output(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    fake_llm_server.enqueue(FakeReply(json=EXTRACTION, truncate=True))

    with pytest.raises(IncompleteOutputException):
        await extract(oai)

    completion = await _raw_tools_call(oai, fake_llm_server, FakeReply(json=EXTRACTION, truncate=True))
    assert completion.choices[0].finish_reason == "length"
    arguments = completion.choices[0].message.tool_calls[0].function.arguments  # type: ignore[index,union-attr]
    assert EXTRACTION_TEXT.startswith(arguments) and len(arguments) < len(EXTRACTION_TEXT)


EXTRACTION_TEXT = __import__("json").dumps(EXTRACTION)


async def _raw_tools_call(oai: openai.AsyncOpenAI, server: FakeLLMServer, reply: FakeReply) -> Any:
    server.enqueue(reply)
    return await oai.chat.completions.create(
        model="gpt-fake",
        messages=MESSAGES,  # type: ignore[arg-type]
        tools=[
            {"type": "function", "function": {"name": "ClaimExtraction", "parameters": {"type": "object"}}}
        ],
    )


async def test_content_reply_is_sent_as_text(fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI) -> None:
    completion = await _raw_tools_call(oai, fake_llm_server, FakeReply(content="I cannot help with that."))

    message = completion.choices[0].message
    assert message.content == "I cannot help with that." and not message.tool_calls
    assert completion.choices[0].finish_reason == "stop"


# -- usage, counters, records ----------------------------------------------------------------------


async def test_usage_estimates_and_counters(fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI) -> None:
    fake_llm_server.enqueue(FakeReply(json=EXTRACTION), FakeReply(json=EXTRACTION))
    tools = [{"type": "function", "function": {"name": "ClaimExtraction", "parameters": {"type": "object"}}}]

    first = await oai.chat.completions.create(model="m", messages=MESSAGES, tools=tools)  # type: ignore[arg-type]
    await extract(oai)

    usage = first.usage
    assert usage is not None
    schema_chars = len(
        '[{"type":"function","function":{"name":"ClaimExtraction","parameters":{"type":"object"}}}]'
    )
    text_chars = len("You are a judge.") + len("Split the answer.")
    assert usage.prompt_tokens == math.ceil((text_chars + schema_chars) / 4)
    assert usage.completion_tokens == math.ceil(len(EXTRACTION_TEXT) / 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    second = fake_llm_server.requests[1]
    assert second.prompt_tokens > usage.prompt_tokens  # instructor's full tool schema is billed
    assert fake_llm_server.prompt_tokens == usage.prompt_tokens + second.prompt_tokens
    assert fake_llm_server.completion_tokens == 2 * usage.completion_tokens
    assert fake_llm_server.calls == Counter({"claims.extract": 2})


async def test_requests_are_recorded_without_api_key_values(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic
) -> None:
    fake_llm_server.enqueue(FakeReply(json=EXTRACTION), FakeReply(json=EXTRACTION))
    await extract(oai)
    await ant.messages.create(model="c", max_tokens=10, messages=[{"role": "user", "content": "x"}])

    openai_request, anthropic_request = fake_llm_server.requests
    assert openai_request.has_api_key and anthropic_request.has_api_key
    assert openai_request.headers["authorization"] == "[redacted]"
    assert anthropic_request.headers["authorization"] == "[redacted]"
    async with httpx2.AsyncClient(base_url=fake_llm_server.url) as http:
        await http.get("/v1/models", headers={"x-api-key": SECRET, "api-key": SECRET})
    assert fake_llm_server.requests[-1].headers["x-api-key"] == "[redacted]"
    assert SECRET not in repr(fake_llm_server.requests)
    assert openai_request.index == 0 and anthropic_request.index == 1
    assert openai_request.body["model"] == "gpt-fake" and anthropic_request.endpoint == "messages"


async def test_latency_does_not_serialise_requests(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.latency = 0.3
    fake_llm_server.on("chat", FakeReply(json=EXTRACTION))
    client = openai.AsyncOpenAI(base_url=fake_llm_server.openai_base_url, api_key="k", max_retries=0)
    try:
        started = time.perf_counter()
        await asyncio.gather(*(extract(client) for _ in range(32)))
        elapsed = time.perf_counter() - started
    finally:
        await client.close()

    assert 0.3 <= elapsed < 7.2, elapsed  # serialised it cannot take less than 32 * 0.3 = 9.6 s
    assert fake_llm_server.calls.total() == 32


async def test_latency_range_is_seeded_and_bounded(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.latency = (0.05, 0.1)
    async with httpx2.AsyncClient(base_url=fake_llm_server.url) as http:
        started = time.perf_counter()
        response = await http.get("/v1/models")
        elapsed = time.perf_counter() - started
    assert response.status_code == 200
    assert 0.05 <= elapsed < 2.0  # the upper bound is loose: a loaded machine adds its own wait
    with pytest.raises(ConfigError):
        fake_llm_server.latency = (0.2, 0.1)


async def test_seeded_fault_rates_are_roughly_as_asked_and_reproducible(
    fake_llm_server: FakeLLMServer,
) -> None:
    async def run() -> list[int | str]:
        fake_llm_server.reset()
        fake_llm_server.faults(rate_429=0.2, rate_500=0.1, rate_503=0.05, malformed=0.1, drop=0.05, seed=7)
        outcomes: list[int | str] = []
        async with httpx2.AsyncClient(base_url=fake_llm_server.url) as http:
            for _ in range(200):
                try:
                    response = await http.post("/v1/embeddings", json={"model": "e", "input": "hello"})
                except httpx2.TransportError:
                    outcomes.append("drop")
                    continue
                if response.status_code == 200:
                    try:
                        response.json()
                        outcomes.append(200)
                    except ValueError:
                        outcomes.append("malformed")
                else:
                    outcomes.append(response.status_code)
        return outcomes

    first = await run()
    counts = Counter(first)
    assert 25 <= counts[429] <= 55, counts
    assert 8 <= counts[500] <= 32, counts
    assert 2 <= counts[503] <= 20, counts
    assert 8 <= counts["malformed"] <= 32, counts
    assert 2 <= counts["drop"] <= 20, counts
    assert 70 <= counts[200] <= 130, counts
    assert {r.source for r in fake_llm_server.requests} == {"fault", "default"}
    assert await run() == first


async def test_faults_spare_scripted_requests_and_reject_bad_rates(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    fake_llm_server.faults(rate_500=1.0)
    fake_llm_server.enqueue(FakeReply(json=EXTRACTION))
    assert (await extract(oai)).claims
    with pytest.raises(openai.InternalServerError):
        await chat(oai)
    with pytest.raises(ConfigError):
        fake_llm_server.faults(rate_429=0.7, rate_500=0.7)
    with pytest.raises(ConfigError):
        fake_llm_server.faults(hang=-0.1)


async def test_fault_429_carries_retry_after(fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI) -> None:
    fake_llm_server.faults(rate_429=1.0, retry_after=2)
    with pytest.raises(openai.RateLimitError) as info:
        await chat(oai)
    assert info.value.response.headers["retry-after"] == "2"


# -- rules ----------------------------------------------------------------------------------------


async def test_rules_match_requests_and_count_hits(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    def by_prompt(request: FakeRequest) -> FakeReply:
        assert fake_llm_server.requests is not None  # reading the server from a rule must not deadlock
        claim = request.prompt.split()[-1]
        return FakeReply(json={"claims": [{"text": claim}], "addresses_question": "partially"})

    slow_rule = fake_llm_server.on(lambda r: "slow" in r.prompt, FakeReply(status=503), times=1)
    rule = fake_llm_server.on("claims.extract", by_prompt)

    with pytest.raises(openai.APIStatusError):
        await chat(oai, messages=[{"role": "user", "content": "a slow one"}], tools=EXTRACTION_TOOLS)
    first = await extract(oai, messages=[{"role": "user", "content": "a slow one"}])
    second = await extract(oai, messages=[{"role": "user", "content": "claim Paris"}])

    assert [c.text for c in first.claims] == ["one"] and [c.text for c in second.claims] == ["Paris"]
    assert (slow_rule.hits, slow_rule.active, rule.hits) == (1, False, 2)
    rule.cancel()
    assert not rule.active
    assert [r.source for r in fake_llm_server.requests] == ["rule", "rule", "rule"]


async def test_unknown_schema_without_script_is_a_400(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    from pydantic import BaseModel

    class Mystery(BaseModel):
        x: int

    client = instructor.from_openai(oai, mode=instructor.Mode.TOOLS)
    with pytest.raises(Exception) as info:
        await client.chat.completions.create(
            model="m", messages=MESSAGES, response_model=Mystery, max_retries=0
        )

    cause: BaseException | None = info.value
    while cause is not None and not isinstance(cause, openai.BadRequestError):
        cause = cause.__cause__ or cause.__context__
    assert isinstance(cause, openai.BadRequestError), info.value
    assert "Mystery" in cause.message and "enqueue" in cause.message


async def test_unknown_path_is_a_404(fake_llm_server: FakeLLMServer) -> None:
    async with httpx2.AsyncClient(base_url=fake_llm_server.url) as http:
        response = await http.post("/v1/responses", json={})
    assert response.status_code == 404
    assert "/v1/chat/completions" in response.json()["error"]["message"]


# -- default answers ------------------------------------------------------------------------------


def _recording_answerer(calls: list[tuple[str, Mapping[str, Any]]]) -> Any:
    def answer(task: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        calls.append((task, dict(variables)))
        if task == "claims.extract":
            return {"claims": [{"text": variables["answer"]}], "addresses_question": "yes"}
        return {"verdicts": [{"claim": i, "verdict": "not_found"} for i in range(len(variables["claims"]))]}

    return answer


def _extract_messages(question: str | None, answer: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": load_prompt("claims/system.v1").text},
        {
            "role": "user",
            "content": render(load_prompt("claims/extract.v1"), question=question, answer=answer),
        },
    ]


def _verify_messages(claims: list[str], contexts: list[str]) -> list[dict[str, str]]:
    text = render(
        load_prompt("claims/verify.v1"),
        claims=numbered_blocks("claim", claims),
        contexts=numbered_blocks("context", contexts),
    )
    return [
        {"role": "system", "content": load_prompt("claims/system.v1").text},
        {"role": "user", "content": text},
    ]


async def test_default_answers_read_the_variables_back_from_the_prompts() -> None:
    seen: list[tuple[str, Mapping[str, Any]]] = []
    with FakeLLMServer(answer=_recording_answerer(seen)) as server:
        client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0)
        try:
            patched = instructor.from_openai(client, mode=instructor.Mode.TOOLS)
            answer = 'Tom & Jerry\'s <b>show</b> "aired" in 1940 (&amp; is an entity).'
            extraction = await patched.chat.completions.create(
                model="m",
                messages=_extract_messages(None, answer),
                response_model=ClaimExtraction,
                max_retries=0,
            )
            claims, contexts = ["A < B & C.", "Second &lt; claim."], ["ctx <one>", "ctx & two", "three"]
            verification = await patched.chat.completions.create(
                model="m",
                messages=_verify_messages(claims, contexts),
                response_model=ClaimVerification,
                max_retries=0,
                context={"n_claims": 2, "n_contexts": 3},
            )
        finally:
            await client.close()

    assert extraction.claims[0].text == answer
    assert [v.verdict for v in verification.verdicts] == ["not_found", "not_found"]
    assert seen == [
        ("claims.extract", {"question": None, "answer": answer}),
        ("claims.verify", {"claims": claims, "contexts": contexts}),
    ]
    assert [r.variables for r in server.requests] == [s[1] for s in seen]
    assert server.calls == Counter({"claims.extract": 1, "claims.verify": 1})


async def test_default_answer_failure_is_a_400_naming_the_problem() -> None:
    def broken(task: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        raise ImportError("no offline judge here")

    with FakeLLMServer(answer=broken) as server:
        async with httpx2.AsyncClient(base_url=server.url) as http:
            response = await http.post(
                "/v1/chat/completions",
                json={
                    "model": "m",
                    "messages": _extract_messages("q", "a"),
                    "tools": [{"type": "function", "function": {"name": "ClaimExtraction"}}],
                },
            )
    assert response.status_code == 400
    assert "no offline judge here" in response.json()["error"]["message"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_unscripted_claim_requests_are_answered_by_the_offline_judge(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic, provider: str
) -> None:
    question = "What is Python?"
    answer = "Python is a compiled language. It was created by Guido van Rossum in 1991."
    contexts = ["Python is an interpreted language created by Guido van Rossum in 1991."]

    async def ask(messages: list[dict[str, str]], model: type[Any], **kw: Any) -> Any:
        if provider == "openai":
            client = instructor.from_openai(oai, mode=instructor.Mode.TOOLS)
            return await client.chat.completions.create(
                model="m", messages=messages, response_model=model, max_retries=0, **kw
            )
        client = instructor.from_anthropic(ant, mode=instructor.Mode.TOOLS)
        return await client.messages.create(
            model="c",
            max_tokens=2000,
            system=messages[0]["content"],
            messages=messages[1:],
            response_model=model,
            max_retries=0,
            **kw,
        )

    extraction = await ask(_extract_messages(question, answer), ClaimExtraction)
    claims = [c.text for c in extraction.claims]
    verification = await ask(
        _verify_messages(claims, contexts),
        ClaimVerification,
        context={"n_claims": len(claims), "n_contexts": len(contexts)},
    )

    assert claims and extraction.addresses_question in ("yes", "partially", "no")
    assert sorted(v.claim for v in verification.verdicts) == list(range(len(claims)))
    assert [r.source for r in fake_llm_server.requests] == ["default", "default"]
    assert fake_llm_server.requests[0].variables == {"question": question, "answer": answer}
    assert fake_llm_server.requests[1].variables == {"claims": claims, "contexts": contexts}


# -- embeddings, models, lifecycle ----------------------------------------------------------------


async def test_embeddings_are_deterministic_normalised_and_lexical(
    fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI
) -> None:
    texts = ["The cat sat on the mat.", "the cat sat on a mat", "Quarterly revenue grew by 12%."]
    first = await oai.embeddings.create(model="fake-embedding", input=texts)  # base64 on the wire
    again = await oai.embeddings.create(model="fake-embedding", input=texts, encoding_format="float")
    small = await oai.embeddings.create(model="fake-embedding", input="hello", dimensions=16)

    vectors = [d.embedding for d in first.data]
    assert all(len(v) == 256 for v in vectors) and len(small.data[0].embedding) == 16
    for v, w in zip(vectors, (d.embedding for d in again.data), strict=True):
        assert math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-5)
        assert max(abs(a - b) for a, b in zip(v, w, strict=True)) < 1e-6  # float32 on the base64 path

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(vectors[0], vectors[1]) > 0.5 > cos(vectors[0], vectors[2])
    assert first.usage.prompt_tokens == math.ceil(sum(map(len, texts)) / 4)
    assert fake_llm_server.calls == Counter({"embeddings": 3})


async def test_embeddings_base64_is_little_endian_float32(fake_llm_server: FakeLLMServer) -> None:
    async with httpx2.AsyncClient(base_url=fake_llm_server.url) as http:
        response = await http.post(
            "/v1/embeddings",
            json={"model": "e", "input": ["x y"], "encoding_format": "base64", "dimensions": 8},
        )
    raw = base64.b64decode(response.json()["data"][0]["embedding"])
    assert len(struct.unpack("<8f", raw)) == 8


async def test_model_listing(fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI) -> None:
    models = [m.id async for m in oai.models.list()]
    assert models == ["fake-model", "fake-embedding"]
    assert fake_llm_server.calls.total() == 0


async def test_reset_clears_everything(fake_llm_server: FakeLLMServer, oai: openai.AsyncOpenAI) -> None:
    fake_llm_server.enqueue(FakeReply(json=EXTRACTION), FakeReply(status=500))
    fake_llm_server.on("never", FakeReply(status=500))
    await extract(oai)
    fake_llm_server.faults(rate_500=1.0)
    fake_llm_server.latency = 5.0

    fake_llm_server.reset()

    assert fake_llm_server.requests == [] and fake_llm_server.calls == Counter()
    assert fake_llm_server.prompt_tokens == fake_llm_server.completion_tokens == fake_llm_server.pending == 0
    assert fake_llm_server.latency == 0.0
    fake_llm_server.enqueue(FakeReply(json=EXTRACTION))
    started = time.perf_counter()
    assert (await extract(oai)).claims  # no latency, no fault, no stale script
    assert time.perf_counter() - started < 4.0, "the 5 s latency is gone"


def test_start_and_stop_are_idempotent() -> None:
    server = FakeLLMServer()
    with pytest.raises(ConfigError):
        _ = server.url
    assert server.start() is server.start()
    port = server.port
    assert server.openai_base_url == f"http://127.0.0.1:{port}/v1"
    assert server.anthropic_base_url == server.url == f"http://127.0.0.1:{port}"
    server.stop()
    server.stop()
    assert not server.running
    with FakeLLMServer() as again:
        assert again.running
    assert not again.running


def test_reply_validation() -> None:
    with pytest.raises(ConfigError):
        FakeReply(json={}, content="x")
    with pytest.raises(ConfigError):
        FakeReply(status=99)
    with pytest.raises(ConfigError):
        FakeReply(hang=True, drop=True)
    with pytest.raises(ConfigError):
        FakeReply(delay=-1)
    with pytest.raises(ConfigError):
        FakeLLMServer(embedding_dim=0)
    with pytest.raises(ConfigError):
        FakeLLMServer().enqueue({"json": {}})  # type: ignore[arg-type]


async def test_schemas_without_titles_are_recognised_by_their_fields() -> None:
    seen: list[tuple[str, Mapping[str, Any]]] = []
    schema = {"type": "object", "properties": {"claims": {"type": "array"}, "addresses_question": {}}}
    system = "Answer in json that matches the following json_schema:\n\n" + __import__("json").dumps(schema)
    messages = [{"role": "system", "content": system}, *_extract_messages("Who?", "Ada did.")[1:]]
    with FakeLLMServer(answer=_recording_answerer(seen)) as server:
        async with httpx2.AsyncClient(base_url=server.url) as http:
            response = await http.post(
                "/v1/chat/completions",
                json={"model": "m", "messages": messages, "response_format": {"type": "json_object"}},
            )
    assert response.status_code == 200, response.text
    assert (
        response.json()["choices"][0]["message"]["content"]
        == '{"claims": [{"text": "Ada did."}], "addresses_question": "yes"}'
    )
    assert seen == [("claims.extract", {"question": "Who?", "answer": "Ada did."})]
    assert (server.requests[0].mode, server.requests[0].schema) == ("json_object", "ClaimExtraction")
