"""The self-contained HTML report of an evaluation run.

>>> from ragmetrics.report import write_html_report
>>> write_html_report(results.summary(), "report.html")  # doctest: +SKIP
"""

from __future__ import annotations

from ragmetrics.report.html import render_html, write_html_report

__all__ = ["render_html", "write_html_report"]
