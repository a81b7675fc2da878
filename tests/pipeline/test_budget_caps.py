"""Issue 22 item 11 (second part): a budget holds when the server omits usage, and the call cap."""

from __future__ import annotations

import json

from ragmetrics import EvaluationPipeline, FaithfulnessMetric
from ragmetrics.cli.app import main
from ragmetrics.testing import FakeReply

ROWS = [
    {"question": f"Capital {i}?", "answer": f"Paris is city {i}.", "contexts": [f"Paris is city {i}."]}
    for i in range(200)
]
FAST = {"backoff_initial_s": 0.0, "backoff_max_s": 0.0}


def test_a_server_that_sends_no_usage_cannot_make_the_budget_free(openai_spec, fake_llm_server):
    spec = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"  # priced
    metric = FaithfulnessMetric(llm=spec, cache=False, **FAST)
    full = EvaluationPipeline([metric], progress=False, canaries=False).estimate(ROWS)
    assert full.calls == 400 and full.cost_usd > 0
    budget = full.cost_usd / 4
    fake_llm_server.reset()
    fake_llm_server.on(lambda r: True, FakeReply(usage={}))  # no usage object in any reply
    results = EvaluationPipeline(
        [FaithfulnessMetric(llm=spec, cache=False, **FAST)],
        max_cost_usd=budget,
        concurrency=8,
        progress=False,
        canaries=False,
    ).run(ROWS)
    usage = results.stats.usage
    sent = fake_llm_server.calls.total()
    assert usage.calls == sent and usage.estimated == sent and usage.unmetered == 0
    assert 0 < sent < 200, f"{sent} of 400 calls made for a quarter of the estimate"
    assert 0 < usage.cost_usd <= budget * 1.05 and results.stats.budget_exhausted
    assert any(r.skipped for r in results)
    assert f"{sent} with tokens estimated" in usage.describe()


def test_a_call_cap_holds_for_the_run_and_is_consent_for_an_unpriced_budget(openai_spec, fake_llm_server):
    spec = f"openai:anthropic/claude-haiku-4-5@{fake_llm_server.openai_base_url}"  # not in the price table
    fake_llm_server.reset()
    fake_llm_server.faults(rate_429=0.2, seed=3)
    pipeline = EvaluationPipeline(
        [FaithfulnessMetric(llm=spec, cache=False, **FAST)],
        max_cost_usd=0.001,
        max_calls=30,
        concurrency=8,
        progress=False,
        canaries=False,
    )
    results = pipeline.run(ROWS[:40])  # 80 calls and their retries without the cap
    sent = fake_llm_server.calls.total()
    assert sent <= 30 and results.stats.usage.calls == sent
    assert sent >= 20, "the cap is used, not refused up front"
    skipped = [r for r in results if r.skipped]
    assert skipped and all("max_calls=30" in r.errors[0].message for r in skipped)
    assert all(r.usage.calls == 0 for r in skipped)


def test_eval_and_estimate_take_max_calls_and_estimate_names_the_consent(
    tmp_path, openai_spec, fake_llm_server, capsys
):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:20]), encoding="utf-8")
    spec = f"openai:anthropic/claude-haiku-4-5@{fake_llm_server.openai_base_url}"
    flags = [str(data), "--judge", spec, "--metrics", "faithfulness", "--no-cache", "--max-cost", "0.01"]
    assert main(["estimate", "--no-canaries", *flags]) == 0
    assert "eval refuses to start (give --price-per-mtok IN,OUT or --max-calls N)" in capsys.readouterr().out
    assert main(["estimate", "--no-canaries", *flags, "--max-calls", "10"]) == 0
    out = capsys.readouterr().out
    assert "call cap: --max-calls 10 (this run needs about 40 calls" in out
    assert "the call cap --max-calls 10 holds the run" in out
    assert main(["estimate", "--no-canaries", *flags, "--price-per-mtok", "1,5"]) == 0
    assert "price given (--price-per-mtok 1,5)" in capsys.readouterr().out
    fake_llm_server.reset()
    code = main(["eval", "--no-canaries", *flags, "--max-calls", "10", "--quiet"])
    capsys.readouterr()
    assert code in (0, 1) and 0 < fake_llm_server.calls.total() <= 10
