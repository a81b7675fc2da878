"""Batch mode against lost replies, bad result lines and damaged ledgers (issue 22, items 4-6): a batch is
paid for once, a bad line is its item's status, and damage is reported, never read as an empty ledger."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmetrics.cli.app import main
from ragmetrics.testing import FakeLLMServer, FakeReply

ROWS = [
    {
        "question": f"Where is city {n}?",
        "answer": f"City {n} is in country {n}. It has {n} bridges.",
        "contexts": [f"City {n} is a city in country {n}, with {n} bridges."],
    }
    for n in range(20)
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def srv(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy-key")
    server.reset()
    yield server
    server.reset()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def judge_flags(srv: FakeLLMServer, provider: str) -> list[str]:
    if provider == "anthropic":
        return ["--judge", f"anthropic:claude-haiku-4-5@{srv.anthropic_base_url}"]
    return ["--judge", f"openai:gpt-4o-mini@{srv.openai_base_url}"]


def run(srv, provider, data, tmp_path, capsys, *extra: str) -> tuple[int, str]:
    args = [
        "eval",
        str(data),
        *judge_flags(srv, provider),
        "--metrics",
        "faithfulness",
        "--batch",
        "--no-canaries",
    ]
    args += ["--poll-interval", "0", "--batch-dir", str(tmp_path / "ledger"), "--quiet", *extra]
    code = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def creates(srv: FakeLLMServer) -> int:
    return sum(
        1 for r in srv.requests if r.method == "POST" and r.path in ("/v1/batches", "/v1/messages/batches")
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_lost_create_replies_make_one_provider_batch_per_round_over_three_runs(
    srv, provider, data, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "cache"))
    srv.batch_plan(polls=1, lose_creates=1000)  # every create is carried out, its reply lost
    code, err = run(srv, provider, data, tmp_path, capsys)
    assert code == 0, err
    for _ in range(2):
        code, err = run(srv, provider, data, tmp_path, capsys, "--resume")
        assert code == 0, err
    # two rounds (extract, verify) of 20 requests: two batches, each created once, no request sent twice
    assert [len(b.custom_ids) for b in srv.batches] == [20, 20]
    ids = [c for b in srv.batches for c in b.custom_ids]
    assert len(ids) == len(set(ids))
    assert creates(srv) == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_lost_create_that_cannot_be_looked_up_is_looked_up_by_the_next_run_not_created_again(
    srv, provider, data, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "cache"))
    srv.batch_plan(polls=1, lose_creates=1000)
    listing = srv.on(lambda r: r.method == "GET" and r.path.endswith("/batches"), FakeReply(status=500))
    code, err = run(srv, provider, data, tmp_path, capsys)
    assert code == 4 and "--resume" in err and "may exist" in err, err
    assert len(srv.batches) == 1 and creates(srv) == 1
    without_resume, err = run(srv, provider, data, tmp_path, capsys)
    assert without_resume == 2 and "being created" in err  # refuses rather than pay twice
    listing.cancel()
    code, err = run(srv, provider, data, tmp_path, capsys, "--resume")
    assert code == 0, err
    assert len(srv.batches) == 2 and creates(srv) == 2  # round 1's batch was found, not created again
    code, err = run(srv, provider, data, tmp_path, capsys, "--resume")
    assert code == 0, err
    assert [len(b.custom_ids) for b in srv.batches] == [20, 20] and creates(srv) == 2


def damage_three_lines(line: bytes) -> bytes:
    """The output lines of three requests, damaged: a text status, an overflowing status, not JSON."""
    for n, (old, new) in enumerate(
        ((b'"status_code":200', b'"status_code":"abc"'), (b'"status_code":200', b'"status_code":1e999'))
    ):
        if f'batch_req_fake{n}"'.encode() in line:
            return line.replace(old, new)
    if b'"batch_req_fake2"' in line:
        return line[: len(line) // 2]  # cut: not JSON, its custom_id still readable
    return line


def test_bad_batch_output_lines_are_their_items_status_and_resume_reads_the_rest(
    srv, data, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "cache"))
    srv.batch_plan(polls=1, edit_line=damage_three_lines)
    out = tmp_path / "out.jsonl"
    code, err = run(srv, "openai", data, tmp_path, capsys, "--out", str(out))
    assert code in (0, 1), err  # 1: the quality gate counts the unscored rows
    records = [json.loads(x) for x in out.read_text().splitlines()]
    scored = [r for r in records if r["scores"]["faithfulness"] is not None]
    # three lines damaged in each round's batch: rows 0-2 (extraction), then rows 3-5 (verification)
    assert len(records) == 20 and len(scored) == 14
    statuses = [e["status"] for r in records for e in r["errors"]]
    assert statuses == ["provider_error"] * 6
    assert any("status_code" in e["message"] for r in records for e in r["errors"])
    code, err = run(srv, "openai", data, tmp_path, capsys, "--resume")
    assert code in (0, 1), err


def pending_ledger(srv, data, tmp_path, capsys) -> Path:
    """A ledger with one batch submitted and still running (the run stopped at --max-wait)."""
    srv.batch_plan(polls=10**6)
    code, err = run(srv, "openai", data, tmp_path, capsys, "--max-wait", "0")
    assert code == 3, err
    (folder,) = (tmp_path / "ledger").iterdir()
    return folder


def damage_truncate(folder: Path) -> None:
    (folder / "ragmetrics.sqlite3").write_bytes(b"")


def damage_half(folder: Path) -> None:
    path = folder / "ragmetrics.sqlite3"
    path.write_bytes(path.read_bytes()[:1500])


def damage_junk_value(folder: Path) -> None:
    import sqlite3

    db = sqlite3.connect(str(folder / "ragmetrics.sqlite3"))
    db.execute("UPDATE entries SET value = 'not json {' WHERE key = 'batches'")
    db.commit()
    db.close()


def damage_delete(folder: Path) -> None:
    (folder / "ragmetrics.sqlite3").unlink()


@pytest.mark.parametrize("damage", [damage_truncate, damage_half, damage_junk_value, damage_delete])
def test_a_damaged_ledger_is_reported_naming_the_file_and_nothing_is_sent_again(
    srv, data, tmp_path, capsys, monkeypatch, damage
):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "cache"))
    folder = pending_ledger(srv, data, tmp_path, capsys)
    assert len(srv.batches) == 1
    damage(folder)
    for extra in (["--resume"], []):
        code, err = run(srv, "openai", data, tmp_path, capsys, *extra)
        assert code == 4, err
        assert "ragmetrics.sqlite3" in err and "delete" in err, err
    assert len(srv.batches) == 1 and creates(srv) == 1  # never resubmitted
