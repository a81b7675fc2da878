"""Response schemas of the claim machinery: what the judge must return, checked with pydantic.

The JSON schemas carry no titles or descriptions (they travel in every request as prompt tokens) and
are written as strict structured output wants them (every property required, no extra properties),
so a server that honours the schema cannot reply invalidly. They are built per request shape
(:func:`extraction_model`, :func:`verification_model`): exactly one verdict per claim, in claim order,
and context indices that exist (an enum, or integer bounds past :data:`MAX_ENUM_VALUES`); a schema's
size does not grow with its claims. The validators repeat the contract for servers that ignore
schemas, closing over the shape's numbers (never an instructor validation context).
"""

from __future__ import annotations

import copy
import functools
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from ragmetrics.judge.schema import JudgeQuote, JudgeText, strict_schema

__all__ = [
    "ClaimExtraction",
    "ClaimVerification",
    "ContextJudgement",
    "ExtractedClaim",
    "LeanSchema",
    "MAX_ENUM_VALUES",
    "VerifiedClaim",
    "extraction_model",
    "verification_model",
]


def _strip(node: Any, *, names: bool = False) -> Any:
    """Drop ``title`` and ``description`` keywords (but not properties that happen to be so named)."""
    if isinstance(node, dict):
        return {
            k: _strip(v, names=(k == "properties"))
            for k, v in node.items()
            if names or k not in ("title", "description")
        }
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


MAX_ENUM_VALUES = 500
"""Index enum values a verification schema may hold in all; a larger shape writes its indices as an
integer range (``minimum``/``maximum``), which servers' schema limits do not count as enum values."""


def _index(n: int, compact: bool) -> dict[str, Any]:
    """An index ``0..n-1`` in JSON schema: an enum, or an integer range in the compact form."""
    if compact:
        return {"type": "integer", "minimum": 0, "maximum": max(0, n - 1)}
    return {"type": "integer", "enum": list(range(n))}


_DEFS = "#/$defs/"


def _refs(node: Any) -> Iterator[str]:
    """The names of the local ``$defs`` that ``node`` refers to, once per reference."""
    if isinstance(node, list):
        for value in node:
            yield from _refs(value)
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS):
            yield ref[len(_DEFS) :]
        for value in node.values():
            yield from _refs(value)


def _inline_single_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``$defs`` entry used once written in its place (shorter on the wire).

    A definition used more than once stays a ``$ref``; one that refers to others is left alone.
    """
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema
    uses = Counter(_refs({k: v for k, v in schema.items() if k != "$defs"}))
    once = {name for name, body in defs.items() if uses[name] == 1 and not any(_refs(body))}
    if not once:
        return schema

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref[len(_DEFS) :] in once and len(node) == 1:
            return copy.deepcopy(defs[ref[len(_DEFS) :]])
        return {k: walk(v) for k, v in node.items()}

    out: dict[str, Any] = walk({k: v for k, v in schema.items() if k != "$defs"})
    kept = {name: body for name, body in defs.items() if name not in once}
    if kept:
        out["$defs"] = kept
    return out


SCHEMA_CACHE_SIZE = 256
"""Shapes whose classes and JSON schemas are kept (least recently used dropped first): 3,000 distinct
shapes once held every class and schema for the life of the process."""
_SCHEMAS: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
"""JSON schemas already built (a pure function of the class, its shape and the arguments), LRU."""


class LeanSchema(BaseModel):
    """Base of response schemas: their JSON schema drops titles and descriptions, and is strict-ready.

    The schema travels with every request as prompt tokens; the prompt already says what each field
    means, so titles and descriptions would only be paid for twice. A per-shape subclass sets
    ``_shape`` and rewrites its schema in :meth:`_contract`.
    """

    _shape: ClassVar[tuple[Any, ...]] = ()
    """What a per-request class was built for (e.g. ``(n_claims, n_contexts)``); () for the base."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__doc__:  # a per-shape class, or instructor's wrapper of one
            # its parent's first line: instructor makes a tool's description of the docstring (Anthropic),
            # else sends 15 tokens of boilerplate ("Correctly extracted ...") with every request
            parent = next((b.__doc__ for b in cls.__mro__[1:] if b.__doc__), "") or ""
            cls.__doc__ = parent.strip().splitlines()[0] if parent.strip() else None

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:  # noqa: D102
        # Built once per schema and shape: instructor may wrap the class in a subclass of its own, so
        # the cache is keyed by the class's name, fields and shape, not by identity.
        key = (
            cls.__module__,
            cls.__qualname__,
            tuple(cls.model_fields),
            cls._shape,
            repr(args),
            repr(sorted(kwargs.items())),
        )
        schema = _SCHEMAS.get(key)
        if schema is None:
            schema = strict_schema(
                _inline_single_refs(cls._contract(_strip(super().model_json_schema(*args, **kwargs))))
            )
            schema["title"] = cls.__name__  # the tool / function name
            _SCHEMAS[key] = schema
            while len(_SCHEMAS) > SCHEMA_CACHE_SIZE:
                _SCHEMAS.popitem(last=False)
        else:
            _SCHEMAS.move_to_end(key)
        return copy.deepcopy(schema)

    @classmethod
    def _contract(cls, schema: dict[str, Any]) -> dict[str, Any]:
        """The JSON schema with this shape's contract written in (the base class adds nothing)."""
        return schema


class ExtractedClaim(LeanSchema):
    """One atomic claim of the answer."""

    text: str
    """The claim."""
    span: str = ""
    """The answer text it comes from."""
    relevance: Literal["direct", "supporting", "off_topic"] = "direct"

    """How it bears on the question."""


class ClaimExtraction(LeanSchema):
    """The answer split into claims, with an answer-level relevance judgement."""

    _min_claims: ClassVar[int] = 0
    """Claims the reply must hold (1 when the answer plainly states facts)."""

    claims: list[ExtractedClaim]
    """The claims, in answer order."""
    addresses_question: Literal["yes", "partially", "no"]
    """Whether the answer addresses the question."""

    @classmethod
    def _contract(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if cls._min_claims:
            schema["properties"]["claims"]["minItems"] = cls._min_claims
        return schema

    @model_validator(mode="after")
    def _no_blank_claims(self) -> ClaimExtraction:
        self.claims = [c for c in self.claims if c.text.strip()]
        if len(self.claims) < type(self)._min_claims:
            raise ValueError(
                "no claims: the answer states facts, so list each factual statement in it as a claim"
            )
        return self


@functools.lru_cache(maxsize=4)
def extraction_model(min_claims: int) -> type[ClaimExtraction]:
    """The extraction schema for an answer in which at least ``min_claims`` claims must be found."""
    if min_claims <= 0:
        return ClaimExtraction
    return type("ClaimExtraction", (ClaimExtraction,), {"_shape": (min_claims,), "_min_claims": min_claims})


class VerifiedClaim(LeanSchema):
    """The verdict on one claim."""

    claim: int
    """Index of the claim."""
    verdict: Literal["supported", "contradicted", "not_found"]
    """The verdict."""
    context: int | None = None
    """Index of the context that decides it."""
    evidence: JudgeQuote = ""
    """A verbatim quote from that context."""
    reason: JudgeText = ""
    """Why."""
    support: SkipJsonSchema[float | None] = Field(default=None, ge=0.0, le=1.0)
    """Probability that the claim is supported, from heuristic judges only (never asked of an LLM:
    it is left out of the JSON schema). ``supported`` verdicts have support >= 0.5."""
    text_verdict: SkipJsonSchema[Literal["supported", "contradicted", "not_found"] | None] = None
    """The verdict against the request's second text (the reference for answer claims, the answer for
    reference claims); in the schema only when the request has one (``verification_model(text=True)``)."""


class ContextJudgement(LeanSchema):
    """What one context holds for the request: relevance to the question, the claims it supports."""

    context: int
    """Index of the context."""
    relevant: bool | None = None
    """Whether it bears on the question (asked only with ``relevance=True``)."""
    supports: list[int] = Field(default_factory=list)
    """Indices of the claims it supports."""
    reason: JudgeText = ""
    """One line on its relevance (asked only with ``relevance=True``)."""


SHIFT_REPAIR = "verification claim ids shifted from 1..N to 0..N-1"
"""The repair recorded when a reply numbered its N claims 1..N."""


class ClaimVerification(LeanSchema):
    """Verdicts for every claim.

    On the wire (per-shape schema) ``verdicts`` is a list of exactly one verdict per claim, in claim
    order, so the schema's size does not grow with the claims; each verdict's ``claim`` is its place.
    A list whose verdicts name their ``claim`` (the offline judge, cached replies, servers that ignore
    the schema) and the earlier object keyed by claim index are accepted too.
    """

    _n_claims: ClassVar[int | None] = None
    _n_contexts: ClassVar[int | None] = None
    _text: ClassVar[bool] = False
    """The request has a second text: each verdict also asks ``text_verdict``."""
    _per_context: ClassVar[int] = 0
    """0: no per-context part; 1: ``supports`` per context; 2: also ``relevant`` and ``reason``."""

    verdicts: list[VerifiedClaim]
    """One verdict per claim."""
    contexts: SkipJsonSchema[list[ContextJudgement]] = Field(default_factory=list)
    """Per context (joint ``verify.v4`` requests only): the claims it supports and, if asked, its relevance.
    A reply without it validates (older answerers); the metrics that need it then report no score."""
    repairs: SkipJsonSchema[list[str]] = Field(default_factory=list)
    """Unambiguous slips in the reply that were repaired instead of re-asked (never asked of a judge)."""

    @classmethod
    def _contract(cls, schema: dict[str, Any]) -> dict[str, Any]:
        n_claims, n_contexts = cls._n_claims, cls._n_contexts
        if n_claims is None or n_contexts is None:
            return schema
        compact = n_contexts > MAX_ENUM_VALUES
        context: dict[str, Any] = (
            {"anyOf": [_index(n_contexts, compact), {"type": "null"}]} if n_contexts else {"type": "null"}
        )
        verdict = {"type": "string", "enum": ["supported", "contradicted", "not_found"]}
        slot = {
            "type": "object",
            "properties": {
                "verdict": verdict,
                "context": context,
                "evidence": {"type": "string"},
                "reason": {"type": "string"},
                **({"text_verdict": dict(verdict)} if cls._text else {}),
            },
        }
        schema["properties"]["verdicts"] = {  # one verdict per claim (no minItems 0: it says nothing)
            "type": "array",
            "items": slot,
            **({"minItems": n_claims} if n_claims else {}),
            "maxItems": n_claims,
        }
        schema.pop("$defs", None)
        if cls._per_context and n_contexts:  # no claim, nothing to support: no ``supports`` to fill
            supports: dict[str, Any] = (  # claim indices as a range: no per-claim growth
                {"supports": {"type": "array", "items": _index(n_claims, True)}} if n_claims else {}
            )
            judged: dict[str, Any] = dict(supports)
            if cls._per_context > 1:
                judged = {"relevant": {"type": "boolean"}, **supports, "reason": {"type": "string"}}
            schema["$defs"] = {"Context": {"type": "object", "properties": judged}}
            cref = {"$ref": "#/$defs/Context"}
            schema["properties"]["contexts"] = {
                "type": "object",
                "properties": {str(j): dict(cref) for j in range(n_contexts)},
            }
        return schema

    @model_validator(mode="before")
    @classmethod
    def _slots_to_list(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        judged = data.get("contexts")
        if isinstance(judged, Mapping):  # the per-shape wire form: {"0": {...}, "1": {...}}
            listed_contexts = []
            for key, slot in judged.items():
                if not (isinstance(key, str) and key.strip().isdigit()) or not isinstance(slot, Mapping):
                    raise ValueError(f"contexts: key {key!r} is not a context index with an object")
                listed_contexts.append({**slot, "context": int(key)})
            data = {**data, "contexts": listed_contexts}
        verdicts = data.get("verdicts")
        if isinstance(verdicts, Mapping):  # the per-shape wire form: {"0": {...}, "1": {...}}
            listed = []
            for key, slot in verdicts.items():
                if not (isinstance(key, str) and key.strip().isdigit()) or not isinstance(slot, Mapping):
                    raise ValueError(f"verdicts: key {key!r} is not a claim index with a verdict object")
                listed.append({**slot, "claim": int(key)})
            data = {**data, "verdicts": listed}
            verdicts = listed
        elif isinstance(verdicts, list) and not any(_names_claim(v) for v in verdicts):
            # the per-shape wire form: one verdict per claim, in claim order
            verdicts = [{**v, "claim": i} if isinstance(v, Mapping) else v for i, v in enumerate(verdicts)]
            data = {**data, "verdicts": verdicts}
        n = cls._n_claims
        if n and isinstance(verdicts, list) and len(verdicts) == n:
            ids = [v.get("claim") if isinstance(v, Mapping) else None for v in verdicts]
            if all(type(i) is int for i in ids) and sorted(ids) == list(range(1, n + 1)):  # type: ignore[type-var]
                shifted = [{**v, "claim": v["claim"] - 1} for v in verdicts]
                data = {**data, "verdicts": shifted, "repairs": [*data.get("repairs", []), SHIFT_REPAIR]}
        return data

    @model_validator(mode="after")
    def _indices_in_range(self) -> ClaimVerification:
        n_claims, n_contexts = type(self)._n_claims, type(self)._n_contexts
        problems = []
        seen: set[int] = set()
        twice: set[int] = set()
        for v in self.verdicts:
            if n_claims is not None and not 0 <= v.claim < n_claims:
                problems.append(f"claim index {v.claim} is out of range 0..{n_claims - 1}")
            if v.claim in seen:
                twice.add(v.claim)
            if v.context is not None and n_contexts is not None and not 0 <= v.context < n_contexts:
                problems.append(
                    f"context index {v.context} for claim {v.claim} is out of range 0..{n_contexts - 1}"
                )
            seen.add(v.claim)
        for c in self.contexts:
            if n_contexts is not None and not 0 <= c.context < n_contexts:
                problems.append(f"context index {c.context} is out of range 0..{n_contexts - 1}")
            bad = [i for i in c.supports if n_claims is not None and not 0 <= i < n_claims]
            if bad:
                problems.append(f"context {c.context} supports claim(s) {bad}, out of range")
        if twice:
            problems.append(f"more than one verdict for claim(s) {sorted(twice)}: give one verdict per claim")
        if n_claims is not None:
            missing = sorted(set(range(n_claims)) - seen)
            if missing:
                problems.append(f"no verdict for claim(s) {missing}: give one verdict per claim")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _names_claim(verdict: Any) -> bool:
    return isinstance(verdict, Mapping) and "claim" in verdict


@functools.lru_cache(maxsize=SCHEMA_CACHE_SIZE)
def verification_model(
    n_claims: int, n_contexts: int, *, text: bool = False, per_context: int = 0
) -> type[ClaimVerification]:
    """The verification schema for ``n_claims`` claims judged against ``n_contexts`` contexts.

    ``text``: each verdict also judges the claim against the request's second text. ``per_context``:
    1 asks, per context, the claims it supports; 2 also its relevance to the question and a reason.
    """
    return type(
        "ClaimVerification",
        (ClaimVerification,),
        {
            "_shape": (n_claims, n_contexts, text, per_context),
            "_n_claims": n_claims,
            "_n_contexts": n_contexts,
            "_text": text,
            "_per_context": per_context,
        },
    )
