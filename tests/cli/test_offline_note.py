"""The first run tells the truth (issue 40): what the offline judge misses, and ``python -m ragmetrics``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragmetrics.cli import main
from ragmetrics.judge.offline.caveat import WORST_NOTE, caveat_lines, offline_specs

ROOT = Path(__file__).resolve().parents[2]
NOTE = "\n".join(caveat_lines())


def _module(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m ragmetrics ARGS`` in a fresh interpreter that imports this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "ragmetrics", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_the_note_says_what_the_offline_judge_is_and_misses() -> None:
    assert caveat_lines() == [
        "Note: the offline judge is a deterministic lexical judge (no LLM, no API key).",
        "It matches words, not meaning: a faithful paraphrase or a reworded fact scores low.",
        "For scores that judge meaning, use --judge PROVIDER:MODEL (e.g. --judge openai:gpt-4o-mini).",
    ]
    assert "semantic" in caveat_lines("offline+semantic")[0]
    assert offline_specs(["offline", "openai:gpt-4o-mini", "offline", "offline+semantic"]) == [
        "offline",
        "offline+semantic",
    ]


@pytest.mark.parametrize("judge", [[], ["--judge", "offline"]])
def test_the_example_on_the_offline_judge_says_once_what_it_misses_above_the_worst_samples(
    capsys: pytest.CaptureFixture[str], judge: list[str]
) -> None:
    assert main(["eval", "--example", *judge]) == 0
    out = capsys.readouterr().out
    assert out.count(NOTE) == 1
    heading = f"Worst samples ({WORST_NOTE}):"
    assert heading == "Worst samples (offline judge: low scores may be paraphrases it cannot match):"
    lines = out.splitlines()
    start = lines.index(heading)
    assert "\n".join(lines[start - 4 : start - 1]) == NOTE and lines[start - 1] == ""
    # the faithful paraphrases the offline judge scores 0 are among the worst: the note stands beside them
    worst = "\n".join(lines[start:])
    assert "#3 rag-definition" in worst and "faithfulness 0.000" in worst


def test_the_note_stands_even_when_no_worst_sample_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--example", "--judge", "offline", "--worst", "0"]) == 0
    out = capsys.readouterr().out
    assert out.count(NOTE) == 1 and "Worst samples" not in out


def test_json_and_quiet_keep_their_output(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["eval", "--example", "--judge", "offline", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["run"]["judges"] == ["offline"]  # stdout stays one JSON document
    assert "Note:" not in captured.err
    assert main(["eval", "--example", "--judge", "offline", "--quiet"]) == 0
    assert capsys.readouterr().out == ""


def test_an_llm_judge_run_shows_no_note(
    capsys: pytest.CaptureFixture[str], openai_spec: str, tmp_path: Path
) -> None:
    report = tmp_path / "r.html"
    code = main(["eval", "--example", "--judge", openai_spec, "--worst", "3", "--report", str(report)])
    assert code == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "Worst samples:" in out
    assert "offline judge" not in out and "Note:" not in out and "paraphrase" not in out
    page = report.read_text(encoding="utf-8")
    assert 'id="offline-banner"' not in page and 'id="offline-samples-note"' not in page
    assert WORST_NOTE not in page


def test_the_offline_report_carries_the_note(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    assert main(["eval", "--example", "--judge", "offline", "--report", str(report)]) == 0
    capsys.readouterr()
    page = report.read_text(encoding="utf-8")
    assert 'id="offline-banner"' in page and "It matches words, not meaning" in page
    assert "paraphrase" in page.split('id="offline-banner"')[1].split("</div>")[0]
    note = page.split('id="offline-samples-note"')[1].split("</p>")[0]
    assert "Offline judge: low scores may be paraphrases it cannot match" in note
    assert page.index('id="offline-samples-note"') < page.index('id="table-pane"')  # above the table


def test_python_dash_m_ragmetrics_is_the_command(tmp_path: Path) -> None:
    helped = _module("--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: ragmetrics ") and "eval" in helped.stdout
    assert _module(cwd=tmp_path).returncode == 2  # no command: usage, as `ragmetrics` alone
    assert _module("eval", "--no-such-flag", cwd=tmp_path).returncode == 2
    ran = _module("eval", "--example", "--worst", "2", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert NOTE in ran.stdout and f"Worst samples ({WORST_NOTE}):" in ran.stdout


def test_python_dash_m_ragmetrics_help_imports_no_provider_sdk(tmp_path: Path) -> None:
    code = (
        "import runpy, sys; sys.argv = ['ragmetrics', '--help']\n"
        "try:\n    runpy.run_module('ragmetrics', run_name='__main__')\n"
        "except SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'instructor', 'httpx', 'google', 'boto3') "
        "if m in sys.modules), file=sys.stderr)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "[]"
