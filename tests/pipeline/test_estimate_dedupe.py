"""The estimate bills a request once across the whole dataset, as a run's cache and single-flight do."""

from __future__ import annotations

from ragmetrics import EvaluationPipeline, FaithfulnessMetric, RelevancyMetric
from ragmetrics.pipeline.estimate import estimate
from ragmetrics.testing import FakeLLMServer

ROW = {
    "question": "What is the capital of France?",
    "answer": "Paris is the capital of France. It has the Louvre.",
    "contexts": ["Paris is the capital of France.", "The Louvre is in Paris."],
}
OTHER = {
    "question": "Where is the Eiffel Tower?",
    "answer": "The Eiffel Tower is in Paris.",
    "contexts": ["The Eiffel Tower stands in Paris."],
}


def test_identical_rows_are_estimated_at_the_calls_the_server_counts(
    openai_spec: str, fake_llm_server: FakeLLMServer
) -> None:
    metrics = [FaithfulnessMetric(llm=openai_spec), RelevancyMetric(llm=openai_spec)]
    data = [dict(ROW, id="a"), dict(ROW, id="b"), dict(OTHER, id="c")]
    predicted = estimate(metrics, data, canaries=False)
    one_row = estimate(metrics, [dict(ROW, id="a")], canaries=False).calls
    other_row = estimate(metrics, [dict(OTHER, id="c")], canaries=False).calls
    assert fake_llm_server.calls.total() == 0
    assert predicted.samples == 3 and one_row > 0 and other_row > 0
    assert predicted.calls == one_row + other_row  # the repeated row costs nothing more
    results = EvaluationPipeline(metrics, progress=False, canaries=False).run(data)
    assert fake_llm_server.calls.total() == predicted.calls
    assert [r.faithfulness for r in results] == [results[0].faithfulness] * 2 + [results[2].faithfulness]
