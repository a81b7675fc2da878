"""Which endpoint a request path names: the plain provider paths and the cloud providers' own.

Besides ``/v1/chat/completions``, ``/v1/messages``, ``/v1/embeddings`` and ``/v1/models``, the fake
server answers the paths the SDKs use for hosted models, so their real clients can be pointed at it:

- Azure OpenAI: ``/openai/deployments/DEPLOYMENT/chat/completions?api-version=...`` (Chat Completions;
  without ``api-version`` the server answers 404, as Azure does);
- Gemini's OpenAI-compatible endpoint: ``/v1beta/openai/chat/completions``;
- Anthropic on AWS Bedrock: ``/model/MODEL/invoke`` (a Messages body without ``model``);
- Anthropic on Vertex AI: ``/projects/P/locations/R/publishers/anthropic/models/MODEL:rawPredict``.

For the last two the model comes from the path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import parse_qs, unquote

from ragmetrics._fake.records import Endpoint

__all__ = ["ENDPOINTS", "Route", "route"]

ENDPOINTS: Mapping[tuple[str, str], Endpoint] = MappingProxyType(
    {
        ("POST", "/v1/chat/completions"): "chat",
        ("POST", "/v1/messages"): "messages",
        ("POST", "/v1/embeddings"): "embeddings",
        ("GET", "/v1/models"): "models",
        ("POST", "/v1beta/openai/chat/completions"): "chat",
    }
)
_AZURE = re.compile(r"/openai/deployments/(?P<model>[^/]+)/chat/completions")
_BEDROCK = re.compile(r"/model/(?P<model>[^/]+)/invoke")
_VERTEX = re.compile(
    r"/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/(?P<model>[^/:]+):rawPredict"
)
_PATTERNS: tuple[tuple[re.Pattern[str], Endpoint, str], ...] = (
    (_AZURE, "chat", "azure"),
    (_BEDROCK, "messages", "bedrock"),
    (_VERTEX, "messages", "vertex"),
)
KNOWN = (
    "POST /v1/chat/completions, POST /v1/messages, POST /v1/embeddings, GET /v1/models, "
    "POST /v1beta/openai/chat/completions (Gemini), POST /openai/deployments/NAME/chat/completions"
    "?api-version=... (Azure), POST /model/MODEL/invoke (Bedrock), "
    "POST /projects/P/locations/R/publishers/anthropic/models/MODEL:rawPredict (Vertex)"
)
"""What the server serves, for its 404 message."""


@dataclass(frozen=True, slots=True)
class Route:
    """The endpoint a request reaches, and what its path says."""

    endpoint: Endpoint
    model: str | None = None
    """The model (or Azure deployment) named in the path, if it names one."""
    problem: str | None = None
    """Why the request is refused (sent as 404), e.g. an Azure path without ``api-version``."""


def route(method: str, target: str) -> Route | None:
    """The route of ``method`` + ``target`` (path and query), or None when the server has no such path."""
    path, _, query = target.partition("?")
    found = ENDPOINTS.get((method, path))
    if found is not None:
        return Route(found)
    if method != "POST":
        return None
    for pattern, endpoint, kind in _PATTERNS:
        match = pattern.fullmatch(path)
        if match is None:
            continue
        model = unquote(match["model"])
        if kind == "azure" and not parse_qs(query).get("api-version"):
            return Route(
                endpoint, model, "Resource not found: Azure OpenAI needs the api-version query parameter"
            )
        return Route(endpoint, model)
    return None
