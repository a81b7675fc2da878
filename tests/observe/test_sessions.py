"""Sessions from traces: one conversation per session, tool spans as calls and results, scores back.

The end-to-end test runs a real LangChain agent (a fake chat model calling a real ``@tool``) under
OpenInference's LangChain instrumentor in its own process (:mod:`tests.observe.agent_app`), reads its
OTLP JSON back with ``ragmetrics eval --traces``, scores the turns with the offline judge and exports
the scores to a loopback OTLP receiver. The GenAI-convention path and hostile sessions use hand-built
OTLP JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from ragmetrics.cli import main  # noqa: E402
from ragmetrics.evaluation import evaluate_sync  # noqa: E402
from ragmetrics.observe import Cursor, select_traces, trace_rows  # noqa: E402
from ragmetrics.observe.phoenix_export import session_annotations, span_annotations  # noqa: E402
from ragmetrics.observe.sessions import session_summaries  # noqa: E402
from ragmetrics.sample import MAX_MESSAGES  # noqa: E402
from tests.observe.receiver import OtlpReceiver  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def agent_traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    pytest.importorskip("openinference.instrumentation.langchain")
    path = tmp_path_factory.mktemp("agent") / "agent.json"
    done = subprocess.run(
        [sys.executable, "-m", "tests.observe.agent_app", str(path), "support-chat-7"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return path, json.loads(done.stdout.strip().splitlines()[-1])


def test_a_langchain_agent_session_is_one_conversation_with_its_tool_results(agent_traces) -> None:
    path, roots = agent_traces
    rows = trace_rows(path)
    assert len(rows) == 1, "two traces of one session: one conversation row"
    (row,) = rows
    assert row.problem is None and row.conversation is not None
    messages = row.conversation["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"] * 2
    assert messages[0]["content"] == "What is the capital of France?"
    assert messages[1]["tool_calls"] == [
        {"id": "call_0", "name": "search_docs", "arguments": {"query": "capital of France"}}
    ]
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "name": "search_docs",
        "content": "Paris is the capital of France.",
    }
    assert messages[3]["content"] == "Paris is the capital of France."
    assert messages[4]["content"] == "Which river flows through it?"
    assert messages[7]["content"] == "The Seine flows through Paris."
    meta = row.conversation["meta"]
    assert meta["session_id"] == "support-chat-7" and meta["session_attribute"] == "session.id"
    assert [meta["message_spans"][k]["span_id"] for k in ("3", "7")] == [r["span_id"] for r in roots]


def test_eval_scores_each_turn_and_exports_to_the_turn_spans_and_the_session(
    agent_traces, tmp_path: Path, monkeypatch, capsys
) -> None:
    path, roots = agent_traces
    out = tmp_path / "scores.jsonl"
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint)
        argv = ["eval", "--traces", str(path), "--metrics", "faithfulness,relevancy", "--judge", "offline"]
        code = main([*argv, "--threshold", "0.5", "--out", str(out), "--export", "otel", "--quiet"])
        assert code == 0, capsys.readouterr()
    records = _records(out)
    assert [r["id"] for r in records] == ["support-chat-7#turn0", "support-chat-7#turn1"]
    first, second = (r["sample"] for r in records)
    assert first["contexts"][0] == "Paris is the capital of France.", (
        "the tool's result is the turn's context"
    )
    assert "The Seine flows through Paris." in second["contexts"]
    assert [s["meta"]["span_id"] for s in (first, second)] == [r["span_id"] for r in roots]
    assert [s["meta"]["trace_id"] for s in (first, second)] == [r["trace_id"] for r in roots]
    assert all(r["scores"]["faithfulness"] == 1.0 for r in records), records
    events = receiver.events
    turns = [e for e in events if "ragmetrics.scope" not in e["attributes"]]
    assert {(e["trace_id"], e["span_id"]) for e in turns} == {(r["trace_id"], r["span_id"]) for r in roots}
    assert len(turns) == 4
    session = {e["attributes"]["gen_ai.evaluation.name"]: e for e in events if e not in turns}
    assert set(session) == {"faithfulness", "relevancy"}
    attributes = session["faithfulness"]["attributes"]
    assert attributes["gen_ai.conversation.id"] == attributes["session.id"] == "support-chat-7"
    assert attributes["ragmetrics.scope"] == "session"
    assert attributes["ragmetrics.turns"] == 2 and attributes["ragmetrics.turns.scored"] == 2
    assert attributes["gen_ai.evaluation.score.value"] == 1.0
    means = [r["scores"]["relevancy"] for r in records]
    assert session["relevancy"]["attributes"]["gen_ai.evaluation.score.value"] == pytest.approx(
        sum(means) / 2
    )


def test_phoenix_annotations_go_to_the_turn_spans_and_the_session(agent_traces) -> None:
    path, roots = agent_traces
    results = evaluate_sync(traces=path, metrics=["faithfulness"], llm="offline", progress=False)
    spans, unlinked = span_annotations(results)
    assert unlinked == 0 and [a["span_id"] for a in spans] == [r["span_id"] for r in roots]
    (session,) = session_annotations(results)
    assert session["session_id"] == "support-chat-7" and session["name"] == "faithfulness"
    assert session["result"] == {"score": 1.0}
    assert session["metadata"] == {"scope": "session", "turns": 2, "scored": 2, "source": "ragmetrics"}


# -- hand-built OTLP JSON: the GenAI conventions, and hostile sessions --------------------------------


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, (dict, list)):
        value = json.dumps(value)
    return {
        "key": key,
        "value": {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value},
    }


def _span(trace: str, span: str, parent: str, start: int, name: str, attributes: dict[str, Any]) -> dict:
    return {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1000),
        "attributes": [_attribute(k, v) for k, v in attributes.items()],
    }


def _write(path: Path, spans: list[dict]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for span in spans:  # one span per line, as a collector flushing often writes them
            handle.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n")
    return path


def _genai_turn(
    trace: str,
    start: int,
    session: str,
    question: str,
    call: dict[str, Any] | None,
    tool: dict[str, Any],
    answer: str,
) -> list[dict]:
    """An invoke_agent root; a chat span calling a tool (when ``call``); the execute_tool span; a chat span
    answering."""
    root = trace[:16]
    ask = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    spans = [
        _span(
            trace,
            root,
            "",
            start,
            "invoke_agent helper",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.conversation.id": session,
            },
        ),
    ]
    if call is not None:
        spans.append(
            _span(
                trace,
                "5" * 14 + trace[:2],
                root,
                start + 10,
                "chat",
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.conversation.id": session,
                    "gen_ai.input.messages": ask,
                    "gen_ai.output.messages": [
                        {"role": "assistant", "parts": [{"type": "tool_call", **call}]}
                    ],
                },
            )
        )
    spans.append(
        _span(
            trace,
            "7" * 14 + trace[:2],
            root,
            start + 20,
            "execute_tool search",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.conversation.id": session,
                **tool,
            },
        )
    )
    spans.append(
        _span(
            trace,
            "8" * 14 + trace[:2],
            root,
            start + 30,
            "chat",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.conversation.id": session,
                "gen_ai.input.messages": ask,
                "gen_ai.output.messages": [
                    {"role": "assistant", "parts": [{"type": "text", "content": answer}]}
                ],
                "gen_ai.response.id": f"resp-{trace[:4]}",
            },
        )
    )
    return spans


PARIS = "Paris is the capital of France."
SEINE = "The Seine flows through Paris."


def test_a_genai_session_reads_execute_tool_spans_in_time_order(tmp_path: Path) -> None:
    tool1 = {"gen_ai.tool.name": "search", "gen_ai.tool.call.id": "c1", "gen_ai.tool.call.result": PARIS}
    tool2 = {  # no chat span recorded this call: the execute_tool span is the call
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "c2",
        "gen_ai.tool.call.arguments": {"q": "river"},
        "gen_ai.tool.call.result": SEINE,
    }
    first = _genai_turn(
        "a1" * 16,
        1_000,
        "conv-9",
        "Capital of France?",
        {"id": "c1", "name": "search", "arguments": {"q": "capital"}},
        tool1,
        PARIS,
    )
    second = _genai_turn("b2" * 16, 5_000, "conv-9", "And its river?", None, tool2, SEINE)
    path = _write(tmp_path / "genai.json", second + first)  # the later turn written first
    rows = trace_rows(path)
    assert len(rows) == 1
    messages = rows[0].conversation["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"] * 2
    assert messages[1]["tool_calls"] == [{"id": "c1", "name": "search", "arguments": {"q": "capital"}}]
    assert messages[5]["tool_calls"] == [{"id": "c2", "name": "search", "arguments": {"q": "river"}}]
    assert messages[6]["content"] == SEINE and messages[6]["tool_call_id"] == "c2"
    meta = rows[0].conversation["meta"]
    assert meta["session_attribute"] == "gen_ai.conversation.id"
    assert meta["message_spans"]["3"] == {
        "trace_id": "a1" * 16,
        "span_id": "a1" * 8,
        "root_name": "invoke_agent helper",
        "start_time": meta["message_spans"]["3"]["start_time"],
        "response_id": "resp-a1a1",
    }
    results = evaluate_sync(traces=path, metrics=["faithfulness"], llm="offline", progress=False)
    assert [r.id for r in results] == ["conv-9#turn0", "conv-9#turn1"]
    assert all(r.ok for r in results), [e.message for r in results for e in r.errors]
    assert results[0].sample.contexts[0] == PARIS
    assert [r.sample.meta["span_id"] for r in results] == ["a1" * 8, "b2" * 8]
    assert results[0].sample.meta["response_id"] == "resp-a1a1"
    assert "message_spans" not in results[0].sample.meta, "each turn gets its own span, not the map"

    # a conversation-level metric scores the session's own record; its session mean is that score
    results = evaluate_sync(
        traces=path, metrics=["faithfulness", "knowledge_retention"], llm="offline", progress=False
    )
    assert [r.id for r in results] == ["conv-9#turn0", "conv-9#turn1", "conv-9"]
    whole = {s["metric"]: s for s in session_summaries(results)}
    assert whole["knowledge_retention"]["mean"] == results[2].scores["knowledge_retention"] is not None
    assert whole["knowledge_retention"]["turns"] == whole["faithfulness"]["turns"] == 2
    assert whole["faithfulness"]["scored"] == 2 and whole["knowledge_retention"]["scored"] == 1


def _plain_trace(trace: str, start: int) -> list[dict]:
    root = _span(trace, trace[:16], "", start, "rag", {"input.value": "Capital?", "output.value": PARIS})
    retriever = _span(
        trace,
        "5" * 14 + trace[:2],
        trace[:16],
        start + 1,
        "retrieve",
        {
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.content": PARIS,
        },
    )
    return [root, retriever]


def test_hostile_sessions_are_invalid_input_naming_the_span_and_the_rest_is_scored(tmp_path: Path) -> None:
    no_result = {"gen_ai.tool.name": "search", "gen_ai.tool.call.id": "c1"}
    bad_arguments = {
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.arguments": "{not json",
        "gen_ai.tool.call.result": PARIS,
    }
    good = {
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.arguments": "{}",
        "gen_ai.tool.call.result": PARIS,
    }
    spans = (
        _genai_turn("c3" * 16, 1_000, "s-no-result", "Capital?", None, no_result, PARIS)
        + _genai_turn("d4" * 16, 2_000, "s-bad-args", "Capital?", None, bad_arguments, PARIS)
        + _genai_turn("e5" * 16, 3_000, "s-good", "Capital?", None, good, PARIS)
        + _plain_trace("f6" * 16, 4_000)
    )
    path = _write(tmp_path / "hostile.json", spans)
    results = evaluate_sync(traces=path, metrics=["faithfulness"], llm="offline", progress=False)
    by_id = {r.id: r for r in results}
    assert set(by_id) == {"s-no-result", "s-bad-args", "s-good#turn0", "f6" * 16}
    for name in ("s-no-result", "s-bad-args"):
        assert by_id[name].status_of("faithfulness") == "invalid_input"
    no_result_message = by_id["s-no-result"].errors[0].message
    assert "session s-no-result" in no_result_message and "77777777777777c3" in no_result_message
    assert "has no result" in no_result_message and "gen_ai.tool.call.result" in no_result_message
    bad = by_id["s-bad-args"].errors[0].message
    assert "gen_ai.tool.call.arguments is not JSON" in bad and "'{not json'" in bad, bad
    assert by_id["s-good#turn0"].ok and by_id["f6" * 16].ok, "the rest of the file is scored"


def test_a_session_of_more_than_max_messages_is_invalid_input(tmp_path: Path) -> None:
    turns = MAX_MESSAGES // 2 + 1  # a user and an assistant message per trace
    path = tmp_path / "long.json"
    with path.open("w", encoding="utf-8") as handle:
        for n in range(turns):
            trace = f"{n:032x}"
            span = _span(
                trace,
                f"{n + 1:016x}",
                "",
                1_000 + n,
                "turn",
                {
                    "session.id": "long",
                    "input.value": f"q{n}",
                    "output.value": f"a{n}",
                },
            )
            handle.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n")
    (record,) = evaluate_sync(traces=path, metrics=["relevancy"], llm="offline", progress=False)
    assert record.id == "long" and record.status_of("relevancy") == "invalid_input"
    message = record.errors[0].message
    assert f"session long (session.id): it holds more than {MAX_MESSAGES:,} messages" in message, message


def test_a_session_is_sampled_and_kept_in_the_cursor_whole(tmp_path: Path) -> None:
    good = {
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.arguments": "{}",
        "gen_ai.tool.call.result": PARIS,
    }
    spans = _genai_turn("a1" * 16, 1_000, "s1", "Capital?", None, good, PARIS) + _genai_turn(
        "b2" * 16, 2_000, "s1", "Again?", None, good, PARIS
    )
    path = _write(tmp_path / "s.json", spans)
    cursor = Cursor(tmp_path / "cursor.json")
    rows = select_traces(trace_rows(path), sample=1.0, cursor=cursor)
    results = evaluate_sync(traces=rows, metrics=["faithfulness"], llm="offline", progress=False)
    assert len(results) == 2
    assert cursor.add(results) == 1 and cursor.scored == {"s1"}
    assert select_traces(trace_rows(path), cursor=cursor) == [], "a scored session is not scored again"


def test_openinference_llm_tool_call_arguments_that_are_not_json_name_the_attribute(tmp_path: Path) -> None:
    trace, root = "ab" * 16, "ab" * 8
    call = "llm.output_messages.0.message.tool_calls.0.tool_call."
    spans = [
        _span(
            trace, root, "", 1_000, "agent", {"session.id": "s", "input.value": "Q?", "output.value": PARIS}
        ),
        _span(
            trace,
            "cd" * 8,
            root,
            1_001,
            "llm",
            {
                "session.id": "s",
                "openinference.span.kind": "LLM",
                f"{call}id": "c1",
                f"{call}function.name": "search",
                f"{call}function.arguments": "query=paris",
            },
        ),
        _span(
            trace,
            "ef" * 8,
            root,
            1_002,
            "search",
            {
                "session.id": "s",
                "openinference.span.kind": "TOOL",
                "tool.name": "search",
                "output.value": PARIS,
            },
        ),
    ]
    odd = _genai_turn("ee" * 16, 9_000, "s-odd", "Q?", None, {"gen_ai.tool.call.result": 42}, PARIS)
    odd_output = {
        "gen_ai.conversation.id": "s-odd",
        "gen_ai.output.messages": ["not a message", {"parts": "x"}],
    }
    odd.append(_span("ee" * 16, "9" * 16, "ee" * 8, 9_001, "chat", odd_output))
    row, other = trace_rows(_write(tmp_path / "oi.json", spans + odd))
    assert other.problem is None, other.problem
    assert other.conversation["messages"][2]["content"] == "42", "odd shapes are read, not a crash"
    assert row.problem is not None and row.conversation is None
    assert f"LLM span 'llm' ({'cd' * 8}): {call}function.arguments is not JSON ('query=paris')" in row.problem


def test_a_turn_with_a_retriever_and_a_tool_has_both_as_evidence(tmp_path: Path) -> None:
    trace, root = "ab" * 16, "ab" * 8
    spans = [
        _span(
            trace, root, "", 1_000, "agent", {"session.id": "s", "input.value": "Q?", "output.value": PARIS}
        ),
        _span(
            trace,
            "cd" * 8,
            root,
            1_001,
            "retrieve",
            {
                "session.id": "s",
                "openinference.span.kind": "RETRIEVER",
                "retrieval.documents.0.document.content": "France's capital is Paris.",
            },
        ),
        _span(
            trace,
            "ef" * 8,
            root,
            1_002,
            "search",
            {
                "session.id": "s",
                "openinference.span.kind": "TOOL",
                "tool.name": "search",
                "input.value": "capital",
                "output.value": PARIS,
            },
        ),
    ]
    (row,) = trace_rows(_write(tmp_path / "both.json", spans))
    messages = row.conversation["messages"]
    assert messages[1]["tool_calls"] == [
        {"id": "ef" * 8, "name": "search", "arguments": {"input": "capital"}}
    ]
    assert messages[-1]["contexts"] == ["France's capital is Paris."]
    (record,) = evaluate_sync(traces=[row], metrics=["faithfulness"], llm="offline", progress=False)
    assert record.ok and {"France's capital is Paris.", PARIS} <= set(record.sample.contexts)
