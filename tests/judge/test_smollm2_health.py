"""Judge health through a real small model: SmolLM2-135M-Instruct behind a running llama-cpp-python server.

Skips unless ``RAGMETRICS_SMOLLM2_URL`` names that server's base URL (``http://127.0.0.1:PORT/v1``):
llama-cpp-python takes about 10 minutes to build and is in no extra and not in CI. Start one as
README's local-model section says. One short sample, faithfulness only: on a busy 2-core machine each
schema-constrained call takes a minute or more.
"""

from __future__ import annotations

import math
import os

import pytest

from ragmetrics import EvaluationPipeline, FaithfulnessMetric

URL = os.environ.get("RAGMETRICS_SMOLLM2_URL")
SAMPLE = {
    "id": "eiffel",
    "question": "When was the Eiffel Tower finished?",
    "answer": "The Eiffel Tower was finished in 1889.",
    "contexts": ["The Eiffel Tower in Paris was completed in 1889."],
}

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not URL, reason="set RAGMETRICS_SMOLLM2_URL to a llama-cpp-python server with SmolLM2"
    ),
]


def test_a_real_small_model_gets_health_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    spec = f"openai:smollm2@{URL}"
    metric = FaithfulnessMetric(llm=spec, cache=False, max_concurrency=1, timeout_s=900.0, max_tokens=256)
    results = EvaluationPipeline([metric], progress=False).run([SAMPLE])
    summary = results.summary()
    health = summary.judge_health[spec]
    assert health.samples == 1
    assert 0 <= health.spans_found <= health.spans and 0 <= health.quotes_found <= health.quotes
    assert health.reading_rate is None or 0.0 <= health.reading_rate <= 1.0
    result = results[0].results["faithfulness"]
    assert result.score is None or not math.isnan(result.score)
    assert isinstance(result.details.get("judge_health"), dict)  # the per-result figures the run sums
    assert summary.run.usage.calls >= 1
