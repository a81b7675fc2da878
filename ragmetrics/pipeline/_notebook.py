"""Results in a notebook: ``EvaluationResults._repr_html_``, the summary and the worst samples as HTML.

Every piece of text from the data (ids, questions, claims, messages) is escaped with
:func:`html.escape`, so a sample holding ``<script>`` shows as text and runs nothing. Worst samples scored by
the offline judge carry its note (:mod:`ragmetrics.judge.offline.caveat`).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from ragmetrics.judge.offline.caveat import WORST_NOTE
from ragmetrics.pipeline.records import RecordScan

__all__ = ["results_html"]

WORST = 5
"""Worst samples shown."""
_TEXT = 160
"""Characters of a question or claim shown."""


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cut(text: str) -> str:
    return escape(text if len(text) <= _TEXT else text[: _TEXT - 1] + "…")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _spread(scores: Sequence[float]) -> str:
    """The score distribution: min, quartiles and max (nearest rank), for a metric with no pass mark."""
    if not scores:
        return "-"
    ordered = sorted(scores)
    at = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.25, 0.5, 0.75)]
    parts = zip(("min", "p25", "median", "p75", "max"), (ordered[0], *at, ordered[-1]), strict=True)
    return " · ".join(f"{name} {value:.2f}" for name, value in parts)


def _summary(report: Any, scan: RecordScan) -> str:
    rows = []
    for agg in report.aggregates.values():
        ci = f"[{_fmt(agg.ci_low)}, {_fmt(agg.ci_high)}]" if agg.ci_low is not None else "-"
        rate = f"{agg.pass_rate:.0%}" if agg.pass_rate is not None else "no threshold"
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(agg.statuses.items()) if k != "ok") or "all ok"
        scored = f"{agg.count}/{agg.total}"
        spread = _spread(scan.scores.get(agg.name, ()))
        rows.append([escape(agg.name), _fmt(agg.mean), ci, rate, spread, scored, escape(statuses)])
    table = _table(["metric", "mean", "95% CI", "pass rate", "scores", "scored", "statuses"], rows)
    if any(agg.pass_rate is None for agg in report.aggregates.values()):
        table += (
            "<p><small>A pass rate needs a pass mark: give the metric <code>threshold=</code> "
            "(the CLI's <code>--threshold</code>); the scores column shows how the scores spread.</small></p>"
        )
    return table


def _doubts(record: Any) -> list[str]:
    """The claims no metric found supported, each once, naming the metrics and their verdicts."""
    flagged: dict[str, list[str]] = {}
    for metric, result in record.results.items():
        for c in result.claims:
            if c.verdict in ("contradicted", "not_found"):
                flagged.setdefault(c.text, []).append(f"{escape(metric)} {escape(str(c.verdict))}")
    return [f"{_cut(text)} <small>({', '.join(by)})</small>" for text, by in flagged.items()]


def _worst(worst: Sequence[Any], metrics: Sequence[str]) -> str:
    rows = []
    for r in worst:
        question = (r.sample.question or "") if r.sample is not None else ""
        doubts = _doubts(r)
        rows.append(
            [
                escape(r.id),
                _fmt(r.mean_score),
                *(_fmt(r.scores.get(m)) for m in metrics),
                _cut(question),
                "<br>".join(doubts[:3]),
            ]
        )
    if not rows:
        return ""
    header = ["id", "mean", *metrics, "question", "unsupported claims"]
    offline = any(
        res.judge is not None and res.judge.provider == "offline" for r in worst for res in r.results.values()
    )
    note = f" <small>({escape(WORST_NOTE)}; it matches words, not meaning)</small>" if offline else ""
    return f"<p><b>Worst {len(rows)} samples</b>{note}</p>{_table(header, rows)}"


def results_html(report: Any, records: Sequence[Any]) -> str:
    """The run's summary table, counters and worst samples as one HTML fragment (text escaped)."""
    stats = report.run
    usage = stats.usage
    metrics = list(report.aggregates)
    scan = RecordScan(records, WORST, metrics)
    note = ""
    first = scan.first_failed
    if first is not None:
        note = (
            f"<p>{scan.failed} record(s) carry errors, e.g. #{first.index}: "
            f"{_cut(first.errors[0].status + ': ' + first.errors[0].message)}</p>"
        )
    # a run that called nothing and hit nothing (the offline judge) has no cache to speak of
    cache = f", cache hits {stats.cache.hits}" if usage.calls or stats.cache.hits else ""
    return (
        '<div class="ragmetrics-results">'
        f"<p><b>ragmetrics</b>: {len(records)} samples, {usage.calls} calls, "
        f"${usage.cost_usd:.4f}{cache}, {stats.wall_time_s:.1f} s</p>"
        f"{_summary(report, scan)}{_worst(scan.worst, metrics)}{note}</div>"
    )
