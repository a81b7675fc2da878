import importlib.util
import re

import pytest

from ragmetrics import ConfigError, MissingDependencyError
from ragmetrics.metrics.evaluators.embedding import (
    Embedder,
    SentenceTransformerEmbeddings,
    cosine,
    resolve_embedder,
)
from ragmetrics.metrics.evaluators.factory import (
    CosineSimilarityEvaluator,
    EmbeddingDistanceEvaluator,
    FakeEmbeddings,
    OpenAIEmbeddings,
)
from ragmetrics.testing import FakeReply

_REASONING = re.compile(r"^Cosine similarity: -?\d\.\d{4}, threshold: 0\.8000$")


class CountingEmbedder:
    def __init__(self) -> None:
        self.inner = FakeEmbeddings()
        self.seen: list[list[str]] = []

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.seen.append(list(texts))
        return await self.inner.embed(texts)


async def test_synaptic_example_reasoning_format():
    ev = EmbeddingDistanceEvaluator(FakeEmbeddings(), 0.8)
    result = await ev.evaluate("the cat sat", "the cat sat on the mat", "")
    assert _REASONING.match(result.reasoning), result.reasoning
    assert 0.0 < result.score < 1.0
    assert result.passed == (result.score >= 0.8)
    assert result.details["cosine"] == pytest.approx(result.score)


async def test_identical_texts_score_one_and_unrelated_texts_score_low():
    ev = CosineSimilarityEvaluator(FakeEmbeddings())
    assert (await ev.evaluate("Paris is the capital", "Paris is the capital")).score == pytest.approx(1.0)
    assert (await ev.evaluate("Paris is the capital", "quantum chromodynamics")).score < 0.5
    assert ev.threshold == 0.9  # Cannonade's starting threshold


async def test_fake_embeddings_are_deterministic_and_normalised():
    a, b = await FakeEmbeddings().embed(["hello world", "hello world"])
    assert a == b and sum(x * x for x in a) == pytest.approx(1.0)
    assert (await FakeEmbeddings(dim=32).embed([""]))[0] == [0.0] * 32


async def test_empty_texts():
    ev = EmbeddingDistanceEvaluator(FakeEmbeddings(), 0.8)
    assert (await ev.evaluate("", "")).score == 1.0
    zero = await ev.evaluate("", "something")
    assert zero.score == 0.0 and "zero vector" in zero.reasoning


async def test_vectors_are_memoised_per_text():
    embedder = CountingEmbedder()
    ev = EmbeddingDistanceEvaluator(embedder, 0.5)
    await ev.evaluate("a b c", "reference text")
    await ev.evaluate("a b d", "reference text")
    assert embedder.seen == [["a b c", "reference text"], ["a b d"]]


async def test_negate():
    ev = EmbeddingDistanceEvaluator(FakeEmbeddings(), 0.8, negate=True)
    result = await ev.evaluate("same words here", "same words here")
    assert result.score == pytest.approx(0.0, abs=1e-12) and result.passed is False


def test_cosine_helper():
    assert cosine([1, 0], [0, 1]) == 0.0
    assert cosine([1, 0], [-1, 0]) == -1.0
    assert cosine([0, 0], [1, 0]) is None


def test_resolve_embedder_specs():
    assert isinstance(resolve_embedder("fake"), FakeEmbeddings)
    assert resolve_embedder("fake:64").dim == 64
    emb = resolve_embedder("openai:text-embedding-3-small@http://127.0.0.1:9/v1")
    assert isinstance(emb, OpenAIEmbeddings) and emb.base_url == "http://127.0.0.1:9/v1"
    fake = FakeEmbeddings()
    assert resolve_embedder(fake) is fake
    assert isinstance(CountingEmbedder(), Embedder)
    with pytest.raises(ConfigError, match="unknown embedder"):
        resolve_embedder("word2vec")
    with pytest.raises(ConfigError):
        resolve_embedder(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        EmbeddingDistanceEvaluator(FakeEmbeddings(), 2.0)


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None, reason="the embeddings extra is installed"
)
def test_local_model_without_the_extra_names_the_install_command():
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragmetrics\[embeddings\]'"):
        SentenceTransformerEmbeddings()
    with pytest.raises(MissingDependencyError):
        EmbeddingDistanceEvaluator()  # the default is the local model


async def test_openai_compatible_embeddings_over_loopback(fake_llm_server):
    embedder = OpenAIEmbeddings("fake-embedding", base_url=fake_llm_server.openai_base_url, api_key="test")
    ev = EmbeddingDistanceEvaluator(embedder, 0.8)
    try:
        vectors = await embedder.embed(["alpha beta", "gamma"])
        assert len(vectors) == 2 and len(vectors[0]) == fake_llm_server.embedding_dim
        result = await ev.evaluate("alpha beta", "alpha beta")
        assert result.score == pytest.approx(1.0) and result.passed
    finally:
        await ev.aclose()  # the disk cache of vectors too
        await embedder.aclose()
        await embedder.aclose()  # safe twice


async def test_embedding_provider_failure_is_a_result_with_status(fake_llm_server):
    fake_llm_server.on("embeddings", FakeReply(status=429, retry_after=0))
    embedder = OpenAIEmbeddings(
        "fake-embedding", base_url=fake_llm_server.openai_base_url, api_key="test", max_retries=0
    )
    ev = EmbeddingDistanceEvaluator(embedder, 0.8)
    try:
        result = await ev.evaluate("a", "b")
    finally:
        await ev.aclose()  # the embedder's client and the disk cache of vectors
    assert result.score is None and result.status == "rate_limited" and result.passed is None
    assert "429" in (result.message or "")
