"""Reference claims in the embedded data: located in the reference, not the answer (issue 13)."""

from __future__ import annotations

import pytest

from ragmetrics.report import render_html
from ragmetrics.report._payload import split_of
from ragmetrics.score import MetricResult
from tests.report import builders as b
from tests.report import reference_builders as rb
from tests.report.test_html import payload

X_STATUS, X_CLAIMS, X_SPLIT = 1, 6, 13
C_TEXT, C_S0, C_S1, C_SPAN = 0, 1, 2, 3


@pytest.fixture(scope="module")
def data() -> dict:
    return payload(render_html(rb.report()))


def _results(data: dict, rid: str) -> dict[str, list]:
    row = next(r for r in data["rows"] if r[1] == rid)
    return dict(zip(data["metrics"], row[10], strict=True))


def _u16_slice(text: str, start: int, end: int) -> str:
    """``text[start:end]`` with UTF-16 offsets, as report.js slices it."""
    return text.encode("utf-16-le")[2 * start : 2 * end].decode("utf-16-le")


def test_reference_claims_are_located_in_the_reference(data):
    results = _results(data, rb.ID)
    assert results["context_recall"][X_SPLIT] == 1 and results["context_precision"][X_SPLIT] == 1
    assert results["faithfulness"][X_SPLIT] == 0
    for name in ("context_recall", "context_precision"):
        claims = results[name][X_CLAIMS]
        assert len(claims) == len(rb.REFERENCE_CLAIMS), name
        located = [_u16_slice(rb.REFERENCE, c[C_S0], c[C_S1]) for c in claims]
        # the first span starts with the astral character: UTF-16 offsets after it are shifted by one
        assert located[0].endswith(rb.REFERENCE_CLAIMS[0]) and located[0].startswith("\U0001f5fc")
        assert located[1:] == list(rb.REFERENCE_CLAIMS[1:]), name
        assert [c[C_SPAN] for c in claims] == [-1, -1, -1], "every span was located"
    # the answer's claim (faithfulness) is still located in the answer
    (claim,) = results["faithfulness"][X_CLAIMS]
    assert _u16_slice(rb.ANSWER, claim[C_S0], claim[C_S1]) == rb.ANSWER


def test_a_reference_span_in_neither_text_is_kept_as_text(data):
    strings = data["strings"]
    claims = _results(data, rb.UNLOCATED_ID)["context_recall"][X_CLAIMS]
    assert claims[1][C_S0] == claims[1][C_S1] == -1
    assert strings[claims[1][C_SPAN]] == rb.STRAY_SPAN
    assert strings[claims[1][C_TEXT]] == rb.REFERENCE_CLAIMS[1], "the claim text, not sliced from a text"
    assert claims[2][C_S0] >= 0, "the other claims are still located"


def test_without_a_reference_claims_come_from_the_answer(data):
    results = _results(data, rb.NO_REFERENCE_ID)
    assert data["statuses"][results["context_recall"][X_STATUS]] == "invalid_input"
    assert results["context_recall"][X_CLAIMS] == []
    precision = results["context_precision"]  # no reference: its claims are the answer's
    assert precision[X_SPLIT] == 0
    assert [_u16_slice(rb.ANSWER, c[C_S0], c[C_S1]) for c in precision[X_CLAIMS]] == [rb.ANSWER]


def test_only_the_exact_claims_of_value_means_the_reference():
    def result(details: dict) -> MetricResult:
        return b.result("context_recall", 0.5).model_copy(update={"details": details})

    assert split_of(result({"claims_of": "reference"})) == 1
    assert split_of(result({"claims_of": "answer"})) == 0
    assert split_of(result({"claims_of": ["reference"]})) == 0, "a user metric's odd value: the answer"
    assert split_of(result({})) == 0
