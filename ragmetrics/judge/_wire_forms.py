"""How an OpenAI-compatible request carries its response schema, and which form to try next.

Each form names the instructor mode that builds the request and parses the reply, plus what the SDK's
``extra_body`` sets on top: the tool or ``response_format`` with the schema in strict form. Strict
mode needs every property required, ``additionalProperties: false`` and no defaults, which
:func:`ragmetrics.metrics._schemas.strict_schema` ensures for any pydantic model.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

__all__ = ["FORMS", "next_form", "wire_body"]

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


def next_form(form: str, error: str) -> str | None:
    """The form to try after a server rejected ``form`` with ``error``; None when the error is not that."""
    words = _REJECTS.get(form, ())
    text = error.lower()
    if not any(w in text for w in words):
        return None
    return _ORDER[_ORDER.index(form) + 1]


@functools.lru_cache(maxsize=256)
def _schema(model: Any) -> dict[str, Any]:
    from ragmetrics.metrics._schemas import strict_schema

    schema = strict_schema(model.model_json_schema())
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


def wire_body(form: str, model: Any) -> dict[str, Any]:
    """The ``extra_body`` that puts ``model``'s schema on the wire in ``form`` ({} for plain JSON)."""
    name = model.__name__
    if form == "tools":
        tool = {"name": name, "parameters": _schema(model), "strict": True}
        return {
            "tools": [{"type": "function", "function": tool}],
            "tool_choice": {"type": "function", "function": {"name": name}},
        }
    if form == "json_schema":
        spec = {"name": name, "schema": _schema(model), "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    if form == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": _schema(model)}}
    return {}
