"""A context that supports one claim and contradicts another is drawn as mixed, not all red (issue 23).

Scored for real by the offline judge, whose evidence quote is the context's whole best sentence, so the
supported and the contradicted claim of the first sample cite the very same text of context 0. Checked
in headless Chromium at 1280 and 1920 px: the mixed context has the mixed style and says what it does,
a context that only supports stays green, one that only contradicts stays red, each claim's own quote
keeps its verdict's colour, and nothing is wider than the page.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.evaluation import evaluate_sync
from ragmetrics.report import write_html_report
from tests.report.test_browser import ARTIFACTS, Page, context

__all__ = ["context"]  # fixture, imported for pytest

CONTEXT = "Python is an interpreted language created by Guido van Rossum in 1991."
SUPPORTED = "Python was created by Guido van Rossum in 1991."
CONTRADICTED = "Python is not an interpreted language."
ROWS = [
    {"id": "mixed", "question": "What is Python?", "answer": f"{SUPPORTED} {CONTRADICTED}",
     "contexts": [CONTEXT, "Bananas are yellow."]},
    {"id": "supports", "question": "What is Python?", "answer": SUPPORTED, "contexts": [CONTEXT]},
    {"id": "contradicts", "question": "What is Python?", "answer": CONTRADICTED, "contexts": [CONTEXT]},
]  # fmt: skip
BOXES = """() => [...document.querySelectorAll('#d-contexts article.ctx')].map(box => ({
  cls: box.className,
  tally: (box.querySelector('.ctx-tally') || {}).textContent || null,
  marks: [...box.querySelectorAll('mark.quote')].map(m => ({cls: m.className, title: m.title})),
  stripe: getComputedStyle(box, '::before').backgroundImage,
  left: getComputedStyle(box).borderLeftColor,
}))"""
QUOTES = """() => [...document.querySelectorAll('#d-claims > li')].map(li =>
  [li.className, (li.querySelector('.evidence mark.quote') || {}).className || null])"""
OVERFLOW = """() => { const d = document.documentElement, det = document.getElementById('detail');
  const wide = [...document.querySelectorAll('#d-contexts .ctx, #d-contexts .ctx-h')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.className);
  const broken = [...document.querySelectorAll('#d-contexts .ctx-h > *')]  // a head's item on two lines
    .filter(e => e.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(e).lineHeight))
    .map(e => e.textContent);
  return {page: d.scrollWidth - d.clientWidth, detail: det.scrollWidth - det.clientWidth, wide, broken}; }"""


@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = evaluate_sync(ROWS, metrics=["faithfulness"], llm="offline", progress=False)
    verdicts = {r.id: [(c.verdict, c.context_index, c.evidence) for c in r.results["faithfulness"].claims]
                for r in results}  # fmt: skip
    # the premise: both claims of "mixed" cite the same quote of context 0 (a mark split nowhere)
    assert verdicts["mixed"] == [("supported", 0, CONTEXT), ("contradicted", 0, CONTEXT)], verdicts
    path = tmp_path_factory.mktemp("mixed") / "report.html"
    write_html_report(results.summary(), path, title="mixed contexts")
    return path


@pytest.mark.parametrize("width", [1280, 1920])
def test_a_context_that_supports_and_contradicts_is_drawn_mixed(
    context, mixed_report: Path, width: int
) -> None:
    page = Page(context, mixed_report)
    pg = page.page
    pg.set_viewport_size({"width": width, "height": 1000})
    legend = pg.locator(".legend mark.v-mixed")
    assert legend.count() == 1 and "supports one claim and contradicts another" in pg.inner_text(".legend")

    page.open("mixed")
    mixed, uncited = pg.evaluate(BOXES)
    assert "c-mixed" in mixed["cls"] and mixed["tally"] == "mixed: supports 1, contradicts 1", mixed
    assert "repeating-linear-gradient" in mixed["stripe"], mixed  # striped green and red edge
    # the one quote both claims cite is drawn as both, and says which claim has which verdict
    assert [m["cls"] for m in mixed["marks"]] == ["hl v-mixed quote"], mixed
    assert mixed["marks"][0]["title"] == "claims #1, #0: mixed (#1 contradicted, #0 supported)"
    assert uncited["tally"] is None and "c-" not in uncited["cls"] and uncited["marks"] == []
    # each claim's own evidence quote keeps its verdict's colour
    assert pg.evaluate(QUOTES) == [
        ["claim v-supported", "hl v-supported quote"],
        ["claim v-contradicted", "hl v-contradicted quote"],
    ]
    assert pg.evaluate(OVERFLOW) == {"page": 0, "detail": 0, "wide": [], "broken": []}
    ARTIFACTS.mkdir(exist_ok=True)
    pg.locator("#d-contexts").screenshot(path=str(ARTIFACTS / f"report-mixed-{width}.png"))

    page.open("supports")
    (box,) = pg.evaluate(BOXES)
    assert "c-supports" in box["cls"] and "c-mixed" not in box["cls"] and box["tally"] == "supports 1", box
    assert [m["cls"] for m in box["marks"]] == ["hl v-supported quote"] and box["stripe"] == "none"
    green = box["left"]

    page.open("contradicts")
    (box,) = pg.evaluate(BOXES)
    assert "c-contradicts" in box["cls"] and box["tally"] == "contradicts 1", box
    assert [m["cls"] for m in box["marks"]] == ["hl v-contradicted quote"] and box["stripe"] == "none"
    assert box["left"] != green
    assert pg.evaluate(OVERFLOW) == {"page": 0, "detail": 0, "wide": [], "broken": []}
    page.clean()
