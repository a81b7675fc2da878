"""The tool-call metrics: in-order accuracy and multiset F1, with every mismatch named."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from ragmetrics.errors import InvalidInputError
from ragmetrics.metrics.conversation import ToolCallAccuracy, ToolCallF1, json_equal
from ragmetrics.sample import Conversation


def _call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


def _agent(made: list[dict[str, object]], expected: list[dict[str, object]] | None) -> Conversation:
    calls = [{"id": f"c{k}", **c} for k, c in enumerate(made)]
    messages: list[dict[str, object]] = [{"role": "user", "content": "q"}]
    if calls:
        messages.append({"role": "assistant", "tool_calls": calls})
    messages.append({"role": "assistant", "content": "done"})
    return Conversation.from_fields(messages=messages, expected_tool_calls=expected, id="agent")


def _scores(conversation: Conversation) -> tuple[float | None, float | None]:
    return ToolCallAccuracy().evaluate_sync(conversation).score, ToolCallF1().evaluate_sync(
        conversation
    ).score


def _examples() -> dict[str | None, Conversation]:
    text = (resources.files("ragmetrics") / "data" / "example_conversations.jsonl").read_text("utf-8")
    found = [Conversation.from_fields(row=i, **json.loads(line)) for i, line in enumerate(text.splitlines())]
    return {c.id: c for c in found}


A, B, C, D = _call("a", q=1), _call("b", x="y"), _call("c"), _call("d")


def test_the_expected_calls_made_in_order_score_one():
    result = ToolCallAccuracy(threshold=0.9).evaluate_sync(_agent([A, B], [A, B]))
    assert (result.score, result.passed, result.status) == (1.0, True, "ok")
    assert result.details == {
        "matched": 2,
        "expected": 2,
        "made": 2,
        "missing": [],
        "unexpected": [],
        "wrong_arguments": [],
        "out_of_order": [],
    }
    assert result.usage.calls == 0 and result.signature.startswith("tool_call_accuracy|threshold=0.9|")
    assert ToolCallF1().evaluate_sync(_agent([A, B], [A, B])).score == 1.0


def test_order_counts_in_accuracy_and_not_in_f1():
    conversation = _agent([B, A], [A, B])
    accuracy = ToolCallAccuracy().evaluate_sync(conversation)
    assert accuracy.score == 0.5  # a longest common subsequence of 1, over max(2, 2)
    assert accuracy.details["out_of_order"] == [
        {
            "scope": "conversation",
            "at": "messages[1].tool_calls[1]",
            "expected_at": "expected_tool_calls[0]",
            "name": "a",
        }
    ]
    assert ToolCallF1().evaluate_sync(conversation).score == 1.0


def test_wrong_arguments_name_the_keys_added_removed_and_changed():
    expected = [_call("search_docs", query="return policy", channel="online", page=1)]
    made = [_call("search_docs", query="return policy", channel="store", lang="en")]
    result = ToolCallAccuracy().evaluate_sync(_agent(made, expected))
    assert result.score == 0.0
    assert result.details["wrong_arguments"] == [
        {
            "scope": "conversation",
            "at": "messages[1].tool_calls[0]",
            "expected_at": "expected_tool_calls[0]",
            "name": "search_docs",
            "expected": {"query": "return policy", "channel": "online", "page": 1},
            "actual": {"query": "return policy", "channel": "store", "lang": "en"},
            "added": ["lang"],
            "removed": ["page"],
            "changed": ["channel"],
        }
    ]
    assert result.details["missing"] == [] and result.details["unexpected"] == []
    assert result.reasoning == (
        "0 of 1 expected call(s) made in order (1 made); 1 wrong arguments: search_docs (added lang; removed "
        "page; changed channel)."
    )
    assert ToolCallF1().evaluate_sync(_agent(made, expected)).score == 0.0


def test_missing_and_unexpected_calls():
    conversation = _agent([A, D], [A, B, C])
    accuracy = ToolCallAccuracy().evaluate_sync(conversation)
    assert accuracy.score == pytest.approx(1 / 3)  # 1 matched over max(3, 2)
    assert [x["name"] for x in accuracy.details["missing"]] == ["b", "c"]
    assert accuracy.details["unexpected"] == [
        {"scope": "conversation", "at": "messages[1].tool_calls[1]", "name": "d", "arguments": {}}
    ]
    f1 = ToolCallF1().evaluate_sync(conversation)
    assert (f1.details["precision"], f1.details["recall"]) == (0.5, pytest.approx(1 / 3))
    assert f1.score == pytest.approx(0.4)  # 2 * 1/2 * 1/3 / (1/2 + 1/3)
    assert f1.reasoning.endswith("; 2 missing: b, c; 1 unexpected: d.")


def test_repeated_calls_count_as_a_multiset():
    conversation = _agent([A], [A, A])
    assert _scores(conversation) == (0.5, pytest.approx(2 / 3))  # F1 of precision 1 and recall 1/2


def test_an_empty_expectation_is_one_when_nothing_is_called_and_zero_otherwise():
    assert _scores(_agent([], [])) == (1.0, 1.0)
    assert _scores(_agent([A], [])) == (0.0, 0.0)
    assert _scores(_agent([], [A])) == (0.0, 0.0)


def test_no_expected_calls_is_invalid_input_naming_the_field():
    for metric in (ToolCallAccuracy(), ToolCallF1()):
        result = metric.evaluate_sync(_agent([A], None))
        assert (result.score, result.passed, result.status) == (None, None, "invalid_input")
        assert result.message == (
            "row agent: field 'expected_tool_calls' must be given for the conversation or on an "
            "assistant message "
            "(the tool-call metrics compare the calls made with the calls expected; use [] to expect no call)"
        )
    with pytest.raises(InvalidInputError, match="field 'conversation' must be a Conversation"):
        ToolCallF1().evaluate_sync("not a conversation")


def test_arguments_compare_as_json_values():
    assert json_equal(1, 1.0)  # JSON has one number type
    assert json_equal(
        {"a": 1, "b": {"c": [1, 2.0]}}, {"b": {"c": [1.0, 2]}, "a": 1}
    )  # key order is irrelevant
    assert not json_equal(True, 1) and not json_equal("1", 1) and not json_equal([1, 2], [2, 1])
    assert not json_equal(None, 0) and not json_equal({"a": None}, {})
    assert _scores(_agent([_call("a", q=1.0, r="x")], [_call("a", r="x", q=1)])) == (1.0, 1.0)


def test_per_message_expectations_compare_each_turns_calls():
    conversation = Conversation.from_fields(
        messages=[
            {"role": "user", "content": "first"},
            {"role": "assistant", "tool_calls": [{"id": "1", **A}]},
            {"role": "tool", "tool_call_id": "1", "content": "r"},
            {"role": "assistant", "content": "one", "expected_tool_calls": [A]},
            {"role": "user", "content": "second"},
            {
                "role": "assistant",
                "content": "two",
                "tool_calls": [{"id": "2", **D}],
                "expected_tool_calls": [B],
            },
        ]
    )
    accuracy = ToolCallAccuracy().evaluate_sync(conversation)
    assert accuracy.score == 0.5  # 1 of 1 for messages[3], 0 of 1 for messages[5] (its own call counts)
    assert accuracy.details["missing"] == [
        {
            "scope": "messages[5]",
            "at": "messages[5].expected_tool_calls[0]",
            "name": "b",
            "arguments": {"x": "y"},
        }
    ]
    assert [x["at"] for x in accuracy.details["unexpected"]] == ["messages[5].tool_calls[0]"]


async def test_the_example_conversations_and_the_async_twin():
    examples = _examples()
    assert _scores(examples["warranty-agent"]) == (1.0, 1.0)
    assert _scores(examples["canberra-two-steps"]) == (1.0, 1.0)
    wrong = await ToolCallAccuracy().evaluate(examples["returns-wrong-argument"])
    assert wrong.score == 0.0 and [x["changed"] for x in wrong.details["wrong_arguments"]] == [["channel"]]
    assert (await ToolCallF1().evaluate(examples["eiffel-support"])).status == "invalid_input"
