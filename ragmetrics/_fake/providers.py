"""Which provider's shapes an endpoint speaks: Anthropic for ``messages``, OpenAI for everything else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics._fake.anthropic_wire import (
    anthropic_error,
    anthropic_message,
    anthropic_models,
    read_anthropic,
)
from ragmetrics._fake.dialects import llama_models
from ragmetrics._fake.openai_wire import openai_completion, openai_error, openai_models, read_openai
from ragmetrics._fake.wire import Answer, Call

__all__ = ["completion_body", "error_body", "models_body", "read_call"]


def read_call(endpoint: str, body: Mapping[str, Any]) -> Call:
    """Read what a ``chat`` (OpenAI) or ``messages`` (Anthropic) request body asks for."""
    return read_anthropic(body) if endpoint == "messages" else read_openai(body)


def completion_body(endpoint: str, answer: Answer) -> dict[str, Any]:
    """A Messages reply for the ``messages`` endpoint, else a Chat Completions reply."""
    return anthropic_message(answer) if endpoint == "messages" else openai_completion(answer)


def error_body(endpoint: str, status: int, message: str) -> dict[str, Any]:
    """An error body in the shape of the provider behind ``endpoint`` (Anthropic for ``messages``)."""
    return anthropic_error(status, message) if endpoint == "messages" else openai_error(status, message)


def models_body(models: Sequence[str], *, anthropic: bool, dialect: str = "openai") -> dict[str, Any]:
    """A model listing in the OpenAI shape, the Anthropic one when ``anthropic`` is true, or the dialect's."""
    if anthropic:
        return anthropic_models(models)
    return llama_models(models) if dialect == "llama-cpp" else openai_models(models)
