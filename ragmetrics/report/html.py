r"""The self-contained HTML report: one file that shows every score and the evidence behind it.

``render_html(report)`` returns the page as a string; ``write_html_report(report, path)`` writes it.
The page makes no network request: CSS, JavaScript and SVG are inline under a Content-Security-Policy.
The server side (here, every value through :func:`html.escape`) draws the header, one card per metric
and the legend; the client side (``assets/report.js``, ``textContent`` only) draws the sample table,
each sample's detail when opened and, when the run scored conversations, their transcripts
(``assets/conversations.js``). The records are embedded once as compact JSON in a
``<script type="application/json">`` block (``<`` written as ``\u003c``), its layout described in
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
    # with conversations, their transcript view: run first, it hands report.js a function to call
    scripts = [_asset("conversations.js"), js] if payload["conversations"] else [js]
    hashes = " ".join(f"'{_sha256(s)}'" for s in scripts)
    csp = (
        "default-src 'none'; "
        f"script-src {hashes}; style-src '{_sha256(css)}'; img-src data:; "
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
        _conversations_section(len(payload["conversations"])),
        "</main>",
        f'<footer class="foot">Made by ragmetrics {html.escape(report.ragmetrics_version)}. '
        "This file is self-contained and makes no network requests.</footer>",
        f'<script type="application/json" id="rm-data">{data}</script>',
        *(f"<script>{s}</script>" for s in scripts),
        "</body></html>",
    ]
    return "\n".join(parts)


def _conversations_section(count: int) -> str:
    """The container report.js fills with each conversation's transcript (nothing without conversations)."""
    if not count:
        return ""
    return (
        '<section class="wrap convs" id="conversations" aria-labelledby="conversations-h">'
        f'<h2 id="conversations-h">Conversations ({count})</h2>'
        '<p class="conv-note">Each conversation as a transcript: every assistant turn with its scores and '
        "its claims highlighted; a claim's quote links to the message it cites.</p>"
        '<div id="conv-list"></div>'
        '<noscript><p class="empty-note">The transcripts need JavaScript.</p></noscript></section>'
    )


def _asset(name: str) -> str:
    return resources.files("ragmetrics.report").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
