"""Conversations as transcripts in the HTML report (issue 41), in headless Chromium.

The bundled example conversations plus a hostile one, scored for real by the offline judge. Checks that
each transcript has its messages in order with per-turn scores, that tool calls and results are
collapsed and expand, that a claim's quote link scrolls to the message it cites (opening it) with the
quote marked, that a tool-call metric's finding is shown on the call, that a turn opens in the sample
detail, that hostile message text stays text, and that nothing is wider than the page at 1280 px.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from ragmetrics.evaluation import evaluate_sync
from ragmetrics.report import write_html_report
from tests.report.builders import XSS_FLAG, XSS_IMG, XSS_SCRIPT
from tests.report.test_browser import ARTIFACTS, Page, context

__all__ = ["context"]  # fixture, imported for pytest

EXAMPLE = Path(str(resources.files("ragmetrics") / "data" / "example_conversations.jsonl"))
CONVERSATIONS = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
HOSTILE = {
    "id": f"hostile {XSS_IMG}",
    "messages": [
        {"role": "system", "content": XSS_SCRIPT},
        {"role": "user", "content": f"Where is Paris? {XSS_FLAG}"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": XSS_IMG, "type": "function",
                 "function": {"name": "search", "arguments": json.dumps({"q": XSS_FLAG})}},
            ],
        },
        {"role": "tool", "tool_call_id": XSS_IMG, "content": f"Paris is in France. {XSS_FLAG}"},
        {"role": "assistant", "content": f"Paris is in France. {XSS_FLAG}"},
    ],
}  # fmt: skip
TRANSCRIPT = """id => [...document.querySelectorAll(
  `article.conv[data-conversation="${CSS.escape(id)}"] li.msg`)].map(li => ({
  role: li.querySelector('.msg-h .role').textContent, index: Number(li.dataset.message),
  text: (li.querySelector(':scope > p.text, :scope > details.tool-result > p.text') || {}).textContent || '',
  scores: [...li.querySelectorAll('.turn-scores .chip')].map(c => c.textContent)}))"""
TOOL_BLOCKS = """id => [...document.querySelectorAll(`article.conv[data-conversation="${id}"] details`)]
  .filter(d => d.matches('.tool-call, .tool-result')).map(d => ({cls: d.className, open: d.open,
  summary: d.querySelector('summary').textContent, body: d.querySelector('pre, p').checkVisibility()}))"""
TARGET = """() => { const li = document.querySelector('#conv-list li.msg-target');
  const marks = [...document.querySelectorAll('#conv-list mark.cite.active')];
  const r = (marks[0] || li).getBoundingClientRect();
  return {conv: li.closest('article.conv').dataset.conversation, index: Number(li.dataset.message),
    targets: document.querySelectorAll('#conv-list li.msg-target').length,
    marks: marks.map(m => m.textContent), inLi: marks.every(m => li.contains(m)),
    open: [...li.querySelectorAll('details')].filter(d => d.contains(marks[0] || null)).every(d => d.open),
    inView: r.top >= 0 && r.bottom <= innerHeight, focused: document.activeElement === li}; }"""
OVERFLOW = """() => { const d = document.documentElement;
  const wide = [...document.querySelectorAll('#conversations, #conversations *')]
    .filter(e => e.getBoundingClientRect().right > d.clientWidth + 0.5)
    .map(e => e.tagName + '.' + e.className);
  return {page: d.scrollWidth - d.clientWidth, wide: wide.slice(0, 5)}; }"""


def _link(conv: str, turn: int, claim: int) -> str:
    msg = f'article.conv[data-conversation="{conv}"] li.msg.is-turn:has(.turn-n:text-is("turn {turn}"))'
    return f'{msg} .turn-claims li[data-claim="{claim}"] button.quote-link'


@pytest.fixture(scope="module")
def path(tmp_path_factory) -> Path:
    rows = tmp_path_factory.mktemp("conversations") / "conversations.jsonl"
    rows.write_text(EXAMPLE.read_text(encoding="utf-8") + json.dumps(HOSTILE) + "\n", encoding="utf-8")
    results = evaluate_sync(str(rows), llm="offline", progress=False)
    out = rows.parent / "report.html"
    write_html_report(results.summary(), out, title="conversations")
    return out


@pytest.fixture
def page(context, path: Path):
    opened = Page(context, path)
    opened.page.set_viewport_size({"width": 1280, "height": 900})
    yield opened
    assert opened.page.evaluate("window.__xss") is None
    opened.clean()


def test_each_transcript_has_its_messages_in_order_and_each_turn_its_scores(page: Page) -> None:
    ids = page.page.eval_on_selector_all("article.conv", "els => els.map(e => e.dataset.conversation)")
    assert ids == [c["id"] for c in CONVERSATIONS] + [HOSTILE["id"]]
    assert page.page.text_content("#conversations-h") == "Conversations (6)"
    for given in CONVERSATIONS:
        shown = page.page.evaluate(TRANSCRIPT, given["id"])
        assert [(m["role"], m["index"]) for m in shown] == [
            (m["role"], i) for i, m in enumerate(given["messages"])
        ]
        assert [m["text"] for m in shown] == [m.get("content") or "" for m in given["messages"]]
        turns = [m for m in shown if m["scores"]]
        assert turns and all(m["role"] == "assistant" and m["text"] for m in turns)
        assert all(len(m["scores"]) == 3 for m in turns)
    eiffel = page.page.evaluate(TRANSCRIPT, "eiffel-support")
    assert [m["scores"] for m in eiffel if m["scores"]][2] == [
        "faithfulness 1.00", "relevancy 0.50", "groundedness 1.00"
    ]  # fmt: skip
    canberra = page.page.evaluate(TRANSCRIPT, "canberra-two-steps")
    assert canberra[7]["scores"][1] == "relevancy 0.00 (no claims)"  # a status that is not ok is said
    claims = page.page.eval_on_selector_all(
        'article.conv[data-conversation="library-hours-unsupported"] p.answer mark[data-claim]',
        "els => els.map(e => [e.textContent, e.className])",
    )
    assert claims == [["The city library opens at 8 am on Saturdays.", "hl v-contradicted"]]


def test_tool_calls_and_results_are_collapsed_and_expand(page: Page) -> None:
    blocks = page.page.evaluate(TOOL_BLOCKS, "warranty-agent")
    assert [(b["cls"], b["open"]) for b in blocks] == [("tool-call", False), ("tool-result", False)]
    assert blocks[0]["summary"].startswith("Tool call search_docs") and "call_1" in blocks[0]["summary"]
    assert not any(b["body"] for b in blocks)  # nothing of the body shows while collapsed
    conv = page.page.locator('article.conv[data-conversation="warranty-agent"]')
    conv.locator("details.tool-call > summary").click()
    conv.locator("details.tool-result > summary").click()
    blocks = page.page.evaluate(TOOL_BLOCKS, "warranty-agent")
    assert all(b["open"] and b["body"] for b in blocks)
    assert json.loads(conv.locator("details.tool-call pre").text_content()) == {"query": "X200 warranty"}
    assert conv.locator("details.tool-result p.text").text_content().startswith("The X200 vacuum comes")
    # a call a tool-call metric found wrong says so, and the finding links to it
    wrong = page.page.locator('article.conv[data-conversation="returns-wrong-argument"]')
    assert wrong.locator("details.tool-call.tc-wrong .badge").text_content() == "wrong arguments"
    finding = wrong.locator(".conv-tools .tool-wrong li").first.text_content()
    assert '"channel":"online"' in finding and '"channel":"store"' in finding
    wrong.locator(".conv-tools .tool-wrong button").first.click()
    assert wrong.locator("details.tool-call").evaluate("d => d.open")
    assert page.page.evaluate(TARGET)["index"] == 1


@pytest.mark.parametrize(
    ("conv", "turn", "claim", "index", "quote"),
    [
        ("canberra-two-steps", 0, 1, 4, "Canberra has a population of about 460,000 people."),
        ("canberra-two-steps", 0, 0, 2, "Canberra is the capital city of Australia."),
        ("eiffel-support", 2, 0, 6, "The tower was built from 1887 to 1889 as the entrance arch to the 1889 "
         "World's Fair."),
    ],
)  # fmt: skip
def test_a_quote_link_scrolls_to_the_message_it_cites_with_the_quote_marked(
    page: Page, conv: str, turn: int, claim: int, index: int, quote: str
) -> None:
    link = page.page.locator(_link(conv, turn, claim))
    assert link.get_attribute("data-target").endswith(f"-m-{index}")
    page.page.evaluate("window.scrollTo(0, 0)")
    link.click()
    target = page.page.evaluate(TARGET)
    assert target == {
        "conv": conv, "index": index, "targets": 1, "marks": [quote], "inLi": True, "open": True,
        "inView": True, "focused": True,
    }  # fmt: skip
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.screenshot(path=str(ARTIFACTS / f"report-conversation-quote-{conv}-{turn}-{claim}.png"))


def test_a_turn_opens_in_the_sample_detail(page: Page) -> None:
    page.search("eiffel")  # a filter that hides the turn is cleared
    page.page.locator(
        'article.conv[data-conversation="canberra-two-steps"] li.msg.is-turn button.open-turn'
    ).first.click()
    page.page.wait_for_function(
        "id => (document.querySelector('#detail h3') || {}).firstChild?.textContent === id",
        arg="canberra-two-steps#turn0",
    )
    assert "canberra-two-steps#turn0" in page.order()


def test_hostile_message_text_stays_text(page: Page) -> None:
    conv = page.page.locator("article.conv").nth(5)
    assert conv.get_attribute("data-conversation") == HOSTILE["id"]
    assert conv.locator("h3").text_content() == HOSTILE["id"]
    assert conv.locator("img, script, iframe").count() == 0
    shown = page.page.evaluate(TRANSCRIPT, HOSTILE["id"])
    assert [m["text"] for m in shown] == [m["content"] for m in HOSTILE["messages"]]
    call = conv.locator("details.tool-call")
    call.locator("summary").click()
    assert XSS_IMG in call.locator("summary").text_content()
    assert json.loads(call.locator("pre").text_content()) == {"q": XSS_FLAG}


@pytest.mark.parametrize("width", [1280, 1920])
def test_nothing_is_wider_than_the_page(page: Page, width: int) -> None:
    page.page.set_viewport_size({"width": width, "height": 900})
    for details in page.page.locator("#conversations details").all():
        details.evaluate("d => { d.open = true; }")
    page.page.wait_for_timeout(100)
    assert page.page.evaluate(OVERFLOW) == {"page": 0, "wide": []}
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.locator("#conversations").screenshot(path=str(ARTIFACTS / f"report-conversations-{width}.png"))


BAD = {  # a tool message answering no call: the conversation is refused
    "id": "bad",
    "messages": [
        {"role": "user", "content": "How long is the warranty?"},
        {"role": "tool", "tool_call_id": "call_9", "content": "Two years."},
        {"role": "assistant", "content": "Two years."},
    ],
}


def test_records_without_messages_show_each_turn_and_a_refused_conversation_says_why(
    context, tmp_path: Path
) -> None:
    results = evaluate_sync([CONVERSATIONS[0], BAD], llm="offline", progress=False)
    older = [  # records written before the messages were kept
        r.model_copy(update={"sample": r.sample.model_copy(update={"meta": {
            k: v for k, v in r.sample.meta.items() if k != "messages"}})}) if r.sample else r
        for r in results
    ]  # fmt: skip
    path = write_html_report(older, tmp_path / "report.html")
    page = Page(context, path)
    shown = page.page.evaluate(TRANSCRIPT, "eiffel-support")
    given = CONVERSATIONS[0]["messages"]
    assert [m["role"] for m in shown] == [m["role"] for m in given[1:]]
    # each turn's question as it was scored (with its history), then its answer
    assert all(m["text"].endswith(g["content"]) for m, g in zip(shown, given[1:], strict=True))
    assert [len(m["scores"]) for m in shown] == [0, 3, 0, 3, 0, 3]
    refused = page.page.locator('article.conv[data-conversation="bad"]')
    assert "invalid input" in refused.locator("p.callout").text_content()
    assert refused.locator("li.msg").count() == 0
    page.clean()


def test_past_the_first_twenty_a_transcript_is_drawn_when_asked_for(context, tmp_path: Path) -> None:
    rows = [{**c, "id": f"{c['id']}-{k}"} for k in range(5) for c in CONVERSATIONS]  # 25 conversations
    results = evaluate_sync(rows, llm="offline", progress=False)
    page = Page(context, write_html_report(results, tmp_path / "report.html"))
    convs = page.page.locator("article.conv")
    assert convs.count() == 25
    drawn = [convs.nth(k).locator("li.msg").count() for k in range(20)]
    assert drawn == [len(c["messages"]) for c in CONVERSATIONS] * 4
    later = convs.nth(20)
    assert later.get_attribute("data-conversation") == "eiffel-support-4"
    assert later.locator("li.msg").count() == 0
    assert later.locator("button.show-transcript").text_content() == "Show the transcript (7 messages)"
    later.locator("button.show-transcript").click()
    assert later.locator("li.msg").count() == 7 and later.locator("button.show-transcript").count() == 0
    later.locator("li.msg.is-turn button.quote-link").first.click()
    assert page.page.evaluate(TARGET)["conv"] == "eiffel-support-4"
    page.clean()


def test_the_conversation_level_scores_head_each_conversation_and_no_turn(context, tmp_path: Path) -> None:
    metrics = ["faithfulness", "knowledge_retention", "task_completion"]
    results = evaluate_sync(CONVERSATIONS[:2], metrics, llm="offline", progress=False)
    whole = {r.id: r for r in results if "#turn" not in r.id}
    page = Page(context, write_html_report(results, tmp_path / "report.html"))
    head = page.page.locator('article.conv[data-conversation="warranty-agent"] .conv-whole .chip')
    expected = [f"{m} {whole['warranty-agent'].scores[m]:.2f}" for m in metrics[1:]]
    assert head.all_text_contents() == expected
    turns = page.page.evaluate(TRANSCRIPT, "eiffel-support")
    assert [m["scores"] for m in turns if m["scores"]][0] == ["faithfulness 1.00"]  # no conversation metric
    page.page.locator('article.conv[data-conversation="warranty-agent"] .conv-whole button.open-turn').click()
    assert "warranty-agent" in page.page.text_content("#detail")
    page.clean()
