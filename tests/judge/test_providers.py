"""Bring your own LLM: every spec and client form over real HTTP to the fake server, with the real SDKs.

Each form is checked on the wire (the path and auth header the SDK really sent), for a score, and
for ownership: a client or Judge the user passed in survives repeated runs and is never closed; a
judge ragmetrics built is closed after each run. Keys never reach a cache file, a repr, a result or
a log line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from ragmetrics import (
    EvaluationPipeline,
    FaithfulnessMetric,
    Judge,
    JudgeReply,
    JudgeRequest,
    OfflineJudgeWarning,
    RelevancyMetric,
)
from ragmetrics.errors import ConfigError
from ragmetrics.judge import make_judge, resolve_judge
from ragmetrics.judge.offline.judge import OfflineJudge
from ragmetrics.metrics.evaluators.factory import LLMJudgeEvaluator
from ragmetrics.settings import GEMINI_BASE_URL, parse_judge_spec
from ragmetrics.testing import FakeLLMServer

Q = "What is Python?"
A = "Python is a compiled language created in 1991."
C = ["Python is an interpreted language created by Guido van Rossum in 1991."]
SECRET = "sk-user-secret-0123456789abcdef"


@pytest.fixture
def srv(fake_llm_server: FakeLLMServer) -> FakeLLMServer:
    return fake_llm_server


def _posts(srv: FakeLLMServer) -> list[Any]:
    return [r for r in srv.requests if r.method == "POST"]


def _close(*clients: Any) -> None:
    """Close the user's clients, as the user would (ragmetrics never does it for them)."""

    async def close() -> None:
        for client in clients:
            await client.close()

    asyncio.run(close())


def _check_ok(metric: Any) -> None:
    result = metric.evaluate_sync(Q, A, C)
    assert result.status == "ok", result.message
    assert result.score == pytest.approx(0.5, abs=0.2)  # the seed example: one claim contradicted


# -- keywords on spec strings ------------------------------------------------------------------------


def test_api_key_and_base_url_keywords_reach_the_server_and_no_record(
    srv: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cache = tmp_path / "cache"
    metric = FaithfulnessMetric(
        llm="openai:gpt-4o-mini", api_key=SECRET, base_url=srv.openai_base_url, cache=cache
    )
    result = metric.evaluate_sync(Q, A, C)  # no OPENAI_API_KEY is set: the keyword is what made this work
    assert result.status == "ok" and result.judge is not None
    assert result.judge.base_url == srv.openai_base_url
    posts = _posts(srv)
    assert posts and all(r.has_api_key and r.path == "/v1/chat/completions" for r in posts)
    texts = [
        repr(metric),
        repr(metric.judge),
        repr(metric.judge_key()),
        result.model_dump_json(),
        caplog.text,
    ]
    assert not any(SECRET in t for t in texts)
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files and not any(SECRET.encode() in p.read_bytes() for p in files)


def test_without_a_key_the_error_names_the_variable_and_the_keyword() -> None:
    metric = FaithfulnessMetric(llm="openai:gpt-4o-mini", cache=False)
    with pytest.raises(ConfigError, match=r"OPENAI_API_KEY.*api_key="):
        metric.judge  # noqa: B018 - resolving is when the key is looked up


def test_keywords_that_do_not_fit_the_form_are_refused(srv: FakeLLMServer) -> None:
    client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="x" * 12)
    with pytest.raises(ConfigError, match="carries its own key"):
        FaithfulnessMetric(llm=client, api_key=SECRET)
    _close(client)
    with pytest.raises(ConfigError, match="model= goes with a client"):
        FaithfulnessMetric(llm="openai:gpt-4o", model="gpt-4o-mini")
    with pytest.raises(ConfigError, match="api_key must be a string"):
        FaithfulnessMetric(llm="openai:gpt-4o", api_key=123)
    with pytest.raises(ConfigError, match="ready Judge"):
        FaithfulnessMetric(llm=OfflineJudge(), api_key=SECRET)
    with pytest.raises(ConfigError, match="names a base URL already"):
        make_judge(f"openai:m@{srv.openai_base_url}", base_url="http://elsewhere.example/v1")


def test_a_synchronous_client_or_another_object_is_refused_naming_the_async_client() -> None:
    with pytest.raises(ConfigError, match="AsyncOpenAI"):
        FaithfulnessMetric(llm=openai.OpenAI(api_key="x" * 12, base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(ConfigError, match="AsyncAnthropic"):
        RelevancyMetric(llm=anthropic.Anthropic(api_key="x" * 12))
    with pytest.raises(ConfigError, match="got dict"):
        FaithfulnessMetric(llm={"model": "gpt-4o"})


# -- client objects ----------------------------------------------------------------------------------


def test_a_users_openai_client_is_metered_and_survives_three_runs_and_a_pipeline(
    srv: FakeLLMServer, tmp_path: Path
) -> None:
    client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key=SECRET, max_retries=5)
    metric = FaithfulnessMetric(llm=client, cache=False)
    for year in range(3):  # a new answer each run, so each one reaches the server (no memo hit)
        result = metric.evaluate_sync(Q, A.replace("1991", f"199{year}"), C)
        assert result.status == "ok", result.message
        assert result.usage.calls == 2 and result.usage.prompt_tokens > 0  # metered through the copy
        assert not metric.judge.inner._clients  # the copy made for that run's loop was closed
    results = EvaluationPipeline(metrics=[metric, RelevancyMetric(llm=client, cache=False)]).run(
        [{"question": Q, "answer": A, "contexts": C}]
    )
    assert results[0].ok
    assert not client.is_closed() and client.max_retries == 5  # never closed nor changed
    assert client._client.event_hooks == {"request": [], "response": []}  # never given our hooks

    async def still_usable() -> list[str]:
        try:
            return [m.id async for m in client.models.list()]
        finally:
            await client.close()  # the user closes it, on the loop that used it

    assert asyncio.run(still_usable())  # the user's client still works after all that


def test_a_client_with_its_own_http_client_keeps_it_open(srv: FakeLLMServer) -> None:
    import httpx2

    async def run() -> None:
        http = httpx2.AsyncClient()
        client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="k" * 12, http_client=http)
        metric = FaithfulnessMetric(llm=client, cache=False)
        for year in range(2):
            result = await metric.evaluate(Q, A.replace("1991", f"199{year}"), C)
            assert result.status == "ok" and result.usage.calls == 2
            await metric.judge.aclose()
        assert not http.is_closed  # shared with the user: ragmetrics never closes it
        await http.aclose()

    asyncio.run(run())


_SAME_EITHER_WAY = ("authorization", "content-type", "accept", "user-agent", "x-stainless-lang")


@pytest.mark.parametrize("mode", ["tools", "json_schema", "json_object_schema", "json"])
def test_a_spec_judge_sends_what_a_users_client_sends_through_chat_completions_create(
    srv: FakeLLMServer, mode: str
) -> None:
    """A judge built from a spec posts through its SDK client's public ``post`` (the first request skips
    the SDK's ``resources`` package, issue 42); a user's client is called through its own
    ``chat.completions.create``. The server sees the same requests either way, in every wire form."""
    client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key=SECRET)
    spec = {"llm": "openai:gpt-4o-mini", "api_key": SECRET, "base_url": srv.openai_base_url}
    sent: dict[str, list[Any]] = {}
    for name, llm in (("spec", spec), ("client", {"llm": client})):
        start = len(srv.requests)
        result = FaithfulnessMetric(**llm, cache=False, mode=mode, seed=7).evaluate_sync(Q, A, C)
        assert result.status == "ok", result.message
        sent[name] = [
            (r.body, r.mode, {k: v for k, v in r.headers.items() if k in _SAME_EITHER_WAY})
            for r in srv.requests[start:]
            if r.endpoint == "chat"
        ]
    _close(client)
    assert len(sent["spec"]) == 2 and sent["spec"] == sent["client"]
    body, wire, headers = sent["spec"][0]
    assert body["seed"] == 7 and headers["authorization"] == "[redacted]"
    assert wire == {"json_object_schema": "json_object", "json": "json_object"}.get(mode, mode)


def test_a_spec_judge_loads_none_of_the_sdks_resources(srv: FakeLLMServer, tmp_path: Path) -> None:
    """``openai.resources`` imports every API of the SDK (0.3 s with openai 3) before the first request."""
    code = (
        "import sys, ragmetrics; metric = ragmetrics.FaithfulnessMetric(llm=sys.argv[1], cache=False); "
        "result = metric.evaluate_sync(*__import__('json').loads(sys.argv[2])); "
        "print(result.status, [m for m in sys.modules if m.startswith('openai.resources')])"
    )
    spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    env = dict(os.environ, OPENAI_API_KEY="sk-" + "k" * 20)
    done = subprocess.run(
        [sys.executable, "-c", code, spec, json.dumps([Q, A, C])],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ok", "[]"]
    assert any(r.endpoint == "chat" for r in srv.requests)


def test_azure_client_and_spec_speak_azures_deployment_path(
    srv: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = openai.AsyncAzureOpenAI(
        azure_endpoint=srv.url, api_key=SECRET, api_version="2024-10-21", azure_deployment="judge-dep"
    )
    metric = FaithfulnessMetric(llm=client, cache=False)
    _check_ok(metric)
    assert metric.judge.info.provider == "azure" and metric.judge.info.model == "judge-dep"
    _close(client)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-01-01-preview")
    srv.reset()
    _check_ok(FaithfulnessMetric(llm=f"azure:other-dep@{srv.url}", cache=False))
    posts = _posts(srv)
    assert {r.path for r in posts} == {"/openai/deployments/other-dep/chat/completions"}
    assert all("api-key" in r.headers for r in posts)


def test_azure_spec_without_key_or_endpoint_names_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT"):
        parse_judge_spec("azure:dep")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://name.openai.azure.com")
    assert parse_judge_spec("azure:dep").base_url == "https://name.openai.azure.com"
    with pytest.raises(ConfigError, match="AZURE_OPENAI_API_KEY"):
        make_judge("azure:dep")


def test_fake_server_refuses_an_azure_path_without_api_version(srv: FakeLLMServer) -> None:
    client = openai.AsyncOpenAI(base_url=f"{srv.url}/openai/deployments/d", api_key="k" * 12, max_retries=0)

    async def call() -> None:
        try:
            await client.chat.completions.create(model="d", messages=[{"role": "user", "content": "hi"}])
        finally:
            await client.close()

    with pytest.raises(openai.NotFoundError, match="api-version"):
        asyncio.run(call())


def test_gemini_spec_uses_its_openai_compatible_endpoint(
    srv: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parse_judge_spec("gemini:gemini-2.5-flash").base_url == GEMINI_BASE_URL
    assert parse_judge_spec("gemini:").model == "gemini-2.5-flash"
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        make_judge("gemini:gemini-2.5-flash")
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    metric = FaithfulnessMetric(llm=f"gemini:gemini-2.5-flash@{srv.url}/v1beta/openai/", cache=False)
    _check_ok(metric)
    assert {r.path for r in _posts(srv)} == {"/v1beta/openai/chat/completions"}
    assert metric.judge.info.provider == "gemini"


def test_a_gateway_such_as_litellm_is_an_openai_spec_with_its_url(srv: FakeLLMServer) -> None:
    metric = FaithfulnessMetric(
        llm=f"openai:anthropic/claude-haiku-4-5@{srv.openai_base_url}", api_key=SECRET
    )
    _check_ok(metric)
    assert {r.model for r in _posts(srv)} == {"anthropic/claude-haiku-4-5"}


def test_anthropic_client_survives_three_runs(srv: FakeLLMServer) -> None:
    client = anthropic.AsyncAnthropic(base_url=srv.anthropic_base_url, api_key=SECRET)
    metric = RelevancyMetric(llm=client, cache=False)
    for year in range(3):
        result = metric.evaluate_sync(Q, A.replace("1991", f"199{year}"), C)
        assert result.status == "ok" and result.usage.calls == 1
    assert {r.path for r in _posts(srv)} == {"/v1/messages"}
    assert not client.is_closed()
    _close(client)


def test_bedrock_client_and_spec_speak_the_invoke_path(
    srv: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a Bedrock API key (bearer) rather than SigV4: signing needs boto3, which the test env lacks
    model = "anthropic.claude-haiku-4-5-20251001-v1:0"
    client = anthropic.AsyncAnthropicBedrock(aws_region="eu-west-1", api_key=SECRET, base_url=srv.url)
    with pytest.raises(ConfigError, match="pass model="):
        FaithfulnessMetric(llm=client).judge  # noqa: B018
    _check_ok(FaithfulnessMetric(llm=client, model=model, cache=False))
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", SECRET)
    metric = FaithfulnessMetric(llm=f"bedrock:{model}@{srv.url}", cache=False)
    _check_ok(metric)
    posts = _posts(srv)
    assert {r.path for r in posts} == {f"/model/{model}/invoke"}
    assert all(r.model == model and "model" not in r.body for r in posts)
    assert all(r.body.get("anthropic_version") for r in posts)  # Bedrock's body names the API version
    assert metric.judge.info.provider == "bedrock" and not client.is_closed()
    _close(client)


def test_bedrock_spec_without_region_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(ConfigError, match="AWS_REGION"):
        make_judge("bedrock:anthropic.claude-haiku-4-5-20251001-v1:0")
    with pytest.raises(ConfigError, match="name the model"):
        parse_judge_spec("bedrock:")


def test_vertex_client_and_spec_speak_the_raw_predict_path(
    srv: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = anthropic.AsyncAnthropicVertex(
        region="us-east5", project_id="my-proj", access_token=SECRET, base_url=srv.url
    )
    _check_ok(FaithfulnessMetric(llm=client, model="claude-haiku-4-5", cache=False))
    with pytest.raises(ConfigError, match="CLOUD_ML_REGION"):
        make_judge("vertex:claude-haiku-4-5", api_key=SECRET)
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west1")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "other-proj")
    _check_ok(FaithfulnessMetric(llm=f"vertex:claude-haiku-4-5@{srv.url}", api_key=SECRET, cache=False))
    paths = {r.path for r in _posts(srv)}
    assert paths == {
        "/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5:rawPredict",
        "/projects/other-proj/locations/europe-west1/publishers/anthropic/models/claude-haiku-4-5:rawPredict",
    }
    assert all(r.has_api_key for r in _posts(srv))
    _close(client)


def test_llm_evaluators_take_clients_too(srv: FakeLLMServer) -> None:
    client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key=SECRET)
    result = LLMJudgeEvaluator(client, cache=False).evaluate_sync("Paris", "Paris", "Capital of France?")
    assert result.score is not None and 0.0 <= result.score <= 1.0
    assert {r.path for r in _posts(srv)} == {"/v1/chat/completions"} and not client.is_closed()
    _close(client)


# -- ownership of a user's Judge -----------------------------------------------------------------------


class CountingJudge:
    """A user's judge wrapping the offline one; once closed it refuses work, as a real client does."""

    def __init__(self) -> None:
        self.inner = OfflineJudge()
        self.info = self.inner.info
        self.calls = 0
        self.closed = False

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        if self.closed:
            raise RuntimeError("client has been closed")
        self.calls += 1
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        self.closed = True


def test_a_users_judge_survives_three_runs_and_a_pipeline() -> None:
    judge = CountingJudge()
    assert isinstance(judge, Judge)
    metric = FaithfulnessMetric(llm=judge, cache=False)
    scores = [metric.evaluate_sync(Q, A, C).score for _ in range(3)]
    assert scores[0] is not None and scores == [scores[0]] * 3
    results = EvaluationPipeline(metrics=[FaithfulnessMetric(llm=judge, cache=False)]).run(
        [{"question": Q, "answer": A, "contexts": C}] * 2
    )
    assert all(r.ok for r in results)
    assert not judge.closed and judge.calls >= 3


def test_a_judge_ragmetrics_built_is_closed_after_each_run(srv: FakeLLMServer) -> None:
    metric = FaithfulnessMetric(llm=f"openai:gpt-4o-mini@{srv.openai_base_url}", cache=False)
    for _ in range(2):
        _check_ok(metric)
        assert metric.judge.owns_inner and not metric.judge.inner._clients


# -- the offline default warns ---------------------------------------------------------------------------


def test_the_offline_default_warns_once_naming_what_to_set() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            FaithfulnessMetric(cache=False).score_sync(Q, A, C)
    offline = [w for w in caught if issubclass(w.category, OfflineJudgeWarning)]
    assert len(offline) == 1
    text = str(offline[0].message)
    assert "OPENAI_API_KEY" in text and "RAGMETRICS_JUDGE" in text and "llm='offline'" in text


def test_naming_the_offline_judge_or_a_provider_does_not_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FaithfulnessMetric(llm="offline", cache=False).score_sync(Q, A, C)
        monkeypatch.setenv("RAGMETRICS_JUDGE", "offline")
        FaithfulnessMetric(cache=False).score_sync(Q, A, C)
        resolve_judge(OfflineJudge())


def test_the_cli_says_what_to_set_only_when_nothing_was_configured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmetrics.cli.app import main

    assert main(["eval", "--example", "--limit", "2", "--out", str(tmp_path / "a.jsonl")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "no judge configured" in first and "RAGMETRICS_JUDGE" in first and "--judge" in first
    assert (
        main(["eval", "--example", "--limit", "2", "--judge", "offline", "--out", str(tmp_path / "b.jsonl")])
        == 0
    )
    first = capsys.readouterr().out.splitlines()[0]
    assert "offline heuristic judge" in first and "no judge configured" not in first
