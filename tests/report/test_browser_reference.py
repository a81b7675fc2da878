"""Reference claims in a real browser: highlighted in the reference, and named so when not found there."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.report import write_html_report
from tests.report import reference_builders as rb
from tests.report.test_browser import ARTIFACTS, Page, context

__all__ = ["context"]  # fixture, imported for pytest

MARKS = "sel => [...document.querySelectorAll(sel)].map(m => ({text: m.textContent, cls: m.className}))"


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    return write_html_report(rb.report(), tmp_path_factory.mktemp("ref") / "report.html", title="reference")


@pytest.fixture
def page(context, report_file):
    p = Page(context, report_file)
    yield p
    p.clean()


def test_reference_claims_are_highlighted_in_the_reference(page):
    page.open(rb.ID)
    pg = page.page
    pg.click("#tab-0")  # context_recall: the reference's claims
    marks = pg.evaluate(MARKS, "#d-reference mark")
    assert [m["text"] for m in marks][1:] == list(rb.REFERENCE_CLAIMS[1:])
    assert marks[0]["text"].startswith("\U0001f5fc") and marks[0]["text"].endswith(rb.REFERENCE_CLAIMS[0])
    verdicts = [m["cls"].split()[1] for m in marks]
    assert verdicts == ["v-supported", "v-supported", "v-not_found"]
    assert pg.inner_text("#d-reference").replace("\n", " ") == rb.REFERENCE, "the whole reference, as text"
    assert pg.locator("#d-answer mark").count() == 0, "nothing of the reference is marked in the answer"
    heads = pg.eval_on_selector_all("#detail h4", "els => els.map(e => e.textContent)")
    assert "Reference answer — 3 claims of context_recall" in heads
    assert "Answer (context_recall splits the reference)" in heads
    assert pg.locator("#d-claims .unlocated").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    pg.locator("#detail").screenshot(path=str(ARTIFACTS / "report-reference-claims.png"))
    # a mark in the reference opens its claim
    pg.click("#d-reference mark[data-claim='2']")
    pg.wait_for_function("() => document.activeElement && document.activeElement.dataset.claim === '2'")
    # hostile markup in the reference stays text, inside its mark
    assert "<img" in marks[2]["text"]
    assert pg.evaluate("document.images.length") == 0 and pg.evaluate("window.__xss === undefined")
    pg.click("#tab-2")  # faithfulness: the answer's claims, the reference plain again
    assert pg.locator("#d-answer mark").count() == 1 and pg.locator("#d-reference mark").count() == 0
    assert "Reference answer" in pg.eval_on_selector_all("#detail h4", "els => els.map(e => e.textContent)")


def test_a_reference_span_not_found_names_the_reference(page):
    page.open(rb.UNLOCATED_ID)
    pg = page.page
    pg.click("#tab-0")
    unlocated = pg.locator("#d-claims > li").nth(1).locator(".unlocated")
    assert unlocated.inner_text() == f"Span not found in the reference: “{rb.STRAY_SPAN}”"
    assert pg.locator("#d-reference mark").count() == 2


def test_without_a_reference_the_answer_holds_the_claims(page):
    page.open(rb.NO_REFERENCE_ID)
    pg = page.page
    assert pg.locator("#d-reference").count() == 0
    pg.click("#tab-0")  # context_recall needs a reference
    assert "invalid input" in pg.inner_text("#d-panel")
    pg.click("#tab-1")  # context_precision without a reference: the answer's claims
    assert pg.locator("#d-answer mark").count() == 1
    assert pg.locator("#d-claims .unlocated").count() == 0
