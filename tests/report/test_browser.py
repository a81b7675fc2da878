"""The HTML report in a real browser: Debian's Chromium, headless, driven by Playwright.

Checks that charts and claim highlights render, that filtering and sorting work, that hostile text stays
text, that no script error and no network request happens, and times a 10,000-sample report. Saves
screenshots to ``test-artifacts/`` at the repository root.

Without Chromium (or the playwright package) the tests skip, except when ``CI`` is set: then they fail,
so CI cannot pass without having run them.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from ragmetrics.pipeline import Report
from ragmetrics.report import write_html_report
from tests.report import builders as b

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LARGE = 10_000
MAX_LARGE_BYTES = 30 * 1024 * 1024


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(
            f"{reason}; CI must run the browser test (.ci/run installs Debian's chromium)", pytrace=False
        )
    pytest.skip(reason)


def _chromium() -> str | None:
    for candidate in (os.environ.get("RAGMETRICS_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and (
            path := shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
        ):
            return path
    return None


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """A Chromium context with a fresh profile; no network beyond file: URLs is ever expected."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[test]')")
    executable = _chromium()
    if executable is None:
        _unavailable("Chromium is not installed (apt-get install chromium)")
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1440, "height": 1000},
            service_workers="block",
        )
        yield ctx
        ctx.close()


class Page:
    """One opened report with everything it logged: console errors, page errors, dialogs, requests."""

    def __init__(self, context, path: Path) -> None:
        self.page = context.new_page()
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.url = path.resolve().as_uri()
        self.page.on(
            "console", lambda m: m.type in ("error", "warning") and self.errors.append(f"{m.type}: {m.text}")
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))

        def on_dialog(dialog):
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        self.page.on("dialog", on_dialog)
        started = time.perf_counter()
        self.page.goto(self.url, wait_until="load")
        self.page.wait_for_selector("html[data-ready]", timeout=60_000)
        self.load_s = time.perf_counter() - started

    def count(self) -> int:
        return int(self.page.get_attribute("#row-count", "data-count"))

    def order(self) -> list[str]:
        return self.page.evaluate("window.ragmetricsReport.order()")

    def visible_ids(self) -> list[str]:
        return self.page.eval_on_selector_all(
            "#samples-table tbody tr.row td.idc", "els => els.map(e => e.textContent)"
        )

    def search(self, text: str) -> None:
        self.page.fill("#f-text", "")
        if text:
            self.page.locator("#f-text").press_sequentially(text)
        self.page.wait_for_function("t => document.querySelector('#f-text').value === t", arg=text)
        self.page.wait_for_timeout(250)  # the search is debounced

    def open(self, sample_id: str) -> None:
        self.search(sample_id)
        self.page.locator("#samples-table tbody tr.row", has_text=sample_id).first.click()
        self.page.wait_for_function(
            "id => (document.querySelector('#detail h3') || {}).firstChild?.textContent === id",
            arg=sample_id,
        )

    def clean(self) -> None:
        assert self.errors == [], self.errors
        assert self.dialogs == [], self.dialogs
        assert self.requests == [self.url], self.requests
        self.page.close()


@pytest.fixture(scope="module")
def report() -> Report:
    return b.report_of(b.browser_records())


@pytest.fixture(scope="module")
def report_file(report, tmp_path_factory) -> Path:
    return write_html_report(report, tmp_path_factory.mktemp("report") / "report.html", title="Browser test")


@pytest.fixture
def page(context, report_file):
    p = Page(context, report_file)
    yield p
    p.clean()


def test_loads_without_errors_or_requests_and_draws_charts(page, report):
    pg = page.page
    assert pg.locator("svg.hist-svg").count() == len(b.METRICS)
    heights = pg.eval_on_selector_all("rect.hist-bar", "els => els.map(e => e.getBBox().height)")
    assert len(heights) == 10 * len(b.METRICS) and sum(h > 0 for h in heights) >= 3
    assert pg.locator("svg.mix-bar rect").count() >= 3
    assert page.count() == len(report.records)
    rows = pg.locator("#samples-table tbody tr.row").count()
    assert 20 <= rows <= len(report.records)  # only the rows in sight (plus a margin) exist
    assert pg.locator("#detail .answer").count() == 1  # the first sample is open
    assert pg.evaluate("document.images.length") == 0


def test_known_sample_highlights_each_claim_by_verdict(page, report):
    page.open(b.KNOWN_ID)
    pg = page.page
    answer = pg.locator("#d-answer")
    for verdict, n in b.KNOWN_MARKS.items():
        assert answer.locator(f"mark.v-{verdict}").count() == n, verdict
    assert answer.locator("mark.v-contradicted").inner_text() == "Python is a compiled language."
    assert answer.inner_text().replace("\n", " ") == b.KNOWN_ANSWER
    claims = pg.locator("#d-claims > li")
    assert claims.count() == len(b.KNOWN_CLAIMS)
    assert claims.nth(4).locator(".unlocated").first.inner_text().startswith("Span not found in the answer")
    assert "not found verbatim" in claims.nth(4).inner_text()
    # the evidence quote is highlighted inside its context, with the claim's verdict colour
    quote = claims.nth(0).locator(".evidence mark.quote")
    assert quote.inner_text() == "Python is an interpreted language"
    assert "v-contradicted" in quote.get_attribute("class")
    assert claims.nth(2).locator(".evidence mark.quote").inner_text() == "Guido van Rossum"
    assert pg.locator("#d-contexts article").count() == len(b.KNOWN_CONTEXTS)
    cited = pg.eval_on_selector_all(
        "#d-contexts article[data-context='0'] mark.quote", "els => els.map(e => e.title)"
    )
    assert len(cited) == 4  # three quotes, one inside another: split where they overlap
    assert "claims #1, #2: supported" in cited
    # the judge's reason, the relevance, cost and latency are there
    text = pg.inner_text("#detail")
    assert "contradicted: checked against context 0" in text
    assert "relevance: off topic" in text
    assert "latency 840 ms" in text and "$0.0004" in text
    # relevancy tab: highlights by relevance instead
    pg.click("#tab-1")
    assert pg.locator("#d-answer mark.r-off_topic").count() == 1
    assert pg.locator("#d-answer mark.r-direct").count() == 2
    pg.keyboard.press("ArrowRight")  # tabs follow the arrow keys
    assert pg.get_attribute("#tab-2", "aria-selected") == "true"
    # clicking a highlight brings its claim forward
    pg.locator("#d-answer mark.v-not_found").click()
    assert pg.evaluate("document.activeElement.dataset.claim") == "3"


def test_emoji_offsets_line_up(page):
    page.open("emoji-1")
    marks = page.page.eval_on_selector_all("#d-answer mark", "els => els.map(e => e.textContent)")
    assert marks == ["Paris is the capital of France.", "It has about 2 million people."]


def test_errors_and_statuses_are_shown(page):
    page.open("failed-1")
    pg = page.page
    assert "timeout" in pg.inner_text("#tab-0")
    text = pg.inner_text("#detail")
    assert "judge timed out after 30 s" in text
    pg.click("#tab-2")
    assert "the judge's reply did not match the schema" in pg.inner_text("#detail")
    page.open("invalid-1")
    assert "answer: expected a string, got 42" in pg.inner_text("#detail")


def test_filters_change_the_rows(page, report):
    pg = page.page
    total = len(report.records)
    page.search("zebra")
    assert page.count() == 3 and len(page.visible_ids()) == 3
    assert "Showing 3 of" in pg.inner_text("#row-count")
    page.search("")
    assert page.count() == total
    contradicted = sum(
        any(c.verdict == "contradicted" for res in r.results.values() for c in res.claims)
        for r in report.records
    )
    pg.check("#f-contra")
    assert page.count() == contradicted
    pg.uncheck("#f-contra")
    pg.select_option("#f-status", "s:timeout")
    assert page.visible_ids() == ["failed-1"]
    pg.select_option("#f-status", "unscored")
    assert page.count() == sum(any(s is None for s in r.scores.values()) for r in report.records)
    pg.select_option("#f-status", "any")
    pg.select_option("#f-metric", "0")
    pg.fill("#f-min", "0.9")
    expected = sum(
        1
        for r in report.records
        if r.scores["faithfulness"] is not None and round(r.scores["faithfulness"], 6) >= 0.9
    )
    assert page.count() == expected
    pg.click("#f-reset")
    assert page.count() == total
    # a histogram bar filters to its bin
    bar = pg.locator('svg.hist-svg g.bin:not(.empty)[data-metric="0"]').last
    n = int(bar.get_attribute("data-count"))
    bar.click()
    assert page.count() == n
    bar.focus()
    pg.keyboard.press("Enter")  # again: the filter is cleared
    assert page.count() == total
    pg.fill("#f-text", "no such sample anywhere")
    pg.wait_for_timeout(250)
    assert page.count() == 0 and "No sample matches" in pg.inner_text("#samples-table")


def test_sorting_by_a_metric(page, report):
    pg = page.page
    pg.click('th[data-key="m0"] button')
    assert pg.get_attribute('th[data-key="m0"]', "aria-sort") == "descending"
    scored = sorted(
        (r for r in report.records if r.scores["faithfulness"] is not None),
        key=lambda r: (-round(r.scores["faithfulness"], 6), r.index),
    )
    unscored = [r.id for r in report.records if r.scores["faithfulness"] is None]
    expected = [r.id for r in scored] + unscored
    assert page.order() == expected
    assert page.visible_ids() == expected[: len(page.visible_ids())]
    pg.click('th[data-key="m0"] button')
    assert pg.get_attribute('th[data-key="m0"]', "aria-sort") == "ascending"
    ids = page.order()
    assert page.visible_ids()[0] == ids[0]
    assert ids[:1] == [min(scored, key=lambda r: (round(r.scores["faithfulness"], 6), r.index)).id]
    assert ids[-len(unscored) :] == unscored  # no score sorts last either way
    pg.click('th[data-key="id"] button')
    assert page.visible_ids()[0] == "emoji-1"
    # keyboard: the table moves the selection with the arrow keys
    pg.focus(".table-wrap")
    first = pg.inner_text("#detail h3")
    pg.keyboard.press("ArrowDown")
    second = pg.inner_text("#detail h3")
    assert second != first
    assert pg.locator("#samples-table tr.row.selected").count() == 1
    pg.click("#d-next")
    assert pg.inner_text("#detail h3") not in (first, second)
    pg.click("#d-prev")
    assert pg.inner_text("#detail h3") == second


def test_hostile_text_stays_text(page):
    page.open(f"xss{b.XSS_IMG}")
    pg = page.page
    assert pg.inner_text("#d-question") == b.XSS_SCRIPT
    answer = pg.inner_text("#d-answer")
    assert b.XSS_IMG in answer and b.XSS_SCRIPT in answer and b.XSS_FLAG in answer
    assert pg.locator("#d-answer mark.v-supported").inner_text() == b.XSS_IMG
    assert b.XSS_IMG in pg.inner_text("#detail")
    assert pg.evaluate("document.images.length") == 0
    assert pg.evaluate("document.querySelectorAll('script').length") == 2
    assert pg.evaluate("window.__xss === undefined")
    pg.click("#tab-2")  # the provider error carries hostile text too
    assert f"{b.XSS_IMG} 500 {b.XSS_SCRIPT}" in pg.inner_text("#detail")
    assert pg.evaluate("document.images.length") == 0 and pg.evaluate("window.__xss === undefined")
    # the row's id is hostile as well: it shows in the table as text
    assert any(i.startswith('xss"><img') for i in page.visible_ids())


def test_screenshot(page):
    page.open(b.KNOWN_ID)
    page.search("")
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    page.page.set_viewport_size({"width": 430, "height": 900})
    page.page.wait_for_timeout(100)
    page.page.screenshot(path=str(ARTIFACTS / "report-narrow.png"))
    for shot in (ARTIFACTS / "report.png", ARTIFACTS / "report-narrow.png"):
        data = shot.read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10_000, f"{shot} is not a rendered page"
    print(f"screenshots: {ARTIFACTS / 'report.png'}, {ARTIFACTS / 'report-narrow.png'}")


def test_ten_thousand_samples_open_fast_and_scroll(context, tmp_path):
    records = b.synthetic_records(LARGE)
    report = Report.from_records(records)
    started = time.perf_counter()
    path = write_html_report(report, tmp_path / "large.html")
    write_s = time.perf_counter() - started
    size = path.stat().st_size
    p = Page(context, path)
    pg = p.page
    render_ms = pg.evaluate("window.__rmRenderMs")
    assert p.count() == LARGE
    rows_in_dom = pg.locator("#samples-table tbody tr.row").count()
    assert rows_in_dom < 200  # virtualised
    # scroll to the end: the last rows are drawn, still only a window of them
    scroll = pg.evaluate("""async () => {
        const w = document.querySelector('.table-wrap'); const t0 = performance.now();
        for (let k = 1; k <= 20; k++) { w.scrollTop = w.scrollHeight * k / 20;
          await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))); }
        return performance.now() - t0; }""")
    assert p.visible_ids()[-1] == f"syn-{LARGE - 1:05d}" == p.order()[-1]
    assert pg.locator("#samples-table tbody tr.row").count() < 200
    started = time.perf_counter()
    pg.click('th[data-key="m0"] button')
    pg.fill("#f-text", "syn-0999")
    pg.wait_for_function("() => document.querySelector('#row-count').dataset.count === '10'")
    filter_s = time.perf_counter() - started
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / "report-10k.png"))
    numbers = {
        "samples": LARGE,
        "bytes": size,
        "mb": round(size / 2**20, 2),
        "python_render_s": round(write_s, 2),
        "page_script_ms": round(render_ms, 1),
        "open_to_ready_s": round(p.load_s, 2),
        "scroll_20_steps_ms": round(scroll, 1),
        "sort_and_filter_s": round(filter_s, 2),
    }
    (ARTIFACTS / "report-10k.json").write_text(json.dumps(numbers, indent=2))
    print(f"10k report: {numbers}")
    assert size < MAX_LARGE_BYTES, numbers  # a size guard; timings are measured in benchmarks/report_scale.py
    p.clean()
