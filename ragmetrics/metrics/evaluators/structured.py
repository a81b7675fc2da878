"""Output-contract evaluators: json_validity, json_match, html_validation.

All three read the *entire* output: a markdown code fence or a sentence of preamble around the payload
makes it fail, and the reasoning says so (the fix belongs in the system prompt: ask for the raw
document and nothing else).

- ``json_validity``: the output parses as JSON (RFC 8259: no NaN/Infinity). Pass or fail; the
  reasoning carries the parser's message and position.
- ``json_match``: output and expected value both parse; every key path (arrays by index) is collected
  on both sides, and the score is the number of paths present on both sides with equal values over the
  number of paths of the side that has more. Missing and extra keys both lower it. Fixed pass mark 0.9.
- Numbers are read exactly (``decimal``, never ``float``): ``1e400`` and ``1e401`` differ, ``1``,
  ``1.0`` and ``1e0`` are equal, and an integer of any length is valid, without touching Python's
  process-wide ``sys.set_int_max_str_digits``.
- ``html_validation``: parsed with the standard library's HTML tokenizer (never regexes) and an
  explicit element stack, in linear time. Text outside any element, or no element at all, fails
  outright (score 0); otherwise the score is the share of accepted elements: any recognised HTML
  element by default, only ``allowed_tags`` when given, never ``blocked_tags``. Elements inside
  ``<svg>``/``<math>`` are judged by that root. A tag or comment left unterminated at the end of the
  output is read as text where it stands (so at top level it fails as text outside any element).

Limits keep hostile inputs cheap: more than ``max_chars`` characters (10,000,000 for JSON; 1,000,000
for HTML, about 1.5 s of tokenizing) gives an ``invalid_input`` result without parsing; JSON nested
deeper than ``max_depth`` is invalid (as in most production parsers). Scoring runs on a worker
thread (see :class:`~ragmetrics.metrics.evaluators.base.Evaluator`), so a long parse never stalls the
event loop.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from html.parser import HTMLParser
from typing import Any

from ragmetrics.errors import ConfigError, shorten
from ragmetrics.metrics.base import Needs
from ragmetrics.metrics.evaluators._json_numbers import NUMBERS, exact_decoder, json_type, loads_exact, shown
from ragmetrics.metrics.evaluators.base import DEFAULT_THRESHOLD, FIXED_PASS_MARK, Evaluator, Scored

__all__ = [
    "HTML_ELEMENTS",
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
HTML_MAX_CHARS = 1_000_000
"""Default size limit of ``html_validation`` (a pure-Python tokenizer: about 1.5 s per million characters)."""

HTML_ELEMENTS = frozenset(
    """a abbr address area article aside audio b base bdi bdo blockquote body br button canvas caption
    cite code col colgroup data datalist dd del details dfn dialog div dl dt em embed fieldset figcaption
    figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins kbd label
    legend li link main map mark math menu meta meter nav noscript object ol optgroup option output p
    picture pre progress q rp rt ruby s samp script search section select slot small source span strong
    style sub summary sup svg table tbody td template textarea tfoot th thead time title tr track u ul
    var video wbr""".split()
)
"""The elements of the WHATWG HTML standard: what "any recognised HTML tag" accepts."""
_VOID = frozenset("area base br col embed hr img input link meta source track wbr param keygen".split())
_FOREIGN_ROOTS = frozenset({"svg", "math"})
_FENCE = re.compile(r"\A\s*(```|~~~)")
_TAG_NAME = re.compile(r"\A[a-z][a-z0-9-]*\Z")


def _check_limit(value: object, option: str, owner: str, low: int, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        span = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ConfigError(f"{owner}: {option} must be an integer {span}, got {value!r}")
    return value


def _too_long(text: str, max_chars: int, what: str) -> Scored | None:
    if len(text) <= max_chars:
        return None
    return Scored(
        score=None,
        status="invalid_input",
        message=f"the {what} is {len(text):,} characters, over the limit of {max_chars:,} (max_chars); "
        "not parsed",
    )


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


def _wrapping(text: str, kind: str) -> str:
    """Explain a payload hidden inside a fence or behind preamble, or return ''."""
    advice = "it is scored as a whole; tell the model to reply with the raw document and nothing else"
    if _FENCE.match(text):
        return f" The output is wrapped in a markdown code fence: {advice}."
    if kind == "json":
        decoder = exact_decoder()
        starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
        if starts:
            first = min(starts)
            try:
                _, end = decoder.raw_decode(text, first)
            except (ValueError, RecursionError):
                return ""
            if text[:first].strip():
                return f" There is text before the JSON: {advice}."
            if text[end:].strip():
                return f" There is text after the JSON: {advice}."
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
        self.max_chars = _check_limit(max_chars, "max_chars", self.name, 1)
        self.max_depth = _check_limit(max_depth, "max_depth", self.name, 1, _DEPTH_CEILING)

    def _options(self) -> dict[str, object]:
        return {"negate": self.negate, "max_chars": self.max_chars, "max_depth": self.max_depth}

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        if (over := _too_long(prediction, self.max_chars, "output")) is not None:
            return over
        try:
            value = _parse_json(prediction, self.max_depth)
        except _BadJson as exc:
            return Scored(
                score=0.0,
                reasoning=f"Invalid JSON: {exc.message}.{_wrapping(prediction, 'json')}",
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


def _listing(label: str, paths: Iterable[tuple[str | int, ...]]) -> str:
    shown = [_path_text(p) for p in sorted(paths, key=repr)[:5]]
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
        self, *, negate: bool = False, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH
    ) -> None:
        super().__init__(threshold=FIXED_PASS_MARK, negate=negate)
        self.max_chars = _check_limit(max_chars, "max_chars", self.name, 1)
        self.max_depth = _check_limit(max_depth, "max_depth", self.name, 1, _DEPTH_CEILING)

    def _options(self) -> dict[str, object]:
        return {"negate": self.negate, "max_chars": self.max_chars, "max_depth": self.max_depth}

    def _expected(self, reference: Any) -> Any:
        if isinstance(reference, str):
            if (over := _too_long(reference, self.max_chars, "expected value")) is not None:
                raise _BadJson(over.message or "")
            return _parse_json(reference, self.max_depth)
        try:  # a parsed value from a case file: keep only what JSON can say
            return _parse_json(json.dumps(reference, allow_nan=False), self.max_depth)
        except (TypeError, ValueError, RecursionError) as exc:
            raise _BadJson(f"it is not a JSON value ({exc})") from None

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        try:
            expected = self._expected(reference)
        except _BadJson as exc:
            return Scored(
                score=None,
                status="invalid_input",
                message=f"json_match: the expected value is not valid JSON: {exc.message}",
            )
        if (over := _too_long(prediction, self.max_chars, "output")) is not None:
            return over
        try:
            actual = _parse_json(prediction, self.max_depth)
        except _BadJson as exc:
            return Scored(
                score=0.0,
                reasoning=f"The output is not valid JSON: {exc.message}.{_wrapping(prediction, 'json')}",
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
            "missing": [_path_text(p) for p in sorted(missing, key=repr)[:20]],
            "extra": [_path_text(p) for p in sorted(extra, key=repr)[:20]],
            "different": [
                {
                    "path": _path_text(p),
                    "output": shorten(shown(got[p]), 80),
                    "expected": shorten(shown(want[p]), 80),
                }
                for p in sorted(different, key=repr)[:20]
            ],
        }
        return Scored(score=score, reasoning=reasoning, details=details)


# -- HTML ------------------------------------------------------------------------------------------


def _unterminated_kind(tail: str) -> str:
    if tail.startswith("<!--"):
        return "comment"
    if tail.startswith("</"):
        return "end tag"
    if tail.startswith(("<!", "<?")):
        return "declaration"
    return "tag"


class _ElementScan(HTMLParser):
    """Tokenize with the standard library's parser and keep an explicit stack of open elements."""

    def __init__(self, accept: Any) -> None:
        super().__init__(convert_charrefs=True)
        self._accept = accept
        self.stack: list[str] = []
        self.open: Counter[str] = Counter()  # open elements by tag: an unmatched end tag costs O(1)
        self.foreign: list[int] = []  # stack indices of open <svg>/<math> roots
        self.total = 0
        self.accepted = 0
        self.rejected: Counter[str] = Counter()
        self.tags: Counter[str] = Counter()
        self.outside: list[str] = []
        self.unterminated: str | None = None  # what the output ends inside of, if anything

    def _element(self, tag: str, *, opens: bool) -> None:
        root = self.stack[self.foreign[-1]] if self.foreign else None
        self.total += 1
        self.tags[tag] += 1
        if self._accept(tag, root):
            self.accepted += 1
        else:
            self.rejected[tag] += 1
        if opens and tag not in _VOID:
            if tag in _FOREIGN_ROOTS and not self.foreign:
                self.foreign.append(len(self.stack))
            self.stack.append(tag)
            self.open[tag] += 1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, opens=True)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, opens=False)

    def handle_endtag(self, tag: str) -> None:
        if not self.open[tag]:
            return  # an end tag with no open element: ignored, as browsers do
        # Close up to and including the innermost open `tag`. Every element popped here was pushed
        # once, so the whole document costs linear time (a scan of the stack per end tag was
        # quadratic: 40,000 <div> then 40,000 </p> took 43 s).
        while True:
            closed = self.stack.pop()
            self.open[closed] -= 1
            if closed == tag:
                break
        while self.foreign and self.foreign[-1] >= len(self.stack):
            self.foreign.pop()

    def handle_data(self, data: str) -> None:
        if not self.stack and data.strip() and len(self.outside) < 3:
            self.outside.append(data.strip())

    def finish(self) -> None:
        """End the document in linear time (instead of :meth:`close`).

        After :meth:`feed`, what the tokenizer could not consume is an unterminated tag, comment or
        declaration running to the end of the input. Python's ``close()`` before 3.13.4 re-scans to the
        end for every ``<`` in it (quadratic: ``"<p>" + "<a" * 100_000`` took 37 s); here that tail is
        read once, as text where it stands (so at top level it is text outside any element).
        """
        tail = self.rawdata
        if len(tail) > 2 and tail[0] == "<" and not self.cdata_elem:
            self.rawdata = ""
            self.unterminated = _unterminated_kind(tail)
            self.handle_data(tail)
        else:  # text, or a lone "<" or "</": close() reads it in one step
            self.close()


def _tag_set(tags: object, option: str) -> frozenset[str] | None:
    if tags is None:
        return None
    if isinstance(tags, str):
        tags = [t for t in tags.split(",") if t.strip()]
    if not isinstance(tags, (list, tuple, set, frozenset)):
        raise ConfigError(f"html_validation: {option} must be a list of tag names, got {tags!r}")
    out = set()
    for tag in tags:
        name = tag.strip().strip("<>/").lower() if isinstance(tag, str) else None
        if not name or not _TAG_NAME.match(name):
            raise ConfigError(f"html_validation: {option} holds an invalid tag name {tag!r}")
        out.add(name)
    return frozenset(out)


class HtmlValidationEvaluator(Evaluator):
    """The whole output must be HTML; its elements are scored against the tag rules.

    Args:
        threshold: Pass mark for the share of accepted elements (default 0.9).
        allowed_tags: Only these tags are accepted (default: any recognised HTML element).
        blocked_tags: These tags are rejected wherever they appear.
        negate: Invert the score.
        max_chars: Outputs longer than this are not parsed (``invalid_input``).
    """

    name = "html_validation"
    by_name = True

    def __init__(
        self,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        allowed_tags: Iterable[str] | None = None,
        blocked_tags: Iterable[str] | None = None,
        negate: bool = False,
        max_chars: int = HTML_MAX_CHARS,
    ) -> None:
        super().__init__(threshold=threshold, negate=negate)
        self.allowed_tags = _tag_set(allowed_tags, "allowed_tags")
        self.blocked_tags = _tag_set(blocked_tags, "blocked_tags") or frozenset()
        both = (self.allowed_tags or frozenset()) & self.blocked_tags
        if both:
            raise ConfigError(f"html_validation: tags {sorted(both)} are both allowed and blocked")
        self.max_chars = _check_limit(max_chars, "max_chars", self.name, 1)

    def _options(self) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "allowed_tags": sorted(self.allowed_tags) if self.allowed_tags is not None else None,
            "blocked_tags": sorted(self.blocked_tags),
            "negate": self.negate,
        }

    def _accepts(self, tag: str, root: str | None) -> bool:
        if tag in self.blocked_tags:
            return False
        if self.allowed_tags is not None:
            return tag in self.allowed_tags or (root is not None and root in self.allowed_tags)
        return tag in HTML_ELEMENTS or root is not None

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        if (over := _too_long(prediction, self.max_chars, "output")) is not None:
            return over
        scan = _ElementScan(self._accepts)
        try:
            scan.feed(prediction)
            scan.finish()
        except Exception as exc:  # noqa: BLE001 - the tokenizer must never turn bad markup into a crash
            return Scored(score=0.0, reasoning=f"The output could not be tokenized as HTML: {exc}.")
        hint = _wrapping(prediction, "html")
        details: dict[str, Any] = {
            "elements": scan.total,
            "accepted": scan.accepted,
            "rejected": dict(scan.rejected),
            "tags": dict(scan.tags.most_common(50)),
        }
        if scan.unterminated:
            details["unterminated"] = scan.unterminated
            hint += f" The output ends inside an unterminated {scan.unterminated}, read as text."
        if scan.outside:
            details["text_outside"] = [shorten(t, 80) for t in scan.outside]
            return Scored(
                score=0.0,
                reasoning=f"Text outside any element: {shorten(scan.outside[0], 60)!r}.{hint}",
                details=details,
            )
        if scan.total == 0:
            return Scored(score=0.0, reasoning=f"The output holds no HTML element.{hint}", details=details)
        score = scan.accepted / scan.total
        rejected = ", ".join(f"<{t}> x{n}" for t, n in scan.rejected.most_common(5))
        reasoning = f"{scan.accepted} of {scan.total} elements accepted"
        reasoning += f" (rejected: {rejected})" if rejected else ""
        reasoning += f", threshold: {self.threshold:.4f}.{hint}"
        return Scored(score=score, reasoning=reasoning, details=details)
