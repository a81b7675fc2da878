"""Traces in from Phoenix, scores out to Phoenix: a real Phoenix server on loopback, a real LangChain app
instrumented with OpenInference's LangChain instrumentor sending its spans to it over OTLP/HTTP.

The Phoenix server runs from its own virtual environment (``arize-phoenix`` pins a jiter that instructor's
cap excludes), named by ``RAGMETRICS_PHOENIX_PYTHON`` (that environment's python, or a script that runs
it); without it these tests are skipped. ``RAGMETRICS_PHOENIX_WAIT=SECONDS`` waits that long for the
python to appear (``.ci/run`` builds the environment in the background while the suite runs) and fails,
not skips, when it does not. The app runs as a subprocess (the instrumentor patches LangChain
process-wide); ragmetrics reads the spans back through ``arize-phoenix-client``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli import main
from ragmetrics.errors import ConfigError
from ragmetrics.evaluation import evaluate_sync
from ragmetrics.observe import trace_rows
from ragmetrics.testing import FakeLLMServer
from tests.observe.servers import free_port, start_server

pytestmark = [pytest.mark.once, pytest.mark.xdist_group("phoenix")]  # one server per run, not per worker
ROOT = Path(__file__).resolve().parents[2]


def start_phoenix_server(
    python: str, root: Path, timeout_s: float = 300.0
) -> tuple[subprocess.Popen[bytes], str, float]:
    """``phoenix serve`` on loopback (SQLite in ``root``); the process, its URL, seconds to /healthz."""
    exe = Path(python).with_name("phoenix")
    command = [str(exe), "serve"] if exe.exists() else [python, "-m", "phoenix.server.main", "serve"]
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(root),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    env.pop("PYTHONPATH", None)
    url = f"http://127.0.0.1:{port}"
    process, took = start_server("phoenix", command, root, env, f"{url}/healthz", timeout_s)
    return process, url, took


# one server for the whole run: the xdist group keeps this module's tests on one worker (pyproject.toml's
# pytest pin says why that needs pytest < 9.2)
@pytest.fixture(scope="session")
def phoenix_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    python = os.environ.get("RAGMETRICS_PHOENIX_PYTHON")
    if not python:
        pytest.skip("no Phoenix server environment: set RAGMETRICS_PHOENIX_PYTHON to its python")
    wait_s = float(os.environ.get("RAGMETRICS_PHOENIX_WAIT") or 0)
    deadline = time.monotonic() + wait_s
    while not Path(python).exists() and time.monotonic() < deadline:
        time.sleep(2)
    if not Path(python).exists():
        if wait_s:
            pytest.fail(f"RAGMETRICS_PHOENIX_PYTHON={python} did not appear within {wait_s:.0f} s")
        pytest.skip(f"no Phoenix server environment at RAGMETRICS_PHOENIX_PYTHON={python}")
    pytest.importorskip("phoenix.client")
    process, url, seconds = start_phoenix_server(python, tmp_path_factory.mktemp("phoenix"))
    print(f"phoenix answered /healthz after {seconds:.1f} s")
    yield url
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def held_rows(url: str, project: str) -> list[Any]:
    """The project's rows as Phoenix holds them so far: none while it has not made the project yet.

    Phoenix ingests in the background, so a project that the app has just sent its first spans to can
    still answer 404 (seen once in a clean-clone rehearsal).
    """
    try:
        return trace_rows(f"phoenix:{url}/{project}")
    except ConfigError as exc:
        if f"no project {project!r}" not in str(exc):
            raise
        return []


def send_traces(url: str, project: str, *, bare: bool = False) -> list[str]:
    """Run the instrumented LangChain app against Phoenix; wait until Phoenix holds its traces."""
    pytest.importorskip("openinference.instrumentation.langchain")
    argv = [sys.executable, "-m", "tests.observe.phoenix_app", f"{url}/v1/traces", project]
    done = subprocess.run(
        [*argv, *(["--bare"] if bare else [])], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ids = json.loads(done.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # Phoenix ingests in the background
        rows = held_rows(url, project)
        roots = [r.source["trace_id"] for r in rows if r.source.get("root_name") == "RunnableSequence"]
        if sorted(roots) == sorted(ids) and len(rows) == len(ids):  # the root span is sent last
            return ids
        time.sleep(0.5)
    raise AssertionError(f"Phoenix never held the traces {ids}")


def _annotations(url: str, project: str, span_ids: list[str]) -> list[dict]:
    from phoenix.client import Client

    spans = Client(base_url=url).spans
    return list(spans.get_span_annotations(span_ids=span_ids, project_identifier=project))


def test_scores_of_phoenix_traces_show_in_phoenix_as_span_annotations(
    phoenix_url: str, fake_llm_server: FakeLLMServer, dummy_keys: None, tmp_path: Path, capsys
) -> None:
    ids = send_traces(phoenix_url, "rag-app")
    out, cursor = tmp_path / "scores.jsonl", tmp_path / "cursor.json"
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    argv = ["eval", "--traces", f"phoenix:{phoenix_url}/rag-app", "--metrics", "faithfulness,relevancy"]
    argv += ["--judge", judge, "--threshold", "0.5", "--out", str(out), "--incremental", str(cursor)]
    argv += ["--export", f"phoenix:{phoenix_url}", "--quiet"]
    assert main(argv) == 0, capsys.readouterr()
    assert "Logged 6 span annotations to Phoenix" in capsys.readouterr().out
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ids  # oldest first, as the app sent them
    first = records[0]["sample"]
    assert first["question"] == "What is the capital of France?"
    assert first["answer"] == "Paris is the capital of France."
    assert first["contexts"] == ["Paris is the capital of France.", "The Seine flows through Paris."]
    assert all(r["scores"]["faithfulness"] == 1.0 for r in records)

    spans = {r["sample"]["meta"]["span_id"]: r for r in records}
    found = _annotations(phoenix_url, "rag-app", list(spans))
    assert len(found) == 6
    for annotation in found:
        record = spans[annotation["span_id"]]
        assert annotation["name"] in ("faithfulness", "relevancy")
        assert annotation["annotator_kind"] == "LLM"
        assert annotation["result"]["score"] == record["scores"][annotation["name"]]
        assert annotation["result"]["label"] == "passed"
        assert annotation["metadata"] == {"status": "ok", "sample_id": record["id"], "source": "ragmetrics"}

    calls = len(fake_llm_server.requests)
    assert main(argv) == 0  # the cursor holds all three: nothing new, nothing paid, nothing re-logged
    assert len(fake_llm_server.requests) == calls
    assert "no new traces" in capsys.readouterr().out

    # Phoenix's API returns no resource attributes: a --where on service.name says so and names the fix
    where = ["eval", "--traces", f"phoenix:{phoenix_url}/rag-app", "--judge", "offline"]
    assert main([*where, "--where", "service.name=rag-app"]) == 2
    err = capsys.readouterr().err
    assert "none of its 3 traces has that key" in err and "phoenix:http://HOST:PORT/PROJECT" in err


def test_phoenix_traces_without_a_retriever_get_a_status_each_and_it_is_annotated(
    phoenix_url: str, fake_llm_server: FakeLLMServer, dummy_keys: None, tmp_path: Path, capsys
) -> None:
    ids = send_traces(phoenix_url, "bare-app", bare=True)
    report = evaluate_sync(
        traces=f"phoenix:{phoenix_url}/bare-app",
        metrics=["faithfulness"],
        llm=f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}",
        canaries=False,  # the judge's known-answer probes would be its only calls
    )
    records = list(report)
    assert [r.extra.get("trace_id") for r in records] == ids
    assert {r.status_of("faithfulness") for r in records} == {"invalid_input"}
    assert all("no retriever span" in r.errors[0].message for r in records)
    assert len(fake_llm_server.requests) == 0  # nothing unscorable is sent to the judge

    from ragmetrics.observe.phoenix_export import export_phoenix

    assert export_phoenix(records, f"phoenix:{phoenix_url}") == (3, 0, 0)
    found = _annotations(phoenix_url, "bare-app", [r.extra["span_id"] for r in records])
    assert {a["result"]["label"] for a in found} == {"invalid_input"}
    assert all("no retriever span" in a["result"]["explanation"] for a in found)
    assert all("score" not in a["result"] or a["result"]["score"] is None for a in found)


def test_an_unknown_project_or_an_unreachable_server_is_a_usage_error(phoenix_url: str, capsys) -> None:
    assert main(["eval", "--traces", f"phoenix:{phoenix_url}/no-such-project", "--judge", "offline"]) == 2
    assert "no project 'no-such-project'" in capsys.readouterr().err
    dead = f"phoenix:http://127.0.0.1:{free_port()}"
    assert main(["eval", "--traces", dead, "--judge", "offline"]) == 2
    assert "cannot reach Phoenix" in capsys.readouterr().err


def test_since_is_read_on_the_server_and_a_trace_it_cuts_is_read_whole(
    phoenix_url: str, tmp_path: Path, capsys
) -> None:
    from ragmetrics.observe import select_traces
    from ragmetrics.observe.phoenix import read_phoenix
    from tests.observe.window_spans import Timed, send_timed

    s = 1_000_000_000
    since = time.time_ns() - 600 * s
    old, cut, new, remote = send_timed(
        f"{phoenix_url}/v1/traces",
        "window-app",
        [
            Timed(since - 120 * s, since - 119 * s),  # before the window: the server does not send it
            Timed(since - 5 * s, since + 1 * s),  # its root before the window, its retriever in it
            Timed(since + 10 * s, since + 11 * s),
            Timed(since + 20 * s, since + 21 * s, remote_parent=True),  # its root's parent: another service
        ],
    )
    deadline = time.monotonic() + 120
    while len(held_rows(phoenix_url, "window-app")) < 4:  # Phoenix ingests in the background
        assert time.monotonic() < deadline, "Phoenix never held the four traces"
        time.sleep(0.5)

    target = f"phoenix:{phoenix_url}/window-app"
    spans = [x for x in read_phoenix(target, since_ns=since) if not isinstance(x, str)]
    by_trace = {t: sum(x.trace_id == t for x in spans) for t in {x.trace_id for x in spans}}
    assert by_trace == {cut: 2, new: 2, remote: 2}  # the cut trace read again whole; the old one not at all
    rows = select_traces(trace_rows(target, since_ns=since), since=since)
    assert [r.source["trace_id"] for r in rows] == [new, remote]  # what a full read and the window give
    full = select_traces(trace_rows(target), since=since)
    assert [r.source["trace_id"] for r in full] == [new, remote]
    assert old in {r.source["trace_id"] for r in trace_rows(target)}

    out = tmp_path / "window.jsonl"
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(since // s))
    argv = ["eval", "--traces", target, "--since", iso, "--judge", "offline", "--out", str(out), "--quiet"]
    assert main(argv) == 0, capsys.readouterr()
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == [new, remote]
    assert records[0]["sample"]["contexts"] == ["Fact 2 is true."]


def test_hostile_phoenix_traces_get_a_status_each_and_nothing_is_lost(phoenix_url: str) -> None:
    from ragmetrics.observe.phoenix_export import export_phoenix
    from tests.observe.window_spans import Timed, send_timed

    now = time.time_ns()
    huge, silent, fine = send_timed(
        f"{phoenix_url}/v1/traces",
        "hostile-app",
        [
            Timed(now, now + 1000, answer="x" * 1_100_000),  # an answer over MAX_VALUE_CHARS
            Timed(now + 5000, now + 6000, answer=None),  # no answer recorded anywhere
            Timed(now + 9000, now + 10_000),
        ],
    )
    deadline = time.monotonic() + 120
    while len(held_rows(phoenix_url, "hostile-app")) < 3:
        assert time.monotonic() < deadline, "Phoenix never held the three traces"
        time.sleep(0.5)
    report = evaluate_sync(
        traces=f"phoenix:{phoenix_url}/hostile-app", metrics=["faithfulness"], llm="offline", canaries=False
    )
    records = {r.extra.get("trace_id") or r.sample.id: r for r in report}
    assert set(records) == {huge, silent, fine}
    assert records[fine].status_of("faithfulness") == "ok" and records[fine].scores["faithfulness"] == 1.0
    for trace_id, why in ((huge, "over 1,000,000 characters"), (silent, "no answer found")):
        assert records[trace_id].status_of("faithfulness") == "invalid_input"
        assert why in records[trace_id].errors[0].message
    assert export_phoenix(list(report), f"phoenix:{phoenix_url}") == (3, 0, 0)  # every trace annotated


def test_a_genai_trace_with_message_events_is_read_from_phoenix(phoenix_url: str) -> None:
    from tests.observe.otel_app import run_genai_app

    docs = ["Rome is the capital of Italy.", "The Tiber flows through Rome."]
    endpoint = f"{phoenix_url}/v1/traces"
    trace_id = run_genai_app(
        endpoint, "Where is Rome?", "Rome is in Italy.", docs, "message_events", "genai-app"
    )
    deadline = time.monotonic() + 120
    while True:  # Phoenix ingests in the background: until the trace is whole (or the time is up)
        rows = held_rows(phoenix_url, "genai-app")
        whole = rows and rows[0].source.get("root_name") == "invoke_agent rag" and rows[0].problem is None
        if whole or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    (row,) = rows
    assert row.problem is None, row.problem
    assert row.values["id"] == trace_id
    assert (row.values["question"], row.values["answer"]) == ("Where is Rome?", "Rome is in Italy.")
    assert row.values["contexts"] == docs


def _readme_blocks() -> tuple[list[str], str]:
    """The docs section's Python blocks and its shell command."""
    text = (ROOT / "docs" / "traces.md").read_text(encoding="utf-8")
    section = text.split("### From production traces to scores", 1)[1]
    section = re.split(r"\n##+ ", section, maxsplit=1)[0]
    python = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    (shell,) = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    return python, shell


def test_the_readme_section_runs_as_written_from_app_to_annotations(
    phoenix_url: str, fake_llm_server: FakeLLMServer, dummy_keys: None, tmp_path: Path, monkeypatch, capsys
) -> None:
    pytest.importorskip("openinference.instrumentation.langchain")
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"

    def as_here(code: str) -> str:  # this server, this judge, a project of its own
        code = code.replace("http://127.0.0.1:6006", phoenix_url).replace("rag-app", "readme-app")
        return code.replace("openai:gpt-4o-mini", judge)

    (app, scoring), shell = _readme_blocks()
    done = subprocess.run(
        [sys.executable, "-c", as_here(app)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    deadline = time.monotonic() + 120
    while not any(
        r.source.get("root_name") == "RunnableSequence" for r in held_rows(phoenix_url, "readme-app")
    ):
        assert time.monotonic() < deadline, "Phoenix never held the docs app's trace"
        time.sleep(0.5)

    argv = shlex.split(as_here(shell).replace("\\\n", " "))
    assert argv[0] == "ragmetrics"
    monkeypatch.chdir(tmp_path)
    assert main([*argv[1:], "--quiet"]) == 0, capsys.readouterr()
    assert "Logged 2 span annotations to Phoenix" in capsys.readouterr().out
    assert json.loads((tmp_path / "phoenix-cursor.json").read_text())["scored"]

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", as_here(scoring)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "faithfulness 1.0 passed" in done.stdout.splitlines(), done.stdout + done.stderr[-3000:]


def test_an_agent_session_in_phoenix_is_one_conversation_annotated_per_turn_and_per_session(
    phoenix_url: str, tmp_path: Path, capsys
) -> None:
    """A LangChain agent's two turns in one OpenInference session, sent to Phoenix, read back as one
    conversation, scored (a turn metric and a conversation-level one), and annotated: each turn's root
    span, and the session (read back from Phoenix's session annotations)."""
    import httpx

    pytest.importorskip("openinference.instrumentation.langchain")
    argv = [
        sys.executable,
        "-m",
        "tests.observe.agent_app",
        f"{phoenix_url}/v1/traces",
        "chat-7",
        "agent-app",
    ]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    roots = json.loads(done.stdout)
    deadline = time.monotonic() + 120
    while True:
        rows = held_rows(phoenix_url, "agent-app")
        conversation = rows[0].conversation if len(rows) == 1 else None
        if isinstance(conversation, dict) and len(conversation["messages"]) == 8:
            break
        assert time.monotonic() < deadline, "Phoenix never held the agent's two turns"
        time.sleep(0.5)
    assert [m["role"] for m in conversation["messages"]] == ["user", "assistant", "tool", "assistant"] * 2

    out = tmp_path / "scores.jsonl"
    cli = [
        "eval",
        "--traces",
        f"phoenix:{phoenix_url}/agent-app",
        "--metrics",
        "faithfulness,knowledge_retention",
    ]
    cli += ["--judge", "offline", "--out", str(out), "--export", f"phoenix:{phoenix_url}", "--quiet"]
    assert main(cli) == 0, capsys.readouterr()
    said = capsys.readouterr().out
    assert "Logged 2 span annotations to Phoenix" in said and "and 2 session annotations" in said
    assert "from no span" not in said  # the session's own record went to the session
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["chat-7#turn0", "chat-7#turn1", "chat-7"]
    assert records[0]["sample"]["contexts"] == ["Paris is the capital of France."]  # the tool's result
    turns = [r["sample"]["meta"]["span_id"] for r in records[:2]]
    assert turns == [r["span_id"] for r in roots]
    found = _annotations(phoenix_url, "agent-app", turns)
    assert sorted((a["span_id"], a["name"]) for a in found) == sorted((s, "faithfulness") for s in turns)

    reply = httpx.get(
        f"{phoenix_url}/v1/projects/agent-app/session_annotations", params={"session_ids": "chat-7"}
    )
    reply.raise_for_status()
    notes = {a["name"]: a for a in reply.json()["data"]}
    assert set(notes) == {"faithfulness", "knowledge_retention"}
    assert notes["knowledge_retention"]["result"]["score"] == records[2]["scores"]["knowledge_retention"]
    assert notes["faithfulness"]["metadata"] == {
        "scope": "session",
        "turns": 2,
        "scored": 2,
        "source": "ragmetrics",
    }
