"""OpenAI embeddings for the fake LLM server (``POST /v1/embeddings``, float or base64).

Embeddings are hashed bags of words, deterministic and normalised, so texts sharing words are similar.
"""

from __future__ import annotations

import base64
import math
import re
import struct
import zlib
from collections.abc import Sequence
from typing import Any

from ragmetrics.text import tokens_for_chars

__all__ = ["BROKEN_EMBEDDINGS", "embed", "embeddings_body", "texts_of"]

_WORD = re.compile(r"\w+")
_FLOAT32 = struct.Struct("<f")
BROKEN_EMBEDDINGS = b'{"object":"list","data":[{"embedding":[0.1,,'
"""A syntactically broken embeddings body."""


def texts_of(value: Any) -> list[str]:
    """The inputs of an embeddings request: a string, strings, or token-id lists (joined as text)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return [" ".join(map(str, value))]
    if isinstance(value, list):
        return [v if isinstance(v, str) else " ".join(map(str, v)) for v in value]
    return []


def embed(text: str, dim: int) -> list[float]:
    """A deterministic, L2-normalised embedding of ``text``.

    Lowercased word unigrams and bigrams are hashed (crc32, with a sign bit) into ``dim`` buckets, so
    texts sharing words are similar. Empty text hashes a fixed placeholder token.
    """
    words = _WORD.findall(text.lower()) or ["<empty>"]
    vector = [0.0] * dim
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    for gram in grams:
        h = zlib.crc32(gram.encode("utf-8"))
        vector[h % dim] += -1.0 if h & 0x80000000 else 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:  # every bucket cancelled out: fall back to one bucket
        vector[zlib.crc32(text.encode("utf-8")) % dim] = 1.0
        return vector
    return [v / norm for v in vector]


def embeddings_body(
    texts: Sequence[str], *, model: str, dim: int, encoding: str
) -> tuple[dict[str, Any], int]:
    """An embeddings reply for ``texts`` and its estimated prompt tokens.

    Args:
        texts: The inputs, in order.
        model: The model name to echo.
        dim: The embedding dimension.
        encoding: ``float`` or ``base64`` (little-endian float32, as the OpenAI SDK asks by default).
    """
    data = []
    for i, text in enumerate(texts):
        vector = embed(text, dim)
        if encoding == "base64":
            packed = b"".join(_FLOAT32.pack(v) for v in vector)
            item: Any = base64.b64encode(packed).decode("ascii")
        else:
            item = vector
        data.append({"object": "embedding", "index": i, "embedding": item})
    tokens = tokens_for_chars(sum(len(t) for t in texts))
    body = {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    return body, tokens
