"""Issue 22 item 11 (first part): a budget with a model the price table does not name refuses to start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics import ConfigError, EvaluationPipeline, FaithfulnessMetric
from ragmetrics.cli.app import main

ROWS = [
    {"question": f"Capital {i}?", "answer": f"Paris is city {i}.", "contexts": [f"Paris is city {i}."]}
    for i in range(20)
]


@pytest.mark.parametrize("model", ["anthropic/claude-haiku-4-5", "llama3.1:8b"])
def test_a_budget_with_an_unpriced_model_refuses_to_start_with_no_call(model, openai_spec, fake_llm_server):
    spec = f"openai:{model}@{fake_llm_server.openai_base_url}"  # the README's gateway form, a local model
    pipeline = EvaluationPipeline(
        [FaithfulnessMetric(llm=spec, cache=False)], max_cost_usd=0.001, progress=False
    )
    fake_llm_server.reset()
    with pytest.raises(
        ConfigError, match=r"max_cost_usd=\$0.001: the price table has no price for judge .*RAGMETRICS_PRICES"
    ):
        pipeline.run(ROWS)
    assert fake_llm_server.calls.total() == 0


def test_with_a_price_given_the_budget_holds(openai_spec, fake_llm_server):
    spec = f"openai:anthropic/claude-haiku-4-5@{fake_llm_server.openai_base_url}"
    prices = {"openai": {"anthropic/claude-haiku-4-5": (1.0, 5.0)}}
    full = EvaluationPipeline([FaithfulnessMetric(llm=spec, cache=False, prices=prices)], progress=False).run(
        ROWS
    )
    total = full.stats.usage.cost_usd
    assert total > 0
    fake_llm_server.reset()
    metric = FaithfulnessMetric(llm=spec, cache=False, prices=prices)
    half = EvaluationPipeline([metric], max_cost_usd=total / 2, progress=False).run(ROWS)
    assert half.stats.budget_exhausted and any(r.skipped for r in half)  # the budget now applies
    assert fake_llm_server.calls.total() < full.stats.usage.calls  # without the price: all 40 were made


def test_eval_max_cost_with_an_unpriced_model_is_a_usage_error(
    tmp_path: Path, openai_spec, fake_llm_server, capsys
):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    spec = f"openai:anthropic/claude-haiku-4-5@{fake_llm_server.openai_base_url}"
    fake_llm_server.reset()
    code = main(
        ["eval", str(data), "--judge", spec, "--metrics", "faithfulness", "--max-cost", "0.01", "--no-cache"]
    )
    assert code == 2, capsys.readouterr()
    assert "no price for judge" in capsys.readouterr().err
    assert fake_llm_server.calls.total() == 0


def test_estimate_says_a_budget_would_refuse_an_unpriced_model(openai_spec, fake_llm_server):
    spec = f"openai:anthropic/claude-haiku-4-5@{fake_llm_server.openai_base_url}"
    estimate = EvaluationPipeline([FaithfulnessMetric(llm=spec, cache=False)], progress=False).estimate(ROWS)
    assert any("--max-cost refuses to start" in note for note in estimate.notes)


def test_price_per_mtok_prices_the_model_for_eval_and_estimate(
    tmp_path: Path, openai_spec, fake_llm_server, capsys
):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    spec = f"openai:anthropic/claude-haiku-4-5@{fake_llm_server.openai_base_url}"
    flags = ["--judge", spec, "--metrics", "faithfulness", "--no-cache", "--price-per-mtok", "1,5"]
    assert main(["estimate", str(data), *flags, "--json"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert estimate["cost_usd"] > 0
    fake_llm_server.reset()
    out = tmp_path / "out.jsonl"
    code = main(
        ["eval", str(data), *flags, "--max-cost", str(estimate["cost_usd"] / 2), "--out", str(out), "--quiet"]
    )
    capsys.readouterr()
    assert code in (0, 1)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert 0 < fake_llm_server.calls.total() < 40 and any("max_cost_usd" in json.dumps(r) for r in records)
