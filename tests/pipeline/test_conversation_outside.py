"""Conversations against what this project did not write: a judge that only fills the schema, and files
with real-world bytes.

``FakeLLMServer(answer="schema")`` answers every request with schema-valid filler that reads nothing:
no turn and no conversation gets a score (``judge_output_invalid`` where its spans or quotes are not
found, ``judge_untrusted`` where the failed canaries or the judge gate set it aside), with the claim
metrics and with a conversation-level metric alone. Conversation files saved with a UTF-8 byte order
mark, in Latin-1 (``--encoding latin-1``) and with a line that is not JSON are read as written.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import ragmetrics
from ragmetrics.cli import main
from ragmetrics.testing import FakeLLMServer

EXAMPLE = str(resources.files("ragmetrics") / "data" / "example_conversations.jsonl")
METRICS = ["faithfulness", "relevancy", "knowledge_retention", "task_completion"]


def test_a_schema_only_judge_earns_no_score_on_any_turn_or_conversation(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        for metrics in (METRICS, ["knowledge_retention"]):  # with the claim metrics, and alone
            results = ragmetrics.evaluate_sync(EXAMPLE, metrics, llm=spec, progress=False)
            statuses = {(r.id, m): r.status_of(m) for r in results for m in r.scores}
            assert set(statuses.values()) <= {"judge_untrusted", "judge_output_invalid"}, statuses
            assert all(score is None for r in results for score in r.scores.values())
            assert len([r for r in results if "#turn" not in r.id]) == 5
            summary = results.summary()
            assert summary.canaries and not any(c.passed for c in summary.canaries)
        assert srv.calls.total() > 0
    # the gate named the judge from the claim metrics' spans and quotes
    gated = ragmetrics.evaluate_sync(EXAMPLE, METRICS, llm=spec, progress=False)  # from the cache
    assert [h.judge for h in gated.summary().judge_gate] == [spec]


def _lines() -> list[dict]:
    rows = [json.loads(line) for line in Path(EXAMPLE).read_text(encoding="utf-8").splitlines()]
    rows[0]["messages"][1]["content"] = "Où est la tour Eiffel ?"  # not ASCII
    return rows[:2]


def test_conversation_files_with_a_bom_in_latin_1_and_a_broken_line_are_read(tmp_path, capsys):
    rows = _lines()
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes((text + "{not json\n").encode("latin-1"))
    for path, extra in ((bom, []), (latin, ["--encoding", "latin-1"])):
        out = tmp_path / f"{path.stem}.out.jsonl"
        code = main(["eval", str(path), "--judge", "offline", "--out", str(out), "--quiet", *extra])
        records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        ids = [r["id"] for r in records]
        assert ids[:4] == ["eiffel-support#turn0", "eiffel-support#turn1", "eiffel-support#turn2",
                           "warranty-agent#turn0"]  # fmt: skip
        assert records[0]["sample"]["question"] == "Où est la tour Eiffel ?"
        if path is latin:  # the broken line is its own record, and the run says so in its exit code
            assert len(records) == 5 and records[4]["errors"][0]["status"] == "invalid_input"
            assert "line 3" in records[4]["errors"][0]["message"] and code != 0
        else:
            assert len(records) == 4 and code == 0, capsys.readouterr()
