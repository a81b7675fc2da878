"""How an OpenAI-compatible request carries its response schema, and which form to try next.

Each form names the instructor mode that builds the request and parses the reply, plus what the SDK's
``extra_body`` sets on top: the tool or ``response_format`` with the schema in strict form. Strict
mode needs every property required, ``additionalProperties: false`` and no defaults, which
:func:`strict_schema` ensures for any pydantic model's JSON schema.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

__all__ = ["FORMS", "next_form", "strict_schema", "wire_body"]

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


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as strict structured output accepts it.

    Defaults are dropped and every object (``$defs`` included) is closed
    (``additionalProperties: false``) with all of its properties required; local ``$ref``s stay refs
    (OpenAI strict mode, Anthropic tools and llama.cpp's grammar builder all follow them).
    Pure and idempotent; the input is not modified.
    """

    def walk(node: Any, *, names: bool = False) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if names:  # a mapping of names to schemas ("properties", "$defs")
            return {k: walk(v) for k, v in node.items()}
        out = {k: walk(v, names=k in ("properties", "$defs")) for k, v in node.items() if k != "default"}
        if isinstance(out.get("properties"), dict):
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out

    return walk(dict(schema))  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=256)
def _schema(model: Any) -> dict[str, Any]:
    return strict_schema(model.model_json_schema())  # its title names the task in forms with no name


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
