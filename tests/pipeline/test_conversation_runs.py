"""Conversations through the pipeline: one record per assistant turn, a per-conversation view, 2 calls a turn.

A conversation row is scored as one sample row per assistant turn with text (``CONV#turnN``); the
records name the message each claim cites; the summary gathers each conversation's turns, its means and
its tool-call scores (no judge). Counted through the fake server: the three core metrics cost 2 calls
per turn with claims (1 for a turn with none), plus the run's canaries; a re-run with the disk cache
costs nothing; a bad conversation is one ``invalid_input`` record and the rest score.
"""

from __future__ import annotations

import dataclasses
from importlib import resources

import pytest

import ragmetrics
from ragmetrics.errors import ConfigError
from ragmetrics.metrics import FaithfulnessMetric, RelevancyMetric
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.pipeline.conversations import read_conversation
from ragmetrics.pipeline.dataset import Dataset

EXAMPLE = str(resources.files("ragmetrics") / "data" / "example_conversations.jsonl")
TURNS = [
    "eiffel-support#turn0",
    "eiffel-support#turn1",
    "eiffel-support#turn2",
    "warranty-agent#turn0",
    "returns-wrong-argument#turn0",
    "canberra-two-steps#turn0",
    "canberra-two-steps#turn1",
    "library-hours-unsupported#turn0",
]
GOOD = {
    "id": "good",
    "messages": [
        {"role": "user", "content": "Where is the Louvre?"},
        {
            "role": "assistant",
            "content": "The Louvre is in Paris.",
            "contexts": ["The Louvre is a museum in Paris."],
        },
    ],
}
BAD = {  # a tool message answering no call
    "id": "bad",
    "messages": [
        {"role": "user", "content": "How long is the warranty?"},
        {"role": "tool", "tool_call_id": "call_9", "content": "Two years."},
        {"role": "assistant", "content": "Two years."},
    ],
}


def test_the_example_conversations_are_scored_turn_by_turn_with_a_view_per_conversation():
    results = ragmetrics.evaluate_sync(EXAMPLE, llm="offline", progress=False)
    assert [r.id for r in results] == TURNS and [r.index for r in results] == list(range(8))
    first = results[0].sample
    assert first is not None and first.meta["conversation_id"] == "eiffel-support"
    assert (first.meta["turn"], first.meta["message_index"]) == (0, 2)
    third = results[2].sample
    assert third is not None and third.question.endswith("The question now:\nand when was it built?")
    assert third.meta["sources"] == ["messages[6].contexts[0]", "messages[1]", "messages[3]"]
    # each claim names the message its evidence is quoted from
    cited = results[3].results["faithfulness"].details["cited"]
    assert cited == [
        {"claim": 0, "source": "messages[2]", "message": 2, "kind": "tool_result", "evidence_verified": True}
    ]
    assert results[2].results["faithfulness"].details["history"]["messages_kept"] == 4

    summary = results.summary()
    by_id = {c.id: c for c in summary.conversations}
    assert list(by_id) == [
        "eiffel-support",
        "warranty-agent",
        "returns-wrong-argument",
        "canberra-two-steps",
        "library-hours-unsupported",
    ]
    eiffel = by_id["eiffel-support"]
    assert [t.id for t in eiffel.turns] == TURNS[:3] and [t.message for t in eiffel.turns] == [2, 4, 6]
    relevancy = [r.scores["relevancy"] for r in results[:3]]
    assert eiffel.scores["relevancy"] == pytest.approx(sum(relevancy) / 3)
    assert eiffel.tool_call_accuracy is None and eiffel.tool_calls == {}  # no calls expected
    wrong = by_id["returns-wrong-argument"]
    assert wrong.tool_call_accuracy == 0.0 and wrong.tool_call_f1 == 0.0
    assert "search_docs (changed channel)" in wrong.tool_calls["tool_call_accuracy"]
    assert by_id["canberra-two-steps"].tool_call_accuracy == 1.0
    assert "conversations" in summary.to_json()


def test_through_the_fake_server_each_turn_costs_two_calls_and_a_rerun_none(fake_llm_server, dummy_keys):
    spec = f"openai:fake-model@{fake_llm_server.openai_base_url}"
    metrics = ["faithfulness", "relevancy", "groundedness"]
    results = ragmetrics.evaluate_sync(EXAMPLE, metrics, llm=spec, progress=False)
    assert all(r.ok for r in results) and [r.id for r in results] == TURNS
    claimed = [r for r in results if r.results["faithfulness"].claims]
    unclaimed = [r for r in results if not r.results["faithfulness"].claims]
    assert len(claimed) == 7 and [r.id for r in unclaimed] == ["canberra-two-steps#turn1"]  # "You're welcome"
    assert all(r.usage.calls == 2 for r in claimed) and unclaimed[0].usage.calls == 1  # nothing to verify
    (canary,) = results.summary().canaries
    assert canary.passed and canary.usage.calls == 2
    # the tool-call metrics called nothing: the server saw the turns' calls and the canaries', no more
    assert fake_llm_server.calls.total() == 2 * 7 + 1 + canary.usage.calls == results.stats.usage.calls
    assert dict(fake_llm_server.calls) == {"claims.extract": 8 + 1, "claims.verify": 7 + 1}
    assert results.summary().conversations[2].tool_call_accuracy == 0.0

    again = ragmetrics.evaluate_sync(EXAMPLE, metrics, llm=spec, progress=False)
    assert fake_llm_server.calls.total() == 17  # the disk cache answers every request of the re-run
    assert [r.scores for r in again] == [r.scores for r in results]


def test_a_bad_conversation_is_one_invalid_record_and_the_rest_score():
    rows = [GOOD, BAD, {"question": "What is 2+2?", "answer": "4.", "contexts": ["2+2 is 4."]}]
    results = ragmetrics.evaluate_sync(rows, llm="offline", progress=False)
    assert [r.id for r in results] == ["good#turn0", "bad", "2"]
    good, bad, sample = results
    assert good.ok and sample.ok
    assert [e.status for e in bad.errors] == ["invalid_input"]
    assert bad.errors[0].field == "messages[1].tool_call_id"
    assert "'messages[1].tool_call_id' must be the id of an earlier tool call" in bad.errors[0].message
    (viewed_good, viewed_bad) = results.summary().conversations
    assert viewed_good.id == "good" and viewed_bad.id == "bad" and viewed_bad.status == "invalid_input"
    assert viewed_bad.turns == [] and "messages[1]" in (viewed_bad.message or "")
    frame = results.to_pandas()
    assert list(frame["id"]) == ["good#turn0", "bad", "2"]
    assert results.to_pandas(level="claims").shape[0] > 0


def test_one_turn_that_cannot_be_read_is_a_status_on_that_turn():
    greeting_first = {
        "id": "greeting",
        "messages": [
            {"role": "assistant", "content": "Hello, how can I help?"},
            {"role": "user", "content": "Where is the Louvre?"},
            {
                "role": "assistant",
                "content": "The Louvre is in Paris.",
                "contexts": ["The Louvre is in Paris."],
            },
        ],
    }
    results = ragmetrics.evaluate_sync([greeting_first], llm="offline", progress=False)
    first, second = results
    assert first.id == "greeting#turn0" and first.errors[0].status == "invalid_input"
    assert first.errors[0].field == "messages[0]" and second.ok
    (view,) = results.summary().conversations
    assert view.status == "ok" and [t.status for t in view.turns] == ["invalid_input", "ok"]


def test_conversation_objects_and_dicts_score_alike_and_mix_with_samples():
    records = [read_conversation(GOOD), {"question": "q?", "answer": "a.", "contexts": ["a."]}]
    from_objects = ragmetrics.evaluate_sync(records, llm="offline", progress=False)
    from_dicts = ragmetrics.evaluate_sync([GOOD, records[1]], llm="offline", progress=False)
    assert [r.id for r in from_objects] == ["good#turn0", "1"]
    assert [r.scores for r in from_objects] == [r.scores for r in from_dicts]
    unnamed = read_conversation({"messages": GOOD["messages"]})
    (record,) = ragmetrics.evaluate_sync([unnamed], llm="offline", progress=False)
    assert record.id == "0#turn0"  # no id: the row's index names it


def test_rows_given_numbered_keep_their_numbers_shifted_only_by_the_turns_before_them():
    two_turns = {
        "id": "two",
        "messages": [
            *GOOD["messages"],
            {"role": "user", "content": "And the Prado?"},
            {
                "role": "assistant",
                "content": "The Prado is in Madrid.",
                "contexts": ["The Prado is in Madrid."],
            },
        ],
    }
    sample = {"question": "q?", "answer": "a.", "contexts": ["a."]}
    # numbered by their positions in a whole dataset, as a Ray batch's rows are
    given = [dataclasses.replace(row, index=row.index + 10) for row in Dataset([sample, sample]).rows()]
    assert [r.index for r in Dataset(given).sample_rows()] == [10, 11]
    records = ragmetrics.evaluate_sync(given, llm="offline", progress=False)
    assert [r.index for r in records] == [10, 11]
    mixed = [
        dataclasses.replace(row, index=row.index + 10) for row in Dataset([sample, two_turns, sample]).rows()
    ]
    records = ragmetrics.evaluate_sync(mixed, llm="offline", progress=False)
    assert [(r.index, r.id) for r in records][:3] == [(10, "10"), (11, "two#turn0"), (12, "two#turn1")]
    assert records[3].index == 13  # after a conversation of two turns: one further on


def test_retrieval_tools_and_the_history_budget_are_options_of_the_run():
    narrowed = ragmetrics.evaluate_sync(
        EXAMPLE, llm="offline", progress=False, retrieval_tools=["other_tool"], history_budget_tokens=0
    )
    agent = narrowed[3].sample
    assert agent is not None and agent.meta["sources"] == []  # the search result is not evidence
    eiffel = narrowed[2].results["faithfulness"].details["history"]
    assert eiffel["messages_kept"] == 0 and eiffel["messages_cut"] == 4 and eiffel["budget_tokens"] == 0
    with pytest.raises(ConfigError, match="retrieval_tools must be a list of tool names"):
        EvaluationPipeline([FaithfulnessMetric(llm="offline")], retrieval_tools="search_docs")
    with pytest.raises(ConfigError, match="history_budget_tokens"):
        EvaluationPipeline([FaithfulnessMetric(llm="offline")], history_budget_tokens=-1)


def test_the_dataset_counts_turns_and_the_estimate_counts_them_too():
    ds = Dataset(EXAMPLE)
    assert ds.total() == 5 and ds.sample_total() == 8  # rows read, rows scored
    assert [r.index for r in ds.sample_rows()] == list(range(8))
    assert Dataset([{"question": "q", "answer": "a"}]).sample_total() == 1
    metrics = [FaithfulnessMetric(llm="offline"), RelevancyMetric(llm="offline")]
    estimate = EvaluationPipeline(metrics, progress=False).estimate(EXAMPLE)
    assert estimate.samples == 8 and estimate.invalid_rows == 0


def test_a_batch_run_scores_the_turns_as_a_real_time_run(fake_llm_server, dummy_keys):
    spec = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    metrics = [cls(llm=spec) for cls in (FaithfulnessMetric, RelevancyMetric)]
    batched = EvaluationPipeline(metrics, batch={"poll_interval_s": 0}, progress=False).run(EXAMPLE)
    assert [r.id for r in batched] == TURNS and all(r.ok for r in batched)
    assert fake_llm_server.batches and all(b.ended for b in fake_llm_server.batches)
    assert [c.id for c in batched.summary().conversations][:2] == ["eiffel-support", "warranty-agent"]
    before = fake_llm_server.calls.total()
    again = EvaluationPipeline(
        [cls(llm=spec) for cls in (FaithfulnessMetric, RelevancyMetric)], progress=False
    )
    live = again.run(EXAMPLE)
    assert fake_llm_server.calls.total() == before  # the batches filled the cache
    assert [r.scores for r in live] == [r.scores for r in batched]


def test_the_call_cap_counts_turns_as_rows(fake_llm_server, dummy_keys):
    spec = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    pipeline = EvaluationPipeline(
        [FaithfulnessMetric(llm=spec, cache=False)], max_calls=6, concurrency=1, progress=False
    )
    results = pipeline.run(EXAMPLE)
    assert fake_llm_server.calls.total() == 6  # the canaries' 2, then 2 turns at 2 calls each
    assert [r.skipped for r in results] == [False, False] + [True] * 6
    (eiffel, *_) = results.summary().conversations
    assert [t.status for t in eiffel.turns] == ["ok", "ok", "skipped"]
