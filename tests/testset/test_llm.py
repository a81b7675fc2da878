"""The LLM generator through the fake server: calls per item, verification, rejects, budget, resume."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from ragmetrics.testing import FakeLLMServer, FakeReply
from ragmetrics.testset import generate_sync
from tests.testset.docs import write_corpus

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "docs")


@pytest.fixture
def cargo(tmp_path):
    path = tmp_path / "cargo.md"
    path.write_text(
        "Cargo is the package manager of Rust. Cargo downloads dependencies and compiles packages.\n"
    )
    return path


def _tasks(srv: FakeLLMServer) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in srv.requests:
        out[r.task or "?"] = out.get(r.task or "?", 0) + 1
    return out


def test_two_calls_per_accepted_item_and_every_call_accounted(corpus, tmp_path, fake_llm_server, openai_spec):
    ts = generate_sync(corpus, size=6, llm=openai_spec, out=tmp_path / "t.jsonl", cache=False)
    assert ts.report.written == 6
    assert ts.report.generator.startswith("openai:gpt-4o-mini@")
    # generation (the reference split into claims in the same reply) + verification per accepted
    # item; rejects cost their own calls on top (at most three: a reference whose claims do not
    # cover it is split again by the claim extraction)
    assert ts.report.canary is not None and ts.report.canary.usage.calls == 1  # the verifier's canary
    assert ts.report.usage.calls - 1 <= 2 * len(ts.items) + 3 * ts.report.rejected
    assert ts.report.calls_per_item is not None
    assert ts.report.calls_per_item <= 2.0 + 3 * ts.report.rejected / 6
    assert "claims.extract" not in _tasks(fake_llm_server)  # every reference's own claims checked out
    for item in ts.items:  # the claims kept are the generator's, each quoted from its chunk
        for claim in item.claims:
            assert claim.quote and claim.quote in item.reference_contexts[claim.context_index]


def test_the_fake_server_counts_match_the_report(corpus, tmp_path, fake_llm_server, openai_spec):
    ts = generate_sync(corpus, size=5, llm=openai_spec, cache=False, mix={"single_hop": 1})
    tasks = _tasks(fake_llm_server)
    assert sum(tasks.values()) == ts.report.usage.calls == fake_llm_server.calls.total()
    assert tasks["testset.generate"] == ts.report.candidates  # one generation per candidate
    assert tasks.get("claims.extract", 0) <= tasks["testset.generate"]
    assert ts.report.written == 5


def test_a_judge_that_does_not_read_writes_no_filler(corpus, tmp_path, dummy_keys):
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        gated = generate_sync(corpus, size=6, llm=spec, out=tmp_path / "g.jsonl", cache=False)
        # the gate off: every candidate is tried, and verification rejects each
        ts = generate_sync(corpus, size=6, llm=spec, out=tmp_path / "t.jsonl", cache=False, judge_gate=False)
    assert gated.items == [] and gated.report.candidates == 0 and gated.report.judge_gate  # its canary
    assert gated.report.usage.calls == gated.report.canary.usage.calls  # nothing paid past the canary
    assert ts.items == []
    assert not (tmp_path / "t.jsonl").exists() or (tmp_path / "t.jsonl").read_text() == ""
    rejects = [json.loads(x) for x in (tmp_path / "t.rejects.jsonl").read_text().splitlines()]
    assert len(rejects) == ts.report.rejected > 0
    assert {r["reason"] for r in rejects} <= {"quote_not_found", "answerable", "unsupported", "no_question"}
    assert all(r["detail"] for r in rejects)


QUOTE = "Cargo is the package manager of Rust."
INVENTED = "Cargo was written in 1962 by Ada Lovelace on Mars."


def _one_candidate(srv: FakeLLMServer, spec: str, doc: Path, question: str, reference: str, claims: list):
    """A one-slot run on ``doc`` whose generation answers ``question`` with ``reference``, quoting
    :data:`QUOTE`; ``claims``: the claims the generator says the reference holds, as (text, span)."""
    generated = {"question": question, "reference": reference, "quotes": [QUOTE], "missing_fact": ""}
    generated["claims"] = [{"text": text, "span": span} for text, span in claims]
    srv.on("testset.generate", FakeReply(json=generated))
    # the calls of one candidate are counted: no canary beside them
    return generate_sync(
        [doc], size=1, llm=spec, cache=False, mix={"single_hop": 1}, max_candidates=1, judge_gate=False
    )


def test_a_reference_that_says_more_than_its_chunk_is_rejected_by_the_claims(
    cargo, fake_llm_server, openai_spec
):
    claims = [(QUOTE, QUOTE), (INVENTED, INVENTED)]
    ts = _one_candidate(
        fake_llm_server, openai_spec, cargo, "What does Cargo do?", f"{QUOTE} {INVENTED}", claims
    )
    assert ts.items == []
    assert [r.reason for r in ts.rejects] == ["unsupported"]
    assert "1962" in ts.rejects[0].detail
    # the generator's claims cover the reference: no extraction call
    assert _tasks(fake_llm_server) == {"testset.generate": 1, "claims.verify": 1}


def test_a_reference_whose_claims_leave_a_statement_out_is_split_again_and_rejected(
    cargo, fake_llm_server, openai_spec
):
    """A generator cannot slip an unchecked statement past verification by leaving it out of its claims."""
    reference = f"{QUOTE} {INVENTED}"
    ts = _one_candidate(
        fake_llm_server, openai_spec, cargo, "What does Cargo do?", reference, [(QUOTE, QUOTE)]
    )
    assert ts.items == []
    assert [r.reason for r in ts.rejects] == ["unsupported"]
    assert "1962" in ts.rejects[0].detail  # the claim extraction found it, the verification rejected it
    assert _tasks(fake_llm_server) == {"testset.generate": 1, "claims.extract": 1, "claims.verify": 1}


def test_claims_whose_spans_are_not_in_the_reference_are_not_trusted(cargo, fake_llm_server, openai_spec):
    claims = [(QUOTE, "Cargo downloads dependencies from the moon.")]
    ts = _one_candidate(
        fake_llm_server, openai_spec, cargo, "Which tool manages Rust packages?", QUOTE, claims
    )
    assert [i.reference for i in ts.items] == [QUOTE]  # written, on the claim extraction's own claims
    assert _tasks(fake_llm_server) == {"testset.generate": 1, "claims.extract": 1, "claims.verify": 1}


def test_a_question_that_gives_its_answer_away_is_rejected_before_verification(
    cargo, fake_llm_server, openai_spec
):
    ts = _one_candidate(
        fake_llm_server, openai_spec, cargo, f"Is it true that {QUOTE}", QUOTE, [(QUOTE, QUOTE)]
    )
    assert [r.reason for r in ts.rejects] == ["answer_in_question"]
    assert _tasks(fake_llm_server) == {"testset.generate": 1}  # the free check ran before any verification


def test_max_cost_stops_before_the_budget(corpus, openai_spec):
    ts = generate_sync(corpus, size=10, llm=openai_spec, cache=False, max_cost_usd=0.0005)
    assert ts.report.usage.cost_usd <= 0.0005 * 1.5
    assert ts.report.written < 10
    assert any("budget" in n for n in ts.report.notes)


def _run_cli(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragmetrics.cli", "generate", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_sigkill_half_way_then_a_rerun_pays_only_for_the_missing_items(corpus, tmp_path, dummy_keys):
    with FakeLLMServer() as srv:
        srv.latency = 0.05  # so the kill lands half way
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGMETRICS_CACHE_DIR": str(tmp_path / "cache")}
        args = [
            str(corpus),
            "--size",
            "8",
            "--out",
            str(tmp_path / "t.jsonl"),
            "--judge",
            spec,
            "--concurrency",
            "2",
        ]
        args += ["--quiet"]
        # an uninterrupted run into its own cache: what the test set costs in one go
        clean_env = {**env, "RAGMETRICS_CACHE_DIR": str(tmp_path / "clean-cache")}
        clean = _run_cli([*args[:4], str(tmp_path / "clean.jsonl"), *args[5:]], clean_env)
        assert clean.wait(timeout=300) == 0
        clean_calls = srv.calls.total()
        srv.reset()
        proc = _run_cli(args, env)
        out = tmp_path / "t.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_bytes().splitlines()) >= 2:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        killed_calls = srv.calls.total()
        written_before = len(out.read_bytes().splitlines())
        assert 2 <= written_before < 8, "killed half way"
        srv.reset()
        rerun = _run_cli(args, env)
        assert rerun.wait(timeout=300) == 0
        rerun_calls = srv.calls.total()
    assert out.read_text() == (tmp_path / "clean.jsonl").read_text()  # the same items, in the same order
    # every call of the clean run was made once over the killed run and the rerun together, plus at most
    # the requests in flight at the kill (sent, never answered, so never cached)
    assert killed_calls + rerun_calls <= clean_calls + 2 * 3
    assert rerun_calls < clean_calls


def _same_question_thrice(tmp_path: Path) -> list[Path]:
    """Three documents that each hold :data:`QUOTE`, beside a sentence of their own."""
    own = ["Rustup installs the toolchain.", "Clippy lints the code.", "Rustfmt formats the code."]
    paths = []
    for i, sentence in enumerate(own):
        path = tmp_path / f"doc{i}.md"
        path.write_text(f"{QUOTE} {sentence}\n")
        paths.append(path)
    return paths


def test_near_duplicate_questions_are_dropped_with_the_reason_kept(tmp_path, fake_llm_server, openai_spec):
    # three wordings of one question, one per generation: only the first may be written
    wordings = iter(["What does Cargo do?", "So, what does Cargo do?", "what does cargo do ?"])

    def generated(_request):
        question = next(wordings)
        return FakeReply(
            json={
                "question": question,
                "reference": QUOTE,
                "quotes": [QUOTE],
                "missing_fact": "",
                "claims": [{"text": QUOTE, "span": QUOTE}],
            }
        )

    fake_llm_server.on("testset.generate", generated)
    out = tmp_path / "t.jsonl"
    ts = generate_sync(
        _same_question_thrice(tmp_path),
        size=3,
        llm=openai_spec,
        out=out,
        cache=False,
        mix={"single_hop": 1},
        max_candidates=3,
    )
    (item,) = ts.items  # whichever wording came first (the candidates run concurrently)
    assert len(out.read_text().splitlines()) == 1
    rejects = [json.loads(x) for x in (tmp_path / "t.rejects.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rejects] == ["near_duplicate", "near_duplicate"]
    assert all(item.id in r["detail"] for r in rejects)  # each names the item it repeats
    assert ts.report.rejects == {"near_duplicate": 2}


def test_a_users_sdk_client_and_judge_object_generate_and_are_left_open(corpus, fake_llm_server, dummy_keys):
    import openai

    from ragmetrics.judge import resolve_judge

    client = openai.AsyncOpenAI(base_url=fake_llm_server.openai_base_url, api_key="k", max_retries=0)
    judge = resolve_judge(f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}", cache=False)
    options: dict = {"cache": False, "mix": {"single_hop": 1}}
    with warnings.catch_warnings(record=True):  # what earlier tests left is not counted
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        by_client = [generate_sync(corpus, size=2, llm=client, **options) for _ in "ab"]
        by_judge = [generate_sync(corpus, size=2, llm=judge, **options) for _ in "ab"]
        del judge  # what it still holds is garbage now
        gc.collect()
    # each run closes this loop's SDK client, its own copy of the user's (the user's judge's were left
    # open, one idle connection per run, for the garbage collector to warn about in a later test)
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    # the second run of each works: the run did not close what the user passed in
    runs = [*by_client, *by_judge]
    assert [ts.report.written for ts in runs] == [2, 2, 2, 2]
    assert sum(ts.report.usage.calls for ts in runs) == fake_llm_server.calls.total()
    first = [i.model_dump() for i in runs[0].items]
    assert all([i.model_dump() for i in ts.items] == first for ts in runs[1:])
    assert not client.is_closed()
