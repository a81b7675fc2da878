"""The sample table's Claims chips are labelled (issue 23): not three bare numbers ``1 1 0``."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.pipeline import Report
from ragmetrics.report import write_html_report
from tests.report.test_browser import Page, context, report

__all__ = ["context", "report"]  # fixtures, imported for pytest

CHIPS = """() => [...document.querySelectorAll('#samples-table tbody tr.row')].slice(0, 3).map(tr =>
  [...tr.querySelectorAll('.cc')].map(c => ({text: c.textContent, label: c.getAttribute('aria-label'),
    cut: c.parentElement.scrollWidth > c.parentElement.clientWidth + 0.5})))"""
HEADER = """() => [...document.querySelectorAll('#samples-table thead th')].map(t => t.textContent)"""


@pytest.mark.parametrize("width", [1280, 1920])
def test_claim_chips_say_which_count_is_which(context, report: Report, tmp_path: Path, width: int) -> None:
    path = tmp_path / "report.html"
    write_html_report(report, path, title="chips")
    page = Page(context, path)
    page.page.set_viewport_size({"width": width, "height": 900})
    page.page.wait_for_timeout(100)
    rows = page.page.evaluate(CHIPS)
    assert rows and all(len(chips) == 3 for chips in rows), rows
    for chips in rows:
        marks = [c["text"][0] for c in chips]
        assert marks == ["\u2713", "\u2717", "?"], chips
        labels = [c["label"].split(" ", 1)[1] for c in chips]
        assert labels == ["supported", "contradicted", "not found"], chips
        assert all(c["text"][1:] == c["label"].split(" ", 1)[0] for c in chips), chips
        assert not any(c["cut"] for c in chips), chips
    assert any(t.startswith("Claims \u2713 \u2717 ?") for t in page.page.evaluate(HEADER))
