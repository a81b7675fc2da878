"""Conversation records read from the OpenAI chat format, RAGAS multi-turn samples and DeepEval test cases."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from ragmetrics.errors import InvalidInputError
from ragmetrics.pipeline.conversations import (
    conversation_format,
    from_deepeval,
    from_ragas,
    read_conversation,
)
from ragmetrics.pipeline.dataset import Dataset, to_conversation, to_sample
from ragmetrics.sample import Conversation, ToolCall

OPENAI = {
    "id": "chat-1",
    "goal": "know the warranty",
    "messages": [
        {"role": "user", "content": "How long is the X200 warranty?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "search_docs", "arguments": '{"query": "X200 warranty"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc", "content": "Two-year warranty."},
        {"role": "assistant", "content": "It lasts two years.", "refusal": None, "annotations": []},
    ],
    "expected_tool_calls": [{"name": "search_docs", "arguments": {"query": "X200 warranty"}}],
}

# As RAGAS's EvaluationDataset.to_jsonl writes a MultiTurnSample (ragas.messages models dumped).
RAGAS = {
    "user_input": [
        {"content": "What's the weather in New York?", "metadata": None, "type": "human"},
        {
            "content": "Fetching current weather.",
            "metadata": None,
            "type": "ai",
            "tool_calls": [{"name": "weather_check", "args": {"location": "New York"}}],
        },
        {"content": "It is 75°F and partly cloudy.", "metadata": None, "type": "tool"},
        {"content": "Convert to Celsius.", "metadata": None, "type": "human"},
        {
            "content": "Converting to Celsius.",
            "metadata": None,
            "type": "ai",
            "tool_calls": [{"name": "temperature_conversion", "args": {"temperature_fahrenheit": 75}}],
        },
        {"content": "75°F is approximately 23.9°C.", "metadata": None, "type": "tool"},
        {"content": "It is about 23.9°C in New York.", "metadata": None, "type": "ai", "tool_calls": None},
    ],
    "reference": "The user learns the temperature in New York in Celsius.",
    "reference_tool_calls": [
        {"name": "weather_check", "args": {"location": "New York"}},
        {"name": "temperature_conversion", "args": {"temperature_fahrenheit": 75}},
    ],
    "reference_topics": ["weather"],
    "rubrics": None,
}

# A DeepEval ConversationalTestCase (turns of deepeval.test_case.Turn, tools of deepeval.test_case.ToolCall).
DEEPEVAL = {
    "scenario": "A customer asks about a refund for shoes that do not fit.",
    "expected_outcome": "The customer learns the refund policy.",
    "chatbot_role": "a polite shop assistant",
    "user_description": "Alex, a returning customer",
    "turns": [
        {"role": "user", "content": "What if these shoes don't fit?"},
        {
            "role": "assistant",
            "content": "We offer a 30-day full refund at no extra cost.",
            "retrieval_context": ["All customers are eligible for a 30-day full refund at no extra cost."],
            "tools_called": [
                {
                    "name": "policy_search",
                    "description": "Searches the policies",
                    "input_parameters": {"topic": "refund"},
                    "output": {"policy": "30-day full refund"},
                },
                {"name": "log_event", "input_parameters": None, "output": None},
            ],
        },
        {"role": "user", "content": "And for sale items?"},
        {"role": "assistant", "content": "Sale items can be refunded within 14 days."},
    ],
}


def test_each_form_is_recognised_and_a_sample_row_is_none():
    assert conversation_format(OPENAI) == "openai"
    assert conversation_format(RAGAS) == "ragas"
    assert conversation_format(DEEPEVAL) == "deepeval"
    assert conversation_format({"user_input": "a question", "response": "an answer"}) is None
    with pytest.raises(InvalidInputError, match=r"keys found: answer, question"):
        read_conversation({"question": "q", "answer": "a"}, row=3)


def test_an_openai_record_is_read_as_logged():
    conversation = read_conversation(OPENAI, row=0)
    assert conversation.id == "chat-1" and conversation.goal == "know the warranty"
    assert conversation.expected_tool_calls == (
        ToolCall(name="search_docs", arguments={"query": "X200 warranty"}),
    )
    (turn,) = conversation.turns()
    assert turn.answer == "It lasts two years."
    result = turn.result("call_abc")
    assert result is not None and result.content == "Two-year warranty."


def test_a_ragas_multi_turn_sample():
    conversation = read_conversation(RAGAS, row=1)
    roles = [m.role for m in conversation.messages]
    assert roles == ["user", "assistant", "tool", "user", "assistant", "tool", "assistant"]
    assert conversation.messages[1].tool_calls == (
        ToolCall(id="call_1_0", name="weather_check", arguments={"location": "New York"}),
    )
    assert [m.tool_call_id for m in conversation.messages if m.role == "tool"] == ["call_1_0", "call_4_0"]
    assert conversation.goal == "The user learns the temperature in New York in Celsius."
    assert conversation.expected_tool_calls is not None
    assert [c.name for c in conversation.expected_tool_calls] == ["weather_check", "temperature_conversion"]
    assert conversation.meta == {"reference_topics": ["weather"]}
    turns = conversation.turns()
    assert [t.index for t in turns] == [1, 4, 6]  # an ai message with text and calls is a turn too
    last = turns[2]
    assert last.question_index == 3 and [c.name for c in last.tool_calls] == ["temperature_conversion"]


def test_a_ragas_tool_message_needs_a_call_to_answer():
    record = {"user_input": [{"type": "human", "content": "q"}, {"type": "tool", "content": "r"}]}
    with pytest.raises(InvalidInputError) as caught:
        from_ragas(record, row=4)
    assert str(caught.value) == (
        "row 4: field 'user_input[1]' must be a tool message after an ai message's tool_calls (every earlier "
        "call has its result already; drop this message or add the call)"
    )
    bad_args = {
        "user_input": [
            {"type": "human", "content": "q"},
            {"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": [1]}]},
        ]
    }
    with pytest.raises(InvalidInputError, match=r"messages\[1\] was read from user_input\[1\]\)$"):
        from_ragas(bad_args, row=4)
    with pytest.raises(InvalidInputError, match=r"field 'user_input\[0\].type' must be one of 'human', 'ai'"):
        from_ragas({"user_input": [{"type": "system", "content": "x"}]})


def test_a_deepeval_conversational_test_case():
    conversation = read_conversation(DEEPEVAL, row=2)
    assert [m.role for m in conversation.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    calling = conversation.messages[1]
    assert calling.tool_calls == (
        ToolCall(id="call_1_0", name="policy_search", arguments={"topic": "refund"}),
        ToolCall(id="call_1_1", name="log_event", arguments={}),
    )
    assert conversation.messages[2].content == '{"policy": "30-day full refund"}'
    assert conversation.goal == (
        "A customer asks about a refund for shoes that do not fit. Expected outcome: The customer learns the "
        "refund policy."
    )
    assert conversation.meta == {
        "chatbot_role": "a polite shop assistant",
        "user_description": "Alex, a returning customer",
    }
    first, second = conversation.turns()
    assert first.contexts == ("All customers are eligible for a 30-day full refund at no extra cost.",)
    assert first.result("call_1_0") is not None and first.result("call_1_1") is None
    assert second.question is not None and second.question.content == "And for sale items?"
    only_outcome = {"turns": DEEPEVAL["turns"], "expected_outcome": "The customer learns the refund policy."}
    assert from_deepeval(only_outcome).goal == "The customer learns the refund policy."


def test_a_deepeval_error_says_which_turn_it_came_from():
    record = {
        "turns": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a", "retrieval_context": "one"},
        ]
    }
    with pytest.raises(InvalidInputError) as caught:
        from_deepeval(record, row=5)
    assert str(caught.value).startswith(
        "row 5: field 'messages[1].contexts' must be a list of strings, got str one"
    )
    assert str(caught.value).endswith("(messages[1] was read from turns[1])")
    with pytest.raises(
        InvalidInputError, match=r"field 'turns\[0\].role' must be one of 'user' or 'assistant'"
    ):
        from_deepeval({"turns": [{"role": "system", "content": "x"}]})


def test_a_dataset_reads_conversation_rows_beside_sample_rows(tmp_path):
    example = resources.files("ragmetrics") / "data" / "example_conversations.jsonl"
    rows = list(Dataset(str(example)))
    assert len(rows) == 5 and all(r.conversation is not None for r in rows)
    assert rows[0].values == {"id": "eiffel-support"}
    first = to_conversation(rows[0])
    assert first.id == "eiffel-support" and len(first.turns()) == 3
    with pytest.raises(InvalidInputError) as caught:
        to_sample(rows[0])
    assert str(caught.value) == (
        "row 0: field 'messages' must be absent from a sample row (this row is a conversation (chat "
        "messages, "
        "RAGAS user_input messages or DeepEval turns); Dataset.sample_rows() reads it as one sample row per "
        "assistant turn)"
    )

    ready = Conversation.from_messages([{"role": "user", "content": "hi"}], id="ready")
    sample_row, ragas_row, ready_row, chat_with_answer = Dataset(
        [{"question": "q", "answer": "a"}, RAGAS, ready, {"messages": [], "answer": "a"}]
    )
    assert sample_row.conversation is None and to_sample(sample_row).answer == "a"
    assert to_conversation(ragas_row).goal == RAGAS["reference"]
    assert to_conversation(ready_row) is ready and ready_row.values == {"id": "ready"}
    assert (
        chat_with_answer.conversation is None
    )  # an answer makes it a sample row, its messages an extra column
    with pytest.raises(InvalidInputError, match=r"^row 0: a sample row, not a conversation"):
        to_conversation(sample_row)


def test_a_bad_conversation_row_names_its_row(tmp_path):
    path = tmp_path / "chats.jsonl"
    path.write_text(
        json.dumps({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}]})
        + "\n",
        encoding="utf-8",
    )
    (row,) = Dataset(str(path))
    with pytest.raises(
        InvalidInputError, match=r"^row 0: field 'messages\[1\].content' must be non-blank text"
    ):
        to_conversation(row)


def test_a_dataframe_of_chats_needs_no_answer_column():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": ["c1"], "messages": [OPENAI["messages"]]})
    (row,) = Dataset(frame)
    assert to_conversation(row).turns()[0].answer == "It lasts two years."
