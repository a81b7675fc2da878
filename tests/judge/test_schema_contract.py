"""The contract lives in the per-request response schema the server receives (issue 11).

Real openai/anthropic SDKs over loopback HTTP to the fake server; the assertions read the request
bodies the server recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ragmetrics import FaithfulnessMetric, GroundednessMetric
from ragmetrics.errors import ConfigError
from ragmetrics.judge import make_judge
from ragmetrics.metrics.claims.schemas import SHIFT_REPAIR
from ragmetrics.testing import FakeLLMServer, FakeReply

FAST = {"backoff_initial_s": 0.0, "backoff_max_s": 0.0}
Q = "What do we know about Paris?"
A = "Paris is the capital of France. Paris lies on the Seine."
CONTEXTS = ["Paris is the capital of France.", "The Seine flows through Paris.", "Lyon is in France."]
TWO_CLAIMS = {
    "claims": [
        {
            "text": "Paris is the capital of France.",
            "span": "Paris is the capital of France.",
            "relevance": "direct",
        },
        {"text": "Paris lies on the Seine.", "span": "Paris lies on the Seine.", "relevance": "direct"},
    ],
    "addresses_question": "yes",
}


def verdict(claim: int, context: int | None = 0) -> dict[str, Any]:
    # the evidence is the cited context itself, so the reply passes the quote check (no verification re-ask)
    evidence = CONTEXTS[context] if context is not None else ""
    return {"claim": claim, "verdict": "supported", "context": context, "evidence": evidence, "reason": "r"}


def schema_of(body: dict[str, Any]) -> dict[str, Any]:
    """The response schema a request carried, whatever its wire form."""
    if body.get("tools"):
        function = body["tools"][0].get("function", body["tools"][0])
        return function.get("parameters") or function["input_schema"]
    fmt = body["response_format"]
    return fmt["json_schema"]["schema"] if fmt["type"] == "json_schema" else fmt["schema"]


def deref(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with a local ``$ref`` into ``schema``'s ``$defs`` followed."""
    ref = node.get("$ref")
    return schema["$defs"][ref.rsplit("/", 1)[1]] if ref else node


@pytest.fixture(params=["openai", "anthropic"])
def spec(request, fake_llm_server: FakeLLMServer, dummy_keys, monkeypatch) -> str:
    if request.param == "openai":
        return f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm_server.anthropic_base_url)
    return "anthropic:claude-haiku-4-5"


def test_verification_schema_asks_one_verdict_per_claim_in_order_and_an_enum_of_contexts(
    fake_llm_server: FakeLLMServer, spec: str
) -> None:
    fake_llm_server.on("claims.extract", FakeReply(json=TWO_CLAIMS))
    result = FaithfulnessMetric(llm=spec, cache=False).evaluate_sync(question=Q, answer=A, contexts=CONTEXTS)
    assert result.status == "ok" and result.usage.calls == 2
    extract, verify = fake_llm_server.requests

    claims = schema_of(extract.body)["properties"]["claims"]
    assert claims["minItems"] == 1, "the answer states facts: at least one claim is asked for"
    assert deref(schema_of(extract.body), claims["items"])["additionalProperties"] is False

    schema = schema_of(verify.body)
    slots = schema["properties"]["verdicts"]
    assert slots["type"] == "array" and slots["minItems"] == slots["maxItems"] == 2, "one per claim"
    slot = deref(schema, slots["items"])
    context = slot["properties"]["context"]
    assert context["anyOf"] == [{"type": "integer", "enum": [0, 1, 2]}, {"type": "null"}]
    assert slot["required"] == ["verdict", "context", "evidence", "reason"]
    assert slot["additionalProperties"] is False
    if "tools" in verify.body and "function" in verify.body["tools"][0]:  # OpenAI: strict tool
        assert verify.body["tools"][0]["function"]["strict"] is True
        assert "title" not in schema, "the tool's name says it once"
        assert verify.body["tool_choice"]["function"]["name"] == "ClaimVerification"
    assert verify.schema == "ClaimVerification" and extract.schema == "ClaimExtraction"
    if "input_schema" in verify.body["tools"][0]:  # Anthropic: instructor describes the tool by its docstring
        descriptions = [r.body["tools"][0]["description"] for r in (extract, verify)]
        assert descriptions == [
            "The answer split into claims, with an answer-level relevance judgement.",
            "Verdicts for every claim.",
        ], "one line, not 15 tokens of boilerplate a request"


@pytest.mark.parametrize(
    "answer", ["I don't know.", "Hello! How can I help?", "Sorry, I cannot answer that."]
)
def test_an_answer_that_asserts_nothing_gets_no_min_items_and_stays_no_claims(
    fake_llm_server: FakeLLMServer, spec: str, answer: str
) -> None:
    fake_llm_server.on("claims.extract", FakeReply(json={"claims": [], "addresses_question": "no"}))
    result = FaithfulnessMetric(llm=spec, cache=False).evaluate_sync(
        question=Q, answer=answer, contexts=CONTEXTS
    )
    assert (result.status, result.score) == ("no_claims", 1.0)
    (extract,) = fake_llm_server.requests
    assert "minItems" not in schema_of(extract.body)["properties"]["claims"]


def test_json_schema_mode_sends_a_strict_response_format(fake_llm_server: FakeLLMServer, openai_spec) -> None:
    fake_llm_server.on("claims.extract", FakeReply(json=TWO_CLAIMS))
    metric = FaithfulnessMetric(llm=openai_spec, cache=False, mode="json_schema")
    assert metric.evaluate_sync(question=Q, answer=A, contexts=CONTEXTS[:1]).status == "ok"
    verify = fake_llm_server.requests[1]
    fmt = verify.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["name"] == "ClaimVerification" and "tools" not in verify.body
    schema = fmt["json_schema"]["schema"]
    slot = deref(schema, schema["properties"]["verdicts"]["items"])
    assert slot["properties"]["context"]["anyOf"][0]["enum"] == [0]
    assert "title" not in schema, "the json_schema's name says it once"


_LLAMA_CPP_500 = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


@pytest.mark.parametrize(("status", "message"), [(500, _LLAMA_CPP_500), (400, "response_format json_schema")])
async def test_a_server_rejecting_json_schema_gets_the_llama_cpp_form_and_it_is_remembered(
    fake_llm_server: FakeLLMServer, openai_spec: str, status: int, message: str
) -> None:
    tools = fake_llm_server.on(
        lambda r: "tools" in r.body, FakeReply(status=400, message="tools are not supported")
    )
    rejected = fake_llm_server.on(
        lambda r: (r.body.get("response_format") or {}).get("type") == "json_schema",
        FakeReply(status=status, message=message),
    )
    fake_llm_server.on("claims.extract", FakeReply(json=TWO_CLAIMS))
    metric = FaithfulnessMetric(llm=openai_spec, cache=False, **FAST)
    result = await metric.evaluate(question=Q, answer=A, contexts=CONTEXTS)
    assert result.status == "ok", result.message
    assert (tools.hits, rejected.hits) == (1, 1), "each rejected form is tried once"
    forms = [r.body.get("response_format") for r in fake_llm_server.requests[2:]]
    assert [f["type"] for f in forms] == ["json_object", "json_object"]
    assert forms[1]["schema"]["properties"]["verdicts"]["maxItems"] == 2
    assert forms[1]["schema"]["title"] == "ClaimVerification", "a form with no name keeps the title"

    again = await metric.evaluate(question=Q, answer=A, contexts=CONTEXTS[:2])
    await metric.judge.aclose()
    assert again.status == "ok", again.message
    assert (tools.hits, rejected.hits) == (1, 1), "the working form is remembered for the server"
    # 3 extraction attempts (two rejected forms), then one verification per context set; the second
    # evaluation's extraction is the same request as the first's and is answered by the judge's memo
    assert fake_llm_server.calls == {"claims.extract": 3, "claims.verify": 2}


def test_a_forced_mode_does_not_fall_back(fake_llm_server: FakeLLMServer, openai_spec: str) -> None:
    fake_llm_server.on(lambda r: "tools" in r.body, FakeReply(status=400, message="tools are not supported"))
    result = FaithfulnessMetric(llm=openai_spec, cache=False, mode="tools", **FAST).evaluate_sync(
        question=Q, answer=A, contexts=CONTEXTS
    )
    assert result.status == "provider_error" and result.score is None
    assert fake_llm_server.calls.total() == 1


def test_an_unknown_mode_is_a_config_error_naming_the_modes() -> None:
    with pytest.raises(ConfigError, match="json_object_schema"):
        make_judge("openai:gpt-4o-mini@http://127.0.0.1:9/v1", mode="grammar")


@pytest.mark.parametrize("as_slots", [False, True], ids=["list", "keyed"])
def test_claim_ids_1_to_n_are_shifted_without_a_reask_and_the_repair_is_reported(
    fake_llm_server: FakeLLMServer, spec: str, as_slots: bool
) -> None:
    fake_llm_server.on("claims.extract", FakeReply(json=TWO_CLAIMS))
    verdicts: Any = [verdict(1, 0), {**verdict(2, None), "verdict": "not_found"}]
    if as_slots:
        verdicts = {str(v.pop("claim")): v for v in verdicts}
    fake_llm_server.on("claims.verify", FakeReply(json={"verdicts": verdicts}))
    result = GroundednessMetric(llm=spec, cache=False, reasks=0).evaluate_sync(
        question=Q, answer=A, contexts=CONTEXTS
    )
    assert result.status == "ok" and result.usage.calls == 2, result.message
    assert result.details["repairs"] == [SHIFT_REPAIR]
    assert [c.verdict for c in result.claims] == ["supported", "not_found"], "claim 1 became claim 0"
    assert result.claims[0].context_index == 0


def test_ambiguous_claim_ids_are_not_guessed(fake_llm_server: FakeLLMServer, openai_spec: str) -> None:
    fake_llm_server.on("claims.extract", FakeReply(json=TWO_CLAIMS))
    fake_llm_server.on("claims.verify", FakeReply(json={"verdicts": [verdict(0), verdict(2)]}))
    result = FaithfulnessMetric(llm=openai_spec, cache=False, reasks=1).evaluate_sync(
        question=Q, answer=A, contexts=CONTEXTS
    )
    assert result.status == "judge_output_invalid" and result.score is None
    assert "out of range" in (result.message or "") and "repairs" not in result.details
    assert fake_llm_server.calls.total() == 3, "one extraction, a verification and its re-ask"


def test_no_claims_for_an_answer_that_states_facts_is_a_failure_not_a_perfect_score(
    fake_llm_server: FakeLLMServer, spec: str
) -> None:
    empty = fake_llm_server.on("claims.extract", FakeReply(json={"claims": [], "addresses_question": "yes"}))
    result = FaithfulnessMetric(llm=spec, cache=False, reasks=1).evaluate_sync(
        question="When was the Eiffel Tower finished?",
        answer="The Eiffel Tower was finished in 1889.",
        contexts=["The tower was completed in 1889."],
    )
    assert result.status == "judge_output_invalid" and result.score is None and result.passed is None
    assert "states facts" in (result.message or "")
    assert empty.hits == 2 and fake_llm_server.calls.total() == 2, "asked once more, then given up"


def test_no_claims_then_claims_after_the_reask_scores(
    fake_llm_server: FakeLLMServer, openai_spec: str
) -> None:
    fake_llm_server.on("claims.extract", FakeReply(json={"claims": [], "addresses_question": "yes"}), times=1)
    result = FaithfulnessMetric(llm=openai_spec, cache=False, reasks=1).evaluate_sync(
        question="When was the Eiffel Tower finished?",
        answer="The Eiffel Tower was finished in 1889.",
        contexts=["The Eiffel Tower was finished in 1889."],
    )
    assert result.status == "ok" and result.score == pytest.approx(1.0)
    assert result.usage.calls == 3 and fake_llm_server.calls.total() == 3


def test_per_shape_schemas_are_cached_apart_and_survive_instructor_wrapping() -> None:
    from ragmetrics.judge.providers._instructor import prepared
    from ragmetrics.metrics.claims.schemas import ClaimVerification, verification_model

    two, three = verification_model(2, 1), verification_model(3, 4)
    assert verification_model(2, 1) is two, "one class per shape"
    assert two.__name__ == three.__name__ == "ClaimVerification"
    assert two.model_json_schema()["properties"]["verdicts"]["maxItems"] == 2
    assert three.model_json_schema()["properties"]["verdicts"]["maxItems"] == 3
    assert prepared(three).model_json_schema() == three.model_json_schema()
    assert ClaimVerification.model_json_schema()["properties"]["verdicts"]["type"] == "array"
    with pytest.raises(ValueError, match="no verdict for claim"):
        three.model_validate({"verdicts": {"0": {"verdict": "supported", "context": 3}}})
    with pytest.raises(ValueError, match="context index 4"):
        three.model_validate(
            {"verdicts": [{"claim": i, "verdict": "supported", "context": 4} for i in range(3)]}
        )


@pytest.fixture
def llama_cpp(dummy_keys) -> Iterator[FakeLLMServer]:
    # offline answers (real spans and quotes, so verification passes) through llama-cpp-python's wire dialect
    with FakeLLMServer(dialect="llama-cpp") as server:
        yield server


async def test_llama_cpp_dialect_auto_mode_lands_on_json_object_schema(llama_cpp: FakeLLMServer) -> None:
    # llama-cpp-python takes a named tool too; refuse it here to walk the whole chain on its real errors.
    # server="openai": a server not known to be local (detected, it gets json_object_schema at once)
    llama_cpp.on(lambda r: "tools" in r.body, FakeReply(status=400, message="tools are not supported"))
    metric = FaithfulnessMetric(
        llm=f"openai:smollm2@{llama_cpp.openai_base_url}", cache=False, server="openai", **FAST
    )
    first = await metric.evaluate(question=Q, answer=A, contexts=CONTEXTS)
    second = await metric.evaluate(question="Where is Lyon?", answer="Lyon is in France.", contexts=CONTEXTS)
    await metric.judge.aclose()
    assert first.status == second.status == "ok", (first.message, second.message)
    assert [r.mode for r in llama_cpp.requests] == ["tools", "json_schema"] + ["json_object"] * 4
    assert [r.source for r in llama_cpp.requests[:2]] == ["rule", "dialect"]
    assert second.usage.calls == 2, "after detection, 2 calls per sample"


def test_a_forced_form_the_server_refuses_fails_at_once_with_a_hint(llama_cpp: FakeLLMServer) -> None:
    metric = FaithfulnessMetric(
        llm=f"openai:smollm2@{llama_cpp.openai_base_url}", cache=False, mode="json_schema", **FAST
    )
    result = metric.evaluate_sync(question=Q, answer=A, contexts=CONTEXTS)
    assert result.status == "provider_error" and result.score is None
    assert "does not accept mode='json_schema'" in (result.message or "")
    assert "json_object_schema" in (result.message or "")
    assert llama_cpp.calls.total() == 1, "not retried: the same form would be refused again"


def test_llama_cpp_dialect_takes_the_strict_named_tool_first(llama_cpp: FakeLLMServer) -> None:
    # not known to be local (server="openai"): auto mode starts with the tool, which llama-cpp-python takes
    metric = FaithfulnessMetric(
        llm=f"openai:smollm2@{llama_cpp.openai_base_url}", cache=False, server="openai", **FAST
    )
    result = metric.evaluate_sync(question=Q, answer=A, contexts=CONTEXTS)
    assert result.status == "ok" and result.usage.calls == 2, result.message
    assert [r.mode for r in llama_cpp.requests] == ["tools", "tools"]
    assert all(r.body["tools"][0]["function"]["strict"] is True for r in llama_cpp.requests)


def test_claims_go_to_the_judge_one_per_line_and_its_verdicts_in_claim_order_score_them(
    fake_llm_server: FakeLLMServer, openai_spec: str
) -> None:
    broken = {**TWO_CLAIMS["claims"][1], "text": "Paris lies\non the  Seine."}  # a line break in a claim
    fake_llm_server.on(
        "claims.extract", FakeReply(json={**TWO_CLAIMS, "claims": [TWO_CLAIMS["claims"][0], broken]})
    )
    in_order = [{k: v for k, v in verdict(i, i).items() if k != "claim"} for i in (0, 1)]
    in_order[1] = {**in_order[1], "verdict": "not_found", "context": None, "evidence": ""}
    fake_llm_server.on("claims.verify", FakeReply(json={"verdicts": in_order}))
    result = FaithfulnessMetric(llm=openai_spec, cache=False).evaluate_sync(
        question=Q, answer=A, contexts=CONTEXTS
    )
    assert result.status == "ok", result.message
    assert [(c.text, c.verdict) for c in result.claims] == [
        ("Paris is the capital of France.", "supported"),
        ("Paris lies\non the  Seine.", "not_found"),
    ], "the claim keeps its text; the judge's place-ordered verdicts land on their claims"
    verify = fake_llm_server.requests[1]
    assert (
        "<claims>\n0. Paris is the capital of France.\n1. Paris lies on the Seine.\n</claims>"
        in verify.prompt
    )
    assert verify.variables is not None and verify.variables["claims"][1] == "Paris lies on the Seine."
    assert "extract.v2:" in result.signature and "verify.v3:" in result.signature, "new prompt versions"
