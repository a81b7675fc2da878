"""The per-context view in a real browser: which contexts each retrieval metric found relevant and used."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.report import write_html_report
from tests.report import builders as b
from tests.report import contexts_builders as cb
from tests.report.test_browser import ARTIFACTS, Page, context

__all__ = ["context"]  # fixture, imported for pytest

CONTEXT_HEADS = """() => [...document.querySelectorAll('#d-contexts article.ctx')].map(box => ({
  k: box.dataset.context,
  cls: box.className,
  verdict: (box.querySelector('.ctx-v') || {}).textContent || null,
  reason: (box.querySelector('.ctx-reason') || {}).textContent || null,
}))"""


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    return write_html_report(cb.report(), tmp_path_factory.mktemp("ctx") / "report.html", title="contexts")


@pytest.fixture
def page(context, report_file):
    p = Page(context, report_file)
    yield p
    p.clean()


def test_each_context_shows_relevance_and_the_claims_it_supports(page):
    page.open(cb.ID)
    pg = page.page
    pg.click("#tab-0")  # context_precision
    boxes = pg.evaluate(CONTEXT_HEADS)
    assert [x["k"] for x in boxes] == ["0", "1", "2"]
    assert boxes[0]["verdict"] == "relevantsupports claims #0, #1"
    assert boxes[0]["reason"] == "supports both reference claims" and "c-used" in boxes[0]["cls"]
    assert boxes[1]["verdict"] == "not relevantsupports no claim" and "c-unused" in boxes[1]["cls"]
    assert boxes[1]["reason"] == f"nothing of the reference {b.XSS_IMG}"
    assert boxes[2]["verdict"] == "relevantsupports claims #1, #9" and boxes[2]["reason"] is None
    assert pg.inner_text("#d-ctx-summary") == "This metric: 2 of 3 judged relevant; 2 of 3 support a claim."
    assert pg.inner_text("#d-ctx-stray") == "The metric judged context 5, which this sample does not have."
    # a claim link opens that claim; #9 is not a claim of this result, so it is no link
    assert pg.locator('#d-contexts .claim-link[data-claim="9"]').count() == 0
    pg.click('#d-contexts article[data-context="2"] .claim-link[data-claim="1"]')
    pg.wait_for_function("() => document.activeElement && document.activeElement.dataset.claim === '1'")
    # hostile text in a context and in a reason stays text
    assert pg.evaluate("document.images.length") == 0 and pg.evaluate("window.__xss === undefined")
    ARTIFACTS.mkdir(exist_ok=True)
    pg.locator("#detail").screenshot(path=str(ARTIFACTS / "report-contexts.png"))


def test_a_relevance_only_metric_claims_nothing_about_use(page):
    page.open(cb.ID)
    pg = page.page
    pg.click("#tab-1")  # context_relevancy
    boxes = pg.evaluate(CONTEXT_HEADS)
    assert [x["verdict"] for x in boxes] == ["relevant", "not relevant", "relevant"]
    assert boxes[1]["reason"] == "lexical overlap: 0/4 question words"
    assert pg.inner_text("#d-ctx-summary") == "This metric: 2 of 3 judged relevant."
    pg.click("#tab-2")  # faithfulness: no per-context view
    assert pg.locator("#d-contexts .ctx-v").count() == 0 and pg.locator("#d-ctx-summary").count() == 0


def test_malformed_views_render_without_errors(page):
    for k in range(len(cb.HOSTILE_VIEWS)):
        page.open(f"hostile-{k}")
        page.page.click("#tab-0")
    boxes = page.page.evaluate(CONTEXT_HEADS)  # hostile-2: context 0 has a reason "12", context 1 supports #0
    assert boxes[0]["reason"] == "12" and boxes[1]["verdict"] == "supports claim #0"
    assert boxes[2]["verdict"] == "not judged by this metric"
