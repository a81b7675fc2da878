"""Hostile data in and out: markup in the notebook view, odd extra values, stale score columns, deep
meta text, and memory of a stream whose rows carry big extra columns."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ragmetrics
from ragmetrics.pipeline import read_jsonl

ROOT = Path(__file__).resolve().parent.parent.parent


def _exact(sample: ragmetrics.Sample) -> float:
    return float(sample.answer == sample.reference)


def test_markup_from_the_data_is_escaped_in_the_notebook_view() -> None:
    rows = [
        {
            "id": "<img src=x onerror=alert(1)>",
            "question": "<script>alert('q')</script>?",
            "answer": "<b>Python</b> is a compiled language created in 1991.",
            "contexts": ["Python is an interpreted language created in 1991."],
        },
        {"id": "ok", "question": "Q?", "answer": None, "contexts": ["<iframe>"]},  # an error message too
    ]
    html = ragmetrics.evaluate_sync(
        rows, metrics=["faithfulness"], llm="offline", progress=False
    )._repr_html_()
    for raw in ("<script", "<img", "<b>Python", "<iframe"):
        assert raw not in html, raw
    assert "&lt;script&gt;alert(&#x27;q&#x27;)&lt;/script&gt;?" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "1 record(s) carry errors" in html


def test_extra_values_of_any_type_never_stop_an_export(tmp_path: Path) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "Opaque()"

        __str__ = __repr__

    rows = [
        {"answer": "a", "reference": "a", "obj": Opaque(), "nested": {"k": [1, 2]}},
        {"answer": "b", "reference": "a", "obj": Opaque(), "nan": float("nan")},
    ]
    results = ragmetrics.evaluate_sync(rows, metrics=[_exact], progress=False)
    back = list(read_jsonl(results.to_jsonl(tmp_path / "r.jsonl")))
    assert back[0].extra["obj"] == "Opaque()" and back[0].extra["nested"] == {"k": [1, 2]}
    assert back[1].extra["nan"] is None  # pandas' missing value, never a NaN in the output
    text = results.to_csv(tmp_path / "r.csv").read_text(encoding="utf-8")
    assert '"{""k"": [1, 2]}"' in text and "Opaque()" in text
    flat = results.to_jsonl(tmp_path / "rows.jsonl", level="samples").read_text().splitlines()
    assert json.loads(flat[0])["obj"] == "Opaque()" and json.loads(flat[1])["nan"] is None
    pytest.importorskip("pandas")
    assert isinstance(results.to_pandas().loc[0, "obj"], Opaque)


def test_a_stale_score_column_in_the_input_does_not_pass_for_the_new_score() -> None:
    pytest.importorskip("pandas")
    rows = [
        {"answer": "b", "reference": "a", "_exact": 1.0, "_exact_status": "ok", "mean_score": 1.0},
        {"answer": None, "reference": "a", "_exact": 1.0, "_exact_status": "ok"},
    ]
    out = ragmetrics.evaluate_sync(rows, metrics=[_exact], progress=False).to_pandas()
    assert out.loc[0, "_exact"] == 0.0 and out.loc[0, "mean_score"] == 0.0
    assert out.loc[1, "_exact_status"] == "invalid_input"
    assert list(out.columns).count("_exact") == 1


def test_a_meta_text_nested_too_deeply_is_kept_as_text_not_a_crash() -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    rows = [{"answer": "a", "reference": "a", "meta": deep}, {"answer": "a", "reference": "a", "meta": 5}]
    results = ragmetrics.evaluate_sync(rows, metrics=[_exact], progress=False)
    assert [r.ok for r in results] == [True, True]
    assert results[0].sample is not None and results[0].sample.meta == {"meta": deep}
    assert results[1].sample is not None and results[1].sample.meta == {"meta": 5}


def test_a_stream_of_rows_with_big_extra_columns_holds_only_the_rows_in_flight() -> None:
    """20,000 rows each carrying a 64 KiB extra column (1.3 GB in all) under a 900 MB address space."""
    code = """
        import asyncio
        from ragmetrics import EvaluationPipeline

        def exact(sample):
            return float(sample.answer == sample.reference)

        def rows():
            for i in range(20_000):
                yield {"id": i, "answer": "a", "reference": "a", "blob": str(i) * (65_536 // len(str(i)))}

        async def main():
            n = 0
            pipeline = EvaluationPipeline(metrics=[exact], concurrency=8, progress=False)
            async with pipeline.stream(rows()) as run:
                async for record in run:
                    assert record.extra["blob"] and record.exact == 1.0
                    n += 1
            print("done", n)

        asyncio.run(main())
    """

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (900_000_000, 900_000_000))

    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done 20000"
