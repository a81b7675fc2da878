"""Conversation-level metrics in the pipeline: one record per conversation, one call per conversation each.

With ``knowledge_retention``, ``conversation_completeness`` or ``task_completion`` among the metrics, each
conversation gets its own record (id ``CONV``, after its turns) that only those metrics score; its turns
get every other metric and none of these. The aggregates count each metric over the records it applies
to (turns for the claim metrics, conversations for these); the per-conversation view, the tables and
the gates read them. Through the counting fake server each costs one call per conversation, and a re-run
nothing; a single-answer row gets ``invalid_input`` for them, naming what they need.
"""

from __future__ import annotations

from importlib import resources

import pytest

import ragmetrics
from ragmetrics.pipeline.gate import check_unscored

EXAMPLE = str(resources.files("ragmetrics") / "data" / "example_conversations.jsonl")
WHOLE = ["knowledge_retention", "conversation_completeness", "task_completion"]
CONVERSATIONS = [
    "eiffel-support",
    "warranty-agent",
    "returns-wrong-argument",
    "canberra-two-steps",
    "library-hours-unsupported",
]


def test_each_conversation_gets_one_record_scored_by_the_conversation_level_metrics_only():
    results = ragmetrics.evaluate_sync(EXAMPLE, ["faithfulness", *WHOLE], llm="offline", progress=False)
    whole = [r for r in results if "#turn" not in r.id]
    turns = [r for r in results if "#turn" in r.id]
    assert [r.id for r in whole] == CONVERSATIONS and len(turns) == 8
    assert all(set(r.scores) == set(WHOLE) for r in whole)
    assert all(set(r.scores) == {"faithfulness"} for r in turns)
    first = whole[0]
    assert first.sample is not None and first.sample.meta["level"] == "conversation"
    assert first.sample.meta["turns"] == 3 and first.sample.answer == "It was built from 1887 to 1889."
    assert [r.index for r in results] == list(range(13))  # each conversation row numbered after its turns
    assert results[3].id == "eiffel-support"

    summary = results.summary()
    assert summary.aggregates["faithfulness"].total == 8
    assert summary.aggregates["knowledge_retention"].total == 5
    assert summary.aggregates["task_completion"].count == 5
    view = {c.id: c for c in summary.conversations}
    assert [t.id for t in view["eiffel-support"].turns] == [f"eiffel-support#turn{k}" for k in range(3)]
    returns = next(r for r in whole if r.id == "returns-wrong-argument")
    assert view["returns-wrong-argument"].scores["task_completion"] == returns.scores["task_completion"]
    # the gate counts each metric over its own records: every one scored, nothing unscored
    assert check_unscored(summary, max_unscored=0, records=results) == []


def test_the_tables_keep_each_metric_on_its_own_rows():
    pd = pytest.importorskip("pandas")
    results = ragmetrics.evaluate_sync(EXAMPLE, ["faithfulness", *WHOLE], llm="offline", progress=False)
    frame = results.to_pandas()
    row = frame[frame["id"] == "eiffel-support"].iloc[0]
    assert pd.isna(row["faithfulness_status"]) and row["knowledge_retention_status"] == "ok"
    turn = frame[frame["id"] == "eiffel-support#turn0"].iloc[0]
    assert pd.isna(turn["knowledge_retention_status"]) and turn["faithfulness_status"] == "ok"
    turns = results.to_pandas(level="turns")
    assert len(turns) == 8 and "eiffel-support" not in set(turns["id"])
    table = results.to_pandas(level="conversations").set_index("conversation_id")
    assert list(table.index) == CONVERSATIONS
    assert table.loc["eiffel-support", "turns_scored"] == 3
    assert 0.0 <= table.loc["eiffel-support", "knowledge_retention"] <= 1.0


def test_through_the_fake_server_each_costs_one_call_per_conversation_and_a_rerun_none(
    fake_llm_server, dummy_keys
):
    spec = f"openai:fake-model@{fake_llm_server.openai_base_url}"
    metrics = ["faithfulness", "relevancy", "groundedness", *WHOLE]
    results = ragmetrics.evaluate_sync(EXAMPLE, metrics, llm=spec, progress=False)
    assert all(r.ok for r in results), [(r.id, r.errors) for r in results if not r.ok]
    whole = [r for r in results if "#turn" not in r.id]
    assert all(r.usage.calls == 3 for r in whole), [(r.id, r.usage.calls) for r in whole]  # one per metric
    (canary,) = results.summary().canaries
    calls = dict(fake_llm_server.calls)
    for task in ("conversation.retention", "conversation.completeness", "conversation.task"):
        assert calls.get(task) == 5, calls  # one call per conversation, for each metric
    turn_calls = sum(r.usage.calls for r in results if "#turn" in r.id)
    assert turn_calls == 2 * 7 + 1  # the three core metrics: 2 calls per turn with claims, 1 without
    assert fake_llm_server.calls.total() == turn_calls + 15 + canary.usage.calls == results.stats.usage.calls

    again = ragmetrics.evaluate_sync(EXAMPLE, metrics, llm=spec, progress=False)
    assert fake_llm_server.calls.total() == results.stats.usage.calls  # the re-run is answered by the cache
    assert [r.scores for r in again] == [r.scores for r in results]


def test_a_single_answer_row_is_invalid_input_for_a_conversation_level_metric():
    rows = [{"id": "one", "question": "Where is Rome?", "answer": "Rome is in Italy.", "contexts": ["Rome."]}]
    metrics = ["faithfulness", "knowledge_retention"]
    results = ragmetrics.evaluate_sync(rows, metrics, llm="offline", progress=False)
    (record,) = results
    assert record.scores["faithfulness"] is not None and record.scores["knowledge_retention"] is None
    assert record.status_of("knowledge_retention") == "invalid_input"
    assert "knowledge_retention scores whole conversations" in record.errors[0].message


def test_the_estimate_counts_one_call_per_conversation_for_each(fake_llm_server, dummy_keys):
    from ragmetrics.pipeline import EvaluationPipeline

    spec = f"openai:fake-model@{fake_llm_server.openai_base_url}"
    metrics = [ragmetrics.metrics.metric_from_name(n, llm=spec, cache=False) for n in WHOLE]
    pipeline = EvaluationPipeline(metrics, progress=False)
    predicted = pipeline.estimate(EXAMPLE)
    results = pipeline.evaluate_sync(EXAMPLE)
    canaries = sum(c.usage.calls for c in results.summary().canaries)
    assert predicted.calls - predicted.canary_calls == 15 == results.stats.usage.calls - canaries
    assert predicted.canary_calls == canaries, (predicted.canary_calls, canaries)


def test_a_batch_run_scores_the_conversation_records_as_a_real_time_run(fake_llm_server, dummy_keys):
    from ragmetrics.pipeline import EvaluationPipeline

    spec = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"

    def metrics():
        names = ["faithfulness", "task_completion"]
        return [ragmetrics.metrics.metric_from_name(n, llm=spec) for n in names]

    batched = EvaluationPipeline(metrics(), batch={"poll_interval_s": 0}, progress=False).run(EXAMPLE)
    assert all(r.ok for r in batched), [(r.id, r.errors) for r in batched if not r.ok]
    assert [r.id for r in batched if "#turn" not in r.id] == CONVERSATIONS
    assert fake_llm_server.batches and all(b.ended for b in fake_llm_server.batches)
    before = fake_llm_server.calls.total()
    live = EvaluationPipeline(metrics(), progress=False).run(EXAMPLE)
    assert fake_llm_server.calls.total() == before  # the batches filled the cache
    assert [r.scores for r in live] == [r.scores for r in batched]
