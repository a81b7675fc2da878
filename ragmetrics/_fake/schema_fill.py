"""Any instance of a JSON schema, as a constrained decoder fills it for a model that understands nothing.

:func:`fill` ignores the prompt and walks the schema: ``const`` or the first ``enum`` value, the first
``anyOf``/``oneOf`` branch, ``allOf`` merged, local ``$ref`` followed, numbers at their minimum,
booleans false, arrays at ``minItems``, objects with every required property and a seeded draw of the
optional ones, strings of words drawn from the prompt fitted to their length bounds. Not understood
(so possibly violated): ``pattern``, ``not``, ``if``/``then``/``else``, ``contains``,
``patternProperties``, ``dependentRequired``. The schema is untrusted: past :data:`MAX_DEPTH`,
:data:`MAX_NODES`, :data:`MAX_CHARS` or :data:`MAX_STEPS`, or a ``$ref`` loop, it raises
:class:`SchemaFillError` instead of growing without bound.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_NODES", "MAX_STEPS", "SchemaFillError", "fill", "prompt_words"]

MAX_DEPTH = 64
"""Deepest nesting of values (and of ``allOf`` in ``allOf``); also the most ``$ref`` hops in a row."""
MAX_NODES = 10_000
"""Most JSON values in one instance."""
MAX_CHARS = 1_000_000
"""Most characters in the strings of one instance."""
MAX_STEPS = 100_000
"""Most schema resolutions (``$ref`` hops, ``allOf`` parts, branches) for one instance."""
_MAX_WORDS = 10_000  # words of the prompt kept to draw strings from
_DEFAULT_WORDS = 3  # words in a string with no length bounds
_FALLBACK_WORD = "text"
_WORD = re.compile(r"\w+")
_FORMATS: Mapping[str, str] = {
    "date": "2000-01-01",
    "date-time": "2000-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "fake@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "ipv4": "127.0.0.1",
}
_HINTS = (
    ("object", ("properties", "required", "additionalProperties", "minProperties")),
    ("array", ("items", "prefixItems", "minItems", "maxItems")),
    ("string", ("minLength", "maxLength", "format", "pattern")),
    ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
)


class SchemaFillError(ValueError):
    """The schema cannot be filled (a remote ``$ref``, or a cap hit); the message says which and where."""


def prompt_words(texts: Sequence[str]) -> tuple[str, ...]:
    """The words of the prompt texts strings are drawn from (the first ``_MAX_WORDS``)."""
    words: list[str] = []
    for text in texts:
        for match in _WORD.finditer(text):
            words.append(match.group())
            if len(words) >= _MAX_WORDS:
                return tuple(words)
    return tuple(words)


def fill(schema: Mapping[str, Any], *, words: Sequence[str] = (), seed: int = 0) -> Any:
    """An instance valid under ``schema`` (as far as the keywords above go), deterministic in ``seed``.

    Raises:
        SchemaFillError: A ``$ref`` that is not a local pointer, or a cap hit.
    """
    return _Filler(schema, words, seed).value(schema, "$", 0, 0)


class _Filler:
    def __init__(self, root: Mapping[str, Any], words: Sequence[str], seed: int) -> None:
        self.root = root
        self.words = tuple(words) or (_FALLBACK_WORD,)
        self.rng = random.Random(seed)
        self.nodes = 0
        self.chars = 0
        self.steps = 0

    # -- schema resolution -------------------------------------------------------------------------

    def resolve(self, schema: Any, where: str, depth: int) -> Mapping[str, Any]:
        """``schema`` with ``$ref``, ``allOf``, ``anyOf`` and ``oneOf`` applied (at nesting ``depth``)."""
        if depth > MAX_DEPTH:
            raise SchemaFillError(f"the schema nests deeper than {MAX_DEPTH} levels at {where}")
        for _ in range(MAX_DEPTH + 1):
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise SchemaFillError(f"the schema takes more than {MAX_STEPS} steps to resolve (at {where})")
            if schema is True or not isinstance(schema, Mapping):
                return {}
            if "$ref" in schema:
                target = self.pointer(schema["$ref"], where)
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = {**target, **rest} if isinstance(target, Mapping) else rest
            elif "allOf" in schema and isinstance(schema["allOf"], list):
                schema = self.merge(schema, where, depth)
            else:
                for key in ("anyOf", "oneOf"):
                    branches = schema.get(key)
                    if isinstance(branches, list) and branches:
                        rest = {k: v for k, v in schema.items() if k != key}
                        first = branches[0] if isinstance(branches[0], Mapping) else {}
                        schema = {**rest, **first}
                        break
                else:
                    return schema
        raise SchemaFillError(
            f"more than {MAX_DEPTH} $ref hops or branches in a row at {where} (a $ref loop?)"
        )

    def pointer(self, ref: Any, where: str) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaFillError(f"only local $ref pointers are followed, got {ref!r} at {where}")
        node: Any = self.root
        for part in unquote(ref[1:]).split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise SchemaFillError(f"$ref {ref!r} at {where} points at nothing")
        return node

    def merge(self, schema: Mapping[str, Any], where: str, depth: int) -> dict[str, Any]:
        """``allOf`` folded into one schema: properties merged, required united, else first wins."""
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            resolved = self.resolve(part, where, depth + 1)
            for key, value in resolved.items():
                if key == "properties" and isinstance(value, Mapping):
                    merged["properties"] = {**value, **(merged.get("properties") or {})}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = list(dict.fromkeys([*(merged.get("required") or []), *value]))
                else:
                    merged.setdefault(key, value)
        return merged

    # -- values ------------------------------------------------------------------------------------

    def value(self, schema: Any, where: str, depth: int, nth: int) -> Any:
        schema = self.resolve(schema, where, depth)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise SchemaFillError(f"the instance would hold more than {MAX_NODES} values (at {where})")
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return enum[nth % len(enum)]
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = kind[0] if kind else None
        if kind is None:
            kind = next((k for k, keys in _HINTS if any(key in schema for key in keys)), "string")
        if kind == "object":
            return self.object(schema, where, depth, nth)
        if kind == "array":
            return self.array(schema, where, depth)
        if kind in ("integer", "number"):
            try:
                number = self.number(schema, integer=kind == "integer", nth=nth)
            except OverflowError:
                number = math.inf
            if not math.isfinite(number):
                raise SchemaFillError(f"the numeric bounds at {where} overflow a float")
            return number
        if kind == "boolean":
            return nth % 2 == 1
        if kind == "null":
            return None
        return self.string(schema, nth)

    def object(self, schema: Mapping[str, Any], where: str, depth: int, nth: int) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        extra = schema.get("additionalProperties", True)
        required = [r for r in schema.get("required") or () if isinstance(r, str)]
        keys = list(dict.fromkeys(required))
        keys += [k for k in properties if k not in keys and self.rng.random() < 0.5]
        wanted = schema.get("minProperties")
        if isinstance(wanted, int) and len(keys) < wanted:
            keys += [k for k in properties if k not in keys][: wanted - len(keys)]
            if extra is not False:
                filler = (f"{w}_{i}" for i, w in enumerate(self.words))
                keys += [k for k in filler if k not in properties and k not in keys][
                    : max(0, wanted - len(keys))
                ]
        out: dict[str, Any] = {}
        for key in keys:
            sub = properties.get(key, extra if isinstance(extra, Mapping) else {})
            out[key] = self.value(sub, f"{where}.{key}", depth + 1, nth)
        return out

    def array(self, schema: Mapping[str, Any], where: str, depth: int) -> list[Any]:
        count = schema.get("minItems")
        count = count if isinstance(count, int) and count > 0 else 0
        if count > MAX_NODES:
            raise SchemaFillError(f"minItems {count} at {where} is more than {MAX_NODES} values")
        prefix = schema.get("prefixItems")
        items = schema.get("items", {})
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems", {})
        prefix = prefix if isinstance(prefix, list) else []
        unique = schema.get("uniqueItems") is True
        out = []
        for i in range(count):
            sub = prefix[i] if i < len(prefix) else items
            out.append(self.value(sub, f"{where}[{i}]", depth + 1, i if unique else 0))
        return out

    def number(self, schema: Mapping[str, Any], *, integer: bool, nth: int) -> int | float:
        step = _number(schema.get("multipleOf"))
        step = step if step is not None and step > 0 else None
        low, low_strict = _bound(schema, "minimum", "exclusiveMinimum", max)
        high, high_strict = _bound(schema, "maximum", "exclusiveMaximum", min)
        if low is None:
            low, low_strict = (min(0, high) if high is not None else 0), False
        if integer or step is not None:
            unit = step or 1
            first = math.floor(low / unit) + 1 if low_strict else math.ceil(low / unit)
            if high is not None:  # the n-th multiple wraps around within the bounds
                last = math.floor(high / unit)
                last -= 1 if high_strict and last * unit >= high else 0
                nth %= max(1, last - first + 1)
            result = (first + nth) * unit
            return int(result) if integer else float(result)
        value = float(low)
        if low_strict:
            value += 1.0 if high is None else min(1.0, (high - low) / 2)
        if nth:  # the n-th distinct value: halving steps towards the maximum, else whole steps up
            value += (high - value) * (1 - 0.5**nth) if high is not None else nth
        return value

    def string(self, schema: Mapping[str, Any], nth: int) -> str:
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS and nth == 0:
            text = _FORMATS[fmt]
        else:
            low = schema.get("minLength")
            low = low if isinstance(low, int) and low > 0 else 0
            high = schema.get("maxLength")
            high = high if isinstance(high, int) and high >= 0 else None
            if low > MAX_CHARS:
                raise SchemaFillError(f"minLength {low} is more than {MAX_CHARS} characters")
            words = [self.words[nth % len(self.words)]] if nth else []
            words += [self.rng.choice(self.words) for _ in range(_DEFAULT_WORDS)]
            text = " ".join(words)
            while len(text) < low:
                text += " " + self.rng.choice(self.words)
            if high is not None:
                text = text[:high].rstrip() or text[:high]
            if len(text) < low:
                text += "x" * (low - len(text))
        self.chars += len(text)
        if self.chars > MAX_CHARS:
            raise SchemaFillError(f"the instance's strings would exceed {MAX_CHARS} characters")
        return text


def _number(value: Any) -> float | None:
    """``value`` if it is a finite JSON number, else None."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None


def _bound(
    schema: Mapping[str, Any], inclusive: str, exclusive: str, tighter: Callable[[float, float], float]
) -> tuple[float | None, bool]:
    """The tighter of a bound and its exclusive form (number or draft 4 flag), and whether it is strict."""
    bound, flag = _number(schema.get(inclusive)), schema.get(exclusive)
    strict = _number(flag)
    if flag is True:  # draft 4: a flag on the inclusive bound
        return bound, bound is not None
    if strict is None:
        return bound, False
    if bound is None or tighter(bound, strict) == strict:
        return strict, True
    return bound, False
