"""Which server answers an OpenAI-compatible judge: one ``GET /models`` at the first call, not a judge call.

The request says what it is (header ``x-ragmetrics-probe: server-kind``); the answer is read by
:func:`ragmetrics.judge.local.kind_from_models`. At most
:data:`MODELS_BODY_MAX_BYTES` of it are read; a server that does not answer in time, answers an error
or answers something else is taken for a hosted API (``openai``), as before detection existed.
"""

from __future__ import annotations

import json
import logging

from ragmetrics.judge.local import kind_from_models
from ragmetrics.judge.providers._deadline import http_module, tls_options

__all__ = ["MODELS_BODY_MAX_BYTES", "PROBE_HEADER", "detect_kind"]

log = logging.getLogger(__name__)

PROBE_HEADER = "x-ragmetrics-probe"
"""Names the request as ragmetrics' server-kind probe in a server's logs (and the fake server's)."""
MODELS_BODY_MAX_BYTES = 1_000_000
"""Bytes of a ``GET /models`` answer read at most (a server listing thousands of models fits)."""


async def detect_kind(base_url: str, api_key: str, *, timeout_s: float) -> str:
    """The server kind at ``base_url`` (a ``/v1`` URL), from its ``GET /models``; ``openai`` when unknown.

    Sent with the ``openai`` SDK's own HTTP client class (``httpx``, or ``httpx2`` from openai 3 on).
    """
    import openai

    client_class = openai.DefaultAsyncHttpxClient
    http = http_module(client_class)
    url = base_url.rstrip("/") + "/models"
    body = bytearray()
    try:
        async with client_class(timeout=timeout_s, **tls_options(client_class)) as client:
            headers = {"Authorization": f"Bearer {api_key}", PROBE_HEADER: "server-kind"}
            async with client.stream("GET", url, headers=headers) as resp:
                if resp.status_code != 200:
                    return "openai"
                async for chunk in resp.aiter_bytes():
                    body += chunk
                    if len(body) > MODELS_BODY_MAX_BYTES:
                        return "openai"
        kind = kind_from_models(json.loads(bytes(body)))
    except (http.HTTPError, OSError, ValueError, RecursionError) as exc:
        log.debug("GET %s did not say what serves the judge: %s", url, exc)
        return "openai"
    return kind
