"""`ragmetrics eval --batch` and `ragmetrics estimate`, in process, against the fake server's batch APIs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ragmetrics.cli.app import main
from ragmetrics.judge.pricing import batch_cost_usd, cost_usd, load_prices
from ragmetrics.testing import FakeLLMServer

ROWS = [
    {
        "question": "What is Python?",
        "answer": "Python is a compiled language created in 1991.",
        "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
    },
    {
        "question": "What is the capital of France?",
        "answer": "Paris is the capital of France.",
        "contexts": ["Paris is the capital and largest city of France."],
    },
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def srv(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy-key")
    server.reset()
    yield server
    server.reset()


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_eval_batch_then_a_real_time_eval_makes_no_call(srv, data, tmp_path, capsys):
    judge = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    out = tmp_path / "out.jsonl"
    code = main(["eval", str(data), "--judge", judge, "--batch", "--poll-interval", "0", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "through its batch API" in captured.out
    assert captured.err.count("submitted batch") == 2 and "results read" in captured.err
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["scores"]["faithfulness"] for r in records] == [0.5, 1.0]
    assert len(srv.batches) == 2
    srv.reset()
    assert main(["eval", str(data), "--judge", judge, "--quiet"]) == 0
    assert srv.calls.total() == 0  # the canaries too: the batch run filled the cache with them


def test_eval_batch_puts_the_canaries_in_the_same_batches(srv, data, capsys):
    judge = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    args = ["eval", str(data), "--judge", judge, "--batch", "--poll-interval", "0", "--json"]
    assert main(args) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    (canary,) = summary["canaries"]
    assert canary["passed"] is True and canary["usage"]["calls"] == 2
    # 2 samples: their extractions, then their verifications; the canaries' one of each rides along
    assert [len(b.custom_ids) for b in srv.batches] == [2 + 1, 2 + 1]
    assert not [r for r in srv.requests if r.endpoint == "chat" and r.batch_id is None]  # none real time
    assert summary["run"]["usage"]["calls"] == 4 + 2
    srv.reset()
    assert main([*args[:-1], "--no-canaries", "--quiet", "--no-cache"]) == 0
    assert [len(b.custom_ids) for b in srv.batches] == [2, 2]


def test_max_wait_exits_3_and_resume_collects(srv, data, tmp_path, capsys):
    judge = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    ledger = ["--batch-dir", str(tmp_path / "ledger"), "--poll-interval", "0"]
    assert main(["eval", str(data), "--judge", judge, "--batch", "--max-wait", "0", *ledger]) == 3
    assert "--resume" in capsys.readouterr().err
    assert main(["eval", str(data), "--judge", judge, "--batch", *ledger, "--quiet"]) == 2
    assert "resume" in capsys.readouterr().err
    assert main(["eval", str(data), "--judge", judge, "--batch", "--resume", *ledger, "--quiet"]) == 0
    assert len(srv.batches) == 2


def test_batch_flags_are_checked(srv, data, capsys):
    assert main(["eval", str(data), "--resume"]) == 2
    assert "only apply with --batch" in capsys.readouterr().err
    assert main(["eval", str(data), "--judge", "offline", "--batch"]) == 2
    assert "no batch API" in capsys.readouterr().err
    judge = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    assert main(["eval", str(data), "--judge", judge, "--batch", "--max-cost", "1"]) == 2
    assert "max_cost_usd" in capsys.readouterr().err
    assert srv.batches == []


def test_estimate_prints_both_prices(srv, data, capsys):
    assert main(["estimate", str(data), "--judge", "openai:gpt-4o-mini"]) == 0
    text = capsys.readouterr().out
    assert "with --batch" in text
    assert main(["estimate", str(data), "--judge", "openai:gpt-4o-mini", "--json"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert estimate["batch_cost_usd"] == pytest.approx(estimate["cost_usd"] / 2) and estimate["cost_usd"] > 0


def test_batch_prices_are_half_the_real_time_ones():
    table = load_prices()
    for provider, models in (("openai", ("gpt-4o-mini", "gpt-5")), ("anthropic", ("claude-haiku-4-5",))):
        for model in models:
            assert batch_cost_usd(table, provider, model, 1000, 500) == pytest.approx(
                cost_usd(table, provider, model, 1000, 500) / 2
            )
    # a model only the real-time table names is billed at half its price; an unknown one costs nothing
    own = {"openai": {"my-model": (2.0, 4.0)}}
    assert batch_cost_usd(own, "openai", "my-model-v2", 1_000_000, 0) == 1.0
    assert batch_cost_usd(own, "openai", "other", 1_000_000, 0) == 0.0
    assert (
        batch_cost_usd({**own, "openai-batch": {"my-model": (0.1, 0.2)}}, "openai", "my-model", 10**6, 0)
        == 0.1
    )
