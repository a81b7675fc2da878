"""The embedding disk cache, through the real openai SDK against the loopback fake server."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ragmetrics import ConfigError
from ragmetrics.metrics.evaluators._embedding_cache import embedding_cache_key
from ragmetrics.metrics.evaluators.embedding import CachingEmbedder, resolve_embedder
from ragmetrics.metrics.evaluators.factory import EmbeddingDistanceEvaluator, FakeEmbeddings, OpenAIEmbeddings
from ragmetrics.testing import FakeReply

DUMMY_KEY = "sk-test-dummy-key-never-sent-anywhere-real"  # the dummy_keys fixture's OPENAI_API_KEY


def _embeddings(server) -> int:
    return server.calls["embeddings"]


def _evaluator(server, cache, model: str = "fake-embedding") -> EmbeddingDistanceEvaluator:
    return EmbeddingDistanceEvaluator(f"openai:{model}@{server.openai_base_url}", 0.5, cache=cache)


async def test_second_evaluation_makes_no_request_and_a_fresh_evaluator_reads_the_disk(
    fake_llm_server, dummy_keys, tmp_path
):
    ev = _evaluator(fake_llm_server, tmp_path)
    try:
        first = await ev.evaluate("alpha beta", "alpha gamma")
        assert _embeddings(fake_llm_server) == 1
        assert first.usage.calls == 1 and first.usage.prompt_tokens > 0 and first.usage.cached_calls == 0
        again = await ev.evaluate("alpha beta", "alpha gamma")
        assert _embeddings(fake_llm_server) == 1
        assert again.usage.calls == 0 and again.usage.cached_calls == 1
        assert again.score == first.score
    finally:
        await ev.aclose()

    fresh = _evaluator(fake_llm_server, tmp_path)
    try:
        from_disk = await fresh.evaluate("alpha beta", "alpha gamma")
        assert _embeddings(fake_llm_server) == 1  # served from disk
        assert from_disk.score == first.score and from_disk.usage.cached_calls == 1
        partly = await fresh.evaluate("alpha beta", "delta")  # only the new text is sent
        assert _embeddings(fake_llm_server) == 2
        assert fake_llm_server.requests[-1].body["input"] == ["delta"]
        assert partly.usage.calls == 1
        assert fresh.embedder.stats.hits == 3 and fresh.embedder.stats.misses == 1
    finally:
        await fresh.aclose()


async def test_the_default_cache_is_under_the_cache_dir(fake_llm_server, dummy_keys, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    ev = EmbeddingDistanceEvaluator(f"openai:fake-embedding@{fake_llm_server.openai_base_url}", 0.5)
    try:
        await ev.evaluate("one", "two")
    finally:
        await ev.aclose()
    assert ev.embedder.directory == tmp_path / "embeddings"
    assert any((tmp_path / "embeddings").iterdir())


async def test_changed_model_or_dimensions_miss(fake_llm_server, dummy_keys, tmp_path):
    for model in ("fake-embedding", "fake-embedding", "other-embedding"):
        ev = _evaluator(fake_llm_server, tmp_path, model)
        try:
            await ev.evaluate("same text", "same reference")
        finally:
            await ev.aclose()
    assert _embeddings(fake_llm_server) == 2
    assert [r.model for r in fake_llm_server.requests] == ["fake-embedding", "other-embedding"]

    sized = CachingEmbedder(
        OpenAIEmbeddings("fake-embedding", base_url=fake_llm_server.openai_base_url, dimensions=32), tmp_path
    )
    try:
        (vector,) = await sized.embed(["same text"])
    finally:
        await sized.aclose()
    assert len(vector) == 32 and _embeddings(fake_llm_server) == 3


def test_key_depends_on_every_identity_field_and_the_text():
    base = {"provider": "openai", "model": "m", "base_url": "http://h/v1", "dimensions": None}
    key = embedding_cache_key(base, "text")
    assert key == embedding_cache_key(dict(reversed(base.items())), "text")  # canonical JSON
    for field, value in [("provider", "local"), ("model", "n"), ("base_url", None), ("dimensions", 64)]:
        assert embedding_cache_key({**base, field: value}, "text") != key, field
    assert embedding_cache_key(base, "text ") != key


async def test_api_key_never_reaches_the_cache_files(fake_llm_server, dummy_keys, tmp_path):
    assert os.environ["OPENAI_API_KEY"] == DUMMY_KEY
    explicit = "sk-explicit-secret-key-1234567890"
    for api_key in (None, explicit):  # from the environment, then passed in
        embedder = OpenAIEmbeddings(
            "fake-embedding", base_url=fake_llm_server.openai_base_url, api_key=api_key
        )
        assert "api_key" not in str(embedder.cache_identity)
        ev = EmbeddingDistanceEvaluator(embedder, 0.5, cache=tmp_path)
        try:
            await ev.evaluate(f"text for {api_key}", "reference")
        finally:
            await ev.aclose()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files
    for path in files:
        blob = path.read_bytes()
        for secret in (DUMMY_KEY, explicit):
            assert secret.encode() not in blob, path
            assert secret[-12:].encode() not in blob, path


async def test_concurrent_identical_requests_are_made_once(fake_llm_server, dummy_keys, tmp_path):
    fake_llm_server.on("embeddings", FakeReply(delay=0.2))
    ev = _evaluator(fake_llm_server, tmp_path)
    try:
        results = await asyncio.gather(*(ev.evaluate("shared answer", "shared reference") for _ in range(8)))
    finally:
        await ev.aclose()
    assert _embeddings(fake_llm_server) == 1
    assert len({r.score for r in results}) == 1
    assert sum(r.usage.calls for r in results) == 1
    assert sum(r.usage.cached_calls for r in results) == 7
    assert ev.embedder.stats.shared == 14 and ev.embedder.stats.misses == 2


async def test_a_failed_request_fails_every_joined_request_and_is_not_cached(
    fake_llm_server, dummy_keys, tmp_path
):
    fake_llm_server.on("embeddings", FakeReply(status=500, delay=0.1), times=1)
    embedder = OpenAIEmbeddings("fake-embedding", base_url=fake_llm_server.openai_base_url, max_retries=0)
    ev = EmbeddingDistanceEvaluator(embedder, 0.5, cache=tmp_path)
    try:
        failed = await asyncio.gather(*(ev.evaluate("x", "y") for _ in range(3)))
        assert [r.status for r in failed] == ["provider_error"] * 3
        assert _embeddings(fake_llm_server) == 1
        ok = await ev.evaluate("x", "y")
        assert ok.status == "ok" and _embeddings(fake_llm_server) == 2
    finally:
        await ev.aclose()


async def test_cache_false_still_works_in_memory(fake_llm_server, dummy_keys, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    ev = _evaluator(fake_llm_server, False)
    try:
        first = await ev.evaluate("memo me", "and me")
        second = await ev.evaluate("memo me", "and me")
    finally:
        await ev.aclose()
    assert first.status == "ok" and second.score == first.score
    assert _embeddings(fake_llm_server) == 1  # the in-memory memo remains
    assert ev.embedder.directory is None and not list(tmp_path.iterdir())

    fresh = _evaluator(fake_llm_server, False)
    try:
        await fresh.evaluate("memo me", "and me")
    finally:
        await fresh.aclose()
    assert _embeddings(fake_llm_server) == 2  # nothing on disk


async def test_fake_and_unnamed_embedders_stay_off_disk(tmp_path):
    class Unnamed:
        async def embed(self, texts: list[str]) -> list[list[float]]:
            return await FakeEmbeddings().embed(texts)

    for embedder in (FakeEmbeddings(), Unnamed()):
        ev = EmbeddingDistanceEvaluator(embedder, 0.5, cache=tmp_path / "c")
        result = await ev.evaluate("a b", "a b")
        assert result.score == pytest.approx(1.0) and result.usage.calls == 1
        assert (await ev.evaluate("a b", "a b")).usage.cached_calls == 1
        assert ev.embedder.directory is None
        await ev.aclose()
    assert not (tmp_path / "c").exists()


def test_resolve_embedder_cache_option(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    plain = resolve_embedder("openai:m@http://127.0.0.1:9/v1")
    assert isinstance(plain, OpenAIEmbeddings)
    cached = resolve_embedder("openai:m@http://127.0.0.1:9/v1", cache=True)
    assert isinstance(cached, CachingEmbedder) and cached.directory == tmp_path / "embeddings"
    assert resolve_embedder(cached, cache=True) is cached
    assert EmbeddingDistanceEvaluator(cached).embedder is cached
    assert resolve_embedder("fake", cache=Path(tmp_path / "x")).directory is None
    with pytest.raises(ConfigError, match="embedding cache"):
        resolve_embedder("fake", cache=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="cosine_similarity"):
        EmbeddingDistanceEvaluator("fake", cache="")


async def test_servers_behind_openai_base_url_do_not_share_cache_entries(
    fake_llm_server, dummy_keys, tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm_server.openai_base_url)
    behind_variable = CachingEmbedder(OpenAIEmbeddings("fake-embedding"), tmp_path)
    try:
        assert len(await behind_variable.embed(["a text"])) == 1  # the SDK went to the loopback server
    finally:
        await behind_variable.aclose()
    assert _embeddings(fake_llm_server) == 1
    named = behind_variable.inner.cache_identity
    assert named["base_url"] == fake_llm_server.openai_base_url  # the variable's URL names the vectors
    monkeypatch.delenv("OPENAI_BASE_URL")
    plain = OpenAIEmbeddings("fake-embedding")
    assert plain.cache_identity["base_url"] is None
    assert embedding_cache_key(plain.cache_identity, "a text") != embedding_cache_key(named, "a text")
