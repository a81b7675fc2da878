"""Hostile cases for usage accounting: lying usage reports, calls cut off by a sample's timeout, and
metrics that let a judge failure escape. None may make a summary report less than the server received.
"""

from __future__ import annotations

import pytest

from ragmetrics.errors import JudgeError
from ragmetrics.judge import make_judge
from ragmetrics.judge.metering import Meter
from ragmetrics.metrics.claims.engine import extract_request
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.sample import Sample
from ragmetrics.testing import FakeLLMServer, FakeReply
from tests.pipeline.test_runner import rows, three

FAST = {"backoff_initial_s": 0.0, "backoff_max_s": 0.0}


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -1000, "completion_tokens": -5},
        {"prompt_tokens": "900", "completion_tokens": None},
        {"prompt_tokens": True, "completion_tokens": 1.5},
        "not an object",
    ],
)
def test_a_server_cannot_bill_negative_or_made_up_tokens(usage: object) -> None:
    meter = Meter()
    meter.sent()
    meter.answered(200, {"usage": usage})
    spent = meter.usage(lambda p, c: (p * 0.15 + c * 0.6) / 1e6)
    # an unreadable report is not believed, nor is a reply with no usage object at all free: the
    # attempt is priced at our estimate (none known here)
    assert spent.calls == 1 and spent.unmetered == 0 and spent.estimated == 1
    assert spent.prompt_tokens == 0 and spent.completion_tokens == 0 and spent.cost_usd == 0.0


async def test_calls_cut_off_by_the_sample_timeout_are_still_counted(srv: FakeLLMServer) -> None:
    spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    await EvaluationPipeline(metrics=three(spec, False, **FAST), canaries=False).evaluate(
        rows(1)
    )  # warm up the SDKs
    srv.reset()
    srv.on("claims.verify", FakeReply(hang=True))
    # the verification hangs until the sample timeout; 6 s leaves the extraction room on a loaded machine
    pipeline = EvaluationPipeline(
        metrics=three(spec, False, timeout_s=30, **FAST), timeout_per_sample_s=6.0, canaries=False
    )
    results = await pipeline.evaluate(rows(1))
    record = results[0]
    assert {e.status for e in record.errors} == {"timeout"}
    assert record.usage.calls == srv.calls.total() == 2, "the extraction and the verification cut off"
    assert record.usage.unmetered == 1 and record.usage.prompt_tokens == srv.prompt_tokens
    assert (
        sum(e.usage.calls for e in record.errors) + sum(r.usage.calls for r in record.results.values()) == 2
    )


async def test_a_metric_that_lets_a_judge_failure_escape_keeps_its_cost(srv: FakeLLMServer) -> None:
    srv.on("claims.extract", FakeReply(invalid=True))
    judge = make_judge(f"openai:gpt-4o-mini@{srv.openai_base_url}", reasks=3, **FAST)

    async def stubborn(sample: Sample) -> float:
        await judge.complete(extract_request(sample))  # raises JudgeOutputError: not caught here
        return 1.0

    results = await EvaluationPipeline(metrics=[stubborn]).evaluate(rows(2))
    await judge.aclose()
    assert all(r.scores["stubborn"] is None for r in results)
    assert sum(r.usage.calls for r in results) == srv.calls.total() == 8
    assert sum(r.usage.completion_tokens for r in results) == srv.completion_tokens
    error = results[0].errors[0]
    assert error.type == "JudgeOutputError" and error.usage.calls == 4 and error.usage.reasks == 3
    with pytest.raises(JudgeError):  # and the error itself says what it cost
        await judge.complete(extract_request(Sample.from_fields(question="q", answer="An answer.")))
    await judge.aclose()
