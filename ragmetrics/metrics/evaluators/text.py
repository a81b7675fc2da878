"""Literal and character-level evaluators: exact_match, contains, regex, levenshtein, f1.

- ``exact_match``: both sides trimmed, then compared; case-sensitive by default. Pass or fail.
- ``contains``: the share of the expected comma-separated terms found in the output; pass mark 0.9.
- ``regex``: the pattern must match somewhere in the output. Patterns come from config files, so they
  are refused when too long or too large once repetitions are multiplied out (:data:`MAX_REGEX_CHARS`,
  :data:`MAX_REGEX_SIZE`), matching runs under a timeout, and long outputs are ``invalid_input``.
- ``levenshtein``: ``1 - normalised edit distance`` (rapidfuzz); a side over ``max_chars`` is
  ``invalid_input``, since the cost is quadratic.
- ``f1``: F1 over the unique whitespace-separated tokens of each side.

Case-insensitive comparison uses ``str.casefold``.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import regex
from rapidfuzz.distance import Levenshtein

from ragmetrics._check import check_int, check_seconds, config_error
from ragmetrics.errors import ConfigError, shorten
from ragmetrics.metrics.base import Needs
from ragmetrics.metrics.evaluators.base import (
    DEFAULT_THRESHOLD,
    FIXED_PASS_MARK,
    Evaluator,
    GradedEvaluator,
    Scored,
)

__all__ = [
    "ContainsEvaluator",
    "ExactMatchEvaluator",
    "F1Evaluator",
    "LEVENSHTEIN_MAX_CHARS",
    "LevenshteinEvaluator",
    "RegexMatchEvaluator",
    "levenshtein_similarity",
    "token_f1",
]

BINARY_PASS_MARK = 1.0
"""Pass mark of the pass-or-fail evaluators."""
REGEX_MAX_CHARS = 1_000_000
"""Default longest output ``regex`` matches (its backtracking state: ~50-160 bytes a character)."""
REGEX_GROUP_BUDGET = 4_000_000
"""Output characters times (1 + capture groups) that ``regex`` matches at most (~150 MB measured)."""
MAX_REGEX_CHARS = 10_000
"""Longest ``regex`` pattern accepted, in characters (the package's parser takes ~10 us a character)."""
MAX_REGEX_SIZE = 100_000
"""Largest ``regex`` pattern accepted, in items (characters, classes, anchors, ...) once counted
repetitions are multiplied out by their minimum counts: ``a{100000}`` is 100,000 items and compiles in
~0.1 s and ~30 MB; an item costs the compiler up to ~4 us and ~1 KB."""

LEVENSHTEIN_MAX_CHARS = 50_000
"""Default longest side ``levenshtein`` scores, in characters (two random CJK texts this long: ~0.5 s)."""

_normalized_distance = Levenshtein.normalized_distance


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


# -- exact_match -----------------------------------------------------------------------------------


class ExactMatchEvaluator(Evaluator):
    """The output must equal the expected string; both sides are trimmed first.

    Case-sensitive by default; :meth:`case_insensitive` builds the other kind. On failure the
    reasoning shows what was expected and what was received.
    """

    name = "exact_match"
    by_name = True
    needs = Needs(reference=True)

    def __init__(self, *, case_sensitive: bool = True, negate: bool = False) -> None:
        super().__init__(threshold=BINARY_PASS_MARK, case_sensitive=case_sensitive, negate=negate)

    @classmethod
    def case_insensitive(cls, *, negate: bool = False) -> ExactMatchEvaluator:
        """An exact match that ignores letter case."""
        return cls(case_sensitive=False, negate=negate)

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        got, want = prediction.strip(), reference.strip()
        if _fold(got, self.case_sensitive) == _fold(want, self.case_sensitive):
            return Scored(score=1.0, reasoning="The output equals the expected string.")
        hint = ""
        if self.case_sensitive and got.casefold() == want.casefold():
            hint = " (they differ only in letter case)"
        return Scored(
            score=0.0,
            reasoning=f"Expected {shorten(want, 120)!r}, received {shorten(got, 120)!r}{hint}.",
            details={"expected": shorten(want, 500), "received": shorten(got, 500)},
        )


# -- contains --------------------------------------------------------------------------------------


def _terms(reference: str) -> list[str]:
    return [term.strip() for term in reference.split(",") if term.strip()]


class ContainsEvaluator(Evaluator):
    """The output must contain the expected terms (a comma-separated list).

    The score is the fraction of terms found, so three terms out of four gives 0.75, below the fixed
    pass mark of 0.9. Use a single term for a plain yes or no.
    """

    name = "contains"
    by_name = True
    needs = Needs(reference=True)

    def __init__(self, *, case_sensitive: bool = False, negate: bool = False) -> None:
        super().__init__(threshold=FIXED_PASS_MARK, case_sensitive=case_sensitive, negate=negate)

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        terms = _terms(reference)
        if not terms:
            return Scored(
                score=None,
                status="invalid_input",
                message="contains needs at least one term: the expected value is empty "
                "(give a comma-separated list, e.g. 'Paris, France')",
            )
        haystack = _fold(prediction, self.case_sensitive)
        found = [t for t in terms if _fold(t, self.case_sensitive) in haystack]
        missing = [t for t in terms if t not in found]
        score = len(found) / len(terms)
        reasoning = f"Found {len(found)} of {len(terms)} term{'s' if len(terms) != 1 else ''}"
        reasoning += (
            f"; missing: {', '.join(repr(shorten(t, 60)) for t in missing[:10])}." if missing else "."
        )
        return Scored(score=score, reasoning=reasoning, details={"found": found, "missing": missing})


# -- regex -----------------------------------------------------------------------------------------


def _unrolled_size(pattern: str, flags: int) -> int | None:
    """``pattern``'s size with every item multiplied by the minimum counts of the repetitions around it.

    Read with the ``regex`` package's own parser (a private module, used read-only), so every syntax
    it knows counts; parsing allocates one node per repetition, whatever its count. Returns None when
    the pattern does not parse: ``regex.compile`` then reports why. Stops counting past the limit.
    """
    try:
        core: Any = importlib.import_module("regex._regex_core")
        source = core.Source(pattern)
        global_flags = flags
        for _ in range(8):  # a global inline flag ((?x) in version 0) restarts the parse, as in regex
            info = core.Info(global_flags, source.char_type, {})
            source.ignore_space = bool(info.flags & regex.VERBOSE)
            try:
                parsed = core._parse_pattern(source, info)
                break
            except core._UnscopedFlagSet:
                global_flags = info.global_flags
                source = core.Source(pattern)
        else:
            return None
        node_type, repeat_type, string_type = core.RegexBase, core.GreedyRepeat, core.String
    except (regex.error, RecursionError, ValueError, OverflowError):
        return None
    except (ImportError, AttributeError, TypeError):  # the private parser changed: bound from the text
        return _textual_bound(pattern)
    total = 0  # leaves (characters, classes, anchors, ...) times the repetitions around them
    stack: list[tuple[Any, int]] = [(parsed, 1)]
    while stack and total <= MAX_REGEX_SIZE:
        node, weight = stack.pop()
        if isinstance(node, repeat_type):  # lazy and possessive repeats are subclasses
            weight *= max(1, node.min_count)
        children = [
            item
            for value in vars(node).values()
            for item in (value if isinstance(value, (list, tuple)) else (value,))
            if isinstance(item, node_type)
        ]
        if children:
            stack.extend((child, weight) for child in children)
        else:
            total += weight * (max(1, len(node.characters)) if isinstance(node, string_type) else 1)
    return total


def _textual_bound(pattern: str) -> int:
    # An upper bound without a parser: every character times every count written in the pattern.
    bound = len(pattern)
    for count in re.findall(r"\{\s*(\d+)", pattern):
        bound *= max(1, int(count[:12]))
        if bound > MAX_REGEX_SIZE:
            break
    return bound


def _check_pattern_size(pattern: str, flags: int) -> None:
    shown = shorten(pattern, 120)
    if len(pattern) > MAX_REGEX_CHARS:
        raise ConfigError(
            f"regex: pattern {shown!r} is {len(pattern):,} characters long, over the limit of "
            f"{MAX_REGEX_CHARS:,}; use a shorter pattern (or several evaluators)"
        )
    size = _unrolled_size(pattern, flags)
    if size is not None and size > MAX_REGEX_SIZE:
        raise ConfigError(
            f"regex: pattern {shown!r} repeats too much to compile safely: with its repetitions "
            f"multiplied out by their minimum counts it has over {MAX_REGEX_SIZE:,} items (the limit; "
            "(?:a{1000}){1000} has 1,000,000). Lower the minimum counts (a{0,N} and a* cost nothing), "
            "or check lengths with a shorter pattern"
        )


class RegexMatchEvaluator(Evaluator):
    """The output must match a regular expression (anywhere; anchor it with ``^...$`` for all of it).

    Args:
        pattern: The regular expression (``regex`` package syntax, a superset of ``re``).
        case_sensitive: Whether matching keeps letter case (default: ignore case).
        negate: Pass when the pattern does *not* match.
        timeout: Seconds a single match may take before it is abandoned (default 1.0).
        max_chars: Longest output matched (default 1,000,000); longer ones are ``invalid_input``. The
            regex package's backtracking state grows with the output, and with every capture group
            (it keeps each capture of a repeated group), so the limit is divided by one plus the
            number of capture groups beyond :data:`REGEX_GROUP_BUDGET` character-groups.

    Raises:
        ConfigError: The pattern does not compile, or an option is invalid.
    """

    name = "regex"
    primary_option = "pattern"
    _inline_chars = -1  # always on a worker thread: even a short output can backtrack until the timeout

    def __init__(
        self,
        pattern: str,
        *,
        case_sensitive: bool = False,
        negate: bool = False,
        timeout: float = 1.0,
        max_chars: int = REGEX_MAX_CHARS,
    ) -> None:
        super().__init__(threshold=BINARY_PASS_MARK, case_sensitive=case_sensitive, negate=negate)
        if not isinstance(pattern, str):
            raise config_error("regex", "pattern", "a string", pattern)
        check_seconds(timeout, "timeout", "regex")
        check_int(max_chars, "max_chars", "regex", minimum=1)
        flags = 0 if case_sensitive else regex.IGNORECASE
        _check_pattern_size(pattern, flags)
        try:
            self._compiled = regex.compile(pattern, flags)
        except regex.error as exc:
            # types-regex leaves out the .pos and .msg that regex.error sets (as re.error does)
            pos, msg = exc.pos, exc.msg  # type: ignore[attr-defined]
            where = f" at position {pos}" if pos is not None else ""
            raise ConfigError(f"regex: invalid pattern {shorten(pattern, 120)!r}: {msg}{where}") from exc
        except (ValueError, OverflowError, RecursionError) as exc:  # e.g. a repeat count out of range
            raise ConfigError(f"regex: invalid pattern {shorten(pattern, 120)!r}: {exc}") from exc
        self.pattern = pattern
        self.timeout = float(timeout)
        self.max_chars = max_chars
        groups = self._compiled.groups
        self._longest = min(max_chars, REGEX_GROUP_BUDGET // (groups + 1))
        self._why_longest = (
            f"max_chars {max_chars:,}"
            if self._longest == max_chars
            else f"{REGEX_GROUP_BUDGET:,} characters / (1 + {groups} capture groups); use (?:...) "
            "for groups that need not capture"
        )

    def _options(self) -> dict[str, object]:
        return {
            "pattern": self.pattern,
            **super()._options(),
            "timeout": self.timeout,
            "max_chars": self.max_chars,
        }

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        shown = shorten(self.pattern, 80)
        if len(prediction) > self._longest:
            return Scored(
                score=None,
                status="invalid_input",
                message=f"regex: the output is {len(prediction):,} characters, over the limit of "
                f"{self._longest:,} for pattern {shown!r} ({self._why_longest}); not matched",
            )
        try:  # concurrent: the GIL is released while matching, so other threads (the loop) run
            match = self._compiled.search(prediction, timeout=self.timeout, concurrent=True)
        except MemoryError:  # only under a process memory limit: the limits above keep it rare
            return Scored(
                score=None,
                status="invalid_input",
                message=f"regex: matching {shown!r} on a {len(prediction):,}-character output ran out "
                "of memory; simplify the pattern (fewer capture groups and alternations) or lower max_chars",
            )
        except TimeoutError:
            return Scored(
                score=None,
                status="timeout",
                message=(
                    f"regex: pattern {shown!r} did not finish within {self.timeout:g} s on a "
                    f"{len(prediction)}-character output (catastrophic backtracking?); the evaluation "
                    "failed. Simplify the pattern (avoid nested quantifiers such as (a+)+) or raise timeout."
                ),
            )
        if match is None:
            return Scored(score=0.0, reasoning=f"No match for /{shown}/.")
        return Scored(
            score=1.0,
            reasoning=f"/{shown}/ matched {shorten(match.group(0), 80)!r} at {match.start()}..{match.end()}.",
            details={"match": shorten(match.group(0), 500), "span": [match.start(), match.end()]},
        )


# -- levenshtein -----------------------------------------------------------------------------------


def _levenshtein(prediction: str, reference: str, case_sensitive: bool) -> tuple[float, int, int]:
    a = _fold(prediction.strip(), case_sensitive)
    b = _fold(reference.strip(), case_sensitive)
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0, 0, 0
    distance = Levenshtein.distance(a, b)
    # rapidfuzz's normalized_distance is distance / max(len): the same correctly rounded division.
    return 1.0 - distance / longest, distance, longest


def levenshtein_similarity(prediction: str, reference: str, *, case_sensitive: bool = False) -> float:
    """``1 - Levenshtein distance / length of the longer string``, on trimmed (and case-folded) text.

    Exactly ``1 - rapidfuzz.distance.Levenshtein.normalized_distance`` of the normalised strings.
    """
    if case_sensitive:
        return 1.0 - _normalized_distance(prediction.strip(), reference.strip())
    return 1.0 - _normalized_distance(prediction.strip().casefold(), reference.strip().casefold())


def _over_cap(text: str, max_chars: int, field: str, name: str) -> Scored | None:
    if len(text) <= max_chars:
        return None
    return Scored(
        score=None,
        status="invalid_input",
        message=f"the {field} is {len(text):,} characters, over {name}'s limit of {max_chars:,} "
        f"(max_chars; its cost grows with the product of the two lengths); shorten it or raise max_chars",
    )


class LevenshteinEvaluator(GradedEvaluator):
    """Edit-distance similarity: ``1 - distance / max(len)``; sensitive to small deviations.

    Both sides are trimmed; letter case is ignored unless ``case_sensitive``. Both empty scores 1.

    Args:
        max_chars: Longest side scored (default 50,000 characters, ~0.5 s at worst); a longer output
            or expected value is ``invalid_input``.
    """

    name = "levenshtein"

    def __init__(
        self,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        case_sensitive: bool = False,
        negate: bool = False,
        max_chars: int = LEVENSHTEIN_MAX_CHARS,
    ) -> None:
        super().__init__(threshold=threshold, case_sensitive=case_sensitive, negate=negate)
        self.max_chars = check_int(max_chars, "max_chars", self.name, minimum=1)

    def _options(self) -> dict[str, object]:
        # Only a non-default cap joins the signature, so earlier snapshots of the default stay comparable.
        extra = {"max_chars": self.max_chars} if self.max_chars != LEVENSHTEIN_MAX_CHARS else {}
        return {**super()._options(), **extra}

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        for text, field in ((prediction, "output"), (reference, "expected value")):
            if (over := _over_cap(text, self.max_chars, field, self.name)) is not None:
                return over
        a = _fold(prediction.strip(), self.case_sensitive)
        b = _fold(reference.strip(), self.case_sensitive)
        for text, field in ((a, "case-folded output"), (b, "case-folded expected value")):
            if (over := _over_cap(text, self.max_chars, field, self.name)) is not None:
                return over
        score, distance, longest = _levenshtein(a, b, True)
        return Scored(
            score=score,
            reasoning=(
                f"Levenshtein distance {distance} over {longest} characters: similarity {score:.4f}, "
                f"threshold: {self.threshold:.4f}."
            ),
            details={"distance": distance, "max_length": longest},
        )


# -- f1 --------------------------------------------------------------------------------------------


def _f1(prediction: str, reference: str, case_sensitive: bool) -> tuple[float, int, int, int]:
    pred = set(_fold(prediction, case_sensitive).split())
    ref = set(_fold(reference, case_sensitive).split())
    if not pred and not ref:
        return 1.0, 0, 0, 0
    common = len(pred & ref)
    if common == 0:
        return 0.0, 0, len(pred), len(ref)
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall), common, len(pred), len(ref)


def token_f1(prediction: str, reference: str, *, case_sensitive: bool = False) -> float:
    """F1 over the unique whitespace-separated tokens of each side; both empty scores 1, one empty 0."""
    return _f1(prediction, reference, case_sensitive)[0]


class F1Evaluator(GradedEvaluator):
    """F1 over the unique whitespace-separated tokens of the output and the reference.

    Precision is the share of the output's distinct tokens found in the reference, recall the share of
    the reference's distinct tokens found in the output. Punctuation stays attached to its token.
    """

    name = "f1"

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        score, common, n_pred, n_ref = _f1(prediction, reference, self.case_sensitive)
        if n_pred == 0 and n_ref == 0:
            reasoning = f"Both texts are empty: F1 1.0000, threshold: {self.threshold:.4f}."
        else:
            reasoning = (
                f"{common} shared unique tokens ({n_pred} in the output, {n_ref} in the reference): "
                f"F1 {score:.4f}, threshold: {self.threshold:.4f}."
            )
        return Scored(
            score=score,
            reasoning=reasoning,
            details={"common_tokens": common, "prediction_tokens": n_pred, "reference_tokens": n_ref},
        )
