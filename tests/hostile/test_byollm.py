"""Hostile gateways and clients: a server that echoes the caller's key back, a judge object that lies.

Keys passed as ``api_key=`` or carried by a user's client must not reach a result, a log line or a
record even when the server quotes them in its error body; the forms a user's key arrives in are the
new ones (the old code had no ``api_key=`` and took no client objects).
"""

from __future__ import annotations

import asyncio
import logging

import anthropic
import openai
import pytest

from ragmetrics import EvaluationPipeline, FaithfulnessMetric
from ragmetrics.errors import ConfigError
from ragmetrics.testing import FakeLLMServer, FakeReply

KEY = "sk-hostile-echo-0123456789abcdefXYZ"
ROW = {
    "question": "What is Python?",
    "answer": "Python was created in 1991.",
    "contexts": ["Python dates from 1991."],
}


def _echo_key(srv: FakeLLMServer) -> None:
    srv.on(lambda req: True, FakeReply(status=401, message=f"invalid api key {KEY} for this gateway"))


def test_a_gateway_echoing_the_api_key_keyword_never_gets_it_into_a_record(
    fake_llm_server: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    _echo_key(fake_llm_server)
    metric = FaithfulnessMetric(
        llm="openai:m", base_url=fake_llm_server.openai_base_url, api_key=KEY, cache=False
    )
    result = metric.evaluate_sync(**ROW)
    assert result.status == "provider_error" and result.score is None
    assert "[redacted]" in (result.message or "")
    records = EvaluationPipeline(metrics=[metric]).run([ROW])
    dumped = [result.model_dump_json(), records[0].model_dump_json(), caplog.text, repr(metric)]
    assert not any(KEY in text for text in dumped)


@pytest.mark.parametrize("kind", ["openai", "azure", "anthropic"])
def test_a_gateway_echoing_a_client_key_never_gets_it_into_a_record(
    fake_llm_server: FakeLLMServer, kind: str
) -> None:
    _echo_key(fake_llm_server)
    srv = fake_llm_server
    if kind == "openai":
        client: object = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key=KEY)
    elif kind == "azure":
        client = openai.AsyncAzureOpenAI(
            azure_endpoint=srv.url, api_key=KEY, api_version="2024-10-21", azure_deployment="d"
        )
    else:
        client = anthropic.AsyncAnthropic(base_url=srv.anthropic_base_url, api_key=KEY)
    result = FaithfulnessMetric(llm=client, cache=False).evaluate_sync(**ROW)
    assert result.status == "provider_error"
    assert KEY not in result.model_dump_json() and "[redacted]" in (result.message or "")
    asyncio.run(client.close())  # type: ignore[attr-defined]


def test_an_object_dressed_as_a_client_is_not_taken_for_one() -> None:
    fake = type("AsyncOpenAI", (), {"__module__": "openai_lookalike", "api_key": KEY})()
    with pytest.raises(ConfigError, match="got AsyncOpenAI") as info:
        FaithfulnessMetric(llm=fake)
    assert KEY not in str(info.value)
