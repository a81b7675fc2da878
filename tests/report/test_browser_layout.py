"""The report's sample table at 1400 px: no metric header cut, the latency column in view (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.pipeline import Report
from ragmetrics.report import write_html_report
from tests.report.test_browser import ARTIFACTS, Page, context, report

__all__ = ["context", "report"]  # fixtures, imported for pytest

HEADERS = """() => [...document.querySelectorAll('#samples-table thead th button > span:first-child')]
  .map(s => ({label: s.textContent, cut: s.scrollWidth > s.clientWidth + 0.5}))"""
LATENCY_IN_VIEW = """() => {
  const wrap = document.querySelector('.table-wrap').getBoundingClientRect();
  const ths = document.querySelectorAll('#samples-table thead th');
  const last = ths[ths.length - 1].getBoundingClientRect();
  return {label: ths[ths.length - 1].textContent, right: last.right, wrapRight: wrap.right};
}"""


@pytest.mark.parametrize("width", [1400, 1600])
def test_headers_are_whole_and_latency_is_in_view(
    context, report: Report, tmp_path: Path, width: int
) -> None:
    path = tmp_path / "report.html"
    write_html_report(report, path, title="layout")
    page = Page(context, path)
    page.page.set_viewport_size({"width": width, "height": 900})
    page.page.wait_for_timeout(100)
    headers = page.page.evaluate(HEADERS)
    names = {h["label"] for h in headers}
    assert {"faithfulness", "groundedness", "relevancy"} <= names, names
    assert [h["label"] for h in headers if h["cut"]] == []
    latency = page.page.evaluate(LATENCY_IN_VIEW)
    assert latency["label"].startswith("Latency") and latency["right"] <= latency["wrapRight"] + 0.5, latency
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.locator(".split").screenshot(path=str(ARTIFACTS / f"report-layout-{width}.png"))
    page.clean()
