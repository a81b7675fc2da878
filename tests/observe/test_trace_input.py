"""Traces in, nothing lost silently: documents without text, malformed OTLP lines, repeated span ids."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from ragmetrics.cli import main  # noqa: E402
from ragmetrics.evaluation import evaluate_sync  # noqa: E402
from tests.observe.otel_app import run_app, run_genai_app  # noqa: E402

QUESTIONS = [
    ("What is the capital of France?", "paris", "Paris is the capital of France."),
    ("Which river flows through Rome?", "rome", "The Tiber flows through Rome."),
]
HOW_TO = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"


def _eval(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict], str]:
    """``ragmetrics eval --traces`` in process: exit code, records, stderr."""
    out = tmp_path / "scores.jsonl"
    argv = ["eval", "--traces", str(path), "--judge", "offline", "--metrics", "faithfulness,relevancy"]
    code = main([*argv, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]
    return code, records, err


def _status(record: dict, metric: str) -> str:
    if record["scores"].get(metric) is not None:
        return "ok"
    return next(e["status"] for e in record["errors"] if e.get("metric") in (metric, None))


def _messages(record: dict) -> str:
    return " | ".join(e["message"] for e in record["errors"])


def test_openinference_documents_with_ids_and_scores_only_fail_the_context_metrics_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "traces.json"
    ids = run_app(path, QUESTIONS[:1], content=False) + run_app(path, QUESTIONS[1:])
    code, (bare, whole), err = _eval(path, tmp_path, capsys)
    assert [bare["id"], whole["id"]] == ids
    assert bare["scores"]["faithfulness"] is None, "a correct answer scored 0.0 'ok' against no text"
    assert _status(bare, "faithfulness") == "invalid_input"
    message = _messages(bare)
    assert "retrieval.documents.0.document.content is missing" in message
    assert "it has document.id, document.score" in message and HOW_TO in message
    assert f"trace {ids[0]}: retriever span 'retrieve'" in message
    assert bare["scores"]["relevancy"] is not None, "relevancy needs no contexts: it still scores"
    assert whole["scores"]["faithfulness"] == 1.0
    assert code == 1 and "unscored" in err, "exit 0 said all was well"


def test_genai_documents_as_the_conventions_example_records_them_are_invalid_input_for_faithfulness(
    tmp_path: Path,
) -> None:
    path = tmp_path / "genai.json"
    docs = ["Paris is the capital of France.", "The Seine flows through Paris."]
    run_genai_app(
        path, "What is the capital of France?", "Paris is the capital.", docs, "attributes", content=False
    )
    run_genai_app(path, "What is the capital of France?", "Paris is the capital.", docs, "attributes")
    bare, whole = evaluate_sync(
        traces=path, metrics=["faithfulness", "relevancy"], llm="offline", progress=False
    )
    assert bare.status_of("faithfulness") == "invalid_input" and bare.scores["relevancy"] is not None
    (error,) = [e for e in bare.errors if e.metric == "faithfulness"]
    assert 'gen_ai.retrieval.documents[0] has no "content"; it has id, score' in error.message
    assert HOW_TO in error.message
    assert whole.ok and whole.sample.contexts == tuple(docs)


def _corrupt(line: str, edit: Any) -> str:
    document = json.loads(line)
    edit(document)
    return json.dumps(document)


def _span(document: dict) -> dict:
    return document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]


def test_malformed_otlp_lines_are_statuses_naming_the_line_and_the_rest_is_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "traces.json"
    ids = run_app(path, QUESTIONS * 2)  # one span a line (SimpleSpanProcessor): root, retriever, llm
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 12
    lines[1] = _corrupt(lines[1], lambda d: _span(d).update(startTimeUnixNano=1e400))  # trace 0's retriever
    lines[3] = _corrupt(lines[3], lambda d: _span(d).update(startTimeUnixNano="-5"))  # trace 1's llm
    lines.insert(0, '{"resourceSpans": 5}')
    lines.insert(1, '{"resourceSpans": [{"scopeSpans": 7}]}')
    lines.append(lines[-1])  # trace 3's root exported twice
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, records, _ = _eval(path, tmp_path, capsys)
    by_id = {r["id"]: r for r in records}
    assert len(records) == 6, "four traces and two unreadable lines, each a record"
    assert [r["id"] for r in records[:4]] == ids, "a trace's record is named by its id, scored or not"
    assert by_id[ids[2]]["scores"]["faithfulness"] == 1.0, "the rest of the file is scored"
    for trace, line, what in (
        (ids[0], 4, "resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano is a number (inf)"),
        (ids[1], 6, "startTimeUnixNano is a string ('-5'), not a whole number of nanoseconds"),
    ):
        message = _messages(by_id[trace])
        assert _status(by_id[trace], "relevancy") == "invalid_input", message
        assert (
            f"trace {trace} is incomplete" in message
            and f"traces.json line {line} is not OTLP JSON" in message
        )
        assert what in message
    twice = _messages(by_id[ids[3]])
    span_id = json.loads(lines[-1])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"]
    assert f"span {span_id} appears twice (traces.json line 14 and traces.json line 15)" in twice
    unreadable = " | ".join(_messages(r) for r in records if r["id"] not in ids)
    assert "traces.json line 1 is not OTLP JSON: resourceSpans is a number (5), not a list" in unreadable
    assert "traces.json line 2 is not OTLP JSON: resourceSpans[0].scopeSpans is a number (7), not a list" in (
        unreadable
    )
    assert code in (0, 1)


WRONG = [5, -1, 1e400, True, "text", [], [1], {}, {"a": 1}, None]
"""Values of the wrong type (or range) put at each level of a valid document."""


def _places(document: dict) -> list[tuple[str, Any, str]]:
    """(description, container, key) of every place a wrong value is put."""
    resource = document["resourceSpans"][0]
    scope = resource["scopeSpans"][0]
    span = scope["spans"][0]
    places = [("document", document, "resourceSpans"), ("resourceSpans[0]", document["resourceSpans"], 0)]
    places += [(f"resource.{k}", resource, k) for k in ("resource", "scopeSpans")]
    places += [("resource.attributes", resource["resource"], "attributes")]
    places += [("scopeSpans[0]", resource["scopeSpans"], 0), ("scope.spans", scope, "spans")]
    places += [("spans[0]", scope["spans"], 0)]
    keys = ("traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano", "endTimeUnixNano", "attributes")
    places += [(f"span.{k}", span, k) for k in (*keys, "events")]
    attribute = span["attributes"][0]
    places += [("attribute", span["attributes"], 0), ("attribute.key", attribute, "key")]
    places += [
        ("attribute.value", attribute, "value"),
        ("value.stringValue", attribute["value"], "stringValue"),
    ]
    return places


def test_wrong_types_at_every_level_never_crash_and_every_line_is_accounted_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "source.json"
    (good_id,) = run_app(source, QUESTIONS[:1])
    good = source.read_text(encoding="utf-8").splitlines()
    retriever = json.loads(good[0])  # the first span ended is the retriever
    assert _span(retriever)["name"] == "retrieve"
    _span(retriever)["events"] = [{"name": "e", "attributes": []}]
    lines = []
    for n in range(len(_places(retriever))):
        for value in WRONG:
            document = copy.deepcopy(retriever)
            _, container, key = _places(document)[n]
            container[key] = value
            _span_trace(document, len(lines))
            lines.append(json.dumps(document))
    for broken in (
        "[]",
        "5",
        '"text"',
        "null",
        '{"resourceSpans": {"scopeSpans": []}}',
        '{"resourceSpans": "ab"}',
    ):
        lines.append(broken)
    path = tmp_path / "fuzz.json"
    path.write_text("\n".join(lines + good) + "\n", encoding="utf-8")
    code, records, _ = _eval(path, tmp_path, capsys)
    assert code in (0, 1)
    (scored,) = [r for r in records if r["id"] == good_id]
    assert scored["scores"]["faithfulness"] == 1.0, "the good trace after them is scored"
    for record in records:
        assert record is scored or (record["errors"] and all(e["message"] for e in record["errors"])), record


def _span_trace(document: Any, n: int) -> None:
    """Give the span (when it is still there) a trace id of its own, so each line is its own trace."""
    try:
        span = _span(document)
        if isinstance(span, dict) and isinstance(span.get("traceId"), str):
            span["traceId"] = f"{n + 1:032x}"
    except (KeyError, IndexError, TypeError):
        pass
