"""The data embedded in the HTML report: compact JSON that report.js reads.

Strings are interned (a context shared by many samples, or a claim shared by faithfulness and
groundedness, is stored once); rows, results and claims are positional arrays; claim spans and evidence
quotes found in their text are stored as UTF-16 offsets (what JavaScript string indexes count) rather
than as text. :func:`build_payload` documents the layout.
"""

from __future__ import annotations

import math
from array import array
from typing import Any

from pydantic_core import to_jsonable_python

from ragmetrics.pipeline.report import Report
from ragmetrics.report._conversations import conversations
from ragmetrics.score import ClaimRecord, JudgeInfo, MetricResult
from ragmetrics.text import fold, normalize_for_match

__all__ = [
    "PAYLOAD_VERSION",
    "RELEVANCES",
    "VERDICTS",
    "build_payload",
    "context_view",
    "metric_names",
    "split_of",
]

PAYLOAD_VERSION = 2
VERDICTS = ("supported", "contradicted", "not_found")
NOT_APPLICABLE = "not_applicable"
"""The status shown for a metric that does not score a record (a conversation-level metric on a turn)."""
RELEVANCES = ("direct", "supporting", "off_topic")
_SCORE_DIGITS = 6  # scores are embedded rounded to 6 decimals: exact enough for sorting and display


class _Strings:
    """Interns strings: each distinct text is stored once and referred to by index (-1 for none)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.items: list[str] = []

    def __call__(self, text: str | None) -> int:
        if not text:
            return -1
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.items)
            self.items.append(text)
        return i


def _status(record: Any, metric: str) -> str:
    """The record's status for ``metric``; :data:`NOT_APPLICABLE` when the metric does not score it."""
    return record.status_of(metric) if metric in record.scores else NOT_APPLICABLE


def build_payload(report: Report, metrics: list[str]) -> dict[str, Any]:
    """The data the page's script reads (``metrics`` from :func:`metric_names`).

    Layout (positional arrays keep 10,000 rows small; report.js names the positions)::

        {"v": 2, "metrics": [name], "statuses": [status], "judges": [[spec, model, heuristic]],
         "strings": [text], "rows": [row], "conversations": [conversation]}
        row    = [index, id, question, answer, [context], reference, [score|null per metric],
                  [status code per metric], cost_usd, latency_ms, [result|null per metric],
                  [error], {metric: [repeat score]} | null]
        result = [score, status code, message, reasoning, passed, threshold, [claim],
                  [calls, cached_calls, prompt_tokens, completion_tokens, cost_usd, reasks, retries,
                  unmetered], latency_ms,
                  judge index, details (an object, or null), signature, [context verdict] | null,
                  split text (0 the answer, 1 the reference)]
        claim  = [text (-1: same as its span), span start, span end, span text (when not located),
                  verdict (0 none, 1 supported, 2 contradicted, 3 not_found),
                  relevance (0 none, 1 direct, 2 supporting, 3 off_topic), context index (-1 none),
                  quote start, quote end, quote text (when not located), verified (-1 none, 0, 1), reason]
        error  = [metric|null, status, message, type, traceback, field]
        context verdict = [context index, relevant (-1 none, 0, 1), [claim index], reason]

    The context verdicts come from a metric's ``details["contexts"]`` (see :func:`context_view`); when
    they are read, that key is left out of the embedded details. The split text is the one the result's
    claims were split from (see :func:`split_of`): their span offsets are in that text.

    ``conversations`` holds each conversation whose turns are rows (its messages, tool-call metrics and
    turn rows; layout in :func:`ragmetrics.report._conversations.conversations`), empty otherwise.

    Text fields are indexes into ``strings`` (-1 for none); offsets are UTF-16 code units, as in
    JavaScript strings, and -1 when the span or quote was not found in the text.
    """
    strings = _Strings()
    statuses: dict[str, int] = {}
    judges: dict[tuple[str, str, bool], int] = {}

    def status_code(status: str) -> int:
        return statuses.setdefault(status, len(statuses))

    def judge_code(judge: JudgeInfo | None) -> int:
        if judge is None:
            return -1
        key = (judge.spec, judge.model, judge.heuristic)
        return judges.setdefault(key, len(judges))

    rows = []
    for rec in report.records:
        sample = rec.sample
        answer = sample.answer if sample else ""
        reference = (sample.reference or "") if sample else ""
        contexts = list(sample.contexts) if sample else []
        results = []
        finder = _Finder()
        for name in metrics:
            result = rec.results.get(name)
            results.append(
                None
                if result is None
                else _result(result, (answer, reference), contexts, strings, finder, status_code, judge_code)
            )
        errors = [
            [e.metric, e.status, strings(e.message), e.type, strings(e.traceback), e.field]
            for e in rec.errors
        ]
        spread = {name: [_round(s) for s in sp.scores] for name, sp in rec.spread.items()} or None
        rows.append(
            [
                rec.index,
                rec.id,
                strings(sample.question if sample else None),
                strings(answer),
                [strings(c) for c in contexts],
                strings(sample.reference if sample else None),
                [_round(rec.scores.get(name)) for name in metrics],
                [status_code(_status(rec, name)) for name in metrics],
                round(rec.usage.cost_usd, 8),
                round(rec.latency_ms, 1),
                results,
                errors,
                spread,
            ]
        )
    return {
        "v": PAYLOAD_VERSION,
        "metrics": metrics,
        "statuses": list(statuses),
        "judges": [list(k) for k in judges],
        "strings": strings.items,
        "rows": rows,
        "conversations": conversations(report.records, strings, _plain),
    }


def split_of(result: MetricResult) -> int:
    """Which text ``result``'s claims were split from: 0 the answer, 1 the reference.

    The reference when the metric's details say ``"claims_of": "reference"`` (context recall, and
    context precision on a row with a reference); the answer otherwise (every other claim metric).
    """
    return 1 if isinstance(result.details, dict) and result.details.get("claims_of") == "reference" else 0


def _result(
    result: MetricResult,
    texts: tuple[str, str],
    contexts: list[str],
    strings: _Strings,
    finder: _Finder,
    status_code: Any,
    judge_code: Any,
) -> list[Any]:
    """One result as a positional array; ``texts``: the sample's answer and reference."""
    split = split_of(result)
    text = texts[split]
    claims = []
    cursor = 0
    for claim in result.claims:
        row, end = _claim(claim, text, contexts, strings, finder, cursor)
        claims.append(row)
        cursor = end if end >= 0 else cursor
    u = result.usage
    view = context_view(result.details, strings)
    details = result.details
    if view is not None:
        details = {k: v for k, v in details.items() if k != "contexts"}
    return [
        _round(result.score),
        status_code(result.status),
        strings(result.message),
        strings(result.reasoning),
        result.passed,
        result.threshold,
        claims,
        [
            u.calls,
            u.cached_calls,
            u.prompt_tokens,
            u.completion_tokens,
            round(u.cost_usd, 8),
            u.reasks,
            u.retries,
            u.unmetered,
        ],
        round(result.latency_ms, 1),
        judge_code(result.judge),
        _plain(details) if details else None,
        strings(result.signature),
        view,
        split,
    ]


_MAX_SUPPORTS = 1000
"""At most this many claim indices are kept per context (a report shows evidence, not a dump)."""


def _index(value: Any) -> int | None:
    """``value`` as a non-negative index (an int, not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def context_view(details: Any, strings: _Strings) -> list[list[Any]] | None:
    """The per-context verdicts of a metric's ``details["contexts"]``, as positional arrays.

    The details shape (retrieval metrics, issue 13): ``[{"index": int, "relevant": bool | None,
    "supports": [claim indices], "reason": str | None}, ...]`` in retrieval order. Details come from
    any metric, user metrics included, so the shape is checked: an entry without a non-negative int
    ``index`` is dropped, a ``relevant`` that is not a bool counts as not judged, ``supports`` keeps
    its non-negative ints (each once, at most :data:`_MAX_SUPPORTS`), a ``reason`` that is not a
    string is shown as text. An index beyond the sample's contexts is kept (report.js says so).

    Returns:
        ``[[index, relevant (-1 none, 0, 1), [claim index], reason string]]``, or None when the
        details hold no usable ``contexts`` list.
    """
    if not isinstance(details, dict):
        return None
    entries = details.get("contexts")
    if not isinstance(entries, list):
        return None
    view = []
    for entry in entries:
        if not isinstance(entry, dict) or (index := _index(entry.get("index"))) is None:
            continue
        relevant = entry.get("relevant")
        supports = entry.get("supports")
        claims = (
            list(dict.fromkeys(k for k in map(_index, supports) if k is not None))
            if isinstance(supports, list)
            else []
        )
        reason = entry.get("reason")
        view.append(
            [
                index,
                int(relevant) if isinstance(relevant, bool) else -1,
                claims[:_MAX_SUPPORTS],
                strings(reason if isinstance(reason, str) or reason is None else str(reason)),
            ]
        )
    return view or None


def _claim(
    claim: ClaimRecord, split: str, contexts: list[str], strings: _Strings, finder: _Finder, cursor: int
) -> tuple[list[Any], int]:
    """One claim as a positional array, and where its span ends in ``split`` (code points, -1).

    ``split``: the text the claim was split from (the answer, or the reference).
    """
    span = finder.locate(split, claim.span, cursor) if claim.span else None
    s0 = s1 = -1
    end = -1
    if span is not None:
        s0, s1 = _u16(split, span[0]), _u16(split, span[1])
        end = span[1]
        text = -1 if claim.text == split[span[0] : span[1]] else strings(claim.text)
    else:
        text = strings(claim.text)
    ctx = -1 if claim.context_index is None else claim.context_index  # shown as given, even out of range
    e0 = e1 = -1
    quote_text = -1
    if claim.evidence:
        quote = finder.locate(contexts[ctx], claim.evidence) if 0 <= ctx < len(contexts) else None
        if quote is not None:
            e0, e1 = _u16(contexts[ctx], quote[0]), _u16(contexts[ctx], quote[1])
        else:
            quote_text = strings(claim.evidence)
    verdict = VERDICTS.index(claim.verdict) + 1 if claim.verdict else 0
    relevance = RELEVANCES.index(claim.relevance) + 1 if claim.relevance else 0
    verified = -1 if claim.evidence_verified is None else int(claim.evidence_verified)
    row = [
        text,
        s0,
        s1,
        -1 if span is not None else strings(claim.span),
        verdict,
        relevance,
        ctx,
        e0,
        e1,
        quote_text,
        verified,
        strings(claim.reason),
    ]
    return row, end


class _Finder:
    """Finds a span or quote in a text: verbatim, else as the quote check compares them.

    The fallback searches :func:`~ragmetrics.text.fold` of the text for
    :func:`~ragmetrics.text.normalize_for_match` of the needle: the folding the claim engine's
    ``quote_found`` applies, so a quote it finds exactly (not only fuzzily) is highlighted.
    """

    def __init__(self) -> None:
        self._folded: dict[int, tuple[str, array[int], array[int]]] = {}

    def locate(self, text: str, needle: str, start: int = 0) -> tuple[int, int] | None:
        """``(start, end)`` code-point offsets of ``needle`` in ``text`` (from ``start`` first), or None."""
        needle = needle.strip()
        if not needle or not text:
            return None
        i = text.find(needle, start)
        if i < 0 and start:
            i = text.find(needle)
        if i >= 0:
            return i, i + len(needle)
        probe = normalize_for_match(needle)
        if not probe:
            return None
        folded, starts, ends = self._fold(text)
        k = folded.find(probe)
        if k < 0:
            return None
        return starts[k], ends[k + len(probe) - 1]

    def _fold(self, text: str) -> tuple[str, array[int], array[int]]:
        key = id(text)
        got = self._folded.get(key)
        if got is None:
            got = self._folded[key] = fold(text)
        return got


def _u16(text: str, i: int) -> int:
    """A code-point offset as a UTF-16 offset (what JavaScript string indexes count)."""
    if text.isascii():
        return i
    return i + sum(1 for ch in text[:i] if ord(ch) > 0xFFFF)


def _plain(value: Any) -> Any:
    """A metric's free-form details as plain JSON values (non-finite numbers as null, others as text)."""
    value = to_jsonable_python(value, fallback=str)

    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return clean(value)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, _SCORE_DIGITS)


def metric_names(report: Report) -> list[str]:
    names = dict.fromkeys(report.aggregates)
    for rec in report.records:
        for name in rec.scores:
            names.setdefault(name, None)
    return list(names)
