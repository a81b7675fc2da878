"""``ragmetrics eval`` on conversations: ``--example-conversations`` offline, a chat JSONL with no flag.

Each assistant turn is a record; the terminal shows a table per conversation after the per-metric one,
``--json`` has a ``conversations`` block with each turn's record id and scores and the tool-call scores.
"""

from __future__ import annotations

import json

import pytest

from ragmetrics.cli.app import main

EXIT_OK, EXIT_USAGE = 0, 2
IDS = [
    "eiffel-support",
    "warranty-agent",
    "returns-wrong-argument",
    "canberra-two-steps",
    "library-hours-unsupported",
]


def test_example_conversations_run_offline_with_a_table_per_conversation(capsys, tmp_path):
    report = tmp_path / "r.html"
    assert (
        main(["eval", "--example-conversations", "--report", str(report), "--out", str(tmp_path / "o.jsonl")])
        == 0
    )
    out = capsys.readouterr().out
    assert "offline heuristic judge" in out.splitlines()[0]
    assert "Conversations (5; per metric, the mean over the turns):" in out
    table = out.split("Conversations (5", 1)[1]
    header = table.splitlines()[1].split()
    assert header == [
        "conversation",
        "turns",
        "faithfulness",
        "relevancy",
        "groundedness",
        "tool_call_accuracy",
        "tool_call_f1",
    ]
    rows = {line.split()[0]: line.split() for line in table.splitlines()[3:8]}
    assert list(rows) == IDS
    assert rows["eiffel-support"][1] == "3/3" and rows["eiffel-support"][-2:] == ["-", "-"]
    assert rows["returns-wrong-argument"][-2:] == ["0.000", "0.000"]
    assert "returns-wrong-argument tool_call_accuracy: 0 of 1 expected call(s) made in order" in out
    assert "8 samples, 0 LLM calls" in out
    assert 'messages[1].contexts[0]: "The city library opens at 9 am' in out  # the quote names its message
    assert report.stat().st_size > 0
    records = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records][:3] == [
        "eiffel-support#turn0",
        "eiffel-support#turn1",
        "eiffel-support#turn2",
    ]
    assert records[0]["sample"]["meta"]["conversation_id"] == "eiffel-support"


def test_json_has_the_turn_records_of_each_conversation(capsys):
    assert main(["eval", "--example-conversations", "--judge", "offline", "--json"]) == EXIT_OK
    summary = json.loads(capsys.readouterr().out)
    assert summary["run"]["samples"] == 8
    conversations = summary["conversations"]
    assert [c["id"] for c in conversations] == IDS
    eiffel = conversations[0]
    assert [t["id"] for t in eiffel["turns"]] == [f"eiffel-support#turn{n}" for n in range(3)]
    assert set(eiffel["turns"][0]["scores"]) == {"faithfulness", "relevancy", "groundedness"}
    assert eiffel["turns"][2]["message"] == 6 and eiffel["tool_call_accuracy"] is None
    wrong = conversations[2]
    assert wrong["tool_call_accuracy"] == 0.0 and "changed channel" in wrong["tool_calls"]["tool_call_f1"]


def test_a_chat_jsonl_needs_no_flag_and_a_bad_chat_names_its_message(capsys, tmp_path):
    data = tmp_path / "chats.jsonl"
    good = {
        "id": "good",
        "messages": [
            {"role": "user", "content": "Where is the Louvre?"},
            {
                "role": "assistant",
                "content": "The Louvre is in Paris.",
                "contexts": ["The Louvre is in Paris."],
            },
        ],
    }
    bad = {
        "id": "bad",
        "messages": [
            {"role": "user", "content": "How long is the warranty?"},
            {"role": "tool", "tool_call_id": "call_9", "content": "Two years."},
            {"role": "assistant", "content": "Two years."},
        ],
    }
    data.write_text("\n".join(json.dumps(r) for r in (good, bad)) + "\n", encoding="utf-8")
    code = main(["eval", str(data), "--judge", "offline", "--json", "--max-unscored", "100%"])
    assert code == EXIT_OK
    summary = json.loads(capsys.readouterr().out)
    viewed = {c["id"]: c for c in summary["conversations"]}
    assert [t["status"] for t in viewed["good"]["turns"]] == ["ok"]
    assert (
        viewed["bad"]["status"] == "invalid_input" and "messages[1].tool_call_id" in viewed["bad"]["message"]
    )
    assert summary["aggregates"]["faithfulness"]["statuses"] == {"invalid_input": 1, "ok": 1}


def test_the_turn_options_are_flags_and_are_checked(capsys):
    args = ["eval", "--example-conversations", "--judge", "offline", "--json"]
    assert main([*args, "--retrieval-tools", "other_tool", "--history-budget-tokens", "0"]) == EXIT_OK
    narrowed = json.loads(capsys.readouterr().out)
    assert narrowed["run"]["samples"] == 8
    with pytest.raises(SystemExit) as caught:
        main([*args, "--history-budget-tokens", "-1"])
    assert caught.value.code == EXIT_USAGE
    capsys.readouterr()
    assert main(["eval", "--example", "--example-conversations"]) == EXIT_USAGE
    assert "not more than one" in capsys.readouterr().err


def test_the_help_states_the_default_history_budget(capsys):
    from ragmetrics.metrics.conversation.turns import DEFAULT_HISTORY_BUDGET_TOKENS

    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert f"(default {DEFAULT_HISTORY_BUDGET_TOKENS})" in " ".join(capsys.readouterr().out.split())


def test_estimate_counts_the_turns(capsys):
    assert main(["estimate", "--example-conversations", "--judge", "offline", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["samples"] == 8


def test_through_the_fake_server_two_calls_a_turn_and_none_on_a_rerun(capsys, fake_llm_server, dummy_keys):
    spec = f"openai:fake-model@{fake_llm_server.openai_base_url}"
    args = ["eval", "--example-conversations", "--judge", spec, "--json"]
    assert main(args) == EXIT_OK
    summary = json.loads(capsys.readouterr().out)
    canaries = summary["canaries"][0]["usage"]["calls"]
    # 7 turns with claims at 2 calls, 1 with none ("You're welcome!") at 1, the canaries; the tool-call
    # metrics call nothing
    assert fake_llm_server.calls.total() == 7 * 2 + 1 + canaries == summary["run"]["usage"]["calls"]
    assert summary["conversations"][2]["tool_call_accuracy"] == 0.0
    assert main(args) == EXIT_OK
    capsys.readouterr()
    assert fake_llm_server.calls.total() == 7 * 2 + 1 + canaries  # the disk cache answered the re-run
