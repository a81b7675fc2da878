"""Tool use checked without a judge: the calls made against the calls expected, by name and JSON arguments.

:class:`ToolCallAccuracy` aligns the two lists in order (a longest common subsequence);
:class:`ToolCallF1` matches them as multisets. Two calls match when their names are equal and their
arguments are equal as JSON values (:func:`json_equal`). Expected calls come from the conversation
(compared with every call made, in order) or from assistant messages (each compared with the calls made
since the user's last message, up to and including that message's own). Every mismatch is named in
``details``: ``missing``, ``unexpected``, ``wrong_arguments`` (the keys added, removed and changed) and,
for the in-order metric, ``out_of_order``.
"""

from __future__ import annotations

import json
import math
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ragmetrics import __version__
from ragmetrics._check import check_field
from ragmetrics.errors import InvalidInputError
from ragmetrics.metrics.base import check_threshold, passed_at
from ragmetrics.sample import Conversation, ToolCall
from ragmetrics.score import MetricResult, failure_from

__all__ = ["ToolCallAccuracy", "ToolCallF1", "json_equal"]


def _canonical(value: Any) -> Any:
    """A JSON value in a form where equal values are equal Python values and print alike."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def _key(value: Any) -> str:
    return json.dumps(_canonical(value), sort_keys=True, ensure_ascii=False, default=repr)


def json_equal(a: Any, b: Any) -> bool:
    """Whether two argument values are equal as JSON values.

    JSON has one number type, so ``1`` equals ``1.0``; ``true`` is not ``1`` and ``"1"`` is not ``1``;
    an object's key order does not matter, an array's order does.
    """
    return _key(a) == _key(b)


@dataclass(frozen=True, slots=True)
class _Call:
    call: ToolCall
    at: str
    """Where it is: ``messages[4].tool_calls[0]`` or ``expected_tool_calls[1]``."""

    @property
    def key(self) -> str:
        return _key([self.call.name, self.call.arguments])

    def shown(self) -> dict[str, Any]:
        return {"at": self.at, "name": self.call.name, "arguments": self.call.arguments}


@dataclass(frozen=True, slots=True)
class _Comparison:
    scope: str
    """``conversation`` or the assistant message the expected calls belong to (``messages[6]``)."""
    expected: tuple[_Call, ...]
    actual: tuple[_Call, ...]


def _comparisons(conversation: Conversation) -> list[_Comparison]:
    """What to compare: the whole conversation's expected calls, or each assistant message's.

    Raises:
        InvalidInputError: No expected calls are given anywhere.
    """
    made = [
        (i, _Call(c, f"messages[{i}].tool_calls[{k}]"))
        for i, m in enumerate(conversation.messages)
        for k, c in enumerate(m.tool_calls)
    ]
    if conversation.expected_tool_calls is not None:
        expected = tuple(
            _Call(c, f"expected_tool_calls[{k}]") for k, c in enumerate(conversation.expected_tool_calls)
        )
        return [_Comparison("conversation", expected, tuple(c for _, c in made))]
    found: list[_Comparison] = []
    asked = -1
    for i, message in enumerate(conversation.messages):
        if message.role == "user":
            asked = i
        if message.expected_tool_calls is None:
            continue
        at = f"messages[{i}]"
        expected = tuple(
            _Call(c, f"{at}.expected_tool_calls[{k}]") for k, c in enumerate(message.expected_tool_calls)
        )
        found.append(_Comparison(at, expected, tuple(c for j, c in made if asked < j <= i)))
    if not found:
        raise InvalidInputError(
            "expected_tool_calls",
            "given for the conversation or on an assistant message",
            row=conversation.id,
            detail="the tool-call metrics compare the calls made with the calls expected; "
            "use [] to expect no call",
        )
    return found


def _in_order(expected: Sequence[_Call], actual: Sequence[_Call]) -> list[tuple[int, int]]:
    """The pairs (expected, actual) of a longest common subsequence of equal calls."""
    e = [c.key for c in expected]
    a = [c.key for c in actual]
    table = [[0] * (len(a) + 1) for _ in range(len(e) + 1)]
    for i in range(len(e) - 1, -1, -1):
        for j in range(len(a) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if e[i] == a[j] else max(table[i + 1][j], table[i][j + 1])
    pairs = []
    i = j = 0
    while i < len(e) and j < len(a):
        if e[i] == a[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _as_multiset(expected: Sequence[_Call], actual: Sequence[_Call]) -> list[tuple[int, int]]:
    """The pairs (expected, actual) of equal calls, each expected call taking the first equal call left."""
    free: dict[str, list[int]] = defaultdict(list)
    for j, call in enumerate(actual):
        free[call.key].append(j)
    return [(i, free[call.key].pop(0)) for i, call in enumerate(expected) if free[call.key]]


def _pair_up(
    expected: list[tuple[int, _Call]], actual: list[tuple[int, _Call]], same: Callable[[_Call, _Call], bool]
) -> tuple[list[tuple[_Call, _Call]], list[tuple[int, _Call]], list[tuple[int, _Call]]]:
    """Pair the left-over calls for which ``same(e, a)`` holds, in order; the rest of both lists."""
    pairs = []
    rest_actual = list(actual)
    rest_expected = []
    for i, e in expected:
        k = next((k for k, (_, a) in enumerate(rest_actual) if same(e, a)), None)
        if k is None:
            rest_expected.append((i, e))
        else:
            pairs.append((e, rest_actual.pop(k)[1]))
    return pairs, rest_expected, rest_actual


def _key_diff(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> dict[str, list[str]]:
    return {
        "added": sorted(k for k in actual if k not in expected),
        "removed": sorted(k for k in expected if k not in actual),
        "changed": sorted(k for k in expected if k in actual and not json_equal(expected[k], actual[k])),
    }


def _mismatches(
    comparison: _Comparison, pairs: list[tuple[int, int]], *, ordered: bool
) -> dict[str, list[Any]]:
    """The calls not matched, named: out of order (in-order only), wrong arguments, missing, unexpected."""
    matched_e = {i for i, _ in pairs}
    matched_a = {j for _, j in pairs}
    left_e = [(i, c) for i, c in enumerate(comparison.expected) if i not in matched_e]
    left_a = [(j, c) for j, c in enumerate(comparison.actual) if j not in matched_a]
    late: list[tuple[_Call, _Call]] = []
    if ordered:
        late, left_e, left_a = _pair_up(left_e, left_a, lambda e, a: e.key == a.key)
    wrong, left_e, left_a = _pair_up(left_e, left_a, lambda e, a: e.call.name == a.call.name)
    scope = comparison.scope
    found: dict[str, list[Any]] = {
        "missing": [{"scope": scope, **c.shown()} for _, c in left_e],
        "unexpected": [{"scope": scope, **c.shown()} for _, c in left_a],
        "wrong_arguments": [
            {
                "scope": scope,
                "at": a.at,
                "expected_at": e.at,
                "name": a.call.name,
                "expected": e.call.arguments,
                "actual": a.call.arguments,
                **_key_diff(e.call.arguments, a.call.arguments),
            }
            for e, a in wrong
        ],
    }
    if ordered:
        found["out_of_order"] = [
            {"scope": scope, "at": a.at, "expected_at": e.at, "name": a.call.name} for e, a in late
        ]
    return found


def _named(kind: str, item: Mapping[str, Any]) -> str:
    if kind != "wrong_arguments":
        return str(item["name"])
    keys = "; ".join(f"{k} " + ", ".join(item[k]) for k in ("added", "removed", "changed") if item[k])
    return f"{item['name']} ({keys})"


def _describe(found: Mapping[str, list[Any]]) -> str:
    parts = []
    for kind, items in found.items():
        if items:
            names = ", ".join(_named(kind, x) for x in items)
            parts.append(f"{len(items)} {kind.replace('_', ' ')}: {names}")
    return "; ".join(parts)


class _ToolCallMetric:
    """The shared shape: options, the evaluate pair, and the one place a comparison becomes a result."""

    name: ClassVar[str] = "tool_calls"
    """Snake_case name used in reports, config files and the CLI."""
    ordered: ClassVar[bool] = True

    def __init__(self, *, threshold: float | None = None) -> None:
        self.threshold = check_threshold(threshold, self.name)

    @property
    def signature(self) -> str:
        """What produces the scores: name, threshold and package version."""
        return f"{self.name}|threshold={self.threshold}|ragmetrics={__version__}"

    async def evaluate(self, conversation: Conversation) -> MetricResult:
        """Score one conversation (no LLM call; this coroutine never waits).

        Returns:
            The result; status ``invalid_input`` naming ``expected_tool_calls`` when none are given.

        Raises:
            InvalidInputError: ``conversation`` is not a :class:`~ragmetrics.sample.Conversation`.
        """
        return self.evaluate_sync(conversation)

    def evaluate_sync(self, conversation: Conversation) -> MetricResult:
        """Blocking twin of :meth:`evaluate` (it computes at once; safe inside a running event loop)."""
        start = time.perf_counter()
        check_field(conversation, "conversation", Conversation, "a Conversation", detail=self.name)
        try:
            comparisons = _comparisons(conversation)
        except InvalidInputError as exc:
            return MetricResult(
                name=self.name,
                score=None,
                threshold=self.threshold,
                reasoning=f"No score: {exc}",
                signature=self.signature,
                latency_ms=(time.perf_counter() - start) * 1000.0,
                **failure_from(exc, metric=self.name).result_fields(),
            )
        score, reasoning, details = self._score(comparisons)
        return MetricResult(
            name=self.name,
            score=score,
            passed=passed_at(score, self.threshold),
            threshold=self.threshold,
            reasoning=reasoning,
            details=details,
            signature=self.signature,
            latency_ms=(time.perf_counter() - start) * 1000.0,
        )

    def _score(self, comparisons: list[_Comparison]) -> tuple[float, str, dict[str, object]]:
        raise NotImplementedError

    def _details(self, comparisons: list[_Comparison]) -> tuple[int, int, int, dict[str, list[Any]]]:
        """Matched, expected and made counts over all comparisons, and every mismatch by kind."""
        matched = expected = made = 0
        found: dict[str, list[Any]] = defaultdict(list)
        for comparison in comparisons:
            match = _in_order if self.ordered else _as_multiset
            pairs = match(comparison.expected, comparison.actual)
            matched += len(pairs)
            expected += len(comparison.expected)
            made += len(comparison.actual)
            for kind, items in _mismatches(comparison, pairs, ordered=self.ordered).items():
                found[kind] += items
        return matched, expected, made, dict(found)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(threshold={self.threshold!r})"


class ToolCallAccuracy(_ToolCallMetric):
    """Expected tool calls matched in order: ``matched / max(expected, made)``, summed over comparisons.

    ``matched`` is the length of a longest common subsequence of the expected and the made calls (equal
    name, arguments equal as JSON values); the denominator is the longer of the two lists, summed over
    the comparisons (the whole conversation, or each assistant message with expected calls). So the
    score is 1 exactly when every comparison's calls are the expected ones in the expected order; each
    missing, extra, wrongly argued or out-of-order call costs the same. Nothing expected and nothing
    made scores 1. Why not RAGAS's definition (the mean argument match of the expected calls, zeroed when
    the name sequences are not aligned): it ignores extra calls and is all or nothing on order, so one
    stray call scores like a wrong trajectory; this one degrades by one call at a time.
    """

    name = "tool_call_accuracy"
    ordered = True

    def _score(self, comparisons: list[_Comparison]) -> tuple[float, str, dict[str, object]]:
        denominator = sum(max(len(c.expected), len(c.actual)) for c in comparisons)
        matched, expected, made, found = self._details(comparisons)
        score = matched / denominator if denominator else 1.0
        problems = _describe(found)
        reasoning = f"{matched} of {expected} expected call(s) made in order ({made} made)" + (
            f"; {problems}." if problems else "."
        )
        details: dict[str, object] = {"matched": matched, "expected": expected, "made": made, **found}
        return score, reasoning, details


class ToolCallF1(_ToolCallMetric):
    """Expected tool calls matched as multisets: the F1 of precision and recall, summed over comparisons.

    ``matched`` counts the made calls equal to an expected one (equal name, arguments equal as JSON
    values), each call used once, order ignored. ``precision = matched / made``, ``recall = matched /
    expected``, ``F1 = 2PR / (P + R)`` (0 when both are 0). An empty side: precision with nothing made
    and recall with nothing expected are 1 when the other side is empty too, else 0; so nothing expected
    and nothing made scores 1, and any call when none was expected scores 0.
    """

    name = "tool_call_f1"
    ordered = False

    def _score(self, comparisons: list[_Comparison]) -> tuple[float, str, dict[str, object]]:
        matched, expected, made, found = self._details(comparisons)
        precision = matched / made if made else (1.0 if expected == 0 else 0.0)
        recall = matched / expected if expected else (1.0 if made == 0 else 0.0)
        score = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        problems = _describe(found)
        reasoning = (
            f"{matched} of {made} call(s) made were expected (precision {precision:.2f}), {matched} of "
            f"{expected} expected were made (recall {recall:.2f})" + (f"; {problems}." if problems else ".")
        )
        details: dict[str, object] = {
            "matched": matched,
            "expected": expected,
            "made": made,
            "precision": precision,
            "recall": recall,
            **found,
        }
        return score, reasoning, details
