"""`ragmetrics eval` gates that never lie: nothing scored fails, a dead judge stops the run early, and
--max-attempts / --timeout reach the judge. Real subprocesses against the loopback fake server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmetrics.testing import FakeLLMServer, FakeReply

CLI = [sys.executable, "-m", "ragmetrics.cli"]
RETRIES_TODAY = 6  # attempts per call before the breaker: what a dead judge used to cost every call


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RAGMETRICS_JUDGE", "OPENAI_BASE_URL")
    }
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env={**base, **(env or {})}, timeout=timeout
    )


def rows(path: Path, n: int, *, bad: tuple[int, ...] = ()) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            answer: object = 5 if i in bad else f"The capital of country {i} is City{i}."
            row = {
                "id": f"r{i}",
                "question": f"What is the capital of country {i}?",
                "answer": answer,
                "contexts": [f"The capital of country {i} is City{i}, on the river."],
            }
            out.write(json.dumps(row) + "\n")
    return path


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound (so nobody else takes it), never listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def gate_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_unreachable_judge_exits_1_fast_with_one_line_saying_what_happened(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    started = time.perf_counter()
    proc = run("eval", "--example", "--judge", f"openai:x@{base_url}", "--no-cache", "--quiet")
    elapsed = time.perf_counter() - started
    assert proc.returncode == 1, proc.stderr
    line = gate_line(proc)
    assert line.startswith("ragmetrics eval: 0 of 12 samples scored (faithfulness, relevancy, groundedness)")
    assert "provider_error 12" in line and f"could not connect to {base_url}" in line
    assert "judge unreachable" in line, "the breaker, not retries running out, ended the calls"
    # 12 samples x 6 attempts with backoff took 23.5 s; the breaker ends it after one backoff
    assert elapsed < 45, f"took {elapsed:.1f} s"


def test_dead_server_gets_far_fewer_requests_than_samples_times_attempts(
    fake_llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm_server.on(lambda r: True, FakeReply(drop=True))  # accepts, then closes: no connection
    data = rows(tmp_path / "rows.jsonl", 48)
    proc = run(
        "eval", str(data), "--metrics", "faithfulness", "--no-cache", "--quiet",
        "--judge", f"openai:x@{fake_llm_server.openai_base_url}",
        "--concurrency", "4", "--judge-concurrency", "4",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    line = gate_line(proc)
    assert "faithfulness: 0 of 48 samples scored: provider_error 48" in line and "judge unreachable" in line
    sent = len(fake_llm_server.requests)
    assert 5 <= sent <= 16, f"{sent} requests; without the breaker: {48 * RETRIES_TODAY}"


def test_rejected_key_stops_the_run_early(fake_llm_server: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm_server.on(lambda r: True, FakeReply(status=401, message="Incorrect API key provided"))
    data = rows(tmp_path / "rows.jsonl", 48)
    proc = run(
        "eval", str(data), "--metrics", "faithfulness", "--no-cache", "--quiet",
        "--judge", f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}",
        "--concurrency", "4", "--judge-concurrency", "4", "--out", str(tmp_path / "out.jsonl"),
        env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    line = gate_line(proc)
    assert "0 of 48 samples scored: provider_error 48" in line
    assert "HTTP 401" in line and "Incorrect API key provided" in line and "OPENAI_API_KEY" in line
    sent = len(fake_llm_server.requests)
    assert 5 <= sent <= 16, f"{sent} requests for 48 samples: one each without the breaker"
    records = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    refused = [r for r in records if "refused the credentials" in r["errors"][0]["message"]]
    assert len(refused) >= 48 - sent, "the samples that sent nothing say why"


def test_unscored_samples_fail_unless_max_unscored_allows_them(tmp_path: Path) -> None:
    data = rows(tmp_path / "rows.jsonl", 10, bad=(4,))
    strict = run("eval", str(data), "--quiet")
    assert strict.returncode == 1
    line = gate_line(strict)
    assert "9 of 10 samples scored (faithfulness, relevancy, groundedness): invalid_input 1" in line
    assert "row 4: field 'answer' must be a string" in line
    for allowed in ("0.1", "10%", "1"):
        assert run("eval", str(data), "--quiet", "--max-unscored", allowed).returncode == 0, allowed
    assert run("eval", str(data), "--quiet", "--max-unscored", "5%").returncode == 1


def test_a_metric_that_scored_nothing_fails_whatever_the_limit(
    fake_llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    fake_llm_server.on("claims.verify", FakeReply(status=400, message="verification is broken"))
    data = rows(tmp_path / "rows.jsonl", 6)
    proc = run(
        "eval", str(data), "--metrics", "faithfulness,relevancy", "--no-cache", "--json",
        "--judge", f"openai:x@{fake_llm_server.openai_base_url}", "--max-unscored", "100%",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["aggregates"]["relevancy"]["count"] == 6, "the other metric scored every sample"
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("ragmetrics eval: faithfulness: 0 of 6 samples scored: provider_error 6")
    assert "verification is broken" in line and "relevancy" not in line


def test_max_attempts_reaches_the_judge(fake_llm_server: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm_server.on(lambda r: True, FakeReply(status=500, message="overloaded"))
    data = rows(tmp_path / "rows.jsonl", 3)
    for attempts in (1, 2):
        fake_llm_server.reset()
        fake_llm_server.on(lambda r: True, FakeReply(status=500, message="overloaded"))
        proc = run(
            "eval", str(data), "--metrics", "faithfulness", "--no-cache", "--quiet",
            "--judge", f"openai:x@{fake_llm_server.openai_base_url}", "--max-attempts", str(attempts),
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        sent = len(fake_llm_server.requests)
        assert sent == (3 + 1) * attempts, "one extraction call per sample, and the canaries' one"
        assert f"after {attempts} HTTP attempt" in proc.stderr


def test_timeout_reaches_the_judge(fake_llm_server: FakeLLMServer, tmp_path: Path) -> None:
    fake_llm_server.on(lambda r: True, FakeReply(hang=True))
    data = rows(tmp_path / "rows.jsonl", 2)
    started = time.perf_counter()
    proc = run(
        "eval", str(data), "--metrics", "faithfulness", "--no-cache", "--quiet",
        "--judge", f"openai:x@{fake_llm_server.openai_base_url}",
        "--max-attempts", "1", "--timeout", "0.5",
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    assert proc.returncode == 1, proc.stderr
    line = gate_line(proc)
    assert "0 of 2 samples scored: timeout 2" in line and "no reply within 0.5 s" in line
    assert elapsed < 30, f"the default 60 s timeout applied ({elapsed:.1f} s)"


def test_an_empty_dataset_is_a_failure(tmp_path: Path) -> None:
    data = tmp_path / "empty.jsonl"
    data.write_text("\n\n")
    proc = run("eval", str(data), "--quiet", "--max-unscored", "100%")
    assert proc.returncode == 1
    line = gate_line(proc)
    assert "0 of 0 samples scored (faithfulness, relevancy, groundedness): there were no samples" in line


EVAL_FILE = """
import os

from ragmetrics import FaithfulnessMetric, eval_case

metric = FaithfulnessMetric(llm="openai:x@" + os.environ["FAKE_URL"], cache=False)


@eval_case(min_score=0.5)
async def eval_paris():
    result = await metric.evaluate(
        question="Capital of France?", answer="Paris is the capital.", contexts=["Paris is the capital."]
    )
    return {"score": result.score if result.score is not None else 0.0}
"""


def test_test_command_passes_max_attempts_and_timeout_to_the_cases_judges(
    fake_llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    (tmp_path / "eval_dead.py").write_text(EVAL_FILE)
    env = {"FAKE_URL": fake_llm_server.openai_base_url}
    for attempts in (1, 2):
        fake_llm_server.reset()
        fake_llm_server.on(lambda r: True, FakeReply(status=500, message="overloaded"))
        proc = run("test", str(tmp_path / "eval_dead.py"), "--max-attempts", str(attempts), env=env)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert len(fake_llm_server.requests) == attempts, proc.stdout
    fake_llm_server.reset()
    fake_llm_server.on(lambda r: True, FakeReply(hang=True))
    started = time.perf_counter()
    proc = run("test", str(tmp_path / "eval_dead.py"), "--max-attempts", "1", "--timeout", "0.5", env=env)
    assert proc.returncode == 1 and len(fake_llm_server.requests) == 1, proc.stdout + proc.stderr
    assert time.perf_counter() - started < 30, "the default 60 s timeout applied"


def test_the_flags_are_defaults_only_while_the_command_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmetrics.cli.app import main

    monkeypatch.setenv("RAGMETRICS_TIMEOUT_S", "7")
    assert main(["eval", "--example", "--judge", "offline", "--quiet", "--max-attempts", "2"]) == 0
    assert main(["eval", "--example", "--judge", "offline", "--quiet", "--timeout", "3"]) == 0
    assert "RAGMETRICS_MAX_ATTEMPTS" not in os.environ and os.environ["RAGMETRICS_TIMEOUT_S"] == "7"
