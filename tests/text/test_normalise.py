"""The whole-text normaliser and the one quote normaliser (ragmetrics/text/normalise.py), and who uses it."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ragmetrics.metrics.claims.engine import quote_found
from ragmetrics.report import render_html
from ragmetrics.sample import Sample
from ragmetrics.score import ClaimRecord, MetricResult
from ragmetrics.text import TRIM, fold, normalize, normalize_for_match
from ragmetrics.text.normalise import _TABLE
from tests.report import builders as b

# -- the whole-text normaliser -------------------------------------------------------------------------


def test_normalize_folds_case_quotes_width_and_space():
    assert normalize("  Ｐython’s  “Zen”\n\tof  ＰYTHON ") == 'python\'s "zen" of python'
    assert normalize("Straße", lower=False) == "Straße"
    assert normalize("Straße") == "strasse"


# -- the quote normaliser: the quote check and the report's highlighting agree -------------------------

# (context, the judge's quote, the part of the context the report should highlight)
FOLDED = [
    pytest.param(
        "He said \u201cit\u2019s fine\u201d and left.",
        'said "it\'s fine"',
        "said \u201cit\u2019s fine",
        id="curly",
    ),
    pytest.param(
        "Open 9\u201317 daily \u2014 except Sundays.",
        "9-17 daily - except",
        "9\u201317 daily \u2014 except",
        id="dashes",
    ),
    pytest.param(
        "The \ufb01nal score was \uff11\uff12.",
        "final score was 12",
        "\ufb01nal score was \uff11\uff12",
        id="nfkc",
    ),
    pytest.param(
        "Stra\u00dfe und CAF\u00c9 Paris", "strasse und caf\u00e9", "Stra\u00dfe und CAF\u00c9", id="case"
    ),
    pytest.param("caf\u0065\u0301 au lait", "caf\u00e9 au", "caf\u0065\u0301 au", id="combining"),
    pytest.param(
        "Guido\u00a0 van\n\tRossum wrote it", "guido van rossum", "Guido\u00a0 van\n\tRossum", id="whitespace"
    ),
]


def _rendered_quote(context: str, quote: str) -> tuple[int, int, int]:
    """The report's (quote start, quote end, quote text index) for one groundedness claim."""
    claim = ClaimRecord(
        text="claim",
        span="",
        verdict="supported",
        context_index=0,
        evidence=quote,
        evidence_verified=quote_found(quote, context),
    )
    sample = Sample(question="q?", answer="claim", contexts=(context,), id="s")
    rec = b.record(
        0, "s", sample, {"groundedness": MetricResult(name="groundedness", score=1.0, claims=[claim])}
    )
    page = render_html([rec])
    data = json.loads(
        re.search(r'<script type="application/json" id="rm-data">(.*?)</script>', page, re.S).group(1)
    )
    row = data["rows"][0][10][data["metrics"].index("groundedness")][6][0]
    return row[7], row[8], row[9]


@pytest.mark.parametrize(("context", "quote", "highlighted"), FOLDED)
def test_report_highlights_exactly_what_the_quote_check_finds(
    context: str, quote: str, highlighted: str
) -> None:
    assert quote not in context  # not a verbatim match: the folding is what finds it
    assert normalize_for_match(quote) in normalize_for_match(context)
    assert quote_found(quote, context)
    start, end, text = _rendered_quote(context, quote)
    # no astral characters here, so the report's UTF-16 offsets are code-point offsets
    assert start >= 0 and text == -1
    assert context[start:end] == highlighted


def test_a_quote_the_check_does_not_find_is_not_highlighted() -> None:
    context = "Open 9 to 17 daily."
    quote = "open nine to five"
    assert not quote_found(quote, context)
    start, end, text = _rendered_quote(context, quote)
    assert (start, end) == (-1, -1) and text >= 0  # kept as text, shown beside the context


_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",))
    | st.sampled_from(
        "\u2018\u2019\u201c\u201d\u2013\u2014\u00a0\u00df\ufb01\u0301"
        "\u1161\u1100\u314f\u00a8\uff9e \t\n.,'\"-"
    ),
    max_size=30,
)


def _slow_fold(text: str) -> tuple[str, list[int], list[int]]:
    """The folding written plainly: cluster by cluster, character by character."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and any(
            unicodedata.category(c)[0] == "M" or unicodedata.combining(c) or "\u1160" <= c <= "\u11ff"
            for c in (text[j], unicodedata.normalize("NFKC", text[j])[:1])
        ):
            j += 1
        for ch in unicodedata.normalize("NFKC", text[i:j]).casefold().translate(_TABLE):
            if ch.isspace() and (not out or out[-1] == " "):
                continue
            out.append(" " if ch.isspace() else ch)
            starts.append(i)
            ends.append(j)
        i = j
    if out and out[-1] == " ":
        del out[-1], starts[-1], ends[-1]
    return "".join(out), starts, ends


@settings(max_examples=400, deadline=None)
@given(_TEXT)
@example("\u00a8\uff9e")  # marks from two clusters: NFKC reorders U+0308 and U+3099 (found by this test)
@example("\u1100\u314f")  # a compatibility jamo: NFKC makes it U+1161, which composes with U+1100
def test_fold_matches_a_slow_reference_and_the_whole_string_normaliser(text: str) -> None:
    folded, starts, ends = fold(text)
    assert (folded, list(starts), list(ends)) == _slow_fold(text)
    assert folded.strip(TRIM) == normalize_for_match(text)


@settings(max_examples=200, deadline=None)
@given(_TEXT, _TEXT, _TEXT)
def test_every_quote_taken_from_a_context_is_found_and_highlighted(
    before: str, quote: str, after: str
) -> None:
    probe = normalize_for_match(quote)
    # a quote that starts or ends inside a character cluster (a bare combining mark) is not a quote
    if not probe or any(t[:1] and unicodedata.category(t[0])[0] == "M" for t in (quote, after)):
        return
    context = before + quote + after
    assert quote_found(quote, context)
    folded, starts, ends = fold(context)
    k = folded.find(probe)
    assert k >= 0
    assert probe in normalize_for_match(context[starts[k] : ends[k + len(probe) - 1]])
