"""The test-set generator's judge gate: a canary drawn from the documents and the verifier's quotes.

A copycat verifier (every verification "supported", quoting a real but random sentence of the cited
chunk) let a reference the documents do not support into a test set as verified; with the gate it fails
its canary before any candidate is paid for, writes no item, and ``ragmetrics generate`` exits 5.
Reading verifiers (the offline judge, the fake server's default mode) pass and write as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest

from ragmetrics._fake.copycat import copycat_answer
from ragmetrics._fake.tasks import offline_answer
from ragmetrics.testing import FakeLLMServer
from ragmetrics.testset import generate_sync
from tests.testset.docs import write_corpus

EXIT_JUDGE = 5
FALSE = "Python was created by Ada Lovelace in 1843 on a steam computer."


def lying_writer(task: str, variables: Mapping[str, Any]) -> Mapping[str, Any]:
    """Writes references the chunks do not support (quoting real sentences), verifies as a copycat."""
    if task == "testset.generate":
        item = dict(offline_answer(task, variables))
        if item.get("reference"):
            item["reference"] = FALSE
            item["claims"] = [{"text": FALSE, "span": FALSE}]
        return item
    return copycat_answer(task, variables)


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "docs")


def test_a_copycat_verifier_writes_no_unsupported_reference(corpus, tmp_path, dummy_keys):
    with FakeLLMServer(answer=lying_writer) as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        ungated = generate_sync(
            corpus, size=3, llm=spec, cache=False, mix={"single_hop": 1}, judge_gate=False
        )
        assert ungated.items and all(i.reference == FALSE for i in ungated.items)  # the hole, without it
        before = srv.calls.total()
        ts = generate_sync(
            corpus, size=3, llm=spec, cache=False, mix={"single_hop": 1}, out=tmp_path / "t.jsonl"
        )
        sent = srv.calls.total() - before
    assert ts.items == [] and ts.report.written == 0
    assert sent == ts.report.usage.calls == ts.report.canary.usage.calls == 1  # one verification, no more
    canary = ts.report.canary
    assert canary is not None and canary.failed and canary.source == "drawn from the run's rows"
    assert {p.kind: p.got for p in canary.probes}["contradicted"] == "supported"
    assert len(ts.report.judge_gate) == 1 and "failed its canaries" in ts.report.judge_gate[0]
    assert "JUDGE GATE FAILED" in str(ts.report)


def test_the_cli_exits_5_and_says_why(corpus, tmp_path):
    with FakeLLMServer(answer="copycat") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        out = tmp_path / "t.jsonl"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "ragmetrics.cli",
                "generate",
                str(corpus),
                "--size",
                "3",
                "--out",
                str(out),
            ]
            + ["--judge", spec, "--no-cache", "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": "test", "RAGMETRICS_CACHE_DIR": str(tmp_path)},
            timeout=300,
        )
    assert proc.returncode == EXIT_JUDGE, proc.stderr
    assert f"the judge {spec} failed its canaries" in proc.stderr
    report = json.loads(proc.stdout)
    assert report["written"] == 0 and report["canary"]["passed"] is False
    assert not out.exists() or out.read_text() == ""


@pytest.mark.parametrize("judge", ["offline", "fake"])
def test_a_reading_verifier_passes_and_writes_as_before(judge, corpus, dummy_keys):
    with FakeLLMServer() as srv:
        spec = "offline" if judge == "offline" else f"openai:gpt-4o-mini@{srv.openai_base_url}"
        ts = generate_sync(corpus, size=4, llm=spec, cache=False)
        off = generate_sync(corpus, size=4, llm=spec, cache=False, judge_gate=False)
    assert ts.report.canary is not None and ts.report.canary.passed
    assert ts.report.canary.source == "drawn from the run's rows"
    assert ts.report.judge_gate == []
    assert [i.model_dump() for i in ts.items] == [i.model_dump() for i in off.items]  # unchanged
    assert ts.report.calls_per_item == off.report.calls_per_item  # the canary is not an item's cost
    if judge == "fake":
        assert ts.report.usage.calls == off.report.usage.calls + 1
        assert ts.report.judge_health is not None and ts.report.judge_health.quote_rate == 1.0


def test_in_batch_mode_the_canary_rides_in_the_first_waves_batches_and_a_copycat_writes_nothing(
    corpus, tmp_path, dummy_keys
):
    options = {"size": 3, "cache": False, "mix": {"single_hop": 1}, "out": tmp_path / "t.jsonl"}
    with FakeLLMServer(answer="copycat") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        ts = generate_sync(
            corpus, llm=spec, batch={"poll_interval_s": 0, "directory": tmp_path / "l"}, **options
        )
        lines = [r for r in srv.requests if r.endpoint == "chat"]
    assert lines and all(r.batch_id is not None for r in lines)  # the canary too: no real-time call
    out = tmp_path / "t.jsonl"
    assert ts.items == [] and (not out.exists() or not out.read_text(encoding="utf-8").strip())
    assert ts.report.canary is not None and ts.report.canary.failed and ts.report.judge_gate
    assert ts.report.usage.calls == len(lines)  # the first wave's calls are counted, none is written
