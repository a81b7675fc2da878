"""Hostile label files: each is one usage error naming the file, line and field, before any judge call.

``calibrate`` reads labels as ``eval`` reads a JSONL dataset (encodings, ``MAX_LINE_BYTES``) and checks
each row as eval does (``MAX_NESTING``, field types, lone surrogates); before, a 100,000-deep line and a
file that is not UTF-8 were tracebacks, and a row nested past ``MAX_NESTING`` was scored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics.cli import main
from ragmetrics.pipeline._file_rows import MAX_LINE_BYTES
from ragmetrics.testing import FakeLLMServer

ROW = {
    "question": "Where is the tower?",
    "answer": "The tower is in Paris.",
    "contexts": ["The tower is in Paris."],
    "label": True,
}
GOOD = json.dumps(ROW).encode() + b"\n"
LATIN = json.dumps({**ROW, "answer": "Caf\u00e9 au lait."}, ensure_ascii=False).encode("latin-1") + b"\n"


def _nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


HOSTILE = {
    "a line 100,000 levels deep": (
        b'{"answer": "a", "label": true, "meta": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        "labels.jsonl line 2: nested too deeply to read (a row's values may nest 64 levels, MAX_NESTING)",
    ),
    "a label nested past MAX_NESTING": (
        json.dumps({**ROW, "label": {"faithful": _nested(100)}}).encode() + b"\n",
        "labels.jsonl line 2: field 'label' must be nested at most 64 levels deep (MAX_NESTING)",
    ),
    "meta nested past MAX_NESTING": (
        json.dumps({**ROW, "meta": {"trace": _nested(100)}}).encode() + b"\n",
        "labels.jsonl line 2: field 'meta' must be nested at most 64 levels deep (MAX_NESTING)",
    ),
    "a file that is not UTF-8": (
        LATIN,
        f"labels.jsonl line 2: byte e9 at byte offset {len(GOOD) + LATIN.index(0xE9)} is not valid UTF-8",
    ),
    "a line over MAX_LINE_BYTES": (
        json.dumps({**ROW, "answer": "a" * MAX_LINE_BYTES}).encode() + b"\n",
        f"labels.jsonl line 2: the line is over the limit of {MAX_LINE_BYTES:,} bytes",
    ),
    "a lone surrogate": (
        json.dumps({**ROW, "answer": "Paris \ud800"}).encode() + b"\n",
        "labels.jsonl line 2: field 'answer' must be",
    ),
    "contexts as one string": (
        json.dumps({**ROW, "contexts": "The tower is in Paris."}).encode() + b"\n",
        "labels.jsonl line 2: field 'contexts' must be a list of strings",
    ),
    "an answer over MAX_SPLIT_CHARS (7 MB: 124 s and 2.6 GB with the offline judge before)": (
        json.dumps({**ROW, "answer": "The tower is in Paris. " * 310_000}).encode() + b"\n",
        "labels.jsonl line 2: field 'answer' must be at most 1,000,000 characters (MAX_SPLIT_CHARS)",
    ),
    "no answer": (
        json.dumps({"question": "q?", "contexts": [], "label": True}).encode() + b"\n",
        "labels.jsonl line 2: field 'answer' must be present in every row",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_label_file_is_one_usage_error_before_any_call(
    case: str,
    tmp_path: Path,
    fake_llm_server: FakeLLMServer,
    dummy_keys: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    line, message = HOSTILE[case]
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(GOOD + line)
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    code = main(["calibrate", str(labels), "--judge", judge, "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    assert message in err, err[-2000:]
    assert err.count("\n") == 1 and "Traceback" not in err
    assert len(err) < 2000  # the value is not echoed
    assert fake_llm_server.requests == []  # before any call


def test_labels_in_another_encoding_are_read_with_encoding_or_their_byte_order_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = json.dumps({**ROW, "answer": "Caf\u00e9 au lait is in Paris."}, ensure_ascii=False) + "\n"
    latin, utf16 = tmp_path / "latin.jsonl", tmp_path / "utf16.jsonl"
    latin.write_bytes(row.encode("latin-1"))
    utf16.write_bytes(row.encode("utf-16"))  # with its byte order mark
    for argv in ([str(latin), "--encoding", "latin-1"], [str(utf16)]):
        assert main(["calibrate", *argv, "--judge", "offline", "--no-cache", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["judges"][0]["rows"] == 1
