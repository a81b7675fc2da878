"""Issue 22 item 15: a key with whitespace is refused naming its variable; CSV cells never run as formulas."""

from __future__ import annotations

import csv
import logging

import pytest

from ragmetrics import ConfigError, EvaluationPipeline, FaithfulnessMetric
from ragmetrics.judge import make_judge
from ragmetrics.pipeline.export import write_csv

KEY = "sk-test-pasted-key-0123456789"


@pytest.mark.parametrize("bad", [KEY + "\n", KEY + " ", " " + KEY, "sk-te st", KEY + "\r\n", KEY + "\u00a0"])
def test_a_key_with_whitespace_is_refused_naming_the_variable_not_the_key(bad, monkeypatch, fake_llm_server):
    monkeypatch.setenv("OPENAI_API_KEY", bad)
    spec = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    with pytest.raises(ConfigError, match="OPENAI_API_KEY environment variable holds") as info:
        make_judge(spec)
    assert bad.strip() not in str(info.value) and "sk-te" not in str(info.value)
    with pytest.raises(ConfigError, match="the api_key given holds"):
        make_judge(spec, api_key=bad)
    assert fake_llm_server.requests == []


def test_a_key_with_a_trailing_newline_never_reaches_a_debug_log(monkeypatch, fake_llm_server, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\n")
    spec = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    metric = FaithfulnessMetric(llm=spec, cache=False)
    row = {"question": "Capital of France?", "answer": "Paris.", "contexts": ["Paris is the capital."]}
    with caplog.at_level(logging.DEBUG):
        try:
            (record,) = EvaluationPipeline([metric], progress=False).run([row])
            told = str(record.model_dump())
        except ConfigError as exc:
            told = str(exc)
    assert "OPENAI_API_KEY environment variable holds a newline at its end" in told
    assert KEY not in caplog.text and KEY not in told
    assert fake_llm_server.requests == []


def test_csv_cells_that_spreadsheets_read_as_formulas_get_a_leading_apostrophe(tmp_path, fake_llm_server):
    answers = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR", "plain - text"]
    metric = FaithfulnessMetric(llm="offline", cache=False)
    rows = [{"question": "=cmd|' /C calc'!A0", "answer": a, "contexts": ["Paris."]} for a in answers]
    records = EvaluationPipeline([metric], progress=False).run(rows)
    path = write_csv(records, tmp_path / "out.csv")
    with path.open(newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    assert [r["answer"] for r in table] == ["'" + a for a in answers[:-1]] + ["plain - text"]
    assert {r["question"] for r in table} == {"'=cmd|' /C calc'!A0"}
    scores = [r["faithfulness"] for r in table]
    assert all(s == "" or float(s) >= 0 for s in scores)  # numbers stay numbers


async def test_an_embeddings_key_with_a_trailing_newline_is_refused_naming_the_variable(
    monkeypatch, fake_llm_server
):
    from ragmetrics.metrics.evaluators.embedding import OpenAIEmbeddings

    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\n")
    embedder = OpenAIEmbeddings("text-embedding-3-small", base_url=fake_llm_server.openai_base_url)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY environment variable holds a newline") as info:
        await embedder.embed(["Paris"])
    assert KEY not in str(info.value)
    assert fake_llm_server.requests == []
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    good = OpenAIEmbeddings("m", base_url=fake_llm_server.openai_base_url)
    try:
        assert len(await good.embed(["Paris"])) == 1
    finally:
        await good.aclose()
