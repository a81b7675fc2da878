"""Rendering: eval case tables (text, markdown, JUnit XML) and snapshot diffs (text, markdown).

Values are rounded here and only here; the records keep full precision. Output is ASCII so CI logs
render the same everywhere, and names, reasons and tracebacks pass through
:func:`~ragmetrics.errors.printable` so that control characters in them print as visible escapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal
from xml.etree import ElementTree as ET

from ragmetrics.errors import printable
from ragmetrics.regression.case_result import CaseResult
from ragmetrics.regression.compare import MIN_PAIRS, Delta, Diff

__all__ = ["regression_message", "render_case_table", "render_diff", "render_junit_xml"]

Format = Literal["text", "markdown"]
_VERDICTS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}
_NOT_GATED = "not gated (threshold None)"


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _latency(value: float | None, measured: bool = False) -> str:
    return "-" if value is None else f"{value:,.0f} ms" + ("*" if measured else "")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], fmt: Format, right: set[int]) -> list[str]:
    if fmt == "markdown":
        esc = [[cell.replace("|", "\\|") for cell in row] for row in rows]
        rule = ["---:" if i in right else "---" for i in range(len(header))]
        return ["| " + " | ".join(r) + " |" for r in [list(header), rule, *esc]]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        cells = [
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def _summary(results: Sequence[CaseResult]) -> str:
    counts = {k: sum(r.outcome == k for r in results) for k in ("passed", "failed", "error")}
    parts = [
        f"{n} {k}" if k != "error" else f"{n} error{'s' if n != 1 else ''}" for k, n in counts.items() if n
    ]
    return ", ".join(parts) or "no cases"


def render_case_table(
    results: Sequence[CaseResult],
    *,
    fmt: Format = "text",
    duration_s: float | None = None,
    details: bool = True,
) -> str:
    """A table of case, score, cost, latency and verdict, then why each failing case failed.

    Args:
        results: Case results in display order.
        fmt: ``text`` (aligned columns) or ``markdown`` (a pipe table, e.g. for a PR comment).
        duration_s: Wall time of the run, shown in the summary line.
        details: Also list the reasons (and tracebacks, in text) of failed and errored cases.
    """
    header = ["case", "score", "cost", "latency", "verdict"]
    rows = [
        [
            f"`{printable(r.name)}`" if fmt == "markdown" else printable(r.name),
            _score(r.score),
            _cost(r.cost_usd),
            _latency(r.latency_ms, r.latency_measured),
            _VERDICTS.get(r.outcome, r.outcome.upper()),
        ]
        for r in results
    ]
    lines = _table(header, rows, fmt, right={1, 2, 3})
    bad = [r for r in results if r.outcome != "passed"]
    if details and bad:
        lines.append("")
        for r in bad:
            if fmt == "markdown":
                reasons = printable("; ".join(r.reasons()).replace("\n", " "))
                lines.append(f"- **{r.outcome.upper()}** `{printable(r.name)}`: {reasons}")
            else:
                lines.append(printable(r.describe(), multiline=True))
    took = f" in {duration_s:.2f} s" if duration_s is not None else ""
    note = " (* latency measured by ragmetrics)" if any(r.latency_measured for r in results) else ""
    lines += ["", f"{_summary(results)}{took}{note}"]
    return printable("\n".join(lines), multiline=True) + "\n"


def _value(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric == "cost_usd":
        return f"${value:.4g}"
    if metric == "latency_ms":
        return f"{value:,.0f} ms"
    return f"{value:.4g}"


def _change(delta: Delta) -> str:
    if delta.change is None:
        return "-"
    if delta.metric == "cost_usd":
        return f"{'+' if delta.change >= 0 else '-'}${abs(delta.change):.4g}"
    if delta.metric == "latency_ms":
        return f"{delta.change:+,.0f} ms"
    return f"{delta.change:+.4g}"


def _verdict(delta: Delta, require_significance: bool) -> str:
    if not delta.regressed:
        return "ok" if delta.threshold is not None else "not gated"
    if require_significance and delta.significant is False:
        return "regressed (not significant)"
    if delta.same_as:
        return f"regressed (counted as {', '.join(delta.same_as)})"
    return "REGRESSED"


def _p_value(delta: Delta, require_significance: bool) -> str:
    if delta.p_value is not None:
        return f"{delta.p_value:.3g}"
    return f"n={delta.n_pairs}" if delta.stat_note and require_significance else "-"


def regression_message(delta: Delta, require_significance: bool = False) -> str:
    """One line on a counted regression: values, relative change, the tolerance and how it was decided."""
    rel = "" if delta.relative is None else f" ({delta.relative:+.1%})"
    limit = "" if delta.threshold is None else f", tolerance {delta.threshold:+.0%}"
    line = (
        f"{printable(delta.case_name)}.{printable(delta.metric)} regressed: "
        f"{_value(delta.metric, delta.baseline)} -> {_value(delta.metric, delta.current)}{rel}{limit}"
    )
    if delta.note:
        line += f"; {printable(delta.note)}"
    if require_significance and delta.p_value is not None:
        line += f"; p-value {delta.p_value:.3g}"
    elif require_significance and delta.stat_note:
        line += f"; {delta.stat_note}, so the threshold rule decides"
    return line


def render_diff(
    diff: Diff, *, fmt: Format = "text", require_significance: bool = False, all_deltas: bool = True
) -> str:
    """The comparison as a table of deltas, then one-sided cases, signature changes and a verdict.

    Args:
        diff: What ``EvalRegression.compare`` returned.
        fmt: ``text`` or ``markdown``.
        require_significance: Mark regressions whose p-value is not below ``diff.alpha`` as not counting.
        all_deltas: Show every delta; when False only regressed ones and those with a note.
    """
    limits = ", ".join(f"{k} {'off' if v is None else f'{v:+.0%}'}" for k, v in diff.thresholds.items())
    lines = [
        f"Comparison: baseline '{diff.baseline_name}' -> current '{diff.current_name}' (thresholds: {limits})"
    ]
    for change in diff.signature_changes:
        lines.append(
            f"  note: {printable(change.case_name)} is scored differently now: "
            f"{printable(change.baseline)} -> {printable(change.current)}"
        )
    for drop in diff.judge_health_drops:
        lines.append(
            f"  note: {printable(drop.case_name)}: the judge {printable(drop.judge)} reads less of its "
            f"inputs now: reading rate {drop.baseline:.0%} -> {drop.current:.0%} ({drop.describe}); "
            "its scores may not mean what the baseline's did"
        )
    shown: Iterable[Delta] = diff.deltas if all_deltas else [d for d in diff.deltas if d.regressed or d.note]
    rows = [
        [
            f"`{printable(d.case_name)}`" if fmt == "markdown" else printable(d.case_name),
            printable(d.metric),
            _value(d.metric, d.baseline),
            _value(d.metric, d.current),
            _change(d),
            "-" if d.relative is None else f"{d.relative:+.1%}",
            _p_value(d, require_significance),
            "-" if d.ci is None else f"[{d.ci[0]:+.3g}, {d.ci[1]:+.3g}]",
            _verdict(d, require_significance),
        ]
        for d in shown
    ]
    if rows:
        header = ["case", "metric", "baseline", "current", "change", "relative", "p", "95% CI", "verdict"]
        lines += _table(header, rows, fmt, right={2, 3, 4, 5, 6})
    else:
        lines.append("(no common cases to compare)" if not diff.deltas else "(no regressions or notes)")
    for label, names in (
        ("only in baseline", diff.only_in_baseline),
        ("only in current", diff.only_in_current),
    ):
        if names:
            lines.append(f"Cases {label} ({len(names)}): {', '.join(printable(n) for n in names)}")
    notes = [
        d
        for d in diff.deltas
        if d.note and d.baseline is not None and d.current is not None and d.note != _NOT_GATED
    ]  # an ungated metric is named once, in the thresholds line
    lines += [f"  {printable(d.case_name)}.{printable(d.metric)}: {printable(d.note)}" for d in notes]
    if require_significance and any(d.stat_note for d in shown):
        lines.append(
            f"  p and 95% CI need at least {MIN_PAIRS} paired samples; 'n=K' shows how many a delta had"
        )
    counted = diff.regressions(require_significance=require_significance)
    if require_significance:
        lines += [
            f"  {printable(d.case_name)}.{printable(d.metric)}: {d.stat_note}; "
            f"--alpha cannot apply, so the threshold rule ({d.threshold:+.0%}) decides: REGRESSED"
            for d in counted
            if d.stat_note and d.threshold is not None
        ]
    if counted:
        which = ", ".join(f"{printable(d.case_name)}.{printable(d.metric)}" for d in counted)
        lines.append(f"{len(counted)} regression{'s' if len(counted) != 1 else ''}: {which}")
    else:
        lines.append("No regressions." if not diff.has_regressions else "No significant regressions.")
    return printable("\n".join(lines), multiline=True) + "\n"


def render_junit_xml(
    results: Sequence[CaseResult],
    *,
    suite: str = "ragmetrics",
    duration_s: float | None = None,
    regressions: Sequence[Delta] = (),
    require_significance: bool = False,
    missing: Sequence[str] = (),
) -> str:
    """JUnit XML for CI systems: one ``testcase`` per case, with its values as properties.

    A case whose results ran claim metrics also gets, per judge, ``judge_health[SPEC].span_rate``
    (the share of claim spans found in their text), ``.quote_rate`` (verdict quotes found in their
    context), ``.reading_rate`` (the lower of the two) and ``.reasks`` (verification re-asks).

    Each of ``regressions`` (the counted regressions of a gating comparison, one per case and
    metric) is one more failing ``testcase`` (classname ``ragmetrics.regressions``, name
    ``<case>.<metric>``), and so is each of ``missing`` (baseline cases that did not run, classname
    ``ragmetrics.missing``), so the counts agree with the exit code.

    Control characters in names, reasons and tracebacks are written as visible escapes: XML 1.0 cannot
    hold most of them, and CI systems print these fields to a terminal.
    """
    root = ET.Element("testsuites")
    counts = {k: sum(r.outcome == k for r in results) for k in ("failed", "error")}
    total = sum((r.latency_ms or 0.0) for r in results) / 1000.0
    node = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(results) + len(regressions) + len(missing)),
        failures=str(counts["failed"] + len(regressions) + len(missing)),
        errors=str(counts["error"]),
        skipped="0",
        time=f"{duration_s if duration_s is not None else total:.3f}",
    )
    for r in results:
        name = printable(r.name)
        path, _, func = name.rpartition("::")
        classname = (path or name).removesuffix(".py").replace("/", ".")
        case = ET.SubElement(
            node,
            "testcase",
            classname=classname,
            name=func or name,
            time=f"{(r.latency_ms or 0.0) / 1000.0:.3f}",
        )
        props = ET.SubElement(case, "properties")
        for key, value in (("score", r.score), ("cost_usd", r.cost_usd), ("latency_ms", r.latency_ms)):
            if value is not None:
                ET.SubElement(props, "property", name=key, value=repr(float(value)))
        for spec, health in r.judge_health.items():  # present when the case ran claim metrics
            figures = (
                ("span_rate", health.span_rate),
                ("quote_rate", health.quote_rate),
                ("reading_rate", health.reading_rate),
                ("reasks", health.reasks),
            )
            for key, value in figures:
                if value is not None:
                    text = str(value) if isinstance(value, int) else repr(float(value))
                    prop = f"judge_health[{printable(spec)}].{key}"
                    ET.SubElement(props, "property", name=prop, value=text)
        if r.outcome == "failed":
            message = printable("; ".join(r.reasons()))[:1000]
            failure = ET.SubElement(case, "failure", message=message, type="EvalCaseFailure")
            failure.text = printable(r.describe(), multiline=True)
        elif r.outcome == "error":
            message = printable("; ".join(r.reasons()))[:1000]
            error = ET.SubElement(case, "error", message=message, type="EvalCaseError")
            error.text = printable(r.traceback or r.describe(), multiline=True)
    for delta in regressions:
        case = ET.SubElement(
            node,
            "testcase",
            classname="ragmetrics.regressions",
            name=f"{printable(delta.case_name)}.{printable(delta.metric)}",
            time="0.000",
        )
        message = regression_message(delta, require_significance)
        failure = ET.SubElement(case, "failure", message=message[:1000], type="EvalRegression")
        failure.text = message
    for name in missing:
        case = ET.SubElement(
            node, "testcase", classname="ragmetrics.missing", name=printable(name), time="0.000"
        )
        message = f"{printable(name)} is in the baseline but did not run (renamed or deleted?)"
        ET.SubElement(case, "failure", message=message, type="MissingEvalCase").text = message
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
