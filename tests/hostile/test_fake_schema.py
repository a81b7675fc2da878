"""Hostile response schemas sent to FakeLLMServer(answer="schema") get a prompt 400, never a runaway.

The schema is request data. Each probe runs in a subprocess under an address-space limit, so a
regression (an instance grown without bound) fails the test instead of exhausting the machine.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
from typing import Any

import pytest

MEMORY_LIMIT = 2_000_000_000  # bytes of address space for the probe process
TIME_LIMIT = 60  # seconds for the whole probe process

PROBE = textwrap.dedent(
    """
    import json, sys, time, urllib.error, urllib.request
    from ragmetrics.testing import FakeLLMServer

    schemas = json.loads(sys.stdin.read())
    results = []
    with FakeLLMServer(answer="schema") as srv:
        for schema in schemas:
            fmt = {"type": "json_schema", "json_schema": {"name": "X", "schema": schema}}
            body = {"model": "m", "messages": [{"role": "user", "content": "words"}], "response_format": fmt}
            request = urllib.request.Request(srv.openai_base_url + "/chat/completions",
                                             data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
            start = time.perf_counter()
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    status, text = response.status, response.read().decode()
            except urllib.error.HTTPError as exc:
                status, text = exc.code, exc.read().decode()
            seconds = time.perf_counter() - start
            results.append({"status": status, "body": json.loads(text), "seconds": seconds})
    print(json.dumps(results))
    """
)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def probe(schemas: list[Any]) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        input=json.dumps(schemas),
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT,
        preexec_fn=_limit_memory,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def fan_out(levels: int) -> dict[str, Any]:
    """Each level has two required properties that are the next level: 2**levels values."""
    defs = {
        f"L{i}": {
            "type": "object",
            "properties": {"x": {"$ref": f"#/$defs/L{i + 1}"}, "y": {"$ref": f"#/$defs/L{i + 1}"}},
            "required": ["x", "y"],
        }
        for i in range(levels)
    }
    defs[f"L{levels}"] = {"type": "string"}
    return {"$defs": defs, "$ref": "#/$defs/L0"}


def merge_fan_out(levels: int) -> dict[str, Any]:
    """Each level is allOf two copies of the next: 2**levels resolutions, no values."""
    defs: dict[str, Any] = {
        f"A{i}": {"allOf": [{"$ref": f"#/$defs/A{i + 1}"}, {"$ref": f"#/$defs/A{i + 1}"}]}
        for i in range(levels)
    }
    defs[f"A{levels}"] = {"type": "object"}
    return {"$defs": defs, "$ref": "#/$defs/A0"}


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


HOSTILE = {
    "self_reference": (
        {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]},
        "deeper than",
    ),
    "ref_loop": (
        {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"},
        "a $ref loop",
    ),
    "deep_nesting": (nested(200), "nests deeper than 64 levels"),
    "huge_min_items": ({"type": "array", "items": {"type": "integer"}, "minItems": 10**12}, "minItems"),
    "many_small_items": (
        {"type": "array", "items": {"type": "null"}, "minItems": 10_001},
        "is more than 10000 values",
    ),
    "huge_min_length": ({"type": "string", "minLength": 10**12}, "minLength"),
    "many_long_strings": (
        {"type": "array", "items": {"type": "string", "minLength": 1000}, "minItems": 2000},
        "exceed 1000000 characters",
    ),
    "exponential_refs": (fan_out(30), "more than 10000 values"),
    "exponential_all_of": (merge_fan_out(40), "more than 100000 steps"),
    "remote_ref": ({"$ref": "https://example.com/schema.json"}, "only local $ref pointers"),
    "dangling_ref": ({"$ref": "#/$defs/Missing"}, "points at nothing"),
    "overflowing_bounds": ({"type": "number", "minimum": 1e300, "multipleOf": 1e-300}, "overflow"),
    "overflowing_range": (
        {
            "type": "array",
            "items": {"type": "number", "minimum": -1e308, "maximum": 1e308},
            "minItems": 2,
            "uniqueItems": True,
        },
        "overflow",
    ),  # fmt: skip
}


def test_hostile_schemas_get_a_prompt_400_naming_the_cap() -> None:
    names = list(HOSTILE)
    results = probe([HOSTILE[name][0] for name in names])

    for name, result in zip(names, results, strict=True):
        message = result["body"]["error"]["message"]
        assert result["status"] == 400, (name, result)
        assert "cannot fill the request's schema" in message and HOSTILE[name][1] in message, (name, message)
        assert result["seconds"] < 10, (name, result["seconds"])


def test_a_large_but_bounded_schema_is_still_filled() -> None:
    schema = {"type": "array", "items": {"type": "string", "minLength": 100}, "minItems": 9_000}

    (result,) = probe([schema])

    assert result["status"] == 200, result
    items = json.loads(result["body"]["choices"][0]["message"]["content"])
    assert len(items) == 9_000 and all(len(item) >= 100 for item in items)


@pytest.mark.parametrize("levels", [60])
def test_nesting_under_the_cap_is_filled(levels: int) -> None:
    (result,) = probe([nested(levels)])

    assert result["status"] == 200, result
    value = json.loads(result["body"]["choices"][0]["message"]["content"])
    for _ in range(levels):
        value = value["a"]
    assert isinstance(value, str)
