"""Data in and out: other tools' column names, ambiguity, ``evaluate()`` on every data form, exports.

Judges are the offline judge (deterministic, no network) or the fake LLM server over real HTTP with the
real openai SDK; nothing of ragmetrics is patched.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

import ragmetrics
from ragmetrics import ConfigError, EvaluationPipeline, Sample
from ragmetrics.pipeline import Dataset, read_jsonl
from ragmetrics.pipeline.dataset import to_sample
from ragmetrics.pipeline.export import CLAIM_COLUMNS
from ragmetrics.testing import FakeReply

ROWS = [
    {
        "id": "py",
        "question": "What is Python?",
        "answer": "Python is a compiled language created in 1991.",
        "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
        "reference": "Python is an interpreted language.",
    },
    {
        "id": "paris",
        "question": "What is the capital of France?",
        "answer": "Paris is the capital of France.",
        "contexts": ["Paris is the capital and most populous city of France."],
        "reference": "Paris is the capital of France.",
    },
]
CONVENTIONS = {
    "ragas": {
        "question": "user_input",
        "answer": "response",
        "contexts": "retrieved_contexts",
        "reference": "reference",
    },
    "deepeval": {
        "question": "input",
        "answer": "actual_output",
        "contexts": "retrieval_context",
        "reference": "expected_output",
    },
    "llamaindex": {"question": "query", "answer": "response", "contexts": "contexts"},
}


def renamed(names: dict[str, str]) -> list[dict[str, Any]]:
    return [{names[k]: v for k, v in row.items() if k in names} for row in ROWS]


def samples(data: Any, **kwargs: Any) -> list[Sample]:
    return [to_sample(row) for row in Dataset(data, **kwargs).rows()]


# -- column conventions ------------------------------------------------------------------------------
@pytest.mark.parametrize("tool", sorted(CONVENTIONS))
@pytest.mark.parametrize("form", ["dicts", "pandas"])
def test_each_tools_column_names_are_recognised_without_a_mapping(tool: str, form: str) -> None:
    names = CONVENTIONS[tool]
    rows = renamed(names)
    data: Any = rows
    if form == "pandas":
        pd = pytest.importorskip("pandas")
        data = pd.DataFrame(rows)
    got = samples(data)
    assert [s.question for s in got] == [r["question"] for r in ROWS]
    assert [s.answer for s in got] == [r["answer"] for r in ROWS]
    assert [list(s.contexts) for s in got] == [r["contexts"] for r in ROWS]
    want_reference = [r["reference"] for r in ROWS] if "reference" in names else [None, None]
    assert [s.reference for s in got] == want_reference


def test_deepeval_context_gives_way_to_retrieval_context_and_is_kept_as_a_column() -> None:
    pd = pytest.importorskip("pandas")
    rows = renamed(CONVENTIONS["deepeval"])
    for row in rows:
        row["context"] = ["the ideal context"]
    frame = pd.DataFrame(rows)
    results = ragmetrics.evaluate_sync(frame, metrics=["faithfulness"], llm="offline", progress=False)
    assert [list(r.sample.contexts) for r in results if r.sample] == [r["contexts"] for r in ROWS]
    out = results.to_pandas()
    assert list(out["context"]) == [["the ideal context"]] * 2
    assert list(out["retrieval_context"]) == [r["contexts"] for r in ROWS]


def test_two_candidates_for_one_field_in_a_frame_is_an_error_naming_both() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([{"question": "Q?", "user_input": "Q2?", "answer": "A.", "contexts": ["c"]}])
    with pytest.raises(ConfigError, match=r"columns 'question' and 'user_input' could both be the question"):
        Dataset(frame)
    with pytest.raises(ConfigError, match=r"'retrieved_contexts' and 'retrieval_context'"):
        EvaluationPipeline(metrics=["faithfulness"]).run(
            pd.DataFrame([{"answer": "A.", "retrieved_contexts": ["c"], "retrieval_context": ["d"]}])
        )
    # naming the column settles it
    assert samples(frame, columns={"question": "user_input"})[0].question == "Q2?"
    # a column mapped to one field is no candidate for another
    both = [{"answer": "A.", "response": "R.", "contexts": []}]
    assert samples(both, columns={"reference": "response"})[0].answer == "A."
    assert samples(pd.DataFrame(both), columns={"reference": "response"})[0].reference == "R."


def test_an_ambiguous_dict_row_is_that_rows_error_and_the_others_finish() -> None:
    rows = [
        {"question": "Q?", "response": "A.", "actual_output": "B.", "contexts": ["A."]},
        {"question": "Q?", "answer": "A.", "contexts": ["A."]},
    ]
    results = ragmetrics.evaluate_sync(rows, metrics=["faithfulness"], llm="offline", progress=False)
    assert results[0].status_of("faithfulness") == "invalid_input"
    message = results[0].errors[0].message
    assert "'response' and 'actual_output'" in message and "row 0" in message
    assert results[1].ok and results[1].faithfulness is not None
    # the bad row keeps its columns in the export
    assert results.to_pandas().loc[0, "actual_output"] == "B."


# -- evaluate() and names ------------------------------------------------------------------------------
def _forms(tmp_path: Path) -> dict[str, Any]:
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    csv_path = tmp_path / "rows.csv"
    with csv_path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(ROWS[0]))
        writer.writeheader()
        for r in ROWS:
            writer.writerow({**r, "contexts": json.dumps(r["contexts"])})
    forms: dict[str, Any] = {
        "dicts": ROWS,
        "samples": [Sample(**{**r, "contexts": tuple(r["contexts"])}) for r in ROWS],
        "jsonl": jsonl,
        "csv": str(csv_path),
    }
    try:
        import pandas as pd

        forms["pandas"] = pd.DataFrame(ROWS)
    except ImportError:  # pragma: no cover - the test extra has pandas
        pass
    try:
        import datasets

        forms["hf"] = datasets.Dataset.from_list(ROWS)
    except ImportError:  # pragma: no cover
        pass
    return forms


def test_evaluate_gives_the_same_scores_on_every_data_form(tmp_path: Path) -> None:
    forms = _forms(tmp_path)
    assert {"pandas", "hf"} <= set(forms)
    seen = {}
    for form, data in forms.items():
        results = ragmetrics.evaluate_sync(
            data, metrics=["faithfulness", "exact_match"], llm="offline", progress=False
        )
        assert [r.id for r in results] == ["py", "paris"], form
        assert all(r.ok for r in results), form
        seen[form] = [(r.faithfulness, r.exact_match) for r in results]
    columns = ragmetrics.evaluate_sync(
        answers=[r["answer"] for r in ROWS],
        questions=[r["question"] for r in ROWS],
        contexts=[r["contexts"] for r in ROWS],
        references=[r["reference"] for r in ROWS],
        metrics=["faithfulness", "exact_match"],
        llm="offline",
        progress=False,
    )
    seen["columns"] = [(r.faithfulness, r.exact_match) for r in columns]
    first = seen["dicts"]
    assert [s[1] for s in first] == [0.0, 1.0]  # exact_match: only the second answer is the reference
    assert first[0][0] < first[1][0]  # the contradicted answer is less faithful
    assert all(v == first for v in seen.values()), seen


async def test_evaluate_is_awaitable_and_mixes_names_and_objects() -> None:
    def shout(sample: Sample) -> float:
        return float(sample.answer.isupper())

    results = await ragmetrics.evaluate(ROWS, metrics=["rouge", shout], threshold=0.9)
    assert results.metrics == ["rouge", "shout"]
    assert [r.shout for r in results] == [0.0, 0.0]
    assert results[1].results["rouge"].threshold == 0.9 and results[1].rouge == 1.0


async def test_named_metrics_are_judged_by_the_llm_given(fake_llm_server, openai_spec) -> None:
    fake_llm_server.on(
        "claims.extract",
        FakeReply(
            json={"claims": [{"text": "Paris is the capital.", "span": "Paris"}], "addresses_question": "yes"}
        ),
    )
    fake_llm_server.on(
        "claims.verify",
        FakeReply(
            json={"verdicts": [{"claim": 0, "verdict": "supported", "context": 0, "evidence": "Paris"}]}
        ),
    )
    results = await ragmetrics.evaluate(
        ROWS[1:], metrics="faithfulness", llm=openai_spec, progress=False, canaries=False
    )
    assert results[0].faithfulness == 1.0
    assert fake_llm_server.calls.total() == 2
    assert results[0].results["faithfulness"].judge is not None
    assert "gpt-4o-mini" in (results[0].results["faithfulness"].judge.spec or "")


def test_the_pipeline_takes_metric_names_like_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETRICS_JUDGE", "offline")  # chosen, so no offline-default warning
    pipeline = EvaluationPipeline(metrics=["faithfulness", "relevancy", "exact_match"], progress=False)
    assert pipeline.metric_names == ["faithfulness", "relevancy", "exact_match"]
    results = pipeline.run(ROWS)
    assert all(r.ok for r in results) and results[1].exact_match == 1.0
    with pytest.raises(
        ConfigError,
        match=r"unknown metric 'faithfulnes' \(did you mean 'faithfulness'\?\); choose from .*faithfulness",
    ):
        EvaluationPipeline(metrics=["faithfulnes"])
    with pytest.raises(ConfigError, match="unknown metric 'g_eval'"):  # needs options: an object
        ragmetrics.evaluate_sync(ROWS, metrics=["g_eval"])


# -- exports -------------------------------------------------------------------------------------------
def _user_frame() -> Any:
    pd = pytest.importorskip("pandas")
    return pd.DataFrame(
        {
            "sample_id": [7, 8],
            "user_input": [ROWS[0]["question"], ROWS[1]["question"]],
            "response": [ROWS[0]["answer"], ROWS[1]["answer"]],
            "retrieved_contexts": [ROWS[0]["contexts"], ROWS[1]["contexts"]],
            "model_version": ["rag-v1", "rag-v2"],
            "meta": ["nightly run", '{"team": "search"}'],
        }
    )


def test_to_pandas_keeps_the_users_columns_extra_columns_and_meta() -> None:
    pd = pytest.importorskip("pandas")
    frame = _user_frame()
    results = ragmetrics.evaluate_sync(
        frame, metrics=["faithfulness", "relevancy"], llm="offline", progress=False
    )
    assert all(r.ok for r in results), [r.errors for r in results]  # a string meta is no longer an error
    assert results[0].sample.meta == {"meta": "nightly run"} and results[1].sample.meta == {"team": "search"}
    out = results.to_pandas()
    user = list(frame.columns)
    assert list(out.columns[1 : 1 + len(user)]) == user  # after "index", in the user's order
    pd.testing.assert_frame_equal(out[user], frame)  # names, values, ids as ints, contexts as lists
    assert isinstance(out.loc[0, "retrieved_contexts"], list)
    for name in ("faithfulness", "relevancy"):
        assert {name, f"{name}_status", f"{name}_reason"} <= set(out.columns)
    assert list(out["faithfulness_status"]) == ["ok", "ok"]
    assert out.loc[0, "faithfulness"] == results[0].faithfulness
    assert "Contradicted" in out.loc[0, "faithfulness_reason"]
    assert "question" not in out.columns and "id" not in out.columns  # sample_id holds the id


def test_csv_and_jsonl_exports_keep_the_users_columns(tmp_path: Path) -> None:
    results = ragmetrics.evaluate_sync(_user_frame(), metrics=["faithfulness"], llm="offline", progress=False)
    with results.to_csv(tmp_path / "out.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[1]["model_version"] == "rag-v2" and rows[1]["sample_id"] == "8"
    assert json.loads(rows[0]["retrieved_contexts"]) == ROWS[0]["contexts"]  # JSON text in a CSV cell
    back = list(read_jsonl(results.to_jsonl(tmp_path / "records.jsonl")))
    assert back == list(results)  # lossless, extra columns included
    assert back[0].extra["model_version"] == "rag-v1" and back[0].columns["response"] == "answer"
    flat = [
        json.loads(x)
        for x in results.to_jsonl(tmp_path / "rows.jsonl", level="samples").read_text().splitlines()
    ]
    assert flat[0]["model_version"] == "rag-v1" and flat[0]["retrieved_contexts"] == ROWS[0]["contexts"]
    assert flat[0]["faithfulness_status"] == "ok"


def test_to_hf_round_trips_a_hugging_face_dataset_with_the_real_library() -> None:
    datasets = pytest.importorskip("datasets")
    source = datasets.Dataset.from_list(
        [{**renamed(CONVENTIONS["ragas"])[i], "model_version": f"v{i}"} for i in range(2)]
    )
    results = ragmetrics.evaluate_sync(
        source, metrics=["faithfulness", "relevancy"], llm="offline", progress=False
    )
    out = results.to_hf()
    assert isinstance(out, datasets.Dataset) and out.num_rows == 2
    for column in source.column_names:
        assert out[column] == source[column], column
    assert out.features["retrieved_contexts"].feature.dtype == "string"  # a list of strings, not JSON text
    assert out["faithfulness_status"] == ["ok", "ok"] and out["relevancy"] == [r.relevancy for r in results]
    claims = results.to_hf(level="claims")
    assert claims.column_names == list(CLAIM_COLUMNS) and claims.num_rows > 0


def test_claims_level_gives_one_row_per_claim_with_its_evidence(
    fake_llm_server, openai_spec, tmp_path
) -> None:
    pd = pytest.importorskip("pandas")
    fake_llm_server.on(
        "claims.extract",
        FakeReply(
            json={
                "claims": [
                    {"text": "Python is compiled.", "span": "Python is a compiled language"},
                    {"text": "Python was created in 1991.", "span": "created in 1991"},
                ],
                "addresses_question": "yes",
            }
        ),
    )
    fake_llm_server.on(
        "claims.verify",
        FakeReply(
            json={
                "verdicts": [
                    {
                        "claim": 0,
                        "verdict": "contradicted",
                        "context": 0,
                        "evidence": "an interpreted language",
                        "reason": "interpreted, not compiled",
                    },
                    {
                        "claim": 1,
                        "verdict": "supported",
                        "context": 0,
                        "evidence": "created in 2091",
                        "reason": "the year",
                    },
                ]
            }
        ),
    )
    results = ragmetrics.evaluate_sync(ROWS[:1], metrics=["faithfulness"], llm=openai_spec, progress=False)
    claims = results.to_pandas(level="claims")
    assert isinstance(claims, pd.DataFrame) and list(claims.columns) == list(CLAIM_COLUMNS)
    assert list(claims["claim"]) == ["Python is compiled.", "Python was created in 1991."]
    # the second quote is not in the context (nor after the re-ask): it counts as not_found
    assert list(claims["verdict"]) == ["contradicted", "not_found"]
    assert claims["judge_verdict"].isna()[0] and claims.loc[1, "judge_verdict"] == "supported"
    assert list(claims["span_found"]) == [True, True]
    assert list(claims["id"]) == ["py", "py"] and list(claims["metric"]) == ["faithfulness"] * 2
    assert list(claims["context_index"]) == [0, 0]
    assert list(claims["evidence"]) == ["an interpreted language", "created in 2091"]
    assert list(claims["quote_found"]) == [True, False]  # the second quote is not in the context
    assert claims.loc[0, "reason"] == "interpreted, not compiled"
    written = results.to_jsonl(tmp_path / "claims.jsonl", level="claims").read_text().splitlines()
    assert [json.loads(x)["verdict"] for x in written] == ["contradicted", "not_found"]
    with pytest.raises(ConfigError, match="level must be 'samples'"):
        results.to_pandas(level="claim")  # type: ignore[arg-type]


def test_results_display_as_html_in_a_notebook() -> None:
    results = ragmetrics.evaluate_sync(
        ROWS, metrics=["faithfulness", "relevancy"], llm="offline", progress=False
    )
    html = results._repr_html_()
    assert html.startswith('<div class="ragmetrics-results">') and html.endswith("</div>")
    assert "<th>95% CI</th>" in html and "<td>faithfulness</td>" in html
    assert "Worst 2 samples" in html and html.index(">py<") < html.index(">paris<")  # worst first
    assert "Python is a compiled language" in html  # the contradicted claim is shown
