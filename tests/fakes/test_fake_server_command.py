"""``python -m ragmetrics.testing`` and ``ragmetrics fake-server``: the fake provider from a shell."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = {
    "type": "object",
    "required": ["verdict"],
    "properties": {"verdict": {"enum": ["supported", "not_found"]}},
}


def _start(tmp_path: Path, *command: str) -> tuple[subprocess.Popen[str], list[str]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, "-m", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    while not lines or not lines[-1].startswith("Press Ctrl-C"):
        line = proc.stdout.readline()
        assert line, f"the server exited before serving: {proc.communicate(timeout=60)}"
        lines.append(line.rstrip("\n"))
    return proc, lines


def _base_url(lines: list[str]) -> str:
    return next(line.split()[-1] for line in lines if "OpenAI base_url" in line)


@pytest.mark.parametrize(
    ("command", "stop"),
    [(("ragmetrics.testing",), signal.SIGINT), (("ragmetrics.cli", "fake-server"), signal.SIGTERM)],
    ids=["python-m-ctrl-c", "subcommand-sigterm"],
)
def test_the_command_line_serves_schema_answers_with_latency_until_stopped(
    tmp_path: Path, command: tuple[str, ...], stop: signal.Signals
) -> None:
    proc, lines = _start(tmp_path, *command, "--port", "0", "--answer", "schema", "--latency", "0.2")
    try:
        url = _base_url(lines)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        client = openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)
        start = time.perf_counter()
        reply = client.chat.completions.create(
            model="any",
            messages=[{"role": "user", "content": "Is the claim supported?"}],
            response_format={"type": "json_schema", "json_schema": {"name": "Verdict", "schema": SCHEMA}},
        )
        assert time.perf_counter() - start >= 0.2  # the latency is applied (a lower bound only)
        assert json.loads(reply.choices[0].message.content or "") == {"verdict": "supported"}
        client.close()
    finally:
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopped after 1 request(s)" in out
    assert "Traceback" not in err


def test_a_bad_flag_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ragmetrics.testing", "--latency", "-1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=120,
    )
    assert proc.returncode == 2 and "--latency" in proc.stderr
