"""How an OpenAI-compatible request carries its response schema, and which form to try next.

Each form names the instructor mode that builds the request and parses the reply, plus what the SDK's
``extra_body`` sets on top: the tool or ``response_format`` with the schema in strict form. Strict
mode needs every property required, ``additionalProperties: false`` and no defaults, which
:func:`ragmetrics.judge.schema.strict_schema` ensures for any pydantic model's JSON schema.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ragmetrics.judge.schema import strict_schema

__all__ = ["FORMS", "next_form", "weaker", "wire_body", "wire_schema"]

FORMS: Mapping[str, str] = {
    "tools": "TOOLS",
    "json_schema": "JSON_SCHEMA",
    "json_object_schema": "JSON",
    "json": "JSON",
}
"""Wire form -> the ``instructor.Mode`` member that builds and parses it."""

_ORDER = ("tools", "json_schema", "json_object_schema", "json")

_REJECTS: Mapping[str, tuple[str, ...]] = {
    "tools": ("tool", "function"),
    "json_schema": ("json_schema", "response_format", "strict"),
    "json_object_schema": ("response_format", "schema", "json_object"),
}
"""Words in a 400/422 error that say the server does not take this form."""

_NAMES: Mapping[str, str] = {"tools": "tool", "json_schema": "json_schema", "json_object_schema": "schema"}
"""What a 500 must name to count as a rejection: llama-cpp-python's server answers a request body that
fails its validation (``response_format`` type ``json_schema``) with HTTP 500, not 400."""


def next_form(form: str, status: int, error: str) -> str | None:
    """The form to try after a server rejected ``form`` with HTTP ``status`` and ``error``.

    None when the error does not say the form was rejected (it is then handled like any other).
    """
    text = error.lower()
    if status in (400, 422):
        rejected = any(w in text for w in _REJECTS.get(form, ()))
    elif status == 500:
        rejected = form in _NAMES and _NAMES[form] in text and ("validation" in text or "literal" in text)
    else:
        rejected = False
    return _ORDER[_ORDER.index(form) + 1] if rejected else None


def weaker(a: str, b: str) -> str:
    """The later of two forms in the order auto mode tries them."""
    return max(a, b, key=_ORDER.index)


@functools.lru_cache(maxsize=256)
def _schema(model: Any) -> dict[str, Any]:
    return strict_schema(model.model_json_schema())  # its title names the task in forms with no name


def wire_schema(model: Any) -> dict[str, Any]:
    """``model``'s schema as strict structured output takes it (shared: copy before changing it)."""
    return _schema(model)


def wire_body(form: str, model: Any, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``extra_body`` putting ``model``'s schema (or ``schema``) on the wire in ``form`` ({}: JSON)."""
    name = model.__name__
    schema = _schema(model) if schema is None else schema
    if form in ("tools", "json_schema"):  # named on the wire: the title would be paid for twice
        schema = {k: v for k, v in schema.items() if k != "title"}
    if form == "tools":
        tool = {"name": name, "parameters": schema, "strict": True}
        return {
            "tools": [{"type": "function", "function": tool}],
            "tool_choice": {"type": "function", "function": {"name": name}},
        }
    if form == "json_schema":
        spec = {"name": name, "schema": schema, "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    if form == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": schema}}
    return {}
