"""``to_pandas(level="turns")`` and ``level="conversations"``: a conversation run as tables.

Scored for real by the offline judge on the bundled example conversations plus a plain sample and a
refused conversation: the turns table has one row per assistant turn (the sample row is left out) with
the user's message each turn answers and the message each context came from; the conversations table
has one row per conversation, each metric's mean equal to the mean of its turns' scores, the tool-call
scores where calls were expected, and the refused conversation with its status and message.
"""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest

import ragmetrics
from ragmetrics.errors import ConfigError

pd = pytest.importorskip("pandas")

EXAMPLE = resources.files("ragmetrics") / "data" / "example_conversations.jsonl"
SAMPLE = {"id": "plain", "question": "Where is Rome?", "answer": "Rome is in Italy.",
          "contexts": ["Rome is the capital of Italy."]}  # fmt: skip
REFUSED = {"id": "refused", "messages": [{"role": "user", "content": "Hi"}, {"role": "bot", "content": "?"}]}


@pytest.fixture(scope="module")
def results():
    rows = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return ragmetrics.evaluate_sync([SAMPLE, *rows, REFUSED], llm="offline", progress=False)


def test_the_turns_table_has_one_row_per_assistant_turn_with_its_user_message_and_sources(results):
    turns = results.to_pandas(level="turns")
    scored = turns[turns["turn"].notna()]
    assert list(scored["id"]) == [r.id for r in results if "#turn" in r.id]
    assert "plain" not in set(turns["id"])  # a sample row is no turn
    third = scored[scored["id"] == "eiffel-support#turn2"].iloc[0]
    assert (third["conversation_id"], third["turn"], third["message_index"]) == ("eiffel-support", 2, 6)
    assert third["user_message"] == "and when was it built?"
    assert third["question"].endswith("and when was it built?") and "Who designed it?" in third["question"]
    assert len(third["context_sources"]) == len(third["contexts"])
    assert third["context_sources"][0] == "messages[6].contexts[0]"
    agent = scored[scored["conversation_id"] == "warranty-agent"].iloc[0]
    assert any(s.startswith("messages[2]") for s in agent["context_sources"])  # the tool result
    record = next(r for r in results if r.id == "eiffel-support#turn2")
    assert third["faithfulness"] == record.scores["faithfulness"]
    assert third["relevancy_status"] == record.status_of("relevancy")
    refused = turns[turns["conversation_id"] == "refused"]
    assert len(refused) == 1 and refused.iloc[0]["turn"] is pd.NA and str(turns["turn"].dtype) == "Int64"
    assert "messages[1].role" in refused.iloc[0]["errors"]


def test_the_conversations_table_has_each_metrics_mean_over_its_turns(results):
    table = results.to_pandas(level="conversations")
    assert list(table["conversation_id"]) == [
        "eiffel-support", "warranty-agent", "returns-wrong-argument", "canberra-two-steps",
        "library-hours-unsupported", "refused",
    ]  # fmt: skip
    by_id = table.set_index("conversation_id")
    turns = results.to_pandas(level="turns")
    for name in ("eiffel-support", "canberra-two-steps"):
        mine = turns[turns["conversation_id"] == name]
        assert by_id.loc[name, "turns"] == len(mine) == by_id.loc[name, "turns_scored"]
        for metric in ("faithfulness", "relevancy", "groundedness"):
            assert math.isclose(by_id.loc[name, metric], mine[metric].mean())
    assert by_id.loc["returns-wrong-argument", "tool_call_accuracy"] == 0.0
    assert by_id.loc["warranty-agent", "tool_call_f1"] == 1.0
    assert by_id.loc["refused", "status"] == "invalid_input" and by_id.loc["refused", "turns"] == 0
    assert "messages[1].role" in by_id.loc["refused", "message"]


def test_the_tables_are_the_same_from_the_summary_and_as_json_lines(results, tmp_path):
    assert results.summary().to_pandas(level="conversations").equals(results.to_pandas(level="conversations"))
    path = results.to_jsonl(tmp_path / "turns.jsonl", level="turns")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [row["id"] for row in lines] == list(results.to_pandas(level="turns")["id"])


def test_an_unknown_level_names_the_levels(results):
    with pytest.raises(ConfigError, match="'turns'.*'conversations'"):
        results.to_pandas(level="messages")
