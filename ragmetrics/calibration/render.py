"""A calibration report as text (the CLI's tables) and as a self-contained HTML page."""

from __future__ import annotations

import html
from typing import Any, TypeAlias

# The report's models live in calibration.run, which calls these functions: they are typed Any here so
# the two modules do not import each other. ``report`` is a CalibrationReport, ``a`` a MetricAgreement.
CalibrationReport: TypeAlias = Any
MetricAgreement: TypeAlias = Any

__all__ = ["near_chance", "report_html", "report_text"]

_COLUMNS = (
    "judge",
    "AUROC [95% CI]",
    "bal.acc@thr [95% CI]",
    "kappa",
    "best thr (bal.acc)",
    "TP FP TN FN",
    "scored",
    "calls/label",
    "$/label",
)


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _with_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.3f}"


def _cells(judge: str, a: MetricAgreement, calls: float, cost: float) -> list[str]:
    c = a.confusion
    best = "-" if a.best_threshold is None else f"{a.best_threshold:.3f} ({_num(a.best_balanced_accuracy)})"
    return [
        judge,
        _with_ci(a.auroc, a.auroc_ci),
        _with_ci(a.balanced_accuracy, a.balanced_accuracy_ci),
        _num(a.kappa),
        best,
        " ".join(str(c.get(k, 0)) for k in ("tp", "fp", "tn", "fn")) if c else "-",
        f"{a.scored}/{a.labelled}",
        f"{calls:.2f}",
        f"{cost:.5f}",
    ]


def near_chance(a: MetricAgreement) -> bool:
    """True when the AUROC is undefined or its interval includes 0.5 (the judge may be guessing)."""
    if a.auroc is None:
        return True
    low, high = a.auroc_ci if a.auroc_ci else (a.auroc, a.auroc)
    return bool(low <= 0.5 <= high)


def _tables(report: CalibrationReport) -> list[tuple[str, list[tuple[list[str], bool]], list[str]]]:
    """Per metric: a title, the rows (one per judge, and whether it is near chance) and notes."""
    out = []
    for metric in report.metrics:
        rows, notes, title = [], [], metric
        for judge in report.judges:
            agreement = judge.metrics.get(metric) or next(iter(judge.metrics.values()))
            title = (
                f"{agreement.metric} (pass mark {agreement.threshold:g}; {agreement.labelled} labelled: "
                f"{agreement.positives} good, {agreement.negatives} bad)"
            )
            cells = _cells(judge.judge, agreement, judge.calls_per_label, judge.cost_per_label_usd)
            rows.append((cells, near_chance(agreement)))
            if agreement.unscored:
                statuses = ", ".join(f"{k} {v}" for k, v in agreement.statuses.items() if k != "ok")
                notes.append(f"{judge.judge}: {agreement.unscored} labelled rows unscored ({statuses})")
        out.append((title, rows, notes))
    return out


def report_text(report: CalibrationReport) -> str:
    """The judges side by side, one aligned table per metric, then what the figures mean."""
    from ragmetrics.errors import printable

    lines = [f"Calibration against {printable(report.source)}"]
    for title, rows, notes in _tables(report):
        table = [list(_COLUMNS), *[[printable(cell) for cell in row] for row, _ in rows]]
        widths = [max(len(row[i]) for row in table) for i in range(len(_COLUMNS))]
        lines += ["", title]
        lines += [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table
        ]
        lines += [f"  note: {printable(n)}" for n in notes]
    lines += [
        "",
        "AUROC 0.5 and kappa 0 are chance; intervals are seeded bootstrap 95% "
        f"({report.bootstrap} resamples). A judge whose AUROC interval includes 0.5 cannot tell good "
        "answers from bad ones on these labels.",
    ]
    return "\n".join(lines)


_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#1b1f24;max-width:1400px}
h1{font-size:1.4rem}h2{font-size:1.05rem;margin-top:1.8rem}
table{border-collapse:collapse;width:100%}th,td{padding:.35rem .6rem;border-bottom:1px solid #d8dee4;
text-align:right;white-space:nowrap}th:first-child,td:first-child{text-align:left;white-space:normal;
word-break:break-all}th{background:#f6f8fa}.chance{color:#b42318;font-weight:600}.note{color:#57606a}
"""


def report_html(report: CalibrationReport) -> str:
    """A self-contained page (no scripts, no external assets); every value is escaped."""
    e = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>ragmetrics calibration: {e(report.source)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Judge calibration against {e(report.source)}</h1>",
    ]
    for title, rows, notes in _tables(report):
        parts.append(f"<h2>{e(title)}</h2><table><thead><tr>")
        parts += [f"<th>{e(c)}</th>" for c in _COLUMNS]
        parts.append("</tr></thead><tbody>")
        for row, chance in rows:
            cells = [
                f"<td class='chance'>{e(cell)}</td>" if i == 1 and chance else f"<td>{e(cell)}</td>"
                for i, cell in enumerate(row)
            ]
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</tbody></table>")
        parts += [f"<p class='note'>{e(n)}</p>" for n in notes]
    parts.append(
        "<p class='note'>AUROC 0.5 and kappa 0 are chance; intervals are seeded bootstrap 95% "
        f"({report.bootstrap} resamples). Red: the AUROC interval includes 0.5.</p></body></html>"
    )
    return "".join(parts)
