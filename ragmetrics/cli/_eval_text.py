"""``ragmetrics eval``'s text summary: the aggregates table, the offline judge's caveat and the worst samples.

All text from the data is escaped. Scores of the offline judge come with what that judge misses
(:mod:`ragmetrics.judge.offline.caveat`), once above the worst samples and in their heading.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragmetrics.errors import printable

if TYPE_CHECKING:
    from ragmetrics.pipeline.records import RecordScan

__all__ = ["clip", "conversation_table", "offline_note", "summary_table", "worst_heading", "worst_samples"]


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    table = [header, *rows]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary_table(report: Any) -> str:
    header = ["metric", "mean", "95% CI", "pass rate", "scored", "statuses"]
    rows = []
    for agg in report.aggregates.values():
        ci = f"[{_fmt(agg.ci_low)}, {_fmt(agg.ci_high)}]" if agg.ci_low is not None else "-"
        rate = f"{agg.pass_rate:.0%}" if agg.pass_rate is not None else "-"
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(agg.statuses.items()) if k != "ok") or "all ok"
        rows.append([agg.name, _fmt(agg.mean), ci, rate, f"{agg.count}/{agg.total}", statuses])
    return _table(header, rows)


def conversation_table(report: Any) -> str:
    """Per conversation: its turns scored, its mean per metric over them, its tool-call scores."""
    found = report.conversations
    metrics = list(report.aggregates)
    tools = [
        n for n in ("tool_call_accuracy", "tool_call_f1") if any(getattr(c, n) is not None for c in found)
    ]
    header = ["conversation", "turns", *metrics, *tools]
    rows = []
    for c in found:
        ok = sum(1 for t in c.turns if t.status == "ok")
        rows.append(
            [printable(clip(c.id, 40)), f"{ok}/{len(c.turns)}" if c.status == "ok" else c.status]
            + [_fmt(c.scores.get(m)) for m in metrics]
            + [_fmt(getattr(c, n)) for n in tools]
        )
    lines = [f"Conversations ({len(found)}; per metric, the mean over the turns):", _table(header, rows)]
    for c in found:  # what was wrong: the conversation, else the first tool-call metric below 1
        if c.message:
            lines.append(f"  {printable(clip(c.id, 40))}: {printable(clip(c.message, 200))}")
        wrong = [(n, why) for n, why in c.tool_calls.items() if (getattr(c, n, None) or 0.0) < 1.0]
        if wrong:
            lines.append(f"  {printable(clip(c.id, 40))} {wrong[0][0]}: {printable(clip(wrong[0][1], 200))}")
    return "\n".join(lines)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``...`` when something was cut."""
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def offline_note(report: Any) -> str:
    """What the offline judge is and misses, when it judged this run (else ""): three lines."""
    from ragmetrics.judge.offline.caveat import caveat_lines, offline_specs

    return "\n".join(line for spec in offline_specs(report.run.judges) for line in caveat_lines(spec))


def worst_heading(worst: Sequence[Any]) -> str:
    """The heading of the worst samples: it carries the offline judge's note when that judge scored them."""
    offline = any(
        result.judge is not None and result.judge.provider == "offline"
        for r in worst
        for result in r.results.values()
    )
    if not offline:
        return "Worst samples:"
    from ragmetrics.judge.offline.caveat import WORST_NOTE

    return f"Worst samples ({WORST_NOTE}):"


def _where(index: int | None, sources: Any) -> str:
    """The context a quote is from: ``context 2``, or the message of a conversation (``messages[4]``)."""
    if isinstance(sources, list) and index is not None and 0 <= index < len(sources):
        return printable(str(sources[index]))
    return f"context {index}"


def worst_samples(scan: RecordScan) -> str:
    """The worst samples with the claims no metric found supported, and the records carrying errors."""
    out = []
    for r in scan.worst:
        question = (r.sample.question or "") if r.sample else ""
        sources = r.sample.meta.get("sources") if r.sample else None  # a conversation's turn
        question = question.rsplit("The question now:\n", 1)[-1] if sources else question
        out.append(
            f"#{r.index} {printable(r.id)}  mean {r.mean_score:.3f}  "
            + "  ".join(f"{printable(k)} {_fmt(v)}" for k, v in r.scores.items())
        )
        if question:
            out.append(f"    Q: {printable(clip(question, 110))}")
        seen = set()
        for result in r.results.values():
            for claim in result.claims:
                if claim.verdict in ("contradicted", "not_found") and claim.text not in seen:
                    seen.add(claim.text)
                    line = f"    {claim.verdict.upper()}: {printable(clip(claim.text, 100))}"
                    if claim.evidence:
                        evidence = printable(clip(claim.evidence, 100))
                        line += f'\n      {_where(claim.context_index, sources)}: "{evidence}"'
                    out.append(line)
    first = scan.first_failed
    if first is not None:
        out.append(
            f"{scan.failed} record(s) carry errors, e.g. #{first.index}: "
            f"{printable(clip(first.errors[0].message, 160))}"
        )
    return "\n".join(out)
