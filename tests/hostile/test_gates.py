"""Hostile values for the gate and judge flags of `ragmetrics eval`: one line, exit 2, no LLM call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragmetrics.testing import FakeLLMServer

CLI = [sys.executable, "-m", "ragmetrics.cli"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-attempts", "0"], "argument --max-attempts: expected a whole number >= 1, got 0"),
        (["--max-attempts", "1.5"], "argument --max-attempts: expected a whole number >= 1, got '1.5'"),
        (["--timeout", "0"], "argument --timeout: expected a finite number > 0, got 0"),
        (["--timeout", "-1"], "argument --timeout: expected a finite number > 0, got -1"),
        (["--timeout", "nan"], "argument --timeout: expected a finite number > 0, got nan"),
        (["--timeout", "inf"], "argument --timeout: expected a finite number > 0, got inf"),
        (["--timeout", "1e999"], "argument --timeout: expected a finite number > 0, got 1e999"),
        (["--timeout", "soon"], "argument --timeout: expected a number > 0, got 'soon'"),
        *(
            (
                [f"--max-unscored={bad}"],
                f"--max-unscored: expected a count (3), a share (0.1) or a percentage (10%), got {bad!r}",
            )
            for bad in ("-1", "1.5", "nan", "inf", "150%", "-5%", "ten", "")
        ),
    ],
)
def test_nonsense_gate_and_judge_flags_are_usage_errors_before_any_call(
    tmp_path: Path, fake_llm_server: FakeLLMServer, flags: list[str], message: str
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"question": "Capital?", "answer": "Paris.", "contexts": ["Paris."]}) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    proc = subprocess.run(
        [*CLI, "eval", str(data), "--judge", f"openai:x@{fake_llm_server.openai_base_url}", *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == f"ragmetrics eval: error: {message}"
    assert "Traceback" not in proc.stderr
    assert fake_llm_server.calls.total() == 0


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("RAGMETRICS_MAX_ATTEMPTS", "0"),
        ("RAGMETRICS_MAX_ATTEMPTS", "2.5"),
        ("RAGMETRICS_MAX_ATTEMPTS", "many"),
        ("RAGMETRICS_TIMEOUT_S", "nan"),
        ("RAGMETRICS_TIMEOUT_S", "inf"),
        ("RAGMETRICS_TIMEOUT_S", "-3"),
    ],
)
def test_judge_option_variables_are_validated_and_code_wins(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str
) -> None:
    from ragmetrics.errors import ConfigError
    from ragmetrics.settings import parse_judge_spec

    monkeypatch.setenv("RAGMETRICS_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("RAGMETRICS_TIMEOUT_S", "1.5")
    settings = parse_judge_spec("openai:x@http://127.0.0.1:1/v1")
    assert (settings.max_attempts, settings.timeout_s) == (2, 1.5)
    assert parse_judge_spec("openai:x@http://127.0.0.1:1/v1", max_attempts=4).max_attempts == 4
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=f"environment variable {var} must be"):
        parse_judge_spec("openai:x@http://127.0.0.1:1/v1")
