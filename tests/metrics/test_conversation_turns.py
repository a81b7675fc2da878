"""Claim metrics per assistant turn: evidence from contexts, tools and the user; bounded history; cost."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
from ragmetrics.errors import ConfigError, InvalidInputError
from ragmetrics.metrics.conversation.turn_claims import evaluate_turns
from ragmetrics.metrics.conversation.turns import turn_evidence, turn_sample
from ragmetrics.sample import Conversation, Sample
from ragmetrics.testing import FakeReply
from ragmetrics.text import estimate_tokens


def _examples() -> dict[str | None, Conversation]:
    text = (resources.files("ragmetrics") / "data" / "example_conversations.jsonl").read_text("utf-8")
    found = [Conversation.from_fields(row=i, **json.loads(line)) for i, line in enumerate(text.splitlines())]
    return {c.id: c for c in found}


EXAMPLES = _examples()


def _core(llm: str) -> list[FaithfulnessMetric | RelevancyMetric | GroundednessMetric]:
    return [FaithfulnessMetric(llm=llm), RelevancyMetric(llm=llm), GroundednessMetric(llm=llm)]


async def _close(metrics: list[FaithfulnessMetric | RelevancyMetric | GroundednessMetric]) -> None:
    for metric in metrics:
        await metric.judge.aclose()


def test_evidence_order_and_sources():
    eiffel = EXAMPLES["eiffel-support"]
    last = eiffel.turns()[2]
    mapped = turn_evidence(eiffel, last)
    assert mapped.pairs == (
        ("messages[6].contexts[0]", eiffel.messages[6].contexts[0]),
        ("messages[1]", "Where is the Eiffel Tower?"),
        ("messages[3]", "Who designed it?"),
    )  # the question itself ("and when was it built?", messages[5]) is no evidence for its answer
    assert [e.kind for e in mapped.evidence] == ["context", "user", "user"]
    assert mapped.message_index(0) == 6 and mapped.source(2) == "messages[3]"
    assert mapped.source(None) is None and mapped.source(3) is None
    assert mapped.history.messages_cut == 0 and mapped.history.messages_kept == 4
    # the question is read after the history: the transcript of the four earlier messages, then it
    assert mapped.question.endswith("\n\nThe question now:\nand when was it built?")
    assert "user: Who designed it?\nassistant: It was designed by" in mapped.question
    # an agent's turn: the tool result, then the user's question
    agent = EXAMPLES["canberra-two-steps"]
    first = turn_evidence(agent, agent.turns()[0])
    assert first.sources == ("messages[2]", "messages[4]")
    assert first.question == agent.messages[0].content  # a first turn: the question as it is
    # retrieval_tools narrows the tool results to the tools named
    assert turn_evidence(agent, agent.turns()[0], retrieval_tools=["lookup"]).sources == ()
    assert turn_evidence(agent, agent.turns()[0], retrieval_tools={"search_docs"}).sources == first.sources
    with pytest.raises(ConfigError, match="retrieval_tools"):
        turn_evidence(agent, agent.turns()[0], retrieval_tools="search_docs")


def test_turn_sample_is_an_ordinary_sample():
    eiffel = EXAMPLES["eiffel-support"]
    sample, mapped = turn_sample(eiffel, eiffel.turns()[2])
    assert sample.id == "eiffel-support#turn2"
    assert sample.answer == "It was built from 1887 to 1889."
    assert sample.reference == "The Eiffel Tower was built between 1887 and 1889."
    assert sample.question == mapped.question
    assert sample.contexts == tuple(text for _, text in mapped.pairs)


def test_the_history_budget_cuts_the_oldest_messages_first_and_says_so():
    eiffel = EXAMPLES["eiffel-support"]
    last = eiffel.turns()[2]
    full = turn_evidence(eiffel, last)
    lines = [f"{m.role}: {m.content}" for m in eiffel.messages[1:5]]
    costs = [
        estimate_tokens(line) + (estimate_tokens(m.content) if m.role == "user" else 0)
        for line, m in zip(lines, eiffel.messages[1:5], strict=True)
    ]
    assert full.history.tokens_kept == sum(costs)
    # a budget for the newest two messages only: the oldest two go, the question stays
    budget = costs[2] + costs[3]
    cut = turn_evidence(eiffel, last, history_budget_tokens=budget)
    assert cut.history.as_details() == {
        "messages_kept": 2,
        "tokens_kept": budget,
        "messages_cut": 2,
        "tokens_cut": costs[0] + costs[1],
        "budget_tokens": budget,
    }
    assert "Where is the Eiffel Tower?" not in cut.question
    assert "[2 earlier messages cut: over the history budget]" in cut.question
    assert lines[2] in cut.question and lines[3] in cut.question
    assert cut.sources == ("messages[6].contexts[0]", "messages[3]")
    # one token short of the newest message: everything before the question is cut
    none = turn_evidence(eiffel, last, history_budget_tokens=costs[3] - 1)
    assert none.history.messages_kept == 0 and none.history.messages_cut == 4
    assert none.sources == ("messages[6].contexts[0]",)
    assert none.question.endswith("The question now:\nand when was it built?")


async def test_the_follow_up_turn_is_judged_with_its_history_offline():
    metrics = _core("offline")
    out = await evaluate_turns(EXAMPLES["eiffel-support"], metrics)
    await _close(metrics)
    assert [t.index for t in out.turns] == [2, 4, 6]
    last = out.turns[2]
    assert last.status == "ok" and last.sample is not None
    assert "user: Where is the Eiffel Tower?" in (last.sample.question or "")
    faithfulness = last.results["faithfulness"]
    assert faithfulness.score == 1.0
    (claim,) = faithfulness.claims
    assert claim.verdict == "supported" and claim.evidence_verified
    assert claim.evidence in EXAMPLES["eiffel-support"].messages[6].contexts[0]
    assert faithfulness.details["cited"] == [
        {
            "claim": 0,
            "source": "messages[6].contexts[0]",
            "message": 6,
            "kind": "context",
            "evidence_verified": True,
        }
    ]
    assert faithfulness.details["history"] == last.evidence.history.as_details()  # type: ignore[union-attr]
    assert faithfulness.details["turn"] == {"number": 2, "message": 6}
    assert out.scores("faithfulness") == [1.0, 1.0, 1.0]


async def test_an_agent_answer_rests_on_its_tool_result():
    metrics = _core("offline")
    out = await evaluate_turns(EXAMPLES["warranty-agent"], metrics, retrieval_tools=["search_docs"])
    await _close(metrics)
    (turn,) = out.turns
    assert turn.index == 3 and turn.status == "ok"
    result = turn.results["faithfulness"]
    assert result.score == 1.0
    (claim,) = result.claims
    assert claim.verdict == "supported" and claim.evidence_verified
    assert result.details["cited"][0]["source"] == "messages[2]"  # type: ignore[index]
    assert result.details["cited"][0]["kind"] == "tool_result"  # type: ignore[index]
    assert EXAMPLES["warranty-agent"].messages[2].role == "tool"
    # with the tool not counted as retrieval, nothing is left to rest on (the question is no evidence)
    metrics = _core("offline")
    narrowed = await evaluate_turns(EXAMPLES["warranty-agent"], metrics, retrieval_tools=["other_tool"])
    await _close(metrics)
    assert narrowed.turns[0].results["faithfulness"].score == 0.0
    assert narrowed.turns[0].results["faithfulness"].details["sources"] == []


async def test_what_the_user_said_is_given():
    chat = Conversation.from_messages(
        [
            {"role": "user", "content": "My flight to Oslo leaves at 9 am tomorrow."},
            {"role": "assistant", "content": "Noted, have a good trip."},
            {"role": "user", "content": "When should I leave for the airport?"},
            {
                "role": "assistant",
                "content": "Your flight to Oslo leaves at 9 am tomorrow.",
                "contexts": ["Airlines advise arriving two hours before an international flight."],
            },
        ],
        id="flight",
    )
    metrics = [FaithfulnessMetric(llm="offline")]
    out = await evaluate_turns(chat, metrics)
    await _close(metrics)
    result = out.turns[1].results["faithfulness"]
    assert result.score == 1.0
    assert result.details["cited"][0]["source"] == "messages[0]"  # type: ignore[index]
    assert result.details["cited"][0]["kind"] == "user"  # type: ignore[index]


async def test_an_answer_to_no_user_message_is_invalid_input_naming_it():
    chat = Conversation.from_messages(
        [
            {"role": "system", "content": "Greet the user."},
            {"role": "assistant", "content": "Hello! The shop opens at 9 am."},
            {"role": "user", "content": "When does it close?"},
            {"role": "assistant", "content": "It closes at 6 pm.", "contexts": ["The shop closes at 6 pm."]},
        ]
    )
    with pytest.raises(InvalidInputError, match=r"messages\[1\]"):
        turn_sample(chat, chat.turns()[0])
    metrics = _core("offline")
    out = await evaluate_turns(chat, metrics)
    await _close(metrics)
    first, second = out.turns
    assert first.status == "invalid_input" and "messages[1]" in (first.message or "")
    assert all(r.status == "invalid_input" and r.score is None for r in first.results.values())
    assert first.sample is None and first.evidence is None
    assert second.status == "ok" and second.results["faithfulness"].score == 1.0
    assert second.sample is not None and second.sample.id == "turn1"


async def test_the_three_core_metrics_cost_two_calls_per_turn(fake_llm_server):
    llm = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    counted: dict[str, tuple[int, int]] = {}
    for name in ("eiffel-support", "canberra-two-steps", "warranty-agent"):
        fake_llm_server.reset()
        metrics = [
            FaithfulnessMetric(llm=llm, api_key="sk-test", cache=False),
            RelevancyMetric(llm=llm, api_key="sk-test", cache=False),
            GroundednessMetric(llm=llm, api_key="sk-test", cache=False),
        ]
        out = await evaluate_turns(EXAMPLES[name], metrics)
        await _close(metrics)
        assert all(r.score is not None for t in out.turns for r in t.results.values()), name
        counted[name] = (fake_llm_server.calls["claims.extract"], fake_llm_server.calls["claims.verify"])
        if name == "canberra-two-steps":  # the history is in the extraction request of the follow-up
            asked = [r.variables for r in fake_llm_server.requests if r.task == "claims.extract"]
            thanks = next(v["question"] for v in asked if v and v["answer"] == "You're welcome!")
            assert "assistant: The capital of Australia is Canberra" in thanks
            assert thanks.endswith("The question now:\nThanks!")
    # one extraction and one verification per turn; "You're welcome!" has no claim, so no verification
    assert counted == {"eiffel-support": (3, 3), "canberra-two-steps": (2, 1), "warranty-agent": (1, 1)}


async def test_a_failing_turn_does_not_stop_the_others(fake_llm_server):
    llm = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    fake_llm_server.on(
        lambda req: req.task == "claims.extract" and "Gustave" in str((req.variables or {}).get("answer")),
        FakeReply(invalid=True),
    )
    metrics = [
        FaithfulnessMetric(llm=llm, api_key="sk-test", cache=False),
        GroundednessMetric(llm=llm, api_key="sk-test", cache=False),
    ]
    out = await evaluate_turns(EXAMPLES["eiffel-support"], metrics)
    await _close(metrics)
    statuses = [t.status for t in out.turns]
    assert statuses == ["ok", "judge_output_invalid", "ok"]
    failed = out.turns[1]
    assert failed.results["faithfulness"].score is None and (failed.message or "").startswith("faithfulness:")
    assert failed.results["faithfulness"].details["history"]["messages_kept"] == 2  # type: ignore[index]
    assert out.scores("faithfulness") == [1.0, None, 1.0]


async def test_metrics_are_checked():
    with pytest.raises(ConfigError, match="claim metrics"):
        await evaluate_turns(EXAMPLES["warranty-agent"], [object()])  # type: ignore[list-item]
    twice = [FaithfulnessMetric(llm="offline"), FaithfulnessMetric(llm="offline")]
    with pytest.raises(ConfigError, match="two metrics are named 'faithfulness'"):
        await evaluate_turns(EXAMPLES["warranty-agent"], twice)


async def test_a_first_turn_is_judged_as_its_sample_alone():
    """The question is no evidence for its answer: a claim that only repeats it is not supported, and a
    conversation of one turn scores exactly as the same sample does (the invariance on labelled data)."""
    question = "Is the Louvre in Paris, the capital of France?"
    answer = "Paris is the capital of France."
    chat = Conversation.from_messages(
        [
            {"role": "user", "content": question},
            {"role": "assistant", "content": answer, "contexts": ["The Louvre is a museum."]},
        ],
        id="louvre",
    )
    metrics = _core("offline")
    out = await evaluate_turns(chat, metrics)
    sample = Sample(question=question, answer=answer, contexts=("The Louvre is a museum.",))
    alone = [await m.evaluate_sample(sample) for m in metrics]
    await _close(metrics)
    turn = out.turns[0]
    assert turn.results["faithfulness"].score == 0.0
    assert [turn.results[r.name].score for r in alone] == [r.score for r in alone]
