"""The input records of ragmetrics/sample.py: conversations, their checks, caps and turns."""

from __future__ import annotations

import json
import time
from importlib import resources

import pytest

from ragmetrics.errors import InvalidInputError
from ragmetrics.sample import (
    MAX_CONVERSATION_CHARS,
    MAX_MESSAGES,
    Conversation,
    Message,
    ToolCall,
    Turn,
)


def _call(call_id: str, name: str, arguments: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


AGENT = [
    {"role": "system", "content": "Answer from the documents."},
    {"role": "user", "content": "How long is the X200 warranty?"},
    {"role": "assistant", "content": None, "tool_calls": [_call("c1", "search_docs", '{"query": "X200"}')]},
    {"role": "tool", "tool_call_id": "c1", "content": "The X200 has a two-year warranty."},
    {"role": "assistant", "content": "Two years.", "contexts": ["ctx"], "reference": "Two years."},
]


def _examples() -> list[Conversation]:
    text = (resources.files("ragmetrics") / "data" / "example_conversations.jsonl").read_text("utf-8")
    return [Conversation.from_fields(row=i, **json.loads(line)) for i, line in enumerate(text.splitlines())]


def _refused(messages: object, **fields: object) -> str:
    with pytest.raises(InvalidInputError) as caught:
        Conversation.from_fields(messages=messages, row=7, **fields)
    return str(caught.value)


def test_an_openai_chat_record_becomes_messages_and_tool_calls():
    conversation = Conversation.from_messages(AGENT, id=12, goal="warranty", meta={"team": "support"})
    assert (
        conversation.id == "12"
        and conversation.goal == "warranty"
        and conversation.meta == {"team": "support"}
    )
    calling = conversation.messages[2]
    assert calling.content == "" and calling.tool_calls == (
        ToolCall(id="c1", name="search_docs", arguments={"query": "X200"}),
    )
    assert conversation.messages[3].tool_call_id == "c1"
    assert (
        conversation.messages[4].contexts == ("ctx",) and conversation.messages[4].reference == "Two years."
    )
    assert conversation.tool_calls() == ((2, calling.tool_calls[0]),)


def test_flat_calls_text_parts_and_message_objects_are_read_too():
    conversation = Conversation.from_messages(
        [
            Message(role="user", content="hi"),
            {"role": "assistant", "tool_calls": [{"id": "a", "name": "f", "arguments": {"x": [1, 2]}}]},
            {
                "role": "tool",
                "tool_call_id": "a",
                "content": [{"type": "text", "text": "one "}, {"type": "text", "text": "two"}],
            },
            {"role": "assistant", "content": "done", "refusal": None},
        ]
    )
    assert conversation.messages[0] == Message(role="user", content="hi")
    assert conversation.messages[1].tool_calls[0].arguments == {"x": [1, 2]}
    assert conversation.messages[2].content == "one two"


def test_blank_arguments_are_the_empty_object():
    conversation = Conversation.from_messages([{"role": "assistant", "tool_calls": [_call("a", "now", "")]}])
    assert conversation.messages[0].tool_calls[0].arguments == {}


def test_a_tool_result_must_answer_an_earlier_call_once():
    assert _refused(
        [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "zz", "content": "r"}]
    ) == (
        "row 7: field 'messages[1].tool_call_id' must be the id of an earlier tool call, got str zz (no "
        "earlier "
        "assistant message made a call with this id; a tool message answers the id of a call an earlier "
        "assistant message made)"
    )
    twice = [AGENT[2], AGENT[3], AGENT[3]]
    assert _refused(twice) == (
        "row 7: field 'messages[2].tool_call_id' must be the id of a call not answered yet, got str c1 "
        "(messages[1] answered it already; merge the two results)"
    )
    same_id = [AGENT[2], AGENT[2]]
    assert _refused(same_id) == (
        "row 7: field 'messages[1].tool_calls[0].id' must be an id no other call has, got str c1 "
        "(messages[0] "
        "made a call with this id; give each its own)"
    )
    assert "messages[0].tool_call_id' must be the id of an earlier tool call (a tool message" in _refused(
        [{"role": "tool", "content": "r"}]
    )


def test_an_assistant_message_must_say_or_call_something():
    assert _refused([{"role": "user", "content": "q"}, {"role": "assistant", "content": "  "}]) == (
        "row 7: field 'messages[1].content' must be non-blank text when the message makes no tool_calls (an "
        "assistant message with neither says nothing; drop it or give its text)"
    )


def test_an_unknown_role_is_named():
    assert _refused([{"role": "bot", "content": "x"}]) == (
        "row 7: field 'messages[0].role' must be one of 'system', 'user', 'assistant' or 'tool', got str bot"
    )


def test_arguments_must_be_a_json_object():
    bad = [{"role": "assistant", "tool_calls": [_call("a", "f", "{oops")]}]
    assert _refused(bad) == (
        "row 7: field 'messages[0].tool_calls[0].function.arguments' must be the text of a JSON object (not "
        "JSON: Expecting property name enclosed in double quotes; give the arguments as a JSON object, "
        "such as "
        '{"query": "..."})'
    )
    listed = [{"role": "assistant", "tool_calls": [_call("a", "f", "[1]")]}]
    assert "must be a JSON object (the JSON holds a list;" in _refused(listed)
    nan = [{"role": "assistant", "tool_calls": [_call("a", "f", '{"x": NaN}')]}]
    assert "not JSON: NaN is not a JSON number" in _refused(nan)
    python_value = [
        {"role": "assistant", "tool_calls": [{"id": "a", "name": "f", "arguments": {"d": {1, 2}}}]}
    ]
    assert _refused(python_value) == (
        "row 7: field 'messages[0].tool_calls[0].arguments' must be a JSON object (a set at ['d'] is not a "
        'JSON value; give the arguments as a JSON object, such as {"query": "..."})'
    )


def test_values_nested_too_deep_and_lone_surrogates_are_refused():
    deep: object = 1
    for _ in range(70):
        deep = [deep]
    args = [{"role": "assistant", "tool_calls": [{"id": "a", "name": "f", "arguments": {"x": deep}}]}]
    assert _refused(args) == (
        "row 7: field 'messages[0].tool_calls[0].arguments' must be nested at most 64 levels deep "
        "(MAX_NESTING) "
        "(it nests deeper, or holds itself; flatten it or leave it out)"
    )
    assert "field 'meta' must be nested at most 64" in _refused(
        [{"role": "user", "content": "q"}], meta={"x": deep}
    )
    assert _refused([{"role": "user", "content": "ok \ud800"}]).startswith(
        "row 7: field 'messages[0].content' must be valid Unicode text (a lone surrogate U+D800 at "
        "character 3"
    )
    assert "field 'messages[0].contexts[1]' must be valid Unicode" in _refused(
        [{"role": "assistant", "content": "a", "contexts": ["ok", "\udfff"]}]
    )


def test_evidence_and_calls_belong_on_the_right_messages():
    assert _refused([{"role": "user", "content": "q", "contexts": ["c"]}]) == (
        "row 7: field 'messages[0].contexts' must be given on assistant messages only (this is a user "
        "message; "
        "move it to the assistant message that answers)"
    )
    assert "field 'messages[0].tool_calls' must be given on assistant messages only" in _refused(
        [{"role": "user", "content": "q", "tool_calls": [_call("a", "f", "{}")]}]
    )
    assert "field 'messages[0].context' must be named 'contexts' (rename the key)" in _refused(
        [{"role": "assistant", "content": "a", "context": ["c"]}]
    )
    both = [{"role": "assistant", "content": "a", "expected_tool_calls": []}]
    assert _refused(both, expected_tool_calls=[]) == (
        "row 7: field 'expected_tool_calls' must be None when messages carry their own expected_tool_calls "
        "(messages[0] has its own; give the expected calls for the whole conversation or per assistant "
        "message, not both)"
    )
    assert _refused([]) == "row 7: field 'messages' must be a non-empty list of messages"
    assert "field 'messages' must be a list of messages, got str" in _refused("hello")


def test_a_conversation_over_the_message_cap_is_refused_at_once():
    messages = [{"role": "user", "content": "hi"}] * (MAX_MESSAGES + 1)
    start = time.perf_counter()
    message = _refused(messages)
    assert time.perf_counter() - start < 0.5  # refused before any message is read
    assert message == (
        "row 7: field 'messages' must be at most 10,000 messages (it holds 10,001; split it into shorter "
        "conversations, or keep only the turns to score)"
    )
    assert len(Conversation.from_messages(messages[:MAX_MESSAGES]).messages) == MAX_MESSAGES


def test_a_conversation_over_the_character_cap_names_where_it_passed_it():
    half = "x" * (MAX_CONVERSATION_CHARS // 2)
    messages = [
        {"role": "user", "content": half},
        {"role": "user", "content": half},
        {"role": "user", "content": "y"},
    ]
    assert _refused(messages) == (
        "row 7: field 'messages' must be at most 50,000,000 characters in all (it holds 50,000,001 or "
        "more; the "
        "limit is passed at messages[2]; split it into shorter conversations, or keep only the turns to "
        "score)"
    )


def test_turns_read_each_answer_with_its_question_history_and_tool_results():
    (turn,) = Conversation.from_messages(AGENT).turns()
    assert isinstance(turn, Turn)
    assert (turn.index, turn.number, turn.question_index) == (4, 0, 1)
    assert turn.answer == "Two years." and turn.contexts == ("ctx",) and turn.reference == "Two years."
    assert turn.question is not None and turn.question.content == "How long is the X200 warranty?"
    assert [m.role for m in turn.history] == ["system", "user", "assistant", "tool"]
    assert [c.name for c in turn.tool_calls] == ["search_docs"]
    result = turn.result("c1")
    assert result is not None and result.content == "The X200 has a two-year warranty."
    assert turn.result("nope") is None


def test_turns_of_the_example_conversations():
    examples = {c.id: c for c in _examples()}
    assert len(examples) == 5
    chat = examples["eiffel-support"].turns()
    assert [t.index for t in chat] == [2, 4, 6] and [t.question_index for t in chat] == [1, 3, 5]
    third = chat[2]
    assert third.question is not None and third.question.content == "and when was it built?"
    assert len(third.history) == 6 and third.contexts and third.tool_calls == ()
    steps = examples["canberra-two-steps"].turns()
    assert [(t.index, len(t.tool_calls), len(t.tool_results)) for t in steps] == [(5, 2, 2), (7, 0, 0)]
    assert steps[0].result("call_2") is not None
    assert steps[0].result("call_2").content == "Canberra has a population of about 460,000 people."
    assert examples["warranty-agent"].expected_tool_calls == (
        ToolCall(name="search_docs", arguments={"query": "X200 warranty"}),
    )
    assert examples["warranty-agent"].goal


def test_the_example_conversations_ship_in_the_package():
    names = {p.name for p in (resources.files("ragmetrics") / "data").iterdir()}
    assert "example_conversations.jsonl" in names
