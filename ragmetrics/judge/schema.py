"""Response schemas as strict structured output takes them, whichever provider carries them.

OpenAI's strict mode, Anthropic tools and llama.cpp's grammar builder accept a JSON schema only when
every object is closed and lists all its properties as required, with no defaults.
:func:`strict_schema` turns any pydantic model's JSON schema into that form; the provider adapters put
it on the wire, and response models that build their own schema (the claim schemas) apply it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator

__all__ = [
    "MAX_JUDGE_QUOTE_CHARS",
    "MAX_JUDGE_TEXT_CHARS",
    "JudgeQuote",
    "JudgeText",
    "cap_text",
    "strict_schema",
]

MAX_JUDGE_TEXT_CHARS = 2_000
"""A judge's free text (a reason, a step) is cut to this many characters when its reply is parsed."""
MAX_JUDGE_QUOTE_CHARS = 20_000
"""A judge's evidence quote is cut to this many characters (a cut quote is then not found verbatim)."""


def cap_text(text: str, limit: int = MAX_JUDGE_TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how much was cut.

    So a judge's 50 MB reason never reaches a record, the cache or an export.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit:,} more characters cut by ragmetrics]"


JudgeText = Annotated[str, AfterValidator(cap_text)]
"""A free-text field of a response schema, capped at :data:`MAX_JUDGE_TEXT_CHARS` when parsed."""
JudgeQuote = Annotated[str, AfterValidator(lambda text: cap_text(text, MAX_JUDGE_QUOTE_CHARS))]
"""An evidence quote of a response schema, capped at :data:`MAX_JUDGE_QUOTE_CHARS` when parsed."""


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

    strict: dict[str, Any] = walk(dict(schema))
    return strict
