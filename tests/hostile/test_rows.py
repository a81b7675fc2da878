"""Rows nested too deeply (issue 22, item 12): that row's ``invalid_input`` before any call, outputs whole.

A value 300 lists deep in one row's ``meta`` (or in an extra column) used to be scored, every call paid,
and then crash the exports (``Maximum serialization depth exceeded``, or a RecursionError offline).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmetrics import FaithfulnessMetric
from ragmetrics._check import MAX_NESTING, nesting_depth
from ragmetrics.cli.app import main
from ragmetrics.errors import InvalidInputError
from ragmetrics.pipeline import EvaluationPipeline, read_jsonl
from ragmetrics.sample import Sample

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."
CONTEXT = "Paris is the capital and largest city of France."


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def row(i: int, **extra: Any) -> dict[str, Any]:
    return {"id": f"r{i}", "question": QUESTION, "answer": ANSWER, "contexts": [CONTEXT], **extra}


def test_nesting_depth_counts_levels_without_recursing_and_calls_a_cycle_too_deep() -> None:
    assert nesting_depth("text") == 0
    assert nesting_depth({"a": [1, {"b": ()}]}) == 4
    assert nesting_depth(nested(MAX_NESTING)) == MAX_NESTING
    assert nesting_depth(nested(MAX_NESTING + 1)) == MAX_NESTING + 1
    assert nesting_depth(nested(200_000)) == MAX_NESTING + 1  # far past the recursion limit
    loop: list[Any] = []
    loop.append(loop)
    assert nesting_depth(loop) == MAX_NESTING + 1
    shared: list[Any] = [1]
    for _ in range(40):  # 2**40 paths, 40 containers
        shared = [shared, shared]
    assert nesting_depth(shared) == 41


@pytest.mark.parametrize(
    ("where", "levels"),
    [("meta", 300), ("meta", 600), ("extra", 300), ("meta", 5000), ("contexts", 300)],
)
def test_a_deep_row_in_a_file_is_invalid_input_before_any_call_and_every_output_is_written(
    fake_llm_server,
    openai_spec: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    where: str,
    levels: int,
) -> None:
    items = [row(i) for i in range(6)]
    items[2][where] = {"meta": {"trace": "@"}, "contexts": ["@"]}.get(where, "@")
    deep = "[" * levels + "1" + "]" * levels  # as text: json.dumps itself recurses
    lines = [json.dumps(r).replace('"@"', deep) + "\n" for r in items]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(lines), encoding="utf-8")
    for judge in (openai_spec, "offline"):
        fake_llm_server.reset()
        outs = [tmp_path / "out.jsonl", tmp_path / "out.csv"]
        report = tmp_path / "report.html"
        code = main(
            [
                "eval",
                "--no-canaries",
                str(data),
                "--judge",
                judge,
                "--metrics",
                "faithfulness",
                "--quiet",
                "--no-cache",
            ]
            + ["--out", str(outs[0]), "--report", str(report), "--max-unscored", "1"]
        )
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert "Traceback" not in captured.err
        paid = len(fake_llm_server.requests)
        assert (
            main(
                ["eval", "--no-canaries", str(data), "--judge", judge, "--metrics", "faithfulness", "--quiet"]
                + ["--no-cache", "--out", str(outs[1]), "--max-unscored", "1"]
            )
            == 0
        )
        capsys.readouterr()
        records = list(read_jsonl(outs[0]))
        readable = json_reads(lines[2])  # json.loads gives up deeper than about 900 before 3.13: no id
        assert [r.id for r in records] == [f"r{i}" if i != 2 or readable else "2" for i in range(6)]
        bad = records[2]
        assert bad.status_of("faithfulness") == "invalid_input"
        if readable:
            assert bad.errors[0].field == where
            assert f"nested at most {MAX_NESTING} levels deep" in bad.errors[0].message
        else:
            assert "nested too deeply to read" in bad.errors[0].message
        assert bad.usage.calls == 0
        assert all(r.scores["faithfulness"] is not None for i, r in enumerate(records) if i != 2)
        assert report.stat().st_size > 0 and outs[1].read_text(encoding="utf-8").count("invalid_input") >= 1
        if judge != "offline":
            assert paid == sum(r.usage.calls for r in records) > 0


def test_evaluate_and_direct_samples_refuse_deep_or_cyclic_meta(
    fake_llm_server, openai_spec: str, tmp_path: Path
) -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    data: list[Any] = [
        row(0, meta={"trace": nested(300)}),
        Sample(id="direct", question=QUESTION, answer=ANSWER, contexts=(CONTEXT,), meta={"x": nested(90)}),
        row(2, meta=loop),
        row(3, meta={"ok": nested(MAX_NESTING - 1)}),
    ]
    results = EvaluationPipeline(
        metrics=[FaithfulnessMetric(llm=openai_spec, cache=False)], canaries=False
    ).run(data)
    assert [r.status_of("faithfulness") for r in results] == ["invalid_input"] * 3 + ["ok"]
    assert [r.errors[0].field for r in results[:3]] == ["meta"] * 3
    assert sum(r.usage.calls for r in results[:3]) == 0
    assert len(fake_llm_server.requests) == results[3].usage.calls > 0
    results.to_jsonl(tmp_path / "out.jsonl")
    results.to_csv(tmp_path / "out.csv")
    with pytest.raises(InvalidInputError, match="field 'meta' must be nested at most 64 levels"):
        Sample.from_fields(answer=ANSWER, meta={"x": nested(100)})


def json_reads(line: str) -> bool:
    """Whether this Python's json module reads ``line`` (3.13 reads 5,000 levels; 3.11 stops near 900)."""
    try:
        json.loads(line)
    except RecursionError:
        return False
    return True
