"""ragmetrics.generate with the offline extractive generator, and `ragmetrics generate` on a folder."""

from __future__ import annotations

import json

import pytest

import ragmetrics
from ragmetrics.cli import main
from ragmetrics.metrics.claims.engine import quote_found
from ragmetrics.testset import TestsetItem, generate, generate_sync
from ragmetrics.testset.verify import answer_in_question
from tests.testset.docs import write_corpus


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "docs")


def test_offline_generation_is_deterministic_and_every_item_is_grounded(corpus, tmp_path):
    a = generate_sync(corpus, size=8, llm="offline", out=tmp_path / "a.jsonl")
    b = generate_sync(corpus, size=8, llm="offline", out=tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()
    assert a.report.written == 8 == len(a.items)
    assert len((tmp_path / "a.jsonl").read_text().splitlines()) == 8
    assert [i.model_dump() for i in a.items] == [i.model_dump() for i in b.items]
    questions = [i.question for i in a.items]
    assert len(set(questions)) == len(questions)
    for item in a.items:
        assert item.generator == "extractive"
        assert item.reference_context_ids and len(item.reference_context_ids) == len(item.reference_contexts)
        assert all(cid.split("#")[0] in item.source for cid in item.reference_context_ids)
        assert answer_in_question(item.question, item.reference, [c.quote for c in item.claims]) is None
        if item.kind == "unanswerable":
            assert item.claims == [] and "do not say" in item.reference
            continue
        assert item.claims, item
        for claim in item.claims:
            assert quote_found(claim.quote, item.reference_contexts[claim.context_index])
        if item.kind in ("multi_hop", "comparison"):
            assert len(item.reference_contexts) == 2
            assert {c.context_index for c in item.claims} == {0, 1}


def test_the_mix_and_styles_are_followed(corpus):
    ts = generate_sync(
        corpus,
        size=6,
        llm="offline",
        mix={"single_hop": 1, "summary": 1},
        styles=["plain", "conversational"],
        cache=False,
    )
    assert ts.report.kinds_requested == {"single_hop": 3, "summary": 3}
    assert ts.report.kinds == {"single_hop": 3, "summary": 3}
    assert {i.style for i in ts.items} == {"plain", "conversational"}
    assert all(i.question.startswith("Hi, I was wondering") for i in ts.items if i.style == "conversational")
    assert ts.report.documents_covered == ts.report.documents_total == 4


async def test_the_top_level_names_and_the_async_form(corpus):
    assert ragmetrics.generate is generate and ragmetrics.generate_sync is generate_sync
    ts = await ragmetrics.generate(corpus, size=3, llm="offline", mix={"single_hop": 1}, cache=False)
    assert [i.kind for i in ts.items] == ["single_hop"] * 3


def test_cli_generate_writes_a_test_set_that_eval_scores(corpus, tmp_path, capsys):
    out = tmp_path / "ts" / "testset.jsonl"
    code = main(["generate", str(corpus), "--size", "6", "--out", str(out), "--judge", "offline", "--quiet"])
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6
    for row in rows:
        TestsetItem.model_validate(row)
    # the user's app fills answer and contexts; here a perfect system: the reference from its own chunks
    filled = tmp_path / "filled.jsonl"
    filled.write_text(
        "".join(
            json.dumps({**r, "answer": r["reference"], "contexts": r["reference_contexts"]}) + "\n"
            for r in rows
        )
    )
    capsys.readouterr()
    code = main(
        ["eval", str(filled), "--judge", "offline", "--metrics", "faithfulness,context_recall", "--json"]
    )
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary
    assert summary["run"]["samples"] == 6 and summary["run"]["failed"] == 0
    assert summary["aggregates"]["faithfulness"]["mean"] == 1.0
    assert summary["aggregates"]["context_recall"]["count"] == 6


def test_cli_generate_usage_errors(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "nothing"), "--out", str(tmp_path / "t.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["generate", str(tmp_path), "--out", str(tmp_path / "t.csv")]) == 2
    assert "--out" in capsys.readouterr().err
    (tmp_path / "a.txt").write_text("Alpha beta gamma delta. Epsilon zeta eta theta.")
    assert (
        main(["generate", str(tmp_path / "a.txt"), "--out", str(tmp_path / "t.jsonl"), "--mix", "nope=1"])
        == 2
    )
    assert "unknown kind" in capsys.readouterr().err


def test_the_report_counts_kinds_documents_coverage_rejects_and_resumes(corpus, tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    first = generate_sync(corpus, size=3, llm="offline", out=out, mix={"single_hop": 1})
    again = generate_sync(corpus, size=5, llm="offline", out=out, mix={"single_hop": 1})
    rep = again.report
    assert (rep.requested, rep.written, rep.resumed) == (5, 5, 3)
    assert [i.id for i in again.items[:3]] == [i.id for i in first.items]
    assert sum(rep.kinds.values()) == 5 and sum(rep.documents.values()) >= 5
    assert rep.documents_covered == len(rep.documents) <= rep.documents_total
    assert 0 < rep.chunks_covered <= rep.chunks_total
    assert rep.candidates == rep.written + rep.rejected and sum(rep.rejects.values()) == rep.rejected
    text = str(rep)
    assert "5/5 items (3 resumed)" in text and "coverage:" in text and "rejected:" in text
    report = tmp_path / "report.json"
    code = main(["generate", str(corpus), "--size", "5", "--out", str(out), "--judge", "offline"])
    assert code == 0 and "5/5 items (5 resumed)" in capsys.readouterr().out
    code = main(
        [
            "generate",
            str(corpus),
            "--size",
            "5",
            "--out",
            str(out),
            "--fresh",
            "--quiet",
            "--report",
            str(report),
        ]
    )
    assert code == 0 and json.loads(report.read_text())["resumed"] == 0


def test_estimate_prices_the_run_and_calls_nothing(corpus, tmp_path, capsys, fake_llm_server, dummy_keys):
    spec = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    code = main(
        [
            "generate",
            str(corpus),
            "--size",
            "4",
            "--out",
            str(tmp_path / "t.jsonl"),
            "--judge",
            spec,
            "--estimate",
            "--json",
        ]
    )
    est = json.loads(capsys.readouterr().out)
    assert code == 0 and fake_llm_server.calls.total() == 0
    assert (
        4 * 2 <= est["calls"] <= 4 * 3
    )  # generation, extraction, verification (no extraction: unanswerable)
    assert est["cost_usd"] > 0 and est["prompt_tokens"] > 0
    assert not (tmp_path / "t.jsonl").exists()
