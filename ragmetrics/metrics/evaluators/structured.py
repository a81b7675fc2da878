"""Output-contract evaluators: json_validity, json_match, html_validation.

All three read the entire output: a code fence or preamble around the payload fails, and the reason
says so. ``json_validity`` passes when the output parses as JSON (RFC 8259); ``json_match`` scores the
key paths equal on both sides over the paths of the larger side (pass mark 0.9). Numbers are read
exactly (``decimal``). ``html_validation`` lives in :mod:`ragmetrics.metrics.evaluators.html_validation`
(also importable from here). Outputs over ``max_chars`` are ``invalid_input`` without parsing, JSON
nested deeper than ``max_depth`` is invalid, and scoring runs on a worker thread.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterable
from typing import Any

from ragmetrics.errors import shorten
from ragmetrics.metrics.base import Needs
from ragmetrics.metrics.evaluators._json_numbers import NUMBERS, exact_decoder, json_type, loads_exact, shown
from ragmetrics.metrics.evaluators._output_checks import WRAPPED_ADVICE, check_limit, fence_hint, too_long
from ragmetrics.metrics.evaluators.base import FIXED_PASS_MARK, Evaluator, Scored

# html_validation lives in its own module; its names stay importable from here.
from ragmetrics.metrics.evaluators.html_validation import (
    HTML_ELEMENTS,
    HTML_MAX_CHARS,
    HtmlValidationEvaluator,
)

__all__ = [
    "HTML_ELEMENTS",
    "HTML_MAX_CHARS",
    "HtmlValidationEvaluator",
    "JsonMatchEvaluator",
    "JsonValidityEvaluator",
    "json_key_paths",
]

MAX_CHARS = 10_000_000
"""Default size limit: longer outputs get an ``invalid_input`` result instead of being parsed."""
MAX_DEPTH = 500
"""Default JSON nesting limit (serde_json allows 128, Go 10,000; Python's parser recurses)."""
_DEPTH_CEILING = 800  # the stdlib parser recurses: stay well inside Python's recursion limit
MAX_PATHS = 100_000
"""Default limit on json_match's values per side (leaf key paths): more is ``invalid_input``, found
by counting commas outside strings before anything is parsed. Parsing and comparing hold the GIL in
long C calls and build a tuple per path, so an 8 MB array took 48 s, 1 GB and stalled the event
loop 15 s; 100,000 paths cost well under a second and a few tens of MB."""
# a JSON string; its closing quote is optional, so a match never fails and the scan stays linear
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)


# -- JSON ------------------------------------------------------------------------------------------


class _BadJson(Exception):
    def __init__(self, message: str, **where: int) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


def _depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in node)
    return deepest


def _parse_json(text: str, max_depth: int) -> Any:
    try:
        value = loads_exact(text)
    except json.JSONDecodeError as exc:
        raise _BadJson(
            f"{exc.msg}: line {exc.lineno} column {exc.colno} (char {exc.pos})",
            line=exc.lineno,
            column=exc.colno,
            position=exc.pos,
        ) from None
    except RecursionError:
        raise _BadJson(
            f"nesting deeper than the limit of {max_depth} levels (max_depth), or too deep to parse"
        ) from None
    except ValueError as exc:  # NaN/Infinity
        raise _BadJson(str(exc)) from None
    depth = _depth(value)
    if depth > max_depth:
        raise _BadJson(f"nesting depth {depth} exceeds the limit of {max_depth} levels (max_depth)")
    return value


def _too_many_values(text: str, max_paths: int, what: str) -> str | None:
    """Why ``text`` may hold more than ``max_paths`` leaf values, or None.

    A JSON value has at most one more leaf than it has commas outside strings.
    """
    commas = _STRING.sub("", text).count(",")
    if commas + 1 <= max_paths:
        return None
    return (
        f"the {what} may hold {commas + 1:,} values, over the limit of {max_paths:,} (max_paths); not parsed"
    )


def _wrapping(text: str) -> str:
    """Explain a JSON payload hidden inside a fence or behind preamble, or return ''."""
    if fence := fence_hint(text):
        return fence
    decoder = exact_decoder()
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if starts:
        first = min(starts)
        try:
            _, end = decoder.raw_decode(text, first)
        except (ValueError, RecursionError):
            return ""
        if text[:first].strip():
            return f" There is text before the JSON: {WRAPPED_ADVICE}."
        if text[end:].strip():
            return f" There is text after the JSON: {WRAPPED_ADVICE}."
    return ""


class JsonValidityEvaluator(Evaluator):
    """The output must be valid JSON; the reference and input are ignored.

    On failure the reasoning carries the parser's message and position, e.g.
    ``Invalid JSON: Expecting value: line 1 column 1 (char 0)``.
    """

    name = "json_validity"
    by_name = True

    def __init__(
        self, *, negate: bool = False, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH
    ) -> None:
        super().__init__(threshold=1.0, negate=negate)
        self.max_chars = check_limit(max_chars, "max_chars", self.name, 1)
        self.max_depth = check_limit(max_depth, "max_depth", self.name, 1, _DEPTH_CEILING)

    def _options(self) -> dict[str, object]:
        return {"negate": self.negate, "max_chars": self.max_chars, "max_depth": self.max_depth}

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        if (over := too_long(prediction, self.max_chars, "output")) is not None:
            return over
        try:
            value = _parse_json(prediction, self.max_depth)
        except _BadJson as exc:
            return Scored(
                score=0.0,
                reasoning=f"Invalid JSON: {exc.message}.{_wrapping(prediction)}",
                details={"error": exc.message, **exc.where},
            )
        return Scored(score=1.0, reasoning=f"Valid JSON ({json_type(value)}).")


def _path_text(path: tuple[str | int, ...]) -> str:
    out = ["$"]
    for key in path:
        if isinstance(key, int):
            out.append(f"[{key}]")
        elif key.isidentifier():
            out.append(f".{key}")
        else:
            out.append(f"[{json.dumps(key, ensure_ascii=False)}]")
    return "".join(out)


def json_key_paths(value: Any) -> dict[tuple[str | int, ...], Any]:
    """Every leaf of a parsed JSON value by key path (array items by index; ``()`` is the root).

    Leaves are scalars and empty objects/arrays. Iterative, so depth costs no recursion.
    """
    paths: dict[tuple[str | int, ...], Any] = {}
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict) and node:
            stack.extend(((*path, k), v) for k, v in node.items())
        elif isinstance(node, list) and node:
            stack.extend(((*path, i), v) for i, v in enumerate(node))
        else:
            paths[path] = node
    return paths


def _same_leaf(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):  # JSON true is not the number 1
        return type(a) is type(b) and a == b
    if isinstance(a, NUMBERS) and isinstance(b, NUMBERS):
        return bool(a == b)  # exact: ints and Decimals compare by value (1 == 1.0 == 1e0)
    return type(a) is type(b) and a == b


def _first(paths: Iterable[tuple[str | int, ...]], n: int) -> list[tuple[str | int, ...]]:
    """The first ``n`` paths in ``repr`` order (a heap, in Python steps: no long C call holding the GIL)."""
    return heapq.nsmallest(n, paths, key=repr)


def _listing(label: str, paths: Iterable[tuple[str | int, ...]]) -> str:
    shown = [_path_text(p) for p in _first(paths, 5)]
    return f"; {label}: {', '.join(shown)}" if shown else ""


class JsonMatchEvaluator(Evaluator):
    """Output and expected value must both parse as JSON; then their key paths are compared.

    The score is the number of key paths present on both sides with equal values, divided by the
    number of paths of whichever side has more; the pass mark is fixed at 0.9. The expected value may
    be JSON text or an already parsed value (a mapping from a YAML case file).
    """

    name = "json_match"
    by_name = True
    needs = Needs(reference=True)
    structured_reference = True

    def __init__(
        self,
        *,
        negate: bool = False,
        max_chars: int = MAX_CHARS,
        max_depth: int = MAX_DEPTH,
        max_paths: int = MAX_PATHS,
    ) -> None:
        super().__init__(threshold=FIXED_PASS_MARK, negate=negate)
        self.max_chars = check_limit(max_chars, "max_chars", self.name, 1)
        self.max_depth = check_limit(max_depth, "max_depth", self.name, 1, _DEPTH_CEILING)
        self.max_paths = check_limit(max_paths, "max_paths", self.name, 1)

    def _options(self) -> dict[str, object]:
        return {
            "negate": self.negate,
            "max_chars": self.max_chars,
            "max_depth": self.max_depth,
            "max_paths": self.max_paths,
        }

    def _expected(self, reference: Any) -> Any:
        if not isinstance(reference, str):
            try:  # a parsed value from a case file: keep only what JSON can say
                reference = json.dumps(reference, allow_nan=False)
            except (TypeError, ValueError, RecursionError) as exc:
                raise _BadJson(f"it is not a JSON value ({exc})") from None
        if (over := too_long(reference, self.max_chars, "expected value")) is not None:
            raise _BadJson(over.message or "")
        if (many := _too_many_values(reference, self.max_paths, "expected value")) is not None:
            raise _BadJson(many)
        return _parse_json(reference, self.max_depth)

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        try:
            expected = self._expected(reference)
        except _BadJson as exc:
            return Scored(
                score=None,
                status="invalid_input",
                message=f"json_match: the expected value is not valid JSON: {exc.message}",
            )
        if (over := too_long(prediction, self.max_chars, "output")) is not None:
            return over
        if (many := _too_many_values(prediction, self.max_paths, "output")) is not None:
            return Scored(score=None, status="invalid_input", message=f"json_match: {many}")
        try:
            actual = _parse_json(prediction, self.max_depth)
        except _BadJson as exc:
            return Scored(
                score=0.0,
                reasoning=f"The output is not valid JSON: {exc.message}.{_wrapping(prediction)}",
                details={"error": exc.message, **exc.where},
            )
        got, want = json_key_paths(actual), json_key_paths(expected)
        common = got.keys() & want.keys()
        matched = sum(1 for p in common if _same_leaf(got[p], want[p]))
        different = [p for p in common if not _same_leaf(got[p], want[p])]
        missing = want.keys() - got.keys()
        extra = got.keys() - want.keys()
        denominator = max(len(got), len(want))
        score = matched / denominator
        reasoning = (
            f"{matched} of {denominator} key paths match (output {len(got)}, expected {len(want)})"
            f"{_listing('missing', missing)}{_listing('extra', extra)}{_listing('different', different)}."
        )
        details = {
            "matched": matched,
            "output_paths": len(got),
            "expected_paths": len(want),
            "missing": [_path_text(p) for p in _first(missing, 20)],
            "extra": [_path_text(p) for p in _first(extra, 20)],
            "different": [
                {
                    "path": _path_text(p),
                    "output": shorten(shown(got[p]), 80),
                    "expected": shorten(shown(want[p]), 80),
                }
                for p in _first(different, 20)
            ],
        }
        return Scored(score=score, reasoning=reasoning, details=details)
