r"""The self-contained HTML report: one file that shows every score and the evidence behind it.

``render_html(report)`` returns the page as a string; ``write_html_report(report, path)`` writes it.
The page makes no network request: CSS, JavaScript and SVG are inline, and a Content-Security-Policy
forbids anything else (only the page's own script and style run, by hash).

What is drawn where:

- **Server side** (here, every value through :func:`html.escape`): the header (samples, judges, a
  prominent note when the offline heuristic judge scored the run, date, version, cost, tokens, calls,
  cache hits), one card per metric (mean, 95% CI, pass rate, status counts, a score histogram and the
  verdict mix of its claims as inline SVG, and its contexts by relevance and by use), the colour legend.
- **Client side** (``assets/report.js``, building the DOM with ``textContent`` only): the sortable,
  filterable, virtualised table of samples, and the detail of one sample (the answer with each claim's
  span highlighted by verdict, the evidence quote highlighted inside its context, reasons, relevance,
  cost, latency, errors; for a retrieval metric whose details list per-context verdicts, each
  context's relevance, reason and the claims it supports), built only when the sample is opened.

The records are embedded once, as compact JSON in a ``<script type="application/json">`` block with every
``<`` written as ``\u003c`` (so no text can close the block). Strings are interned (a context shared by
many samples, or a claim shared by faithfulness and groundedness, is stored once); claim spans and
evidence quotes found in the text (verbatim, or folded as the quote check folds it) are stored as UTF-16
offsets into the answer and context rather than as text. The layout of that JSON is described in
:func:`ragmetrics.report._payload.build_payload`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from ragmetrics.pipeline.report import EvaluationResult, Report
from ragmetrics.report._payload import build_payload, metric_names
from ragmetrics.report._summary import cards, header, judges, samples_section

__all__ = ["render_html", "write_html_report"]


def write_html_report(
    report: Report | Iterable[EvaluationResult], path: str | Path, *, title: str | None = None
) -> Path:
    """Write the report as one self-contained HTML file.

    Args:
        report: A :class:`Report` with its records (``results.summary()``), or the records themselves.
        path: Where to write the file (parent folders are created).
        title: An optional heading, e.g. the dataset's name.

    Returns:
        The path written.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(report, title=title), encoding="utf-8")
    return out


def render_html(report: Report | Iterable[EvaluationResult], *, title: str | None = None) -> str:
    """The report as one self-contained HTML page.

    Args:
        report: A :class:`Report` with its records, or the records themselves.
        title: An optional heading, e.g. the dataset's name.

    Returns:
        The HTML text.
    """
    if not isinstance(report, Report):
        report = Report.from_records(list(report))
    metrics = metric_names(report)
    payload = build_payload(report, metrics)
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        data.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in the input: let JSON escape everything non-ASCII
        data = json.dumps(payload, separators=(",", ":"), allow_nan=False)
    data = data.replace("<", "\\u003c")  # nothing inside the block can close it or open a comment
    css = _asset("report.css")
    js = _asset("report.js")
    csp = (
        "default-src 'none'; "
        f"script-src '{_sha256(js)}'; style-src '{_sha256(css)}'; img-src data:; "
        "connect-src 'none'; form-action 'none'; base-uri 'none'"
    )
    heading = title or "Evaluation report"
    used = judges(report)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        '<link rel="icon" href="data:,">',
        f"<title>{html.escape(heading)} · ragmetrics</title>",
        f"<style>{css}</style></head><body>",
        '<a class="skip" href="#samples">Skip to samples</a>',
        header(report, metrics, heading, used),
        '<main id="main">',
        cards(report, metrics, payload),
        samples_section(report, heuristic=any(heuristic for _, heuristic in used)),
        "</main>",
        f'<footer class="foot">Made by ragmetrics {html.escape(report.ragmetrics_version)}. '
        "This file is self-contained and makes no network requests.</footer>",
        f'<script type="application/json" id="rm-data">{data}</script>',
        f"<script>{js}</script>",
        "</body></html>",
    ]
    return "\n".join(parts)


def _asset(name: str) -> str:
    return resources.files("ragmetrics.report").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
