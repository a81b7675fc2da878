"""Loading datasets: dicts, samples, JSONL/JSON/CSV, pandas, HF datasets; column mapping and errors."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.errors import ConfigError, InvalidInputError
from ragmetrics.pipeline import Dataset, EvaluationPipeline
from ragmetrics.pipeline.dataset import Row, to_sample
from ragmetrics.sample import Sample
from ragmetrics.score import MetricResult

ROWS = [
    {"id": "a", "question": "Q1?", "answer": "A one.", "contexts": ["c1", "c2"], "reference": "R1"},
    {"id": "b", "question": "Q2?", "answer": "A two.", "contexts": []},
]


class NeedsContexts:
    """A metric that checks the answer against the contexts (so contexts are required)."""

    name = "ctx_count"
    needs_contexts = True

    async def evaluate_sample(self, sample: Sample) -> MetricResult:
        return MetricResult(name=self.name, score=min(1.0, len(sample.contexts) / 2))


def samples(ds: Dataset, *, require_contexts: bool = False) -> list[Sample]:
    return [to_sample(row, require_contexts=require_contexts) for row in ds]


def test_list_of_dicts_and_samples() -> None:
    got = samples(Dataset(ROWS))
    assert [s.id for s in got] == ["a", "b"]
    assert got[0].contexts == ("c1", "c2") and got[0].reference == "R1"
    ready = Sample(answer="x", contexts=("c",))
    assert samples(Dataset([ready, {"answer": "y"}]))[0] is ready
    assert Dataset(ROWS).total() == 2 and len(Dataset(ROWS)) == 2


def test_jsonl_file_reads_lazily_and_a_broken_line_is_a_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n{not json\n\n" + json.dumps(ROWS[1]) + "\n", encoding="utf-8")
    ds = Dataset(path)
    assert ds.kind == "jsonl" and ds.total() == 3
    rows = list(ds)
    assert [r.index for r in rows] == [0, 1, 2]
    with pytest.raises(InvalidInputError, match=r"row 1.*line 2.*not valid JSON"):
        to_sample(rows[1])
    assert to_sample(rows[2]).id == "b"


def test_json_and_csv_files(tmp_path: Path) -> None:
    (tmp_path / "d.json").write_text(json.dumps(ROWS), encoding="utf-8")
    assert [s.answer for s in samples(Dataset(tmp_path / "d.json"))] == ["A one.", "A two."]
    path = tmp_path / "d.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "query", "response", "retrieved"])
        writer.writerow(["x", "Q?", "Ans.", json.dumps(["p1", "p2"])])
        writer.writerow(["y", "Q2?", "Ans2.", "a single passage, not JSON"])
        writer.writerow(["z", "Q3?", "Ans3.", ""])
    ds = Dataset(path, columns={"question": "query", "answer": "response", "contexts": "retrieved"})
    got = samples(ds)
    assert [s.contexts for s in got] == [("p1", "p2"), ("a single passage, not JSON",), ()]
    assert got[0].question == "Q?" and ds.total() == 3


def test_a_missing_column_is_named_with_the_columns_there_are(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("q,a\nQ?,A.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"no column 'answer'.*columns are: q, a.*columns=\{'answer'"):
        Dataset(path)
    with pytest.raises(ConfigError, match=r"no column 'resp' \(mapped to 'answer'"):
        Dataset(path, columns={"answer": "resp"})
    assert samples(Dataset(path, columns={"answer": "a", "question": "q"}))[0].answer == "A."


def test_unknown_source_types_and_files_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        Dataset(tmp_path / "nope.jsonl")
    (tmp_path / "d.xlsx").write_bytes(b"")
    with pytest.raises(ConfigError, match="unsupported type '.xlsx'"):
        Dataset(tmp_path / "d.xlsx")
    with pytest.raises(ConfigError, match="evaluate\\(questions="):
        Dataset({"answers": ["a"]})
    with pytest.raises(ConfigError, match="unsupported type int"):
        Dataset(42)


def test_pandas_dataframe_with_custom_columns_numpy_values_and_nan() -> None:
    pd = pytest.importorskip("pandas")
    import numpy as np

    frame = pd.DataFrame(
        {
            "qid": np.array([7, 8]),
            "user_input": ["Q?", None],
            "response": ["A.", "B."],
            "docs": [np.array(["p1", "p2"]), ["p3"]],
            "ground_truth": [np.nan, "R"],
        }
    )
    ds = Dataset(frame, columns={"contexts": "docs", "id": "qid"})
    got = samples(ds)
    assert [s.id for s in got] == ["7", "8"]  # numpy ints become ids
    assert got[0].question == "Q?" and got[1].question is None  # aliases: user_input -> question
    assert got[0].contexts == ("p1", "p2") and got[0].reference is None and got[1].reference == "R"
    with pytest.raises(ConfigError, match="no column 'contexts'"):
        Dataset(frame.drop(columns=["docs"]), required=("answer", "contexts"))


def test_hugging_face_dataset() -> None:
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_list(
        [
            {"question": "Q?", "answer": "A.", "contexts": ["c"]},
            {"question": "Q2?", "answer": "B.", "contexts": []},
        ]
    )
    ds = Dataset(hf)
    assert ds.kind == "hf" and ds.total() == 2
    assert [s.answer for s in samples(ds)] == ["A.", "B."]
    with pytest.raises(ConfigError, match="no column 'answer'"):
        Dataset(hf.remove_columns(["answer"]))


def test_bad_rows_name_the_row_and_the_field() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"question": "q", "contexts": []}, "answer"),
        ({"answer": None, "contexts": []}, "answer"),
        ({"answer": "a", "contexts": None}, "contexts"),
        ({"answer": "a"}, "contexts"),
        ({"answer": "a", "contexts": "one passage"}, "contexts"),
        ({"answer": "a", "contexts": ["ok", 3]}, "contexts[1]"),
        ({"answer": 5, "contexts": []}, "answer"),
    ]
    for i, (values, field) in enumerate(cases):
        row = Dataset([values]).rows().__next__()
        row = Row(i, row.values, columns=row.columns)
        with pytest.raises(InvalidInputError, match=rf"row {i}: field '{re.escape(field)}") as info:
            to_sample(row, require_contexts=True)
        assert info.value.row == i and info.value.field == field
    mapped = next(iter(Dataset([{"response": None}], columns={"answer": "response"})))
    with pytest.raises(InvalidInputError, match=r"field 'answer'.*\(read from column 'response'\)"):
        to_sample(mapped)


async def test_pipeline_reads_every_source_the_same(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-8")
    pipeline = EvaluationPipeline(metrics=[NeedsContexts()])
    expected = [1.0, 0.0]
    for source in (ROWS, jsonl, pd.DataFrame(ROWS), [Sample(**{k: v for k, v in r.items()}) for r in ROWS]):
        results = await pipeline.evaluate(source)
        assert [r.ctx_count for r in results] == expected
        assert [r.id for r in results] == ["a", "b"]


async def test_pipeline_missing_column_fails_before_any_work() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"question": ["q"], "answer": ["a"]})
    with pytest.raises(ConfigError, match="no column 'contexts'"):
        await EvaluationPipeline(metrics=[NeedsContexts()]).evaluate(frame)
