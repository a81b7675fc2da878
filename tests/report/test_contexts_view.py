"""The report's per-context view in the embedded data and the metric cards (issue 13)."""

from __future__ import annotations

import re

import pytest

from ragmetrics.metrics import metric_from_name
from ragmetrics.report import render_html
from ragmetrics.report._payload import _Strings, context_view
from ragmetrics.report._summary import _count_contexts
from tests.report import builders as b
from tests.report import contexts_builders as cb
from tests.report.test_html import payload

X_DETAILS, X_CTXV = 10, 12


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(cb.report())


def _results(data: dict, rid: str) -> dict[str, list]:
    row = next(r for r in data["rows"] if r[1] == rid)
    return dict(zip(data["metrics"], row[10], strict=True))


def test_context_verdicts_are_embedded_in_retrieval_order_with_their_claims(page):
    data = payload(page)
    strings = data["strings"]
    results = _results(data, cb.ID)
    view = results["context_precision"][X_CTXV]
    assert [v[0] for v in view] == [0, 1, 2, 5]
    assert [v[1] for v in view] == [1, 0, 1, -1], "relevant true / false / none"
    assert [v[2] for v in view] == [[0, 1], [], [1, 9], []], "supports kept once each, in order"
    assert strings[view[0][3]] == "supports both reference claims" and view[2][3] == -1
    assert strings[view[1][3]] == f"nothing of the reference {b.XSS_IMG}"
    # the verdicts are not embedded twice: the rest of the details stays
    assert results["context_precision"][X_DETAILS] == {"average_precision": 0.8333}
    assert [v[1] for v in results["context_relevancy"][X_CTXV]] == [1, 0, 1]
    assert results["faithfulness"][X_CTXV] is None, "a metric without per-context details has no view"


def test_malformed_context_details_are_dropped_or_shown_as_given():
    strings = _Strings()
    assert context_view(cb.HOSTILE_VIEWS[0], strings) is None, "details that are not a dict"
    assert context_view({"contexts": cb.HOSTILE_VIEWS[0]}, strings) is None
    assert context_view({"contexts": cb.HOSTILE_VIEWS[1]}, strings) is None, "no entry with an int index"
    view = context_view({"contexts": cb.HOSTILE_VIEWS[2]}, strings)
    assert view == [[0, -1, [], strings("12")], [1, -1, [0], -1]]
    big = context_view({"contexts": [{"index": 0, "supports": list(range(5000))}]}, strings)
    assert big is not None and len(big[0][2]) == 1000


def test_unusable_context_details_stay_in_the_details(page):
    results = _results(payload(page), "hostile-0")
    assert results["context_precision"][X_CTXV] is None
    assert results["context_precision"][X_DETAILS]["contexts"] == "not a list"


def test_cards_count_contexts_by_relevance_and_by_use(page):
    cards = dict(
        re.findall(r'<article class="card" data-metric="\d+"><h3>(.*?)</h3>(.*?)</article>', page, re.S)
    )
    bars = {name: re.findall(r'aria-label="(Contexts[^"]*)"', body) for name, body in cards.items()}
    # precision: the known row (relevant 0 and 2, not 1; 5 unjudged; 0 and 2 support claims) and
    # hostile-2 (nothing judged relevant or not; context 1 supports claim 0)
    assert bars["context_precision"] == [
        "Contexts by relevance: relevant 2, not relevant 1",
        "Contexts by use (support a claim): used 3, unused 3",
    ]
    # relevancy judges relevance only, so the known row counts no use; hostile-2 lists a support
    assert bars["context_relevancy"] == [
        "Contexts by relevance: relevant 2, not relevant 1",
        "Contexts by use (support a claim): used 1, unused 1",
    ]
    assert bars["faithfulness"] == []


def test_context_reasons_stay_text_in_the_page(page):
    assert "<img" not in page and b.XSS_SCRIPT not in page


def test_use_is_counted_only_where_it_says_more_than_relevance():
    def counts(view: list) -> list[int]:
        out = [0, 0, 0, 0]
        _count_contexts(view, out)
        return out

    # relevant exactly when it supports a claim (context precision): one bar
    assert counts([[0, 1, [0], -1], [1, 0, [], -1]]) == [1, 1, 0, 0]
    # relevance only, no supports listed: no use bar
    assert counts([[0, 1, [], -1], [1, 0, [], -1]]) == [1, 1, 0, 0]
    # relevant but supporting nothing (context relevancy with answer claims): both bars
    assert counts([[0, 1, [0], -1], [1, 1, [], -1], [2, 0, [], -1]]) == [2, 1, 1, 2]
    # no relevance judged: use only
    assert counts([[0, -1, [0], -1], [1, -1, [], -1]]) == [0, 0, 1, 1]


def test_a_real_offline_run_of_the_retrieval_metrics_fills_the_view():
    from ragmetrics.pipeline import EvaluationPipeline

    row = {
        "id": "paris",
        "question": "What is the capital of France?",
        "answer": "Paris is the capital of France. Paris has a big airport.",
        "contexts": ["Bananas are yellow.", "Paris is the capital of France. Paris lies on the Seine."],
        "reference": "Paris is the capital of France. Paris lies on the Seine.",
    }
    names = ["context_recall", "context_precision", "context_relevancy", "answer_correctness"]
    metrics = [metric_from_name(n, llm="offline") for n in names]
    html = render_html(EvaluationPipeline(metrics, progress=False).run([row]).summary())
    data = payload(html)
    results = _results(data, "paris")
    strings = data["strings"]
    for name in ("context_recall", "context_precision", "context_relevancy"):
        view = results[name][X_CTXV]
        assert [v[0] for v in view] == [0, 1], name
        assert view[0][2] == [] and view[1][2], f"{name}: only the Paris context supports a claim"
    relevancy = results["context_relevancy"][X_CTXV]
    assert [v[1] for v in relevancy] == [0, 1]
    assert all(strings[v[3]].startswith("lexical overlap") for v in relevancy)
    assert "Contexts by relevance (2)" in html
