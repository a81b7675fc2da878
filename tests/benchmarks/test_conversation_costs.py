"""The conversation cost benchmark's own machinery (benchmarks/conversation_costs.py, issue 41).

The conversations every tool is given, the tool calls read from either message shape, what a peer is
given as the goal, a peer skipped with a reason when its environment is missing, and ragmetrics on the
one counting server: its prompts read by the rule (2 calls per turn), a schema filler refused.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ragmetrics.testing import FakeLLMServer
from tests.benchmarks import load_benchmark

cc = load_benchmark("conversation_costs")

ROWS = [
    {
        "id": f"r{i}",
        "question": f"What is item {i}?",
        "answer": f"Item {i} is a red box.",
        "contexts": [f"Item {i} is a red box."],
    }
    for i in range(3)
]


def test_the_conversations_every_tool_is_given() -> None:
    if not cc.DEFAULT_DATA.is_file():
        pytest.skip(f"the labelled data is not here ({cc.DEFAULT_DATA})")
    convs = cc.build_conversations(cc.DEFAULT_DATA)
    assert len(convs) == 15 and sum(cc.assistant_turns(c) for c in convs) == 38
    assert [cc.assistant_turns(c) for c in convs[:10]] == [3] * 10
    assert all(m.get("contexts") for c in convs[:10] for m in c["messages"] if m["role"] == "assistant")
    assert cc.build_conversations(cc.DEFAULT_DATA) == convs  # seeded


def test_tool_calls_and_goals() -> None:
    wire = {
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "s", "arguments": '{"q": 1}'}}]
    }
    flat = {"tool_calls": [{"id": "c1", "name": "s", "arguments": {"q": 1}}]}
    assert cc.tool_calls_of(wire) == cc.tool_calls_of(flat) == [("s", {"q": 1})]
    conv = cc.chain(ROWS, "c")
    assert cc.outcome_of(conv) == "Item 2 is a red box."
    conv["messages"][1]["reference"] = "Item 0 is red."
    assert cc.outcome_of(conv) == "Item 0 is red."
    assert cc.outcome_of({**conv, "goal": "Know the items."}) == "Know the items."


def test_a_missing_peer_environment_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    why = cc.peer_check(tmp_path / "python", "ragas")
    assert why is not None and "no peer environment" in why


def test_ragmetrics_on_the_one_server_reads_its_prompts_and_refuses_the_filler() -> None:
    convs = [cc.chain(ROWS, "c")]
    core = ["faithfulness", "relevancy", "groundedness"]
    with FakeLLMServer(answer="schema") as srv:
        cc.reading_rule(srv)
        read = asyncio.run(cc.ragmetrics_run(convs, srv.openai_base_url, core, reading=True))
        assert read["turns"] == 3 and read["scored"] == 3 and not read["errors"]
        assert cc.server_counts(srv)["calls_by_schema"] == {"claims.extract": 3, "claims.verify": 3}
        srv.reset()
        filled = asyncio.run(cc.ragmetrics_run(convs, srv.openai_base_url, core, reading=False))
        assert filled["scored"] == 0
        assert set(filled["statuses"]) == {f"{m}:judge_output_invalid" for m in core}
