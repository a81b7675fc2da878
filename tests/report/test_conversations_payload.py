"""The report's data for conversations (issue 41): each conversation's transcript, tool-call metrics, turns.

Scored for real by the offline judge over the bundled example conversations: the first scored turn of
each conversation keeps its messages (once: the other turns do not copy them), the payload gathers
them by conversation in the order of their first turns, each turn's sources name the message its
contexts came from, and a report written from the records file (JSONL) carries the same transcripts.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

import ragmetrics
from ragmetrics.pipeline import Report
from ragmetrics.pipeline.export import read_jsonl, write_jsonl
from ragmetrics.report._conversations import source_of
from ragmetrics.report._payload import PAYLOAD_VERSION, build_payload, metric_names

EXAMPLE = Path(str(resources.files("ragmetrics") / "data" / "example_conversations.jsonl"))
CONVERSATIONS = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def records():
    return list(ragmetrics.evaluate_sync(str(EXAMPLE), llm="offline", progress=False))


def _payload(records) -> dict:
    report = Report.from_records(records)
    return build_payload(report, metric_names(report))


def test_the_messages_are_kept_once_per_conversation_on_its_first_turn(records):
    kept = [r.id for r in records if "messages" in r.sample.meta]
    assert kept == [f"{c['id']}#turn0" for c in CONVERSATIONS]
    eiffel = records[0].sample.meta["messages"]
    assert [m["role"] for m in eiffel] == [m["role"] for m in CONVERSATIONS[0]["messages"]]
    assert eiffel[2] == {
        "role": "assistant",
        "content": "The Eiffel Tower is in Paris, France.",
        "contexts": [CONVERSATIONS[0]["messages"][2]["contexts"][0]],
    }
    json.dumps(eiffel)  # plain JSON


def test_the_payload_gathers_each_conversation_with_its_transcript_and_turns(records):
    data = _payload(records)
    assert data["v"] == PAYLOAD_VERSION == 2
    s = data["strings"]
    convs = data["conversations"]
    assert [c[0] for c in convs] == [c["id"] for c in CONVERSATIONS]
    for conv, given in zip(convs, CONVERSATIONS, strict=True):
        assert [m[0] for m in conv[1]] == [m["role"] for m in given["messages"]]
        assert [s[m[1]] if m[1] >= 0 else "" for m in conv[1]] == [
            m.get("content") or "" for m in given["messages"]
        ]
        for pos, *_ in conv[3]:  # each turn's row is one of this conversation's records
            assert data["rows"][pos][1].startswith(given["id"] + "#turn")
    eiffel = convs[0]
    assert [t[:3] for t in eiffel[3]] == [[0, 0, 2], [1, 1, 4], [2, 2, 6]]
    assert eiffel[3][0][3] == [[2, 0]]  # its one context, from messages[2].contexts[0]
    assert eiffel[3][2][3] == [[6, 0], [1, -1], [3, -1]]  # then the user's earlier messages
    assert eiffel[2] == []  # no calls expected: no tool-call metrics
    assert s[eiffel[1][2][5][0]].startswith("The Eiffel Tower is a wrought-iron lattice tower")

    wrong = convs[2]
    assert wrong[0] == "returns-wrong-argument"
    call = wrong[1][1][2][0]
    assert call[:2] == ["call_1", "search_docs"]
    assert json.loads(call[2]) == {"query": "return policy", "channel": "store"}
    assert wrong[1][2][3] == "call_1"  # the tool message answers it
    tools = {t[0]: t for t in wrong[2]}
    assert set(tools) == {"tool_call_accuracy", "tool_call_f1"}
    name, score, status, reasoning, details = tools["tool_call_accuracy"]
    assert (score, status) == (0.0, "ok") and "wrong arguments" in s[reasoning]
    assert details["wrong_arguments"][0]["at"] == "messages[1].tool_calls[0]"
    assert details["wrong_arguments"][0]["changed"] == ["channel"]


def test_a_report_from_the_records_file_has_the_same_conversations(records, tmp_path):
    path = write_jsonl(records, tmp_path / "records.jsonl")
    again = list(read_jsonl(path))
    assert _payload(again)["conversations"] == _payload(records)["conversations"]


def test_sample_rows_have_no_conversations():
    results = ragmetrics.evaluate_sync(
        [{"question": "Where is Paris?", "answer": "In France.", "contexts": ["Paris is in France."]}],
        llm="offline",
        progress=False,
    )
    assert _payload(list(results))["conversations"] == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("messages[3]", [3, -1]),
        ("messages[2].contexts[0]", [2, 0]),
        ("messages[2].contexts", [-1, -1]),
        ("goal", [-1, -1]),
        (None, [-1, -1]),
    ],
)
def test_a_source_is_read_as_message_and_context(source, expected):
    assert source_of(source) == expected


def test_the_kept_messages_never_reach_the_judge(fake_llm_server, dummy_keys):
    tail = "QZX-TAIL thanks, that settles it."  # after the last turn: no turn's question nor history
    chat = {
        "id": "tail",
        "messages": [
            {"role": "user", "content": "Where is the Louvre?"},
            {
                "role": "assistant",
                "content": "The Louvre is in Paris.",
                "contexts": ["The Louvre is in Paris."],
            },
            {"role": "user", "content": tail},
        ],
    }
    spec = f"openai:fake-model@{fake_llm_server.openai_base_url}"
    (record,) = ragmetrics.evaluate_sync([chat], ["faithfulness", "relevancy"], llm=spec, progress=False)
    assert record.sample.meta["messages"][2]["content"] == tail
    sent = [json.dumps(r.body) for r in fake_llm_server.requests]
    assert sent and any("The Louvre is in Paris." in body for body in sent)
    assert not any("QZX-TAIL" in body for body in sent)


def test_a_refused_conversation_is_listed_with_its_record():
    bad = {  # a tool message answering no call: the conversation cannot be read
        "id": "bad",
        "messages": [
            {"role": "user", "content": "How long is the warranty?"},
            {"role": "tool", "tool_call_id": "call_9", "content": "Two years."},
            {"role": "assistant", "content": "Two years."},
        ],
    }
    records = list(ragmetrics.evaluate_sync([CONVERSATIONS[0], bad], llm="offline", progress=False))
    data = _payload(records)
    eiffel, refused = data["conversations"]
    assert eiffel[0] == "eiffel-support" and len(eiffel[3]) == 3 and eiffel[4] == -1
    assert refused[0] == "bad" and refused[1:4] == [None, [], []] and refused[4] == 3
    assert data["rows"][3][11][0][1] == "invalid_input"  # its error, shown by the transcript view
