"""Reading labels: ragmetrics' data format, plain JSONL, and clear errors for bad labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics.calibration import example_path, load_labels
from ragmetrics.errors import ConfigError


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_data_format_labels_each_metric_by_its_field_and_skips_nulls() -> None:
    data = load_labels(example_path(), ["faithfulness", "relevancy"])
    assert len(data.labels["faithfulness"]) == 40 and sum(data.labels["faithfulness"].values()) == 20
    assert len(data.labels["relevancy"]) == 72
    # a row labelled only for relevancy is not in faithfulness's labels
    only_relevancy = [i for i in data.labels["relevancy"] if i not in data.labels["faithfulness"]]
    assert only_relevancy and all(data.rows[i]["contexts"] == [] for i in only_relevancy)


def test_a_plain_jsonl_label_applies_to_every_metric(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "labels.jsonl",
        [
            {"question": "q", "answer": "a", "contexts": ["c"], "label": True},
            {"question": "q", "answer": "b", "contexts": ["c"], "label": "no"},
            {"question": "q", "answer": "c", "contexts": ["c"], "label": 1},
            {"question": "q", "answer": "d", "contexts": ["c"], "label": {"relevancy": False}},
        ],
    )
    data = load_labels(path, ["faithfulness", "relevancy"])
    assert data.labels["faithfulness"] == {0: True, 1: False, 2: True}
    assert data.labels["relevancy"] == {0: True, 1: False, 2: True, 3: False}
    assert [r["id"] for r in data.rows] == ["label-0", "label-1", "label-2", "label-3"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "q", "answer": "a"}, "line 1: no 'label' field"),
        ({"question": "q", "answer": "a", "label": "maybe"}, "line 1 label: a label must be true or false"),
        ({"question": "q", "answer": "a", "label": {"faithful": 3}}, "label.faithful"),
        ([1, 2], "line 1: expected a JSON object"),
    ],
)
def test_bad_labels_name_the_line_and_field(tmp_path: Path, row: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_labels(_write(tmp_path / "bad.jsonl", [row]), ["faithfulness"])


def test_a_metric_nobody_labelled_is_an_error_naming_the_fields(tmp_path: Path) -> None:
    path = _write(tmp_path / "l.jsonl", [{"question": "q", "answer": "a", "label": {"faithful": True}}])
    with pytest.raises(ConfigError, match=r"no row .* is labelled for relevancy .*label\.relevant"):
        load_labels(path, ["faithfulness", "relevancy"])


def test_not_json_and_not_jsonl_are_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"answer": "a", "label": true}\n{not json\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="line 2: not valid JSON"):
        load_labels(bad, ["faithfulness"])
    with pytest.raises(ConfigError, match=r"must be a \.jsonl file"):
        load_labels(tmp_path / "labels.csv", ["faithfulness"])
