"""Property: for any satisfiable schema built from the keywords the filler understands, the instance
is valid (checked by ``jsonschema``), and the same seed gives the same instance."""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmetrics._fake.schema_fill import fill

WORDS = ("alpha", "beta", "gamma", "delta")
small = st.integers(min_value=-50, max_value=50)


@st.composite
def integers(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    low = draw(st.none() | small)
    if low is not None:
        schema["exclusiveMinimum" if draw(st.booleans()) else "minimum"] = low
    if draw(st.booleans()):
        schema["multipleOf"] = draw(st.integers(min_value=1, max_value=7))
    elif draw(st.booleans()):  # a maximum leaving room for at least a few values
        schema["maximum"] = (low if low is not None else 0) + draw(st.integers(min_value=5, max_value=20))
    return schema


@st.composite
def numbers(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "number"}
    low = draw(st.none() | st.floats(min_value=-1e6, max_value=1e6))
    if low is not None:
        schema["exclusiveMinimum" if draw(st.booleans()) else "minimum"] = low
        if draw(st.booleans()):
            key = "exclusiveMaximum" if draw(st.booleans()) else "maximum"
            schema[key] = low + draw(st.floats(min_value=1e-3, max_value=1e3))
    return schema


@st.composite
def strings(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    low = draw(st.none() | st.integers(min_value=0, max_value=40))
    if low is not None:
        schema["minLength"] = low
    if draw(st.booleans()):
        schema["maxLength"] = (low or 0) + draw(st.integers(min_value=0, max_value=40))
    if draw(st.booleans()):
        schema = {"type": "string", "format": draw(st.sampled_from(["date", "date-time", "email", "uuid"]))}
    return schema


leaves = st.one_of(
    integers(),
    numbers(),
    strings(),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.lists(st.integers() | st.text(max_size=5), min_size=1, max_size=4, unique=True).map(
        lambda v: {"enum": v}
    ),
    st.integers().map(lambda v: {"const": v}),
    st.just({}),
)


def containers(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    arrays = st.builds(
        lambda item, n: {"type": "array", "items": item, "minItems": n},
        children,
        st.integers(min_value=0, max_value=4),
    )
    unique = st.builds(
        lambda values, n: {"type": "array", "items": {"enum": values}, "minItems": n, "uniqueItems": True},
        st.lists(st.integers(), min_size=4, max_size=6, unique=True),
        st.integers(min_value=0, max_value=4),
    ) | st.builds(
        lambda n: {
            "type": "array",
            "items": {"type": "integer", "minimum": 3},
            "minItems": n,
            "uniqueItems": True,
        },
        st.integers(min_value=0, max_value=6),
    )
    objects = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), children, max_size=4).flatmap(
        lambda props: st.builds(
            lambda required, closed: {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": not closed,
            },
            st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([]),
            st.booleans(),
        )
    )
    branches = st.lists(children, min_size=1, max_size=3).flatmap(
        lambda parts: st.sampled_from([{"anyOf": parts}, {"oneOf": parts[:1]}])
    )
    return arrays | unique | objects | branches | st.just({"$ref": "#/$defs/Leaf"})


def with_defs(schema: dict[str, Any], leaf: dict[str, Any]) -> dict[str, Any]:
    """The root schema, with a ``$defs`` entry for the ``$ref`` nodes to point at."""
    return {"$defs": {"Leaf": leaf}, "type": "object", "properties": {"root": schema}, "required": ["root"]}


schemas = st.recursive(leaves, containers, max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas, leaf=leaves, seed=st.integers(min_value=0, max_value=2**32))
def test_every_instance_is_valid_and_reproducible(
    schema: dict[str, Any], leaf: dict[str, Any], seed: int
) -> None:
    root = with_defs(schema, leaf)
    validator = jsonschema.Draft202012Validator(
        root, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )

    instance = fill(root, words=WORDS, seed=seed)

    validator.validate(instance)
    assert fill(root, words=WORDS, seed=seed) == instance
