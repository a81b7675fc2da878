"""Test-set generation through the fake server's OpenAI Batch API (real openai SDK, loopback HTTP)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragmetrics.cli import main
from ragmetrics.errors import BatchPendingError, ConfigError
from ragmetrics.testing import FakeLLMServer
from ragmetrics.testset import generate_sync
from tests.testset.docs import write_corpus

FAST = {"poll_interval_s": 0}


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "docs")


def batch_lines(srv: FakeLLMServer) -> list[Any]:
    return [r for r in srv.requests if r.endpoint == "chat" and r.batch_id is not None]


def real_time(srv: FakeLLMServer) -> list[Any]:
    return [r for r in srv.requests if r.endpoint == "chat" and r.batch_id is None]


def lines(path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_batch_writes_the_items_of_real_time_every_call_a_batch_line_at_half_price(
    corpus, tmp_path, fake_llm_server, openai_spec
):
    srv = fake_llm_server
    batched = generate_sync(
        corpus,
        size=6,
        llm=openai_spec,
        out=tmp_path / "b.jsonl",
        cache=False,
        batch={**FAST, "directory": tmp_path / "ledger"},
    )
    sent = batch_lines(srv)
    assert batched.report.written == 6 and not real_time(srv)
    # every call of the report is one line of a provider batch; a wave needs a batch per step
    # (generation, then verification of the claims the generator split its reference into)
    assert len(sent) == batched.report.usage.calls == sum(len(b.custom_ids) for b in srv.batches)
    assert len(srv.batches) >= 2 and all(b.ended for b in srv.batches)
    assert {r.task for r in sent} >= {"testset.generate", "claims.verify"}
    bodies = sorted(json.dumps(dict(r.body), sort_keys=True) for r in sent)

    srv.reset()
    live = generate_sync(
        corpus, size=6, llm=openai_spec, out=tmp_path / "r.jsonl", cache=False, concurrency=6
    )
    assert lines(tmp_path / "b.jsonl") == lines(tmp_path / "r.jsonl")
    assert sorted(json.dumps(dict(r.body), sort_keys=True) for r in real_time(srv)) == bodies
    assert live.report.usage.prompt_tokens == batched.report.usage.prompt_tokens
    assert batched.report.usage.cost_usd == pytest.approx(live.report.usage.cost_usd / 2)
    assert batched.report.usage.cost_usd > 0


def test_resume_after_a_stopped_wait_pays_nothing_twice(corpus, tmp_path, fake_llm_server, openai_spec):
    srv = fake_llm_server
    whole = generate_sync(
        corpus,
        size=5,
        llm=openai_spec,
        out=tmp_path / "whole.jsonl",
        batch={**FAST, "directory": tmp_path / "l1"},
    )
    paid = len(batch_lines(srv))
    srv.reset()

    out, ledger = tmp_path / "t.jsonl", tmp_path / "l2"
    # a fresh judge cache, so that nothing of the first run answers this one
    options: dict[str, Any] = {"size": 5, "llm": openai_spec, "out": out, "cache": tmp_path / "cache2"}
    with pytest.raises(BatchPendingError):
        generate_sync(corpus, **options, batch={**FAST, "directory": ledger, "max_wait_s": 0})
    assert len(srv.batches) == 1 and len(batch_lines(srv)) == 0  # submitted, not ended yet
    with pytest.raises(ConfigError, match="resume"):  # refuses rather than pay twice
        generate_sync(corpus, **options, batch={**FAST, "directory": ledger})
    resumed = generate_sync(corpus, **options, batch={**FAST, "directory": ledger, "resume": True})
    assert lines(out) == lines(tmp_path / "whole.jsonl") and resumed.report.written == 5
    assert len(batch_lines(srv)) == paid == whole.report.usage.calls  # every request answered once
    assert len({r.body["messages"][-1]["content"] for r in batch_lines(srv)}) == paid
    srv.reset()
    again = generate_sync(corpus, **options, batch={**FAST, "directory": ledger})
    assert srv.requests == [] and again.report.written == 5  # all written: nothing to send


def test_cli_batch_flags(corpus, tmp_path, fake_llm_server, openai_spec, capsys):
    out = tmp_path / "t.jsonl"
    base = ["generate", str(corpus), "--size", "3", "--out", str(out), "--judge", openai_spec, "--quiet"]
    ledger = ["--batch-dir", str(tmp_path / "ledger"), "--poll-interval", "0"]
    assert main([*base, "--resume"]) == 2
    assert "only apply with --batch" in capsys.readouterr().err
    assert main([*base, "--batch", *ledger, "--max-wait", "0"]) == 3
    assert "--resume" in capsys.readouterr().err
    assert main([*base, "--batch", *ledger, "--resume"]) == 0
    assert len(lines(out)) == 3 and not real_time(fake_llm_server) and batch_lines(fake_llm_server)
    offline = [
        "generate",
        str(corpus),
        "--size",
        "2",
        "--out",
        str(tmp_path / "o.jsonl"),
        "--judge",
        "offline",
    ]
    assert main([*offline, "--batch", "--quiet"]) == 2
    assert "batch" in capsys.readouterr().err
