"""One row's schema shape never downgrades structured output for the whole run (issue 22 item 9).

Real openai SDK over loopback HTTP to the fake server, which refuses (HTTP 400, as OpenAI's strict
mode limits do) what the test says; the assertions read the request bodies the server recorded.
"""

from __future__ import annotations

import json
from typing import Any

from ragmetrics import FaithfulnessMetric, Usage
from ragmetrics.metrics.claims.schemas import MAX_ENUM_VALUES, verification_model
from ragmetrics.testing import FakeLLMServer, FakeReply, FakeRequest

FAST = {"backoff_initial_s": 0.0, "backoff_max_s": 0.0}
Q = "What do we know about Paris?"
A = "Paris is the capital of France."
CONTEXTS = ["Paris is the capital of France.", "Lyon is in France."]


def schema_of(body: Any) -> Any:
    """The response schema a request carried, or None (plain JSON mode)."""
    if body.get("tools"):
        return body["tools"][0]["function"]["parameters"]
    fmt = body.get("response_format") or {}
    return fmt.get("json_schema", {}).get("schema") or fmt.get("schema")


def enum_values(node: Any) -> int:
    if isinstance(node, dict):
        return len(node.get("enum", ())) + sum(enum_values(v) for v in node.values())
    if isinstance(node, list):
        return sum(enum_values(v) for v in node)
    return 0


def openai_limits(req: FakeRequest) -> bool:
    """OpenAI's strict mode refuses a schema with too many enum values (here: more than 500)."""
    return enum_values(schema_of(req.body)) > 500


def refusal(req: FakeRequest) -> FakeReply:
    """OpenAI's wording: the refused schema's place in the request, then the limit."""
    where = "function" if "tools" in req.body else "response_format"
    return FakeReply(status=400, message=f"Invalid schema for {where} '{req.schema}': too many enum values")


def test_a_large_shape_gets_integer_ranges_with_the_same_validation() -> None:
    big = verification_model(1, 1200, per_context=2)
    schema = big.model_json_schema()
    assert enum_values(schema) <= 6, "only the verdict words stay enums"
    context = schema["properties"]["verdicts"]["items"]["properties"]["context"]["anyOf"][0]
    assert context == {"type": "integer", "minimum": 0, "maximum": 1199}
    assert enum_values(verification_model(2, 3).model_json_schema()) == 3 + 3, "small shapes keep enums"
    assert MAX_ENUM_VALUES == 500
    slot = {"verdict": "supported", "context": 1200, "evidence": "", "reason": ""}
    try:
        big.model_validate({"verdicts": {"0": slot}})
    except ValueError as exc:
        assert "out of range 0..1199" in str(exc)
    else:  # pragma: no cover - the failure this guards against
        raise AssertionError("an index beyond the range validated")


async def test_a_row_with_1200_contexts_scores_in_tools_mode_and_normal_rows_keep_tools(
    fake_llm_server: FakeLLMServer, openai_spec: str
) -> None:
    refused = fake_llm_server.on(openai_limits, refusal)
    metric = FaithfulnessMetric(llm=openai_spec, cache=False, **FAST)
    many = [f"Fact {i} is about the city number {i}." for i in range(1199)] + CONTEXTS[:1]
    first = await metric.evaluate(question=Q, answer=A, contexts=CONTEXTS)
    big = await metric.evaluate(question=Q, answer=A, contexts=many)
    last = await metric.evaluate(question="Where is Lyon?", answer="Lyon is in France.", contexts=CONTEXTS)
    await metric.judge.aclose()
    assert [r.status for r in (first, big, last)] == ["ok"] * 3, big.message
    assert big.score == 1.0
    assert refused.hits == 0, "the compact schema fits the limit"
    assert {r.mode for r in fake_llm_server.requests} == {"tools"}
    verify = [r for r in fake_llm_server.requests if r.task == "claims.verify"]
    assert max(len(json.dumps(schema_of(r.body))) for r in verify) < 200_000
    assert big.usage.downgraded == 0


async def test_a_schema_refused_for_one_shape_stays_with_that_shape(
    fake_llm_server: FakeLLMServer, openai_spec: str
) -> None:
    # a server that takes tools refuses one request shape (5 contexts) in that form only
    def five_contexts(req: FakeRequest) -> bool:
        schema = schema_of(req.body)
        return (
            "tools" in req.body
            and req.task == "claims.verify"
            and "anyOf" in json.dumps(schema)
            and (
                schema["properties"]["verdicts"]["items"]["properties"]["context"]["anyOf"][0].get("enum")
                == list(range(5))
            )
        )

    refused = fake_llm_server.on(five_contexts, refusal)
    metric = FaithfulnessMetric(llm=openai_spec, cache=False, **FAST)
    rows = [CONTEXTS, CONTEXTS + ["a", "b", "c"], CONTEXTS[::-1], CONTEXTS + ["d", "e", "f"], CONTEXTS[:1]]
    results = [await metric.evaluate(question=Q, answer=A, contexts=c) for c in rows]
    await metric.judge.aclose()
    assert [r.status for r in results] == ["ok"] * 5, [r.message for r in results]
    assert refused.hits == 1, "the shape's own form is remembered"
    verify = [r.mode for r in fake_llm_server.requests if r.task == "claims.verify"]
    assert verify == ["tools", "tools", "json_schema", "tools", "json_schema", "tools"]
    assert [r.usage.downgraded for r in results] == [0, 1, 0, 1, 0]
    total = sum((r.usage for r in results), Usage())
    assert total.downgraded == 2
    assert "2 requests in a weaker structured-output form" in total.describe()


def test_a_request_with_no_claim_asks_no_supports_and_still_refuses_one() -> None:
    # context relevancy verifies even when no claim is left: each context gets its relevance and reason,
    # and no `supports` to fill (a schema filler used to fill one with claim 0 and fail the sample)
    relevance = verification_model(0, 2, per_context=2)
    context = relevance.model_json_schema()["$defs"]["Context"]["properties"]
    assert set(context) == {"relevant", "reason"}
    assert (
        set(verification_model(0, 2, per_context=1).model_json_schema()["$defs"]["Context"]["properties"])
        == set()
    )
    assert (
        "supports"
        in verification_model(1, 2, per_context=1).model_json_schema()["$defs"]["Context"]["properties"]
    )
    reply = relevance.model_validate(
        {"verdicts": {}, "contexts": {"0": {"relevant": True, "reason": "on topic"}}}
    )
    assert [(c.context, c.relevant, c.supports) for c in reply.contexts] == [(0, True, [])]
    try:
        relevance.model_validate({"verdicts": {}, "contexts": {"0": {"relevant": True, "supports": [0]}}})
    except ValueError as exc:
        assert "supports claim(s) [0], out of range" in str(exc)
    else:  # pragma: no cover - the failure this guards against
        raise AssertionError("a supported claim the request does not have validated")


def test_the_verification_schema_does_not_grow_with_its_claims() -> None:
    # one verdict per claim in claim order (minItems = maxItems): 17 prompt tokens a claim used to go
    # to a keyed slot each; now only the count's digits change
    sizes = {n: len(json.dumps(verification_model(n, 3).model_json_schema())) for n in (1, 5, 40)}
    assert sizes[40] - sizes[1] <= 4, sizes
    joint = {
        n: len(json.dumps(verification_model(n, 3, text=True, per_context=2).model_json_schema()))
        for n in (1, 40)
    }
    assert joint[40] - joint[1] <= 6, joint
    verdicts = verification_model(5, 3).model_json_schema()["properties"]["verdicts"]
    assert (verdicts["type"], verdicts["minItems"], verdicts["maxItems"]) == ("array", 5, 5)


def test_verdicts_in_claim_order_are_read_by_place_and_a_second_verdict_for_a_claim_is_refused() -> None:
    model = verification_model(3, 2)
    slot = {"verdict": "not_found", "context": None, "evidence": "", "reason": ""}
    in_order = [{**slot, "verdict": v} for v in ("supported", "contradicted", "not_found")]
    reply = model.model_validate({"verdicts": in_order})
    assert [(v.claim, v.verdict) for v in reply.verdicts] == [
        (0, "supported"),
        (1, "contradicted"),
        (2, "not_found"),
    ]
    keyed = model.model_validate({"verdicts": {str(i): v for i, v in enumerate(in_order)}})
    assert [(v.claim, v.verdict) for v in keyed.verdicts] == [(v.claim, v.verdict) for v in reply.verdicts]
    named = [{**slot, "claim": 2}, {**slot, "claim": 0}, {**slot, "claim": 2}]
    try:
        model.model_validate({"verdicts": named})
    except ValueError as exc:
        assert "more than one verdict for claim(s) [2]" in str(exc) and "no verdict for claim(s) [1]" in str(
            exc
        )
    else:  # pragma: no cover - the failure this guards against
        raise AssertionError("two verdicts for one claim validated")
    try:
        model.model_validate({"verdicts": in_order[:2]})
    except ValueError as exc:
        assert "no verdict for claim(s) [2]" in str(exc)
    else:  # pragma: no cover - the failure this guards against
        raise AssertionError("a missing verdict validated")
