"""Placeholder values for a JSON schema, the way generic mock API servers fill one (``answer="placeholder"``).

Unlike :mod:`ragmetrics._fake.schema_fill` (a constrained decoder's arbitrary instance: seeded draws,
words of the prompt), this is the fixed filler of a generic schema-mocking server that never looks at
the prompt: every string is ``"string"``, numbers sit at ``minimum`` (0 when unbounded), booleans are
true, ``null`` is null, an enum gives its first value, ``anyOf`` / ``oneOf`` their first branch, arrays
have ``minItems`` items (at least one), objects have every listed property, and local ``$ref``
pointers (``#/$defs/...``) are followed. Nothing else is understood.

The schema is untrusted request data: nesting deeper than :data:`MAX_DEPTH` (a recursive ``$ref``
included) or more than :data:`MAX_NODES` values raise :class:`SchemaFillError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmetrics._fake.schema_fill import MAX_DEPTH, MAX_NODES, SchemaFillError

__all__ = ["placeholder"]


def placeholder(schema: Mapping[str, Any]) -> Any:
    """The placeholder instance of ``schema`` (see the module docstring)."""
    budget = [MAX_NODES]
    return _fill(schema, schema, 0, budget)


def _fill(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int, budget: list[int]) -> Any:
    if depth > MAX_DEPTH:
        raise SchemaFillError(f"the schema nests deeper than {MAX_DEPTH} levels")
    if "$ref" in schema:
        return _fill(_resolve(str(schema["$ref"]), root), root, depth + 1, budget)
    for key in ("anyOf", "oneOf"):
        if key in schema and schema[key]:
            return _fill(schema[key][0], root, depth + 1, budget)
    budget[0] -= 1
    if budget[0] < 0:
        raise SchemaFillError(f"the instance would need more than {MAX_NODES} values")
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {k: _fill(v, root, depth + 1, budget) for k, v in properties.items()}
    if kind == "array":
        items = schema.get("items")
        items = items if isinstance(items, Mapping) else {}
        count = max(1, int(schema.get("minItems", 0)))
        return [_fill(items, root, depth + 1, budget) for _ in range(count)]
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return True
    return None if kind == "null" else "string"


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    if not ref.startswith("#"):
        raise SchemaFillError(f"cannot follow the non-local $ref {ref!r}")
    node: Any = root
    for part in ref.removeprefix("#").strip("/").split("/") if ref not in ("#", "#/") else ():
        if not isinstance(node, Mapping) or part not in node:
            raise SchemaFillError(f"the $ref {ref!r} points at nothing")
        node = node[part]
    if not isinstance(node, Mapping):
        raise SchemaFillError(f"the $ref {ref!r} does not point at a schema")
    return node
