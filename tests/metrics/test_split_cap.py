"""An answer or reference over MAX_SPLIT_CHARS is the row's invalid_input at once, with no judge call.

Before the cap, the offline judge split a 7 MB answer for 52 s and 1.1 GB in ``eval`` (124 s and
2.6 GB in ``calibrate``), and an LLM judge would have been sent all of it.
"""

from __future__ import annotations

import ragmetrics
from ragmetrics.metrics.base import MAX_SPLIT_CHARS
from ragmetrics.testing import FakeLLMServer

LONG = "The tower is in Paris. " * (MAX_SPLIT_CHARS // 23 + 1)
ROWS = [
    {"id": "long", "question": "Where is the tower?", "answer": LONG, "contexts": ["The tower is in Paris."]},
    {
        "id": "ok",
        "question": "Where is the tower?",
        "answer": "It is in Paris.",
        "contexts": ["It is in Paris."],
    },
    {
        "id": "long-reference",
        "question": "Where is the tower?",
        "answer": "It is in Paris.",
        "reference": LONG,
        "contexts": ["It is in Paris."],
    },
]


def test_a_text_over_the_cap_is_invalid_input_at_once_and_costs_no_call():
    assert len(LONG) > MAX_SPLIT_CHARS
    with FakeLLMServer() as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        long, ok, long_reference = ragmetrics.evaluate_sync(
            ROWS, metrics=["faithfulness", "context_recall"], llm=spec, cache=False, progress=False
        )
        prompts = [r.prompt for r in srv.requests]
    assert long.status_of("faithfulness") == "invalid_input"
    message = next(e.message for e in long.errors if e.metric == "faithfulness")
    assert "field 'answer' must be at most 1,000,000 characters (MAX_SPLIT_CHARS)" in message
    assert f"it has {len(LONG):,}" in message
    assert ok.faithfulness == 1.0  # the rest of the run scores
    # with context recall, faithfulness shares the request that splits the reference: neither is sent
    assert {long_reference.status_of(m) for m in ("faithfulness", "context_recall")} == {"invalid_input"}
    assert "field 'reference' must be at most" in long_reference.errors[0].message
    assert not any(len(p) > MAX_SPLIT_CHARS for p in prompts)  # nothing that long was sent
    (alone,) = ragmetrics.evaluate_sync(ROWS[2:], metrics=["faithfulness"], llm="offline", progress=False)
    assert alone.faithfulness == 1.0  # faithfulness alone does not split the reference
