"""Scores out to MLflow: ``--export mlflow:URI`` against a real tracking server started on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmetrics.cli import main
from ragmetrics.pipeline.report import read_jsonl
from ragmetrics.testing import FakeLLMServer
from tests.observe.servers import free_port, start_server

ROOT = Path(__file__).resolve().parents[2]

ROWS = [
    {
        "question": "What is the capital of France?",
        "answer": "Paris is the capital of France.",
        "contexts": ["Paris is the capital of France.", "The Seine flows through Paris."],
    },
    {
        "question": "Which river flows through Rome?",
        "answer": "The Tiber flows through Rome.",
        "contexts": ["The Tiber flows through Rome."],
    },
    {
        "question": "Which river flows through Paris?",
        "answer": "The Seine flows through Paris.",
        "contexts": ["The Seine flows through Paris."],
    },
]


def start_mlflow_server(root: Path, timeout_s: float = 480.0) -> tuple[subprocess.Popen[bytes], str, float]:
    """An MLflow tracking server on loopback (SQLite store, artifacts served over HTTP); its URI, start s."""
    exe = Path(sys.executable).with_name("mlflow")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "mlflow"]
    port = free_port()
    argv = [*command, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    argv += ["--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}"]
    argv += ["--serve-artifacts", "--artifacts-destination", str(root / "artifacts")]
    env = {**os.environ, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    uri = f"http://127.0.0.1:{port}"
    process, took = start_server("mlflow server", argv, root, env, f"{uri}/health", timeout_s)
    return process, uri, took


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("mlflow")
    process, uri, seconds = start_mlflow_server(tmp_path_factory.mktemp("mlflow"))
    print(f"mlflow server answered /health after {seconds:.1f} s")
    yield uri
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "rag.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return path


def _run(client, experiment: str):  # the one run of a test's own experiment
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    runs = client.search_runs([found.experiment_id])
    assert len(runs) == 1
    return runs[0]


@pytest.mark.once
def test_export_mlflow_logs_aggregates_params_records_and_report(
    mlflow_server: str,
    data: Path,
    fake_llm_server: FakeLLMServer,
    dummy_keys: None,
    tmp_path: Path,
    monkeypatch,
    capsys,
) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "rag-nightly")
    out, report = tmp_path / "scores.jsonl", tmp_path / "report.html"
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    argv = ["eval", str(data), "--metrics", "faithfulness,relevancy", "--judge", judge, "--no-cache"]
    argv += ["--threshold", "0.5", "--out", str(out), "--report", str(report), "--quiet"]
    code = main([*argv, "--export", f"mlflow:{mlflow_server}"])
    captured = capsys.readouterr()
    assert code == 0, captured
    assert "Logged the run to MLflow" in captured.out
    records = read_jsonl(out)
    client = MlflowClient(tracking_uri=mlflow_server)
    run = _run(client, "rag-nightly")
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "rag"
    metrics, params = run.data.metrics, run.data.params
    faithfulness = [r.scores["faithfulness"] for r in records]
    assert metrics["faithfulness/mean"] == pytest.approx(sum(faithfulness) / len(faithfulness))
    assert metrics["faithfulness/pass_rate"] == pytest.approx(sum(s >= 0.5 for s in faithfulness) / 3)
    assert metrics["faithfulness/scored"] == 3 and metrics["samples"] == 3
    assert "relevancy/mean" in metrics
    assert metrics["calls"] == len(fake_llm_server.requests) > 0
    assert metrics["cost_usd"] > 0  # gpt-4o-mini is priced; the run's cost, not the records' sum
    assert params["judge"] == judge.split("@")[0] or judge in params["judge"]
    assert params["metrics"] == "faithfulness,relevancy"
    assert params["threshold/faithfulness"] == "0.5" and params["data"] == "rag.jsonl"
    names = sorted(a.path for a in client.list_artifacts(run.info.run_id))
    assert names == ["report.html", "scores.jsonl"]
    got = Path(client.download_artifacts(run.info.run_id, "", str(tmp_path / "down")))
    assert (got / "scores.jsonl").read_bytes() == out.read_bytes()
    assert (got / "report.html").read_bytes() == report.read_bytes()


@pytest.mark.once
def test_export_mlflow_from_python_writes_the_records_and_report_when_no_file_was_asked_for(
    mlflow_server: str, data: Path, tmp_path: Path
) -> None:
    from mlflow.tracking import MlflowClient

    import ragmetrics
    from ragmetrics.observe.mlflow import export_mlflow

    # the Python API sets no threshold (the CLI's --threshold defaults to 0.5), so no pass rate is logged
    results = ragmetrics.evaluate_sync(str(data), metrics=["faithfulness"], llm="offline", progress=False)
    run_id = export_mlflow(results, mlflow_server, experiment="rag-offline", run_name="offline")
    client = MlflowClient(tracking_uri=mlflow_server)
    run = _run(client, "rag-offline")
    assert run.info.run_id == run_id and run.info.run_name == "offline"
    assert run.data.params["judge"] == "offline" and "threshold/faithfulness" not in run.data.params
    assert "data" not in run.data.params  # not given
    assert "faithfulness/pass_rate" not in run.data.metrics  # no threshold, no pass rate
    mean = results.summary().aggregates["faithfulness"].mean
    assert run.data.metrics["faithfulness/mean"] == pytest.approx(mean)
    assert run.data.metrics["calls"] == 0 and run.data.metrics["samples"] == 3
    got = Path(client.download_artifacts(run.info.run_id, "", str(tmp_path / "down")))
    assert sorted(p.name for p in got.iterdir()) == ["records.jsonl", "report.html"]
    back = read_jsonl(got / "records.jsonl")
    assert [r.scores["faithfulness"] for r in back] == [r.scores["faithfulness"] for r in results]
    assert "<html" in (got / "report.html").read_text(encoding="utf-8").lower()


def test_an_unreachable_tracking_server_exits_1_after_writing_the_scores(
    data: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    out = tmp_path / "scores.jsonl"
    argv = [
        "eval",
        str(data),
        "--judge",
        "offline",
        "--metrics",
        "faithfulness",
        "--quiet",
        "--out",
        str(out),
    ]
    code = main([*argv, "--export", f"mlflow:http://127.0.0.1:{free_port()}"])
    assert code == 1
    assert "--export mlflow:http://127.0.0.1:" in capsys.readouterr().err
    assert len(list(read_jsonl(out))) == 3


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A tracking URI whose server accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:  # closed at the end of the test
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() above
    listener.close()
    thread.join(5)
    for connection in held:
        connection.close()


@pytest.mark.parametrize("server", ["dead port", "silent server"])
def test_an_export_to_a_dead_or_silent_server_gives_up_within_the_bound(
    server: str, data: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # MLflow's own retries (7, with backoff) and 120 s timeouts held the run 251 s on a dead port and
    # longer on a silent server; the export is bounded as a whole (RAGMETRICS_EXPORT_TIMEOUT_S, 30 s by
    # default, 3 s here). The CLI runs in a subprocess so an unbounded export fails the test, not CI.
    pytest.importorskip("mlflow")
    uri = (
        f"http://127.0.0.1:{free_port()}"
        if server == "dead port"
        else request.getfixturevalue("silent_server")
    )
    out = tmp_path / "scores.jsonl"
    argv = [sys.executable, "-m", "ragmetrics.cli", "eval", str(data), "--judge", "offline"]
    argv += ["--metrics", "faithfulness", "--quiet", "--out", str(out), "--export", f"mlflow:{uri}"]
    env = {**os.environ, "RAGMETRICS_EXPORT_TIMEOUT_S": "3"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT"):
        env.pop(name, None)  # MLflow's defaults: the bound must hold without them
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail("the MLflow export did not give up within 120 s")
    seconds = time.perf_counter() - started
    assert done.returncode == 1, done.stderr[-3000:]
    assert f"--export mlflow:{uri}: the tracking server did not take the run within 3 s" in done.stderr
    assert "looking up the experiment 'ragmetrics'" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(list(read_jsonl(out))) == 3  # the scores were written before the export
    assert seconds < 60  # 3 s of export, plus starting Python, importing mlflow and scoring 3 rows


def test_export_mlflow_from_python_is_bounded_by_timeout_s(data: Path, silent_server: str) -> None:
    # in a subprocess: the worker thread left waiting on the silent server ends with MLflow's own timeouts
    pytest.importorskip("mlflow")
    code = f"""if True:
        import time, ragmetrics
        from ragmetrics.errors import ExportError
        from ragmetrics.observe.mlflow import export_mlflow
        results = ragmetrics.evaluate_sync(
            {str(data)!r}, metrics=["faithfulness"], llm="offline", progress=False
        )
        started = time.perf_counter()
        try:
            export_mlflow(results, {silent_server!r}, timeout_s=1.5)
        except ExportError as exc:
            print(round(time.perf_counter() - started, 1), exc)
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    seconds, message = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert (
        f"--export mlflow:{silent_server}: the tracking server did not take the run within 1.5 s" in message
    )
    # not before the bound; the upper limit only has to sit far under MLflow's own 120 s request timeout
    # (the run was held 367 s before): building the records file and report is timed too, slow under load
    assert 1.5 <= float(seconds) < 30


def test_a_bad_export_timeout_is_a_config_error(data: Path, monkeypatch) -> None:
    pytest.importorskip("mlflow")
    import ragmetrics
    from ragmetrics.errors import ConfigError
    from ragmetrics.observe.mlflow import export_mlflow

    results = ragmetrics.evaluate_sync(str(data), metrics=["faithfulness"], llm="offline", progress=False)
    with pytest.raises(ConfigError, match="export_mlflow: timeout_s must be a number > 0, got 0"):
        export_mlflow(results, "http://127.0.0.1:1", timeout_s=0)
    monkeypatch.setenv("RAGMETRICS_EXPORT_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="RAGMETRICS_EXPORT_TIMEOUT_S must be a finite number > 0"):
        export_mlflow(results, "http://127.0.0.1:1")


@pytest.mark.parametrize("target", ["mlflow:", "mlflow", "phoenixx"])
def test_a_bad_export_target_is_a_usage_error(target: str, data: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", str(data), "--judge", "offline", "--export", target])
    assert exit_info.value.code == 2
    assert "expected otel or mlflow:TRACKING_URI" in capsys.readouterr().err


def test_importing_ragmetrics_and_its_cli_imports_no_mlflow() -> None:
    code = (
        "import sys, ragmetrics, ragmetrics.cli.trace_flags, ragmetrics.observe.mlflow;"
        "assert 'mlflow' not in sys.modules, 'mlflow imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_mlflow_the_export_names_the_extra(data: Path, capsys) -> None:
    try:
        import mlflow  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("mlflow is installed")
    code = main(["eval", str(data), "--judge", "offline", "--export", "mlflow:http://127.0.0.1:1"])
    assert code == 2
    assert "pip install 'ragmetrics[mlflow]'" in capsys.readouterr().err
