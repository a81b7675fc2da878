"""Hostile data files and text: bad bytes, BOMs, UTF-16, huge cells, broken quoting, YAML bombs, surrogates.

Every file is written by the test with the exact bytes it is about, then read through ``ragmetrics
eval`` / ``estimate`` (in-process CLI) and the Python API. Probes that could eat memory run in a
subprocess under an address-space limit, so a regression fails the test instead of the machine.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from ragmetrics import FaithfulnessMetric
from ragmetrics.cli.app import main
from ragmetrics.errors import ConfigError, InvalidInputError
from ragmetrics.pipeline import Dataset, EvaluationPipeline, read_jsonl
from ragmetrics.pipeline.dataset import to_sample
from ragmetrics.sample import Sample

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."
CONTEXT = "Paris is the capital and largest city of France."
ROOT = Path(__file__).resolve().parents[2]


def rows(n: int = 4) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "question": QUESTION, "answer": ANSWER, "contexts": [CONTEXT]} for i in range(n)]


def jsonl_bytes(items: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in items)


def csv_text(items: list[dict[str, Any]], answer: str = ANSWER) -> str:
    lines = ["id,question,answer,contexts"]
    lines += [f'{r["id"]},{r["question"]},{answer},"[""{CONTEXT}""]"' for r in items]
    return "\r\n".join(lines) + "\r\n"


def eval_records(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str, exit_code: int = 0
) -> list[Any]:
    """``ragmetrics eval PATH --out`` in-process on the offline judge; the records it wrote."""
    out = tmp_path / "out.jsonl"
    code = main(
        [
            "eval",
            str(path),
            "--judge",
            "offline",
            "--metrics",
            "faithfulness",
            "--quiet",
            "--out",
            str(out),
            "--max-unscored",  # bad rows are unscored: allowed, these tests read the records
            "100%",
            *extra,
        ]
    )
    captured = capsys.readouterr()
    assert code == exit_code, captured.err
    assert "Traceback" not in captured.err
    return list(read_jsonl(out))


def estimate(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code = main(["estimate", str(path), "--judge", "offline", "--metrics", "faithfulness", "--json", *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def run_limited(
    code: str, *, memory_bytes: int = 1_000_000_000, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter whose address space is capped at ``memory_bytes``."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
        env=env,
        cwd=ROOT,
    )


# -- item 6: files that are not clean UTF-8 --------------------------------------------------------


@pytest.fixture
def latin1_jsonl(tmp_path: Path) -> tuple[Path, int]:
    """Four rows, row 1 (the second) with one Latin-1 byte; returns the file and that byte's offset."""
    items = rows()
    items[1]["answer"] = "Paris is the capital of France. Cafe."
    data = jsonl_bytes(items).replace(b"Cafe.", b"Caf\xe9.")  # é as Latin-1 writes it
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(data)
    return path, data.index(b"\xe9")


def test_a_latin1_byte_in_jsonl_row_2_of_4_is_that_rows_error_naming_the_byte_offset(
    latin1_jsonl: tuple[Path, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, offset = latin1_jsonl
    records = eval_records(path, tmp_path, capsys)
    assert [r.index for r in records] == [0, 1, 2, 3]
    assert [r.id for r in records if r.errors == []] == ["r0", "r2", "r3"]
    assert all(records[i].scores["faithfulness"] is not None for i in (0, 2, 3))
    bad = records[1]
    assert bad.scores["faithfulness"] is None and bad.status_of("faithfulness") == "invalid_input"
    error = bad.errors[0]
    assert error.row == 1 and error.status == "invalid_input"
    assert f"byte e9 at byte offset {offset} is not valid UTF-8" in error.message
    assert "line 2 of" in error.message and "--encoding" in error.message


def test_the_latin1_jsonl_through_estimate_and_the_python_api(
    latin1_jsonl: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    path, offset = latin1_jsonl
    est = estimate(path, capsys)
    assert est["samples"] == 3 and est["invalid_rows"] == 1
    results = EvaluationPipeline(metrics=[FaithfulnessMetric(llm="offline")]).run(str(path))
    assert [r.errors != [] for r in results] == [False, True, False, False]
    assert f"byte offset {offset}" in results[1].errors[0].message
    # naming the encoding reads the row: é is one byte in Latin-1
    ds = Dataset(path, encoding="latin-1")
    assert "Café" in to_sample(list(ds)[1]).answer


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_files_with_a_bom_are_decoded(
    codec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = rows()
    items[2]["answer"] = "Paris — la capitale de la France, 東京 non."
    text = jsonl_bytes(items).decode("utf-8")
    raw = text.encode(codec)
    if codec == "utf-16-be":
        raw = b"\xfe\xff" + raw  # an explicit big-endian byte order mark
    path = tmp_path / "wide.jsonl"
    path.write_bytes(raw)
    records = eval_records(path, tmp_path, capsys)
    assert [r.id for r in records] == ["r0", "r1", "r2", "r3"]
    assert all(r.errors == [] for r in records)
    assert records[2].sample is not None and records[2].sample.answer == items[2]["answer"]
    assert estimate(path, capsys)["samples"] == 4


def test_a_utf8_bom_keeps_the_first_jsonl_row_and_the_csv_id_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + jsonl_bytes(rows()))
    records = eval_records(jsonl, tmp_path, capsys)
    assert [r.id for r in records] == ["r0", "r1", "r2", "r3"] and all(not r.errors for r in records)

    table = tmp_path / "bom.csv"
    table.write_bytes(b"\xef\xbb\xbf" + csv_text(rows()).encode("utf-8"))
    assert Dataset(table).columns["id"] == "id"
    records = eval_records(table, tmp_path, capsys)
    assert [r.id for r in records] == ["r0", "r1", "r2", "r3"] and all(not r.errors for r in records)
    assert estimate(table, capsys)["samples"] == 4


def test_a_latin1_csv_gives_an_error_per_row_naming_its_byte_offset_and_reads_with_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latin1.csv"
    data = csv_text(rows(), answer="Paris est la capitale de la France ça va.").encode("latin-1")
    path.write_bytes(data)
    offsets = [i for i, b in enumerate(data) if b == 0xE7]
    assert len(offsets) == 4
    records = eval_records(path, tmp_path, capsys, exit_code=1)  # nothing scored: the gate fails the run
    assert len(records) == 4 and all(r.status_of("faithfulness") == "invalid_input" for r in records)
    for record, offset in zip(records, offsets, strict=True):
        assert record.errors[0].row == record.index
        assert f"byte e7 at byte offset {offset} is not valid UTF-8" in record.errors[0].message
        assert "--encoding" in record.errors[0].message
    assert estimate(path, capsys)["invalid_rows"] == 4

    records = eval_records(path, tmp_path, capsys, "--encoding", "latin-1")
    assert [r.id for r in records] == ["r0", "r1", "r2", "r3"] and all(not r.errors for r in records)
    assert records[0].sample is not None and "ça va" in records[0].sample.answer
    assert estimate(path, capsys, "--encoding", "latin-1")["samples"] == 4


def test_a_header_that_cannot_be_decoded_or_an_unknown_encoding_is_one_usage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "header.csv"
    path.write_bytes("id,quéstion,answer\nr0,Q?,A.\n".encode("latin-1"))
    assert main(["eval", str(path), "--judge", "offline", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert (
        "cannot read the header row" in err and "byte offset 5" in err and len(err.strip().splitlines()) == 1
    )
    assert main(["estimate", str(path), "--judge", "offline", "--encoding", "no-such-codec"]) == 2
    assert "unknown text encoding 'no-such-codec'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="files only"):
        Dataset(rows(), encoding="latin-1")


def test_old_mac_line_endings_still_read_and_a_latin1_json_file_is_one_usage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mac = tmp_path / "mac.csv"
    mac.write_bytes(b'id,answer,contexts\rr0,"two\rlines",ctx\rr1,One.,ctx\r')
    assert [(r.id, r.answer) for r in map(to_sample, Dataset(mac))] == [("r0", "two\rlines"), ("r1", "One.")]
    single = tmp_path / "latin1.json"
    single.write_bytes(
        json.dumps([{"answer": "Café", "reference": "Café"}], ensure_ascii=False).encode("latin-1")
    )
    assert main(["eval", str(single), "--judge", "offline", "--quiet"]) == 2
    assert "byte e9 at byte offset 16 is not valid UTF-8" in capsys.readouterr().err
    assert main(["eval", str(single), "--metrics", "exact_match", "--quiet", "--encoding", "latin-1"]) == 0


def test_a_200_kb_csv_cell_is_read_whole_and_the_global_field_limit_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = "Paris is the capital of France. " * 6250  # 200,000 characters
    path = tmp_path / "big.csv"
    path.write_text(f"id,answer,contexts\nr0,{big},{CONTEXT}\nr1,{ANSWER},{CONTEXT}\n")
    before = csv.field_size_limit()
    csv.field_size_limit(1000)  # someone else's setting, lower than the default
    try:
        ds = Dataset(path)
        iterator = ds.rows()
        first = next(iterator)
        assert csv.field_size_limit() == 1000, "the limit must be restored between records"
        assert to_sample(first).answer == big
        assert [to_sample(r).id for r in iterator] == ["r1"]
    finally:
        csv.field_size_limit(before)
    records = eval_records(path, tmp_path, capsys)
    assert records[0].sample is not None and len(records[0].sample.answer) == 200_000
    assert [r.id for r in records] == ["r0", "r1"] and all(not r.errors for r in records)
    assert csv.field_size_limit() == before


def test_an_unterminated_quote_is_an_error_on_its_row_not_a_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "quote.csv"
    lines = [
        "id,question,answer,contexts",
        f'r0,{QUESTION},"Paris is the capital of France.,{CONTEXT}',
        *(f"r{i},{QUESTION},Answer {i}.,{CONTEXT}" for i in (1, 2, 3)),
    ]
    path.write_text("\n".join(lines) + "\n")
    records = eval_records(path, tmp_path, capsys)
    assert len(records) == 4
    assert records[0].errors[0].row == 0
    assert "a quoted cell opened on line 2 is never closed" in records[0].errors[0].message
    assert [r.id for r in records[1:]] == ["r1", "r2", "r3"]
    assert [r.sample.answer for r in records[1:] if r.sample] == ["Answer 1.", "Answer 2.", "Answer 3."]
    est = estimate(path, capsys)
    assert est["samples"] == 3 and est["invalid_rows"] == 1


def test_a_quote_closed_rows_later_or_a_ragged_row_is_an_error_and_the_rest_are_read(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text(
        "id,answer,contexts\n"
        'r0,"opened here,ctx\n'
        "r1,One.,ctx\n"
        'r2,"closed here",ctx,extra"\n'
        "r3,Three.,ctx,surplus\n"
        "r4,Four.,ctx\n"
    )
    got = [r.values["id"] if isinstance(r.values, dict) else r.problem for r in Dataset(path)]
    assert "line 2" in str(got[0]) and "does not parse" in str(got[0])
    assert got[1] == "r1"
    assert "line 4" in str(got[2])
    assert "line 5 has 4 cells, the header has 3 columns" in str(got[3])
    assert got[4] == "r4"
    assert Dataset(path).total() == len(got) == 5


def test_a_stray_quote_on_every_line_stays_linear(tmp_path: Path) -> None:
    path = tmp_path / "quotes.csv"
    n = 20_000
    path.write_text("id,answer\n" + "".join(f'r{i},"open {i}\n' for i in range(n)))
    started = time.perf_counter()
    got = list(Dataset(path))
    assert time.perf_counter() - started < 30.0, "re-parsing the swallowed lines must not be quadratic"
    assert len(got) == n and all(r.values is None for r in got)
    assert all(f"line {r.index + 2} of" in (r.problem or "") for r in got), "each row's error names its line"


def test_a_line_over_the_limit_is_skipped_without_holding_it_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    with path.open("wb") as fh:
        fh.write(jsonl_bytes(rows(1)))
        fh.write(b'{"answer": "' + b"a" * (33 * 1024 * 1024) + b'"}\n')
        fh.write(jsonl_bytes(rows(1)))
    proc = run_limited(
        f"""
        from ragmetrics.pipeline import Dataset
        rows = list(Dataset({str(path)!r}))
        print([r.problem or r.values["id"] for r in rows])
        """,
        memory_bytes=600_000_000,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "r0" in proc.stdout and "the line is over the limit of 33,554,432 bytes" in proc.stdout


# -- item 5: YAML billion laughs --------------------------------------------------------------------


def test_a_yaml_alias_bomb_is_refused_naming_the_file_under_a_memory_limit(tmp_path: Path) -> None:
    suite = tmp_path / "bomb.yaml"
    levels = "".join(f"      k{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9))
    suite.write_text(
        "cases:\n  - id: bomb\n    input: hi\n    output: '{}'\n    expected:\n"
        "      k0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        f"{levels}    evaluators: [json_match]\n"
    )
    assert suite.stat().st_size < 1024
    proc = run_limited(
        f"""
        import asyncio
        from ragmetrics.errors import ConfigError
        from ragmetrics.regression.suite import Suite, run_suite
        try:
            suite = Suite.from_file({str(suite)!r})
        except ConfigError as exc:
            print("REFUSED", exc)
        else:
            print("LOADED", asyncio.run(run_suite(suite)))
        """,
        memory_bytes=1_000_000_000,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("REFUSED"), proc.stdout[:500]
    assert str(suite) in proc.stdout and "aliases expand" in proc.stdout and "10,000" in proc.stdout


def test_ordinary_yaml_aliases_still_work_and_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    from ragmetrics.regression.suite import Suite

    ok = tmp_path / "ok.yaml"
    ok.write_text(
        "cases:\n"
        "  - {id: a, input: hi, output: Paris, expected: Paris, evaluators: &ev [exact_match, contains]}\n"
        "  - {id: b, input: hi, output: Paris, expected: Paris, evaluators: *ev}\n"
    )
    assert [len(c.evaluators) for c in Suite.from_file(ok).cases] == [2, 2]
    loop = tmp_path / "loop.yaml"
    loop.write_text(
        "cases:\n  - {id: a, input: hi, output: x, expected: &a [*a], evaluators: [exact_match]}\n"
    )
    with pytest.raises(ConfigError, match=r"loop\.yaml: a YAML alias refers to a value that contains it"):
        Suite.from_file(loop)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(
        "cases:\n  - {id: a, input: café, output: x, expected: x, evaluators: [exact_match]}\n".encode(
            "latin-1"
        )
    )
    with pytest.raises(ConfigError, match=r"latin\.yaml: byte 0xe9 at byte offset \d+ is not valid UTF-8"):
        Suite.from_file(latin)


# -- item 7: a lone surrogate ----------------------------------------------------------------------

SURROGATE_ANSWER = "Paris \ud800 is big."


def test_a_lone_surrogate_is_invalid_input_naming_field_and_position(
    fake_llm_server, openai_spec: str
) -> None:
    metric = FaithfulnessMetric(llm=openai_spec)
    with pytest.raises(InvalidInputError, match=r"field 'answer'.*lone surrogate U\+D800 at character 6"):
        metric.evaluate_sync(question=QUESTION, answer=SURROGATE_ANSWER, contexts=[CONTEXT])
    with pytest.raises(InvalidInputError, match=r"field 'contexts\[1\]'"):
        Sample.from_fields(answer=ANSWER, contexts=[CONTEXT, "x\udfff"])
    assert fake_llm_server.requests == []

    data = [
        {"id": "bad", "question": QUESTION, "answer": SURROGATE_ANSWER, "contexts": [CONTEXT]},
        Sample(id="direct", question=QUESTION, answer=ANSWER, contexts=(CONTEXT, "\udc80")),
        {"id": "good", "question": QUESTION, "answer": ANSWER, "contexts": [CONTEXT]},
    ]
    results = EvaluationPipeline(metrics=[FaithfulnessMetric(llm=openai_spec)], canaries=False).run(data)
    assert [r.status_of("faithfulness") for r in results] == ["invalid_input", "invalid_input", "ok"]
    assert results[0].errors[0].field == "answer" and "character 6" in results[0].errors[0].message
    assert results[1].errors[0].field == "contexts[1]"
    assert "\ud800" not in results[0].errors[0].message, "the message shows the code point escaped"
    assert results[0].usage.calls == results[1].usage.calls == 0, "nothing invalid reaches the wire"
    assert len(fake_llm_server.requests) == results[2].usage.calls > 0


def test_out_writes_records_holding_lone_surrogates(
    fake_llm_server, openai_spec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "surrogate.jsonl"
    path.write_text(
        json.dumps(
            {"id": "bad\udc80", "question": QUESTION, "answer": SURROGATE_ANSWER, "contexts": [CONTEXT]}
        )
        + "\n"
        + json.dumps(
            {
                "id": "good",
                "question": QUESTION,
                "answer": ANSWER,
                "contexts": [CONTEXT],
                "meta": {"k": "\udcff"},
            }
        )
        + "\n",
        encoding="ascii",  # json.dumps wrote the surrogates as \u escapes
    )
    for suffix in (".jsonl", ".csv"):
        out = tmp_path / f"records{suffix}"
        report = tmp_path / "report.html"
        code = main(
            [
                "eval",
                str(path),
                "--judge",
                openai_spec,
                "--metrics",
                "faithfulness",
                "--out",
                str(out),
                "--report",
                str(report),
            ]
        )
        captured = capsys.readouterr()
        assert code == 1, captured.err  # the bad row is unscored: the gate says so, the files are written
        assert "1 of 2 samples scored: invalid_input 1" in captured.err
        assert out.stat().st_size > 0 and report.stat().st_size > 0
    records = list(read_jsonl(tmp_path / "records.jsonl"))
    assert [r.id for r in records] == ["bad\udc80", "good"], "JSONL keeps the text as it was"
    assert records[0].status_of("faithfulness") == "invalid_input"
    assert records[1].scores["faithfulness"] is not None and records[1].sample is not None
    assert records[1].sample.meta == {"k": "\udcff"}
    table = (tmp_path / "records.csv").read_text(encoding="utf-8")
    assert "bad\\udc80" in table and "invalid_input" in table
