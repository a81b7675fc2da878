"""Seven metrics in the report at 1280 and 1920 px: every column in view, no header cut (issue 23)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.evaluation import evaluate_sync
from ragmetrics.report import write_html_report
from tests.report.test_browser import ARTIFACTS, Page, context
from tests.report.test_browser_layout import HEADERS, LATENCY_IN_VIEW

__all__ = ["context"]  # fixture, imported for pytest

SEVEN = [
    "faithfulness",
    "relevancy",
    "groundedness",
    "context_precision",
    "context_recall",
    "context_relevancy",
    "answer_correctness",
]
SCROLL = """() => { const w = document.querySelector('.table-wrap');
  const stacked = document.querySelector('.split').classList.contains('stacked');
  return {scroll: w.scrollWidth, client: w.clientWidth, stacked}; }"""


@pytest.fixture(scope="module")
def seven_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from importlib import resources

    example = Path(str(resources.files("ragmetrics") / "data" / "example.jsonl"))
    results = evaluate_sync(example, metrics=SEVEN, llm="offline", progress=False)
    path = tmp_path_factory.mktemp("seven") / "report.html"
    write_html_report(results.summary(), path, title="seven metrics")
    return path


@pytest.mark.parametrize("width", [1280, 1920])
def test_seven_metrics_fit_with_no_header_cut(context, seven_report: Path, width: int) -> None:
    page = Page(context, seven_report)
    page.page.set_viewport_size({"width": width, "height": 900})
    page.page.wait_for_timeout(150)
    headers = page.page.evaluate(HEADERS)
    labels = [h["label"].replace("\u200b", "") for h in headers]
    assert set(SEVEN) <= set(labels), labels
    assert [h["label"] for h in headers if h["cut"]] == []
    scroll = page.page.evaluate(SCROLL)
    assert scroll["scroll"] <= scroll["client"] + 1, scroll  # no horizontal scroll: nothing hidden
    assert scroll["stacked"]  # the detail panel moved below the wide table
    latency = page.page.evaluate(LATENCY_IN_VIEW)
    assert latency["right"] <= latency["wrapRight"] + 0.5, latency
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.screenshot(path=str(ARTIFACTS / f"report-seven-{width}.png"))
    page.clean()
