"""The HTML report as text: self-contained, everything escaped, the embedded data faithful to the records."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import pytest

from ragmetrics.pipeline import EvaluationPipeline, Report
from ragmetrics.pipeline.report import MetricAggregate, RunStats
from ragmetrics.report import render_html, write_html_report
from ragmetrics.report._payload import PAYLOAD_VERSION
from ragmetrics.score import JudgeInfo
from tests.report import builders as b


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each script element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def parse(html: str) -> _Tags:
    p = _Tags()
    p.feed(html)
    p.close()
    return p


def payload(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="rm-data">(.*?)</script>', html, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def report() -> Report:
    return b.report_of(b.browser_records())


@pytest.fixture(scope="module")
def page(report) -> str:
    return render_html(report, title="My <dataset> & co")


def test_the_page_is_self_contained(page):
    tags = parse(page)
    kinds = {t for t, _ in tags.tags}
    assert not kinds & {"img", "iframe", "object", "embed", "link"} - {"link"}
    for tag, attrs in tags.tags:
        for name in ("src", "href", "action", "data", "poster"):
            value = attrs.get(name)
            if value is not None:
                assert not re.match(r"\s*(https?:|//|ftp:)", value), (tag, name, value)
        if tag == "script":
            assert "src" not in attrs
        if tag == "link":
            assert attrs.get("rel") == "icon" and attrs.get("href", "").startswith("data:")
    # exactly the data block and the page's own script
    assert [a.get("type") for t, a in tags.tags if t == "script"] == ["application/json", None]
    csp = next(
        a["content"] for t, a in tags.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    )
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp and "unsafe-inline" not in csp


def test_assets_reference_nothing_outside_the_file():
    for name in ("report.css", "report.js", "conversations.js"):
        text = resources.files("ragmetrics.report").joinpath("assets", name).read_text(encoding="utf-8")
        assert "</script" not in text.lower() and "<!--" not in text, name
        assert not re.search(
            r"https?://|url\(|@import|fetch\(|XMLHttpRequest|innerHTML|outerHTML|insertAdjacentHTML"
            r"|document\.write|eval\(",
            text,
        ), name


def test_injected_markup_is_text_everywhere(report):
    html = render_html(report, title=b.XSS_SCRIPT)
    # no injected tag anywhere in the markup, the JSON block included (its "<" are written \u003c)
    assert b.XSS_SCRIPT not in html
    assert "<img" not in html
    assert "</script><!--" not in html
    tags = parse(html)
    assert not any(t == "img" for t, _ in tags.tags)
    assert sum(t == "script" for t, _ in tags.tags) == 2
    for tag, attrs in tags.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
    # the title went through html.escape, and the data still holds the exact text
    assert "<title>&lt;script&gt;alert(1)&lt;/script&gt; · ragmetrics</title>" in html
    data = payload(html)
    strings = set(data["strings"])
    assert b.XSS_SCRIPT in strings and b.XSS_IMG in strings
    xss = next(r for r in data["rows"] if r[1] == f"xss{b.XSS_IMG}")
    assert data["strings"][xss[3]].startswith(b.XSS_IMG)


def test_hostile_metric_names_and_judges_are_escaped():
    rec = b.known_record()
    rec.scores[b.XSS_IMG] = 0.5
    judge = JudgeInfo(provider="openai", model="m", base_url=f"http://x/{b.XSS_SCRIPT}")
    rec.results["faithfulness"] = rec.results["faithfulness"].model_copy(update={"judge": judge})
    report = Report.from_records([rec], run=RunStats(judges=[judge.spec]))
    html = render_html(report)
    assert "<img" not in html and b.XSS_SCRIPT not in html
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html  # the metric card's heading


def test_data_block_round_trips_the_records(report, page):
    data = payload(page)
    assert data["v"] == PAYLOAD_VERSION == 2
    assert data["metrics"] == list(b.METRICS)
    assert [r[1] for r in data["rows"]] == [r.id for r in report.records]
    s = data["strings"]
    known = data["rows"][0]
    assert s[known[3]] == b.KNOWN_ANSWER
    assert [s[i] for i in known[4]] == list(b.KNOWN_CONTEXTS)
    assert known[6] == [0.6, 0.8, 0.5]
    assert [data["statuses"][c] for c in known[7]] == ["ok", "ok", "ok"]
    faith = known[10][0]
    assert faith[0] == 0.6 and faith[4] is True and faith[5] == 0.5
    assert faith[7] == [2, 1, 900, 120, 0.0004, 0, 0, 0]
    assert data["judges"][faith[9]] == ["openai:gpt-4o-mini", "gpt-4o-mini", False]
    claims = faith[6]
    assert len(claims) == len(b.KNOWN_CLAIMS)
    for claim, (text, span, verdict, relevance, ctx, _, verified) in zip(claims, b.KNOWN_CLAIMS, strict=True):
        shown_text = s[claim[0]] if claim[0] >= 0 else b.KNOWN_ANSWER[claim[1] : claim[2]]
        assert shown_text == text
        if span in b.KNOWN_ANSWER:
            assert b.KNOWN_ANSWER[claim[1] : claim[2]] == span and claim[3] == -1
        else:
            assert claim[1] == claim[2] == -1 and s[claim[3]] == span
        assert claim[4] == 1 + ("supported", "contradicted", "not_found").index(verdict)
        assert claim[5] == 1 + ("direct", "supporting", "off_topic").index(relevance)
        assert claim[6] == (-1 if ctx is None else ctx)
        assert claim[10] == (-1 if verified is None else int(verified))


def test_evidence_quotes_are_located_in_their_context(page):
    data = payload(page)
    s = data["strings"]
    claims = data["rows"][0][10][0][6]
    ctx0 = b.KNOWN_CONTEXTS[0]
    assert ctx0[claims[0][7] : claims[0][8]] == "Python is an interpreted language"
    assert ctx0[claims[1][7] : claims[1][8]] == "created by Guido van Rossum in 1991"
    # "Guido  van rossum": found ignoring case and whitespace runs
    assert ctx0[claims[2][7] : claims[2][8]] == "Guido van Rossum"
    assert claims[3][7] == -1 and claims[3][9] == -1  # no evidence
    assert (
        claims[4][7] == -1 and s[claims[4][9]] == "Python is loved by all"
    )  # not in the context: kept as text


def test_offsets_count_utf16_units_like_javascript(page):
    data = payload(page)
    row = next(r for r in data["rows"] if r[1] == "emoji-1")
    answer = data["strings"][row[3]]
    units = answer.encode("utf-16-le")
    for claim in row[10][0][6]:
        start, end = claim[1], claim[2]
        located = units[2 * start : 2 * end].decode("utf-16-le")
        assert located in ("Paris is the capital of France.", "It has about 2 million people.")
    context = data["strings"][row[4][0]].encode("utf-16-le")
    claim = row[10][0][6][0]
    assert context[2 * claim[7] : 2 * claim[8]].decode("utf-16-le") == "the capital of France"


def test_repeated_spans_are_found_in_answer_order():
    rec = b.known_record()
    answer = "Yes. It is fast. Yes. It is fast."
    rec.sample = rec.sample.model_copy(update={"answer": answer})
    from ragmetrics.score import ClaimRecord

    claims = [
        ClaimRecord(text="It is fast.", span="It is fast.", verdict=v) for v in ("supported", "contradicted")
    ]
    rec.results["faithfulness"] = rec.results["faithfulness"].model_copy(update={"claims": claims})
    data = payload(render_html([rec]))
    got = [(c[1], c[2]) for c in data["rows"][0][10][0][6]]
    assert got == [(5, 16), (22, 33)]


def test_header_states_the_run(page, report):
    assert "<h1>My &lt;dataset&gt; &amp; co</h1>" in page
    assert f"{len(report.records)} samples" in page
    assert "judge: openai:gpt-4o-mini" in page
    assert "ragmetrics " + report.ragmetrics_version in page
    cost = report.run.usage.cost_usd
    assert f"${cost:,.4f}" in page
    assert f"{report.run.usage.prompt_tokens + report.run.usage.completion_tokens:,}" in page
    assert "120 (33%)" in page  # cache hits only (from the cache), and the hit rate over all requests
    assert "240 misses, 3 shared within the run" in page
    assert "offline-banner" not in page


def test_offline_judge_is_said_prominently():
    rec = b.known_record()
    for name, res in rec.results.items():
        rec.results[name] = res.model_copy(update={"judge": b.OFFLINE})
    html = render_html(Report.from_records([rec], run=RunStats(judges=["offline"])))
    assert 'id="offline-banner"' in html and "offline heuristic judge" in html
    assert "judge: offline (lexical-v1)" in html


def test_the_offline_judge_says_what_it_misses_beside_its_samples_and_an_llm_judge_does_not(page):
    rec = b.known_record()
    for name, res in rec.results.items():
        rec.results[name] = res.model_copy(update={"judge": b.OFFLINE})
    html = render_html(Report.from_records([rec], run=RunStats(judges=["offline"])))
    banner = html.split('id="offline-banner"')[1].split("</div>")[0]
    assert "no LLM, no API key" in banner and "It matches words, not meaning" in banner
    assert "paraphrase" in banner and "--judge openai:gpt-4o-mini" in banner
    note = html.split('id="offline-samples-note"')[1].split("</p>")[0]
    assert "Offline judge: low scores may be paraphrases it cannot match" in note
    assert html.index('id="offline-samples-note"') < html.index('id="table-pane"')
    streamed = render_html(Report(aggregates={}, run=RunStats(judges=["offline"])))  # no records: banner only
    assert 'id="offline-banner"' in streamed and "offline-samples-note" not in streamed
    assert "offline-samples-note" not in page and "paraphrase" not in page  # an LLM judge: no note


def test_metric_cards_show_the_aggregates(page, report):
    for name, agg in report.aggregates.items():
        assert f"<h3>{name}</h3>" in page
        assert f'<span class="big">{agg.mean:.3f}</span>' in page
        if agg.ci_low is not None:
            assert f"{agg.ci_low:.3f} – {agg.ci_high:.3f}" in page
        assert f"{agg.count:,} of {agg.total:,}" in page
    assert "Pass rate" in page
    assert "<span>timeout</span> <b>1</b>" in page  # status chips
    assert "<span>invalid_input</span> <b>1</b>" in page


def test_histograms_count_every_score(page, report):
    bins = re.findall(r'<g class="bin[^"]*" data-metric="(\d)" data-bin="(\d)" data-count="(\d+)"', page)
    assert len(bins) == 10 * len(b.METRICS)
    for m, name in enumerate(b.METRICS):
        total = sum(int(c) for mm, _, c in bins if int(mm) == m)
        assert total == report.aggregates[name].count
    assert page.count('class="hist-bar"') == 10 * len(b.METRICS)


def test_streamed_report_without_records_still_renders():
    agg = MetricAggregate(
        name="faithfulness",
        total=10,
        count=9,
        mean=0.7,
        ci_low=0.6,
        ci_high=0.8,
        statuses={"ok": 9, "timeout": 1},
    )
    html = render_html(Report(aggregates={"faithfulness": agg}, run=RunStats(samples=10)))
    assert "kept no records" in html and "0.700" in html
    assert payload(html)["rows"] == []


def test_lone_surrogates_do_not_break_writing(tmp_path):
    rec = b.known_record()
    rec.sample = rec.sample.model_copy(update={"answer": "bad \udce9 byte"})
    out = write_html_report([rec], tmp_path / "r.html")
    data = payload(out.read_text(encoding="utf-8"))
    assert data["strings"][data["rows"][0][3]] == "bad \udce9 byte"


def test_write_html_report_writes_one_file(tmp_path, report):
    out = write_html_report(report, tmp_path / "sub" / "report.html")
    assert out == tmp_path / "sub" / "report.html" and out.is_file()
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # records alone are accepted too
    again = write_html_report(list(report.records), tmp_path / "r2.html")
    assert payload(again.read_text(encoding="utf-8"))["metrics"] == list(b.METRICS)


def test_an_offline_pipeline_run_renders(tmp_path):
    from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric

    rows = [
        {
            "question": "What kind of language is Python?",
            "answer": "Python is a compiled language created in 1991.",
            "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
        },
        {"question": b.XSS_SCRIPT, "answer": f"{b.XSS_IMG} is not an answer.", "contexts": [b.XSS_SCRIPT]},
        {"question": "Empty?", "answer": "", "contexts": []},
    ]
    pipeline = EvaluationPipeline(
        metrics=[
            FaithfulnessMetric(llm="offline"),
            RelevancyMetric(llm="offline"),
            GroundednessMetric(llm="offline"),
        ]
    )
    report = pipeline.run(rows).summary()
    html = write_html_report(report, tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="offline-banner"' in html
    data = payload(html)
    assert len(data["rows"]) == 3
    assert "no_claims" in data["statuses"]
    assert "<img" not in html and b.XSS_SCRIPT not in html


def test_size_per_sample_stays_small():
    records = b.synthetic_records(200)
    html = render_html(Report.from_records(records))
    raw = sum(len(r.model_dump_json()) for r in records)
    # interned strings and offsets instead of repeated quotes: well under half the JSONL size
    assert len(html.encode()) < raw * 0.5, (len(html.encode()), raw)


def test_the_package_ships_the_assets():
    root = Path(str(resources.files("ragmetrics.report")))
    assert (root / "assets" / "report.css").is_file() and (root / "assets" / "report.js").is_file()
