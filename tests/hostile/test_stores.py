"""Stores read from disk hold data, never code: a planted pickle in a judge cache, an embedding cache or a
batch ledger is never executed (issue 22, item 1)."""

from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmetrics import FaithfulnessMetric
from ragmetrics.errors import CacheError
from ragmetrics.judge.providers.batch_judge import BatchLedger
from ragmetrics.judge.rows import FILE_NAME, FORMAT
from ragmetrics.metrics.evaluators.factory import EmbeddingDistanceEvaluator
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.testing import FakeLLMServer

ROW = {
    "question": "What is Python?",
    "answer": "Python is a compiled language created in 1991.",
    "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
}


class Planted:
    """Unpickling this creates ``marker``: what an attacker's ``__reduce__`` (os.system, ...) would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Path.touch, (self.marker,))


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


def stored_keys(folder: Path) -> list[str]:
    """The keys a store folder holds, whatever its format (diskcache's ``Cache`` table or ours)."""
    keys: list[str] = []
    for path in folder.iterdir():
        if path.suffix not in (".db", ".sqlite3"):
            continue
        db = sqlite3.connect(str(path))
        for table in ("Cache", "entries"):
            try:
                keys += [k for (k,) in db.execute(f"SELECT key FROM {table}") if isinstance(k, str)]
            except sqlite3.OperationalError:
                pass
        db.close()
    assert keys, f"nothing stored in {folder}"
    return keys


def plant(folder: Path, keys: list[str], marker: Path) -> None:
    """A store folder shipped beside a suite: every key holds a pickle, in the old and in the new format."""
    import diskcache

    with diskcache.Cache(str(folder)) as disk:  # what ragmetrics wrote before: pickled values
        for key in keys:
            disk.set(key, Planted(marker))
    db = sqlite3.connect(str(folder / FILE_NAME))  # our own format, with pickles where JSON belongs
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
    blob = pickle.dumps(Planted(marker))
    db.executemany("INSERT INTO entries VALUES (?, ?)", [(k, blob) for k in keys])
    db.commit()
    db.close()


def test_a_planted_judge_cache_is_never_unpickled_and_counts_as_a_miss(srv, tmp_path):
    spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
    clean = tmp_path / "clean"
    first = EvaluationPipeline(
        [FaithfulnessMetric(llm=spec, cache=str(clean))], progress=False, canaries=False
    ).run([ROW])
    poison, marker = tmp_path / "poison", tmp_path / "pwned"
    plant(poison, stored_keys(clean), marker)
    srv.reset()
    again = EvaluationPipeline(
        [FaithfulnessMetric(llm=spec, cache=str(poison))], progress=False, canaries=False
    ).run([ROW])
    assert not marker.exists()
    assert again[0].faithfulness == first[0].faithfulness == 0.5
    assert srv.calls.total() == 2  # the planted entries were misses: asked again, not believed
    # the answers now stored there are JSON text, read back as hits
    srv.reset()
    EvaluationPipeline([FaithfulnessMetric(llm=spec, cache=str(poison))], progress=False, canaries=False).run(
        [ROW]
    )
    assert srv.calls.total() == 0 and not marker.exists()


async def test_a_planted_embedding_cache_is_never_unpickled(srv, tmp_path):
    def evaluator(cache: Path) -> EmbeddingDistanceEvaluator:
        return EmbeddingDistanceEvaluator(f"openai:fake-embedding@{srv.openai_base_url}", 0.5, cache=cache)

    clean = tmp_path / "clean"
    ev = evaluator(clean)
    first = await ev.evaluate("alpha beta", "alpha gamma")
    await ev.aclose()
    poison, marker = tmp_path / "poison", tmp_path / "pwned"
    plant(poison, stored_keys(clean), marker)
    ev = evaluator(poison)
    again = await ev.evaluate("alpha beta", "alpha gamma")
    await ev.aclose()
    assert not marker.exists()
    assert again.score == first.score and again.usage.calls == 1


def test_a_planted_batch_ledger_is_never_unpickled(tmp_path):
    poison, marker = tmp_path / "ledger", tmp_path / "pwned"
    plant(poison, ["batches", "b:batch_1", "c:" + "0" * 48], marker)
    ledger = BatchLedger(poison)
    for read in (
        ledger.open_batches,
        lambda: ledger.custom_ids("batch_1"),
        lambda: ledger.conversation("0" * 48),
    ):
        try:
            read()
        except CacheError as exc:  # a damaged ledger is reported, not guessed at
            assert str(poison) in str(exc)
    ledger.close()
    assert not marker.exists()
