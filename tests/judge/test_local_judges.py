"""Local judges: the server kind is detected or named, the schema is sent as that server enforces it,
replies are bounded, and nothing is ever sent twice unchanged after a deterministic failure.

Real openai SDK over real HTTP to the loopback fake server: ``dialect="llama-cpp"`` answers as
llama-cpp-python 0.3.x does (its ``GET /v1/models`` included), and ``FakeReply(ramble=True)`` answers
as a small model that rambles to the request's ``max_tokens``, the same reply every time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragmetrics import EvaluationPipeline, FaithfulnessMetric, GroundednessMetric, RelevancyMetric, Sample
from ragmetrics.judge.local import (
    LOCAL_IN_FLIGHT,
    MAX_LIST_ITEMS,
    MAX_STRING_CHARS,
    bounded_schema,
    kind_from_models,
    reply_budget,
)
from ragmetrics.judge.providers.openai_compat import OpenAIJudge
from ragmetrics.metrics.claims.schemas import verification_model
from ragmetrics.testing import FakeLLMServer, FakeReply

SAMPLE = Sample(
    question="When was the Eiffel Tower finished?",
    answer="The Eiffel Tower was finished in 1889. It stands in Paris.",
    contexts=["The Eiffel Tower in Paris was completed in 1889."],
)

MODELS_BODIES = {  # what each server answers to GET /v1/models (shapes from their docs and sources)
    "llama-cpp-python": {
        "object": "list",
        "data": [{"id": "m", "object": "model", "owned_by": "me", "permissions": []}],
    },
    "llama.cpp": {
        "models": [{"name": "m", "model": "m"}],
        "object": "list",
        "data": [
            {
                "id": "m",
                "object": "model",
                "created": 1,
                "owned_by": "llamacpp",
                "meta": {"n_ctx_train": 8192},
            }
        ],
    },
    "ollama": {
        "object": "list",
        "data": [{"id": "qwen3:0.6b", "object": "model", "created": 1, "owned_by": "library"}],
    },
    "vllm": {
        "object": "list",
        "data": [
            {
                "id": "m",
                "object": "model",
                "created": 1,
                "owned_by": "vllm",
                "root": "m",
                "max_model_len": 4096,
            }
        ],
    },
    "lmstudio": {
        "object": "list",
        "data": [{"id": "m", "object": "model", "owned_by": "organization_owner"}],
    },
    "openai": {
        "object": "list",
        "data": [{"id": "gpt-4o-mini", "object": "model", "created": 1, "owned_by": "system"}],
    },
}


def chats(srv: FakeLLMServer) -> list[dict[str, Any]]:
    return [r.body for r in srv.requests if r.endpoint == "chat"]


def no_identical(bodies: list[dict[str, Any]]) -> None:
    seen = [json.dumps(b, sort_keys=True) for b in bodies]
    assert len(seen) == len(set(seen)), "a request was sent twice unchanged"


async def judged(spec: str, **options: Any) -> tuple[Any, Any]:
    """The faithfulness result of SAMPLE through the judge ``spec``, and that judge (its clients closed)."""
    metric = FaithfulnessMetric(llm=spec, cache=False, **options)
    try:
        return await metric.evaluate_sample(SAMPLE), metric.judge.inner
    finally:
        await metric.judge.aclose()


@pytest.mark.parametrize("kind", sorted(MODELS_BODIES))
def test_each_servers_models_listing_names_its_kind(kind: str) -> None:
    assert kind_from_models(MODELS_BODIES[kind]) == kind
    assert kind_from_models({"error": "nope"}) == kind_from_models([1, 2]) == "openai"


async def test_llama_cpp_python_is_detected_and_gets_a_bounded_schema_it_enforces() -> None:
    with FakeLLMServer(dialect="llama-cpp") as srv:
        result, judge = await judged(f"openai:smollm2@{srv.openai_base_url}")
        assert result.status == "ok" and result.score is not None
        assert result.usage.calls == 2  # the GET /models that told the kind is not a judge call
        assert [r.endpoint for r in srv.requests] == ["chat", "chat"]
        assert [(p.method, p.path) for p in srv.probes] == [("GET", "/v1/models")]
        for body in chats(srv):
            (tool,) = body["tools"]  # a named tool: llama-cpp-python builds its grammar from it
            assert body["tool_choice"]["function"]["name"] == tool["function"]["name"]
            assert body["max_tokens"] < 2048  # sized from the request, not the 2,048 default
            assert '"maxLength"' in json.dumps(tool["function"]["parameters"])
        extraction = chats(srv)[0]["tools"][0]["function"]["parameters"]
        assert extraction["properties"]["claims"]["maxItems"] <= MAX_LIST_ITEMS
        assert result.usage.downgraded == 0  # the server's own form is no downgrade
        assert isinstance(judge, OpenAIJudge) and judge.server_kind == "llama-cpp-python"
        assert judge.limiter.limit == LOCAL_IN_FLIGHT  # it decodes one at a time: the rest would queue


@pytest.mark.parametrize("kind", ["llama.cpp", "ollama", "vllm", "lmstudio"])
async def test_other_local_servers_are_read_from_their_models_listing(kind: str) -> None:
    with FakeLLMServer() as srv:
        srv.on(lambda r: r.endpoint == "models", FakeReply(body=json.dumps(MODELS_BODIES[kind])))
        result, _ = await judged(f"openai:m@{srv.openai_base_url}")
        assert result.status == "ok"
        for body in chats(srv):
            assert body["response_format"]["type"] == "json_schema" and "tools" not in body
            assert '"maxLength"' in json.dumps(body["response_format"]["json_schema"]["schema"])
            assert body["max_tokens"] < 2048


async def test_a_hosted_api_keeps_tools_and_the_default_limit() -> None:
    with FakeLLMServer() as srv:  # answers GET /models as OpenAI does
        result, _ = await judged(f"openai:m@{srv.openai_base_url}")
        assert result.status == "ok"
        for body in chats(srv):
            assert "tools" in body and body["max_tokens"] == 2048
            assert "maxLength" not in json.dumps(body["tools"])


async def test_a_named_kind_is_not_asked_for() -> None:
    with FakeLLMServer() as srv:
        result, _ = await judged(f"openai:m@{srv.openai_base_url}", server="ollama")
        assert result.status == "ok"
        assert [r.endpoint for r in srv.requests] == ["chat", "chat"] and not srv.probes
        assert all(b["response_format"]["type"] == "json_schema" for b in chats(srv))


@pytest.mark.parametrize("mode", ["auto", "tools"])
async def test_a_rambling_reply_is_never_sent_again_unchanged(mode: str) -> None:
    """The issue's case: at temperature 0 the same request gets the same 2,000-token reply."""
    with FakeLLMServer(dialect="llama-cpp") as srv:
        srv.on(lambda r: r.endpoint == "chat", FakeReply(ramble=True))
        result, _ = await judged(f"openai:smollm2@{srv.openai_base_url}", mode=mode)
        bodies = chats(srv)
        no_identical(bodies)
        assert len(bodies) == 2  # the request's bound, then once with twice the room
        first, second = (b["max_tokens"] for b in bodies)
        assert second == 2 * first
        assert result.status == "truncated" and result.score is None
        assert "rambles" in (result.message or "") and "not sent a third time" in (result.message or "")
        assert result.usage.calls == 2


async def test_an_invalid_reply_is_re_asked_with_what_was_wrong_never_resent() -> None:
    with FakeLLMServer(dialect="llama-cpp") as srv:
        srv.on(lambda r: r.endpoint == "chat", FakeReply(invalid=True))
        result, _ = await judged(f"openai:smollm2@{srv.openai_base_url}", reasks=2)
        bodies = chats(srv)
        no_identical(bodies)
        assert len(bodies) == 3 and result.status == "judge_output_invalid"
        assert "claims" in json.dumps(bodies[-1]["messages"][-1])  # the re-ask names the field


async def test_a_local_timeout_is_not_sent_again() -> None:
    with FakeLLMServer(dialect="llama-cpp") as srv:
        srv.on(lambda r: r.endpoint == "chat", FakeReply(delay=3))
        spec = f"openai:smollm2@{srv.openai_base_url}"
        result, _ = await judged(spec, timeout_s=0.5, max_attempts=4)
        assert len(chats(srv)) == 1
        assert result.status == "timeout" and "not re-sent" in (result.message or "")


async def test_a_reply_bound_grows_with_the_inputs_and_bounds_hold() -> None:
    schema = {
        "type": "object",
        "properties": {
            "claims": {
                "type": "array",
                "items": {"type": "object", "properties": {"text": {"type": "string"}}},
            },
            "ids": {"type": "array", "items": {"type": "integer", "enum": [0, 1, 2]}},
            "verdict": {"type": "string", "enum": ["a", "b"]},
        },
    }
    bounded = bounded_schema(schema, longest=10_000, words=10_000)
    assert bounded["properties"]["claims"]["items"]["properties"]["text"]["maxLength"] == MAX_STRING_CHARS
    assert bounded["properties"]["claims"]["maxItems"] == MAX_LIST_ITEMS
    assert bounded["properties"]["ids"]["maxItems"] == 3
    assert "maxLength" not in bounded["properties"]["verdict"]
    assert "maxLength" not in json.dumps(schema)  # the input is not modified
    assert reply_budget(schema, 100) < reply_budget(schema, 4_000)

    # claim indices as a range (the joint verification's ``supports``) bound a list like an enum does,
    # and a reply that must hold one verdict per claim is budgeted for every one of them
    joint = verification_model(12, 2, text=True, per_context=1).model_json_schema()
    ranged = bounded_schema(joint, longest=100, words=10_000)
    assert ranged["$defs"]["Context"]["properties"]["supports"]["maxItems"] == 12
    assert ranged["properties"]["verdicts"]["maxItems"] == 12
    assert reply_budget(verification_model(12, 2).model_json_schema(), 100) > reply_budget(
        verification_model(8, 2).model_json_schema(), 100
    )


def _pipeline_metrics(spec: str) -> list[Any]:
    return [M(llm=spec, cache=False) for M in (FaithfulnessMetric, RelevancyMetric, GroundednessMetric)]


def test_a_local_judge_failing_its_canaries_is_named_and_the_dataset_is_not_sent() -> None:
    rows = [
        {"id": f"r{i}", "question": SAMPLE.question, "answer": SAMPLE.answer, "contexts": SAMPLE.contexts}
        for i in range(5)
    ]
    with FakeLLMServer(dialect="llama-cpp") as srv:
        srv.on(lambda r: r.endpoint == "chat", FakeReply(ramble=True))
        metrics = _pipeline_metrics(f"openai:smollm2@{srv.openai_base_url}")
        results = EvaluationPipeline(metrics, progress=False).run(rows)
        assert len(chats(srv)) == 2  # the canary's extraction, once with room: nothing of the dataset
        assert len(srv.probes) == 1  # one GET /models for the run's one shared judge
        canary = results.summary().canaries[0]
        assert canary.failed and canary.status == "truncated" and "rambles" in canary.observed()
        for record in results:
            for result in record.results.values():
                assert result.status == "judge_untrusted" and result.score is None
                assert result.usage.calls == 0
                assert "did not pass the run's canaries" in (result.message or "")
                assert "rambles" in (result.message or "")
        # the halt was this run's: the same judges with the gate off send the dataset
        again = EvaluationPipeline(metrics, progress=False, judge_health_min=None).run(rows[:1])
        assert all(r.status == "truncated" for r in list(again)[0].results.values())
        assert len(chats(srv)) > 2


def test_a_hosted_judge_failing_its_canaries_still_scores_marked() -> None:
    """Only a local judge is halted: a hosted one's results are set aside as before, after the run."""
    rows = [{"id": "r0", "question": SAMPLE.question, "answer": SAMPLE.answer, "contexts": SAMPLE.contexts}]
    with FakeLLMServer(answer="schema") as srv:
        results = EvaluationPipeline(
            _pipeline_metrics(f"openai:m@{srv.openai_base_url}"), progress=False
        ).run(rows)
        assert results.summary().canaries[0].failed
        assert len(chats(srv)) > 2  # the dataset was sent


CLI = [sys.executable, "-m", "ragmetrics.cli"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGMETRICS_JUDGE"))}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=120)


def test_cli_sample_timeout_and_judge_server(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    rows = [
        {
            "id": f"r{i}",
            "question": f"When was tower {i} finished?",
            "answer": f"Tower {i} was finished in 1889.",
            "contexts": [f"Tower {i} in Paris was completed in 1889."],
        }
        for i in range(3)
    ]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out.jsonl"
    # r1 and r2 are answered far past their samples' time budget; 8 s leaves r0 room for the SDK imports
    # of its first call on a loaded machine (a 1.5 s budget once ran out on r0 in a rehearsal)
    with FakeLLMServer() as srv:
        srv.on(
            lambda r: r.endpoint == "chat" and ("Tower 1" in r.prompt or "Tower 2" in r.prompt),
            FakeReply(delay=60),
        )
        proc = _cli(
            "eval",
            str(data),
            "--judge",
            f"openai:m@{srv.openai_base_url}",
            "--metrics",
            "faithfulness",
            "--judge-server",
            "vllm",
            "--sample-timeout",
            "8",
            "--no-canaries",
            "--no-cache",
            "--out",
            str(out),
            "--quiet",
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
        assert records["r0"]["results"]["faithfulness"]["status"] == "ok"
        for late in ("r1", "r2"):  # ended at the bound, its call counted; the run went on
            (error,) = records[late]["errors"]
            assert error["status"] == "timeout" and "timeout_per_sample_s=8 s" in error["message"]
            assert records[late]["usage"]["calls"] == 1
        assert proc.returncode != 0  # unscored samples fail the run
        assert all(b["response_format"]["type"] == "json_schema" for b in chats(srv))  # --judge-server
        assert not srv.probes
