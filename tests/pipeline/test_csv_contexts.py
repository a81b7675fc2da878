"""A CSV contexts column as pandas writes it (Python lists), as JSON or garbled: never one context wrongly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics.cli import main
from ragmetrics.errors import InvalidInputError
from ragmetrics.evaluation import evaluate_sync
from ragmetrics.sample import Sample

pd = pytest.importorskip("pandas")

QUESTION = "What is the capital of France?"
RELEVANT = "Paris is the capital of France."
OFF_TOPIC = "Bananas are yellow fruit grown in the tropics."
AWKWARD = [  # what repr() escapes or quotes differently: both quotes, backslash, controls, non-ASCII
    'It\'s "quoted" and back\\slashed.',
    "two\nlines\tand a tab \x0b \u2028 é 日本 \U0001f600",
]


def _frame() -> object:
    return pd.DataFrame(
        {
            "question": [QUESTION, "Where is it?"],
            "answer": ["Paris is the capital of France.", "It's in Europe."],
            "contexts": [[RELEVANT, OFF_TOPIC], AWKWARD],
        }
    )


def test_a_list_column_saved_by_pandas_to_csv_is_read_as_its_passages(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    _frame().to_csv(path, index=False)
    assert "['Paris is the capital of France.', 'Bananas" in path.read_text(encoding="utf-8")
    first, second = evaluate_sync(path, metrics=["context_relevancy"], llm="offline", progress=False)
    assert first.sample.contexts == (RELEVANT, OFF_TOPIC)
    assert first.scores["context_relevancy"] == 0.5, "one of two contexts is relevant (1.0 when read as one)"
    assert second.sample.contexts == tuple(AWKWARD)


def test_eval_on_a_pandas_csv_scores_two_contexts_and_json_cells_still_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = _frame()
    frame.loc[len(frame)] = [QUESTION, "Paris.", json.dumps([RELEVANT, OFF_TOPIC])]  # a JSON cell beside
    path = tmp_path / "rows.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "scores.jsonl"
    argv = ["eval", str(path), "--judge", "offline", "--metrics", "context_relevancy", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr()
    text = out.read_text(encoding="utf-8")  # split on newlines only: a passage holds U+2028
    records = [json.loads(line) for line in text.split("\n") if line]
    pair = [RELEVANT, OFF_TOPIC]
    assert [r["sample"]["contexts"] for r in records] == [pair, AWKWARD, pair]
    assert records[0]["scores"]["context_relevancy"] == records[2]["scores"]["context_relevancy"] == 0.5


BAD_CELLS = [
    "['a', b]",
    "['a' + 'b']",
    "['a' 'b']",
    "[__import__('os').system('touch PWNED')]",
    "['''triple''']",
    "[b'bytes']",
    "['unknown \\q escape']",
    "['\\U00110000']",
    '["unterminated]',
    "[" * 10_000 + "]" * 10_000,
    "[['nested']]",
]


def test_a_cell_starting_with_a_bracket_that_is_no_list_is_that_rows_invalid_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = [[QUESTION, "Paris.", cell] for cell in BAD_CELLS] + [[QUESTION, "Paris.", repr([RELEVANT])]]
    path = tmp_path / "rows.csv"
    pd.DataFrame(rows, columns=["question", "answer", "docs"]).to_csv(path, index=False)
    results = evaluate_sync(
        path, metrics=["context_relevancy"], llm="offline", progress=False, columns={"contexts": "docs"}
    )
    *bad, good = results
    assert good.ok and good.sample.contexts == (RELEVANT,)
    for n, record in enumerate(bad):
        assert record.status_of("context_relevancy") == "invalid_input", BAD_CELLS[n]
        message = record.errors[0].message
        assert f"row {n}" in message and f"line {n + 2} of" in message and "column 'docs'" in message
        assert "is bracketed like a list but is neither a JSON list nor a Python list" in message
        assert "df['contexts'].map(json.dumps)" in message
        assert record.extra["docs"] == BAD_CELLS[n], "the cell is kept on the record as it was"
    assert not (tmp_path / "PWNED").exists(), "nothing in a cell is run"


def test_a_passage_that_only_starts_with_a_bracket_is_one_passage_as_before(tmp_path: Path) -> None:
    cell = "[citation needed] Paris is the capital of France."
    path = tmp_path / "rows.csv"
    pd.DataFrame([[QUESTION, "Paris.", cell]], columns=["question", "answer", "contexts"]).to_csv(
        path, index=False
    )
    (record,) = evaluate_sync(path, metrics=["context_relevancy"], llm="offline", progress=False)
    assert record.ok and record.sample.contexts == (cell,)


def test_a_list_read_back_by_pandas_read_csv_is_refused_saying_how_to_parse_it(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    _frame().to_csv(path, index=False)
    frame = pd.read_csv(path)  # the list column comes back as its text
    (first, _) = evaluate_sync(frame, metrics=["context_relevancy"], llm="offline", progress=False)
    assert first.status_of("context_relevancy") == "invalid_input"
    assert "pandas.read_csv" in first.errors[0].message and "ast.literal_eval" in first.errors[0].message
    with pytest.raises(InvalidInputError, match="wrap a single passage in a list"):
        Sample.from_fields(answer="a", contexts="one passage")


def test_a_long_python_list_cell_is_read_in_linear_time(tmp_path: Path) -> None:
    passages = [f'passage {i}: it\'s "{i}"' for i in range(20_000)]  # repr escapes the apostrophe
    path = tmp_path / "rows.csv"
    pd.DataFrame({"answer": ["A."], "contexts": [passages]}).to_csv(path, index=False)
    from ragmetrics.pipeline.dataset import Dataset, to_sample

    (row,) = Dataset(path)
    assert to_sample(row).contexts == tuple(passages)
