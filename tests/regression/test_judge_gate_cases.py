"""The judge gate on `ragmetrics test`, YAML suites and the pytest plugin (issue 21): a case whose claim
metrics were judged by a judge that is not reading its inputs fails, whatever its score or bounds, and
`ragmetrics test` exits 5 as `ragmetrics eval` does; a reading judge (offline, the fake server's default
mode) passes with its figures unchanged; the gate can be set or turned off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragmetrics.testing import FakeLLMServer

pytest_plugins = ["pytester"]

EXIT_JUDGE = 5

EVALS = """
import os

import ragmetrics
from ragmetrics import eval_case

ROWS = [
    {
        "question": "When was the Eiffel Tower finished?",
        "answer": "The Eiffel Tower was finished in 1889. It is in Paris.",
        "contexts": ["The Eiffel Tower, in Paris, was finished in 1889 for the World's Fair."],
    },
    {
        "question": "What is the boiling point of water at sea level?",
        "answer": "Water boils at 100 degrees Celsius at sea level.",
        "contexts": ["At sea level, water boils at 100 degrees Celsius."],
    },
]


@eval_case
def eval_faithfulness():
    return list(
        ragmetrics.evaluate_sync(
            ROWS, ["faithfulness"], llm=os.environ["JUDGE"], progress=False, canaries=False, cache=False
        )
    )
"""


def write_evals(folder: Path) -> Path:
    path = folder / "eval_rag.py"
    path.write_text(textwrap.dedent(EVALS), encoding="utf-8")
    return path


def run_test(cwd: Path, judge: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    env = {**os.environ, "JUDGE": judge, "OPENAI_API_KEY": "test", "RAGMETRICS_CACHE_DIR": str(cwd)}
    proc = subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", "test", *args, "--json", "run.json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    payload = (
        json.loads((cwd / "run.json").read_text(encoding="utf-8")) if (cwd / "run.json").exists() else {}
    )
    return proc, payload


def test_an_eval_case_whose_judge_only_fills_the_schema_fails_with_exit_5(tmp_path):
    write_evals(tmp_path)
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        proc, run = run_test(tmp_path, spec, "eval_rag.py")
        assert proc.returncode == EXIT_JUDGE, proc.stdout + proc.stderr
        (case,) = run["cases"]
        assert case["outcome"] == "failed"
        (violation,) = case["violations"]
        assert violation["bound"] == "judge_health_min" and violation["limit"] == 0.5
        assert violation["value"] is not None and violation["value"] < 0.5
        assert f"the judge {spec} is not reading its inputs" in violation["message"]
        assert "--no-judge-gate" in violation["message"] and "spans found 0/" in violation["message"]
        assert "is not reading its inputs" in proc.stdout  # in the table's reasons too

        # without the gate the case still fails, as before it: verification left nothing scored (exit 1)
        off, run = run_test(tmp_path, spec, "eval_rag.py", "--no-judge-gate")
        assert off.returncode == 1, off.stdout + off.stderr
        assert run["cases"][0]["violations"] == [] and "nothing scored" in off.stdout
        lenient, _ = run_test(tmp_path, spec, "eval_rag.py", "--judge-health-min", "0")
        assert lenient.returncode == 1, lenient.stdout + lenient.stderr


@pytest.mark.parametrize("judge", ["offline", "fake"])
def test_a_reading_judge_passes_the_case_gate_unchanged(judge, tmp_path):
    write_evals(tmp_path)
    with FakeLLMServer() as srv:
        spec = "offline" if judge == "offline" else f"openai:gpt-4o-mini@{srv.openai_base_url}"
        proc, run = run_test(tmp_path, spec, "eval_rag.py")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (case,) = run["cases"]
        assert case["outcome"] == "passed" and case["violations"] == []
        assert case["judge_health"][spec]["reading_rate"] == 1.0
        _, ungated = run_test(tmp_path, spec, "eval_rag.py", "--no-judge-gate")
        assert ungated["cases"][0]["score"] == case["score"]  # the gate changes no score


def suite(path: Path, llm: str) -> Path:
    data = {
        "llm": llm,
        "cases": [
            {
                "id": "eiffel",
                "input": "When was the Eiffel Tower finished?",
                "output": "The Eiffel Tower was finished in 1889. It is in Paris.",
                "contexts": ["The Eiffel Tower, in Paris, was finished in 1889 for the World's Fair."],
                "evaluators": [{"type": "faithfulness", "threshold": 0.0, "cache": False}],
            }
        ],
    }
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    return path


@pytest.mark.parametrize(("answer", "code"), [("schema", EXIT_JUDGE), ("offline", 0)])
def test_a_suite_case_carries_judge_health_and_is_gated(answer, code, tmp_path):
    with FakeLLMServer(answer=answer) as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        path = suite(tmp_path / "suite.yaml", spec)
        proc, run = run_test(tmp_path, spec, str(path), "--allow-judge-url")
        assert proc.returncode == code, proc.stdout + proc.stderr
        (case,) = run["cases"]
        health = case["judge_health"][spec]
        assert health["spans"] > 0
        if code:
            assert case["outcome"] == "failed" and health["reading_rate"] < 0.5
            assert [v["bound"] for v in case["violations"]] == ["judge_health_min", "canaries"]
        else:
            assert case["outcome"] == "passed" and health["reading_rate"] == 1.0 and case["violations"] == []


async def test_run_suite_puts_the_canaries_to_its_judge_first_and_counts_them_apart(tmp_path):
    from ragmetrics.regression.suite import Suite, run_suite

    with FakeLLMServer() as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        loaded = Suite.from_file(suite(tmp_path / "suite.yaml", spec), allow_judge_url=True)
        outcome = await run_suite(loaded, progress=False)
        with_probes = srv.calls.total()
        srv.reset()
        bare = await run_suite(
            Suite.from_file(tmp_path / "suite.yaml", allow_judge_url=True), progress=False, canaries=False
        )
        without = srv.calls.total()
    (probe,) = outcome.canaries
    assert probe.judge == spec and probe.passed and probe.usage.calls == 2
    assert with_probes == without + 2 and bare.canaries == []
    assert outcome.judge_usage.calls == bare.judge_usage.calls + 2  # in the judge's usage, in no case
    assert outcome.cases[0].results[0].score == bare.cases[0].results[0].score


@pytest.mark.once  # a child pytest (~40 s) over nothing Python-version specific: main Python only
def test_the_pytest_plugin_fails_a_case_whose_judge_is_not_reading(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    write_evals(pytester.path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(pytester.path))
    with FakeLLMServer(answer="schema") as srv:
        monkeypatch.setenv("JUDGE", f"openai:gpt-4o-mini@{srv.openai_base_url}")
        gated = pytester.runpytest_subprocess("eval_rag.py", "-p", "no:asyncio")
        off = pytester.runpytest_subprocess("eval_rag.py", "-p", "no:asyncio", "--ragmetrics-no-judge-gate")
    gated.assert_outcomes(failed=1)
    assert "is not reading its inputs" in gated.stdout.str()
    assert "--ragmetrics-no-judge-gate" in gated.stdout.str()
    off.assert_outcomes(failed=1)  # nothing scored, as before the gate; the gate's line is gone
    assert "is not reading its inputs" not in off.stdout.str() and "nothing scored" in off.stdout.str()
    bad = pytester.runpytest_subprocess("eval_rag.py", "--ragmetrics-judge-health-min", "2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
