"""Production traces in, scores out: a real OpenTelemetry-instrumented app, OTLP JSON, OTLP/HTTP export."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from ragmetrics.cli import main  # noqa: E402
from ragmetrics.evaluation import evaluate_sync  # noqa: E402
from ragmetrics.observe import Cursor, select_traces, trace_rows  # noqa: E402
from ragmetrics.testing import FakeLLMServer  # noqa: E402
from tests.observe.otel_app import GENAI_VARIANTS, run_app, run_genai_app  # noqa: E402
from tests.observe.receiver import OtlpReceiver  # noqa: E402

QUESTIONS = [
    ("What is the capital of France?", "paris", "Paris is the capital of France."),
    ("Which river flows through Rome?", "rome", "The Tiber flows through Rome."),
    ("Which river flows through Paris?", "paris", "The Seine flows through Paris."),
]


@pytest.fixture
def traces(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "traces.json"
    return path, run_app(path, QUESTIONS)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_trace_becomes_a_sample_with_its_retrieved_contexts_in_order(traces) -> None:
    path, ids = traces
    rows = trace_rows(path)
    assert [r.values["id"] for r in rows] == ids
    first = rows[0].values
    assert first["question"] == "What is the capital of France?"
    assert first["answer"] == "Paris is the capital of France."
    assert first["contexts"] == ["Paris is the capital of France.", "The Seine flows through Paris."]
    assert first["meta"]["trace_id"] == ids[0] and len(first["meta"]["span_id"]) == 16
    assert first["meta"]["attributes"]["service.name"] == "rag-app"
    assert [r.values["meta"]["response_id"] for r in rows] == ["chatcmpl-0", "chatcmpl-1", "chatcmpl-2"]


@pytest.mark.parametrize("variant", GENAI_VARIANTS)
def test_a_genai_conventions_trace_gives_its_question_answer_and_documents(
    tmp_path: Path, variant: str
) -> None:
    path = tmp_path / "genai.json"
    docs = ["Paris is the capital of France.", "The Seine flows through Paris."]
    trace_id = run_genai_app(path, "What is the capital of France?", "Paris is the capital.", docs, variant)
    (row,) = trace_rows(path)
    assert row.problem is None, row.problem
    assert row.values["id"] == trace_id
    assert row.values["question"] == "What is the capital of France?"  # the chat's last user message
    assert row.values["answer"] == "Paris is the capital."
    assert row.values["contexts"] == docs


def test_structured_genai_messages_on_an_event_are_read(tmp_path: Path) -> None:
    """Messages as structured values (an OTLP kvlist, as a logs-capable SDK writes them), by hand."""

    def text(value: str) -> dict:
        return {"stringValue": value}

    def kv(**fields: dict) -> dict:
        return {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in fields.items()]}}

    def message(role: str, content: str) -> dict:
        part = kv(type=text("text"), content=text(content))
        return kv(role=text(role), parts={"arrayValue": {"values": [part]}})

    tid, root, chat, docs = "ab" * 16, "01" * 8, "02" * 8, "03" * 8
    spans = [
        {"traceId": tid, "spanId": root, "name": "agent", "startTimeUnixNano": "1"},
        {
            "traceId": tid,
            "spanId": docs,
            "parentSpanId": root,
            "name": "retrieval",
            "startTimeUnixNano": "2",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": text("retrieval")},
                {"key": "gen_ai.retrieval.documents", "value": text(json.dumps(["Rome is in Italy."]))},
            ],
        },
        {
            "traceId": tid,
            "spanId": chat,
            "parentSpanId": root,
            "name": "chat",
            "startTimeUnixNano": "3",
            "events": [
                {
                    "name": "gen_ai.client.inference.operation.details",
                    "attributes": [
                        {
                            "key": "gen_ai.input.messages",
                            "value": {"arrayValue": {"values": [message("user", "Where is Rome?")]}},
                        },
                        {
                            "key": "gen_ai.output.messages",
                            "value": {"arrayValue": {"values": [message("assistant", "In Italy.")]}},
                        },
                    ],
                }
            ],
        },
    ]
    path = tmp_path / "structured.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    (row,) = trace_rows(path)
    assert row.problem is None, row.problem
    assert (row.values["question"], row.values["answer"]) == ("Where is Rome?", "In Italy.")
    assert row.values["contexts"] == ["Rome is in Italy."]


def test_eval_traces_scores_them_through_the_fake_judge_and_exports_linked_events(
    traces, fake_llm_server: FakeLLMServer, dummy_keys: None, tmp_path: Path, monkeypatch, capsys
) -> None:
    path, ids = traces
    out = tmp_path / "scores.jsonl"
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint)
        argv = ["eval", "--traces", str(path), "--metrics", "faithfulness,relevancy", "--judge", judge]
        code = main([*argv, "--threshold", "0.5", "--out", str(out), "--export", "otel", "--quiet"])
        assert code == 0, capsys.readouterr()
    records = _records(out)
    assert [r["id"] for r in records] == ids
    assert all(r["scores"]["faithfulness"] == 1.0 for r in records)
    events = receiver.events
    assert len(events) == 2 * len(ids)
    assert {e["event_name"] for e in events} == {"gen_ai.evaluation.result"}
    assert all(e["schema_url"].endswith("/1.38.0") for e in events)
    by_trace = {
        e["trace_id"]: e for e in events if e["attributes"]["gen_ai.evaluation.name"] == "faithfulness"
    }
    assert set(by_trace) == set(ids)
    event = by_trace[ids[0]]
    assert event["span_id"] == records[0]["sample"]["meta"]["span_id"]
    assert event["attributes"]["gen_ai.evaluation.score.value"] == 1.0
    assert event["attributes"]["gen_ai.evaluation.score.label"] == "pass"
    assert event["attributes"]["ragmetrics.status"] == "ok"
    assert event["attributes"]["gen_ai.response.id"] == "chatcmpl-0", "the evaluated completion, named"


def test_a_refused_export_exits_1_after_writing_the_scores(
    traces, tmp_path: Path, monkeypatch, capsys
) -> None:
    path, _ = traces
    out = tmp_path / "scores.jsonl"
    with OtlpReceiver(status=400) as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint)
        argv = ["eval", "--traces", str(path), "--judge", "offline", "--metrics", "faithfulness", "--quiet"]
        code = main([*argv, "--out", str(out), "--export", "otel"])
    assert code == 1
    assert "were not accepted" in capsys.readouterr().err
    assert len(_records(out)) == 3


def test_incremental_mode_pays_only_for_new_traces(
    tmp_path: Path, fake_llm_server: FakeLLMServer, dummy_keys: None, capsys
) -> None:
    path = tmp_path / "traces.json"
    cursor = tmp_path / "cursor.json"
    run_app(path, QUESTIONS[:2])
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    argv = ["eval", "--traces", str(path), "--metrics", "faithfulness", "--judge", judge, "--no-cache"]
    argv += ["--incremental", str(cursor), "--quiet"]
    assert main(argv) == 0
    first = len(fake_llm_server.requests)
    assert first > 0 and len(json.loads(cursor.read_text())["scored"]) == 2
    assert main(argv) == 0  # nothing new: no call, exit 0
    assert len(fake_llm_server.requests) == first
    assert "no new traces" in capsys.readouterr().out
    run_app(path, QUESTIONS[2:])  # the app exports one more trace to the same file
    assert main(argv) == 0
    canaries = 2  # each run's known-answer probes (--no-cache: paid again), none when nothing is new
    assert len(fake_llm_server.requests) == first + (first - canaries) // 2 + canaries
    assert len(json.loads(cursor.read_text())["scored"]) == 3


def test_sampling_is_seeded_per_trace_and_filters_hold(tmp_path: Path) -> None:
    path = tmp_path / "traces.json"
    run_app(path, QUESTIONS * 40)
    rows = trace_rows(path)
    half = select_traces(rows, sample=0.5, seed=7)
    again = select_traces(rows, sample=0.5, seed=7)
    other = select_traces(rows, sample=0.5, seed=8)
    assert [r.values["id"] for r in half] == [r.values["id"] for r in again]
    assert [r.values["id"] for r in half] != [r.values["id"] for r in other]
    assert 30 < len(half) < 90 and [r.index for r in half] == list(range(len(half)))
    # a trace keeps its decision when the file grows (the hash is of the id, not the position)
    kept = {r.values["id"] for r in half}
    assert {r.values["id"] for r in select_traces(rows[:50], sample=0.5, seed=7)} <= kept
    starts = sorted(r.values["meta"]["start_time_unix_nano"] for r in rows)
    window = select_traces(rows, since=starts[10], until=starts[20])
    assert len(window) == 10
    assert select_traces(rows, where={"root_name": "rag-query"}) and not select_traces(
        rows, where={"service.name": "other-app"}
    )
    assert len(select_traces(rows, where={"service.name": "rag-app"})) == len(rows)


def test_a_filter_that_leaves_no_trace_says_which_one(traces, capsys) -> None:
    path, _ = traces
    argv = ["eval", "--traces", str(path), "--judge", "offline"]
    assert main([*argv, "--where", "service.name=other-app"]) == 2
    assert "none of its 3 traces is left after --sample/--since/--until/--where" in capsys.readouterr().err
    assert main([*argv, "--where", "deployment=prod"]) == 2
    err = capsys.readouterr().err
    assert "--where deployment: none of its 3 traces has that key" in err and "Phoenix" not in err


def test_a_trace_without_a_retriever_span_is_invalid_input_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "traces.json"
    run_app(path, QUESTIONS[:1], retriever=False)
    run_app(path, QUESTIONS[1:2])
    results = evaluate_sync(traces=path, metrics=["faithfulness", "relevancy"], llm="offline", progress=False)
    without, with_retriever = results
    assert without.status_of("faithfulness") == "invalid_input" and without.scores["faithfulness"] is None
    assert "no retriever span" in without.errors[0].message
    assert with_retriever.ok


def test_hostile_traces_give_statuses_per_trace_and_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "traces.json"
    run_app(path, QUESTIONS)
    good = path.read_bytes()

    def span(trace: str, attributes: dict) -> bytes:
        attrs = [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]
        doc = {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {"spans": [{"traceId": trace, "spanId": "ab" * 8, "name": "q", "attributes": attrs}]}
                    ]
                }
            ]
        }
        return json.dumps(doc).encode() + b"\n"

    hostile = (
        b"\xff\xfe not utf-8\n"
        + b"{not json\n"
        + span("11" * 16, {"input.value": "q?"})  # no answer anywhere
        + span("22" * 16, {"input.value": "q?", "output.value": "x" * 1_000_001})  # huge attribute
        + b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5, "attributes": [{"key": 1}]}]}]}]}\n'
        + b"[" * 100_000
        + b"\n"
    )
    path.write_bytes(hostile + good)
    results = evaluate_sync(traces=path, metrics=["faithfulness"], llm="offline", progress=False)
    statuses = [r.status_of("faithfulness") for r in results]
    assert statuses.count("ok") == 3
    messages = " | ".join(e.message for r in results for e in r.errors)
    for expected in ("not UTF-8", "not OTLP JSON", "no answer found", "over 1,000,000 characters", "nested"):
        assert expected in messages, messages
    assert "invalid_input" in statuses


def test_a_hundred_thousand_spans_are_read_per_trace(tmp_path: Path) -> None:
    path = tmp_path / "many.json"
    with path.open("w", encoding="utf-8") as handle:
        for t in range(1000):  # 1,000 traces of 100 spans: a root, a retriever, 98 children
            spans = [
                {
                    "traceId": f"{t:032x}",
                    "spanId": f"{t:08x}{0:08x}",
                    "name": "root",
                    "startTimeUnixNano": str(t),
                    "attributes": [
                        {"key": "input.value", "value": {"stringValue": f"question {t}?"}},
                        {"key": "output.value", "value": {"stringValue": f"answer {t}."}},
                    ],
                },
                {
                    "traceId": f"{t:032x}",
                    "spanId": f"{t:08x}{1:08x}",
                    "parentSpanId": f"{t:08x}{0:08x}",
                    "attributes": [
                        {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
                        {
                            "key": "retrieval.documents.0.document.content",
                            "value": {"stringValue": f"answer {t}."},
                        },
                    ],
                },
            ] + [
                {"traceId": f"{t:032x}", "spanId": f"{t:08x}{i:08x}", "parentSpanId": f"{t:08x}{0:08x}"}
                for i in range(2, 100)
            ]
            handle.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    rows = trace_rows(path)
    assert len(rows) == 1000 and all(r.problem is None for r in rows)
    assert rows[999].values["contexts"] == ["answer 999."] and rows[999].values["question"] == "question 999?"


def test_a_damaged_cursor_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    cursor = tmp_path / "cursor.json"
    cursor.write_text("{junk", encoding="utf-8")
    from ragmetrics.errors import ConfigError

    with pytest.raises(ConfigError, match="not a ragmetrics trace cursor"):
        Cursor(cursor)


def test_the_docs_python_block_samples_scores_exports_and_keeps_the_cursor_as_written(
    tmp_path: Path, fake_llm_server: FakeLLMServer, dummy_keys: None, monkeypatch
) -> None:
    text = (Path(__file__).parents[2] / "docs" / "traces.md").read_text(encoding="utf-8")
    section = text.split("## Production traces: OpenTelemetry in, scores out", 1)[1]
    section = section.split("### From production traces to scores", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    ids = run_app(tmp_path / "traces.json", QUESTIONS * 40)  # 120 traces, of which --sample 0.1 keeps some
    monkeypatch.chdir(tmp_path)
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint)
        scope: dict = {}
        exec(compile(block.replace("openai:gpt-4o-mini", judge), "docs/traces.md", "exec"), scope)
    results = scope["results"]
    scored = [r.sample.id for r in results]
    assert 0 < len(scored) < len(ids) and set(scored) <= set(ids)
    assert all(r.scores["faithfulness"] == 1.0 for r in results)
    events = receiver.events
    assert sorted(e["trace_id"] for e in events) == sorted(scored), "one linked event per result"
    assert {e["attributes"]["gen_ai.evaluation.name"] for e in events} == {"faithfulness"}
    assert sorted(json.loads((tmp_path / ".ragmetrics/cursor.json").read_text())["scored"]) == sorted(scored)
