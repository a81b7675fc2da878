"""`ragmetrics test` run as a real subprocess: discovery, verdicts, outputs, snapshots, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

EVALS = """
import asyncio
import pathlib
from ragmetrics.regression.cases import eval_case

pathlib.Path("ran.marker").write_text("the eval cases were imported")

@eval_case(min_score=0.8, max_cost_usd=0.05, max_latency_ms=2000, tags=["qa", "rag"])
async def eval_summarization():
    await asyncio.sleep(0.01)
    return {"score": 0.85, "cost_usd": 0.02, "latency_ms": 1200}

@eval_case(min_score=0.9, tags=["retrieval"])
def eval_retrieval():
    return {"score": 0.92}

@eval_case(tags=["slow"])
def eval_untagged_bound():
    return {"score": 0.7}
"""

FAILING = """
from ragmetrics.regression.cases import eval_case

@eval_case(min_score=0.9, max_cost_usd=0.01)
def eval_too_low():
    return {"score": 0.5, "cost_usd": 0.02}
"""

SAMPLED = """
import os
import random
from ragmetrics.regression.cases import eval_case

@eval_case
def eval_sampled():
    truth = random.Random(0)  # the same 40 questions every run
    noise = random.Random(int(os.environ.get("SEED", "1")))  # judged with fresh noise each run
    drop = float(os.environ.get("DROP", "0"))
    scores = [min(1.0, max(0.0, truth.uniform(0.4, 0.9) + noise.gauss(0, 0.1) - drop)) for _ in range(40)]
    return {"score": sum(scores) / 40, "latency_ms": 100,
            "samples": [{"id": f"q{i}", "score": s} for i, s in enumerate(scores)]}
"""


def ragmetrics(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=full_env,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    evals = tmp_path / "tests" / "evals"
    evals.mkdir(parents=True)
    (evals / "eval_basic.py").write_text(textwrap.dedent(EVALS))
    return tmp_path


def add(project: Path, name: str, source: str) -> Path:
    path = project / "tests" / "evals" / name
    path.write_text(textwrap.dedent(source))
    return path


def test_help_is_fast_and_imports_nothing_heavy(tmp_path):
    start = time.perf_counter()
    out = ragmetrics(tmp_path, "--help")
    assert out.returncode == 0 and "test" in out.stdout and "exit codes" in out.stdout
    assert time.perf_counter() - start < 10
    assert ragmetrics(tmp_path, "test", "--help").returncode == 0
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, ragmetrics.cli.app as c; c._build_parser(); "
            "print(sorted(m for m in ('openai', 'instructor', 'anthropic', 'ragmetrics.regression.cases', "
            "'ragmetrics.regression.snapshot') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "[]"


def test_no_command_is_a_usage_error(tmp_path):
    assert ragmetrics(tmp_path).returncode == 2


def test_all_passing_cases_exit_zero_with_a_table(project):
    out = ragmetrics(project, "test", "tests/evals/")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["case", "score", "cost", "latency", "verdict"]
    row = next(line for line in lines if "eval_summarization" in line)
    assert row.split() == [
        "tests/evals/eval_basic.py::eval_summarization",
        "0.850",
        "$0.0200",
        "1,200",
        "ms",
        "PASS",
    ]
    assert "3 passed" in out.stdout


def test_threshold_is_the_min_score_of_cases_that_set_none(project):
    out = ragmetrics(project, "test", "tests/evals", "--threshold", "0.8")
    assert out.returncode == 1
    assert "eval_untagged_bound: FAILED" in out.stdout
    assert "score 0.7 is below min_score 0.8 by 0.1" in out.stdout
    assert "2 passed, 1 failed" in out.stdout


def test_a_failing_case_exits_one_and_says_which_bound_and_by_how_much(project):
    add(project, "eval_fail.py", FAILING)
    out = ragmetrics(project, "test", "tests/evals")
    assert out.returncode == 1
    assert "score 0.5 is below min_score 0.9 by 0.4" in out.stdout
    assert "cost_usd $0.02 exceeds max_cost_usd $0.01 by $0.01 (+100%)" in out.stdout


def test_an_import_error_is_reported_with_its_traceback_and_the_rest_still_run(project):
    add(
        project,
        "eval_broken.py",
        "from ragmetrics.regression.cases import eval_case\nraise RuntimeError('no index')\n",
    )
    out = ragmetrics(project, "test", "tests/evals")
    assert out.returncode == 1
    assert "tests/evals/eval_broken.py: ERROR" in out.stdout
    assert "RuntimeError: no index" in out.stdout and 'eval_broken.py", line 2' in out.stdout
    assert "3 passed, 1 error" in out.stdout


def test_filters_select_cases(project):
    def ran(*args: str) -> list[str]:
        out = ragmetrics(project, "test", "tests/evals", *args)
        assert out.returncode == 0, out.stderr
        return [line.split("::")[1].split()[0] for line in out.stdout.splitlines() if "::" in line]

    assert ran("--tags", "qa,retrieval") == ["eval_summarization", "eval_retrieval"]
    assert ran("--tags", "qa", "--tags", "slow") == ["eval_summarization", "eval_untagged_bound"]
    assert ran("--exclude-tags", "slow") == ["eval_summarization", "eval_retrieval"]
    assert ran("-k", "retrieval or summarization and not rag") == ["eval_retrieval"]


@pytest.mark.parametrize(
    "args",
    [
        ["test"],
        ["test", "missing/"],
        ["test", "tests/evals", "--threshold", "1.5"],
        ["test", "tests/evals", "--threshold", "high"],
        ["test", "tests/evals", "--concurrency", "0"],
        ["test", "tests/evals", "--no-such-flag"],
        ["test", "tests/evals", "--compare", "v9"],
        ["test", "tests/evals", "--fail-on-regression"],
        ["test", "tests/evals", "--save", "../outside"],
        ["test", "tests/evals", "--alpha", "0"],
        ["test", "tests/evals", "-k", "a and"],
        ["test", "tests/evals", "--tags", "nothing-has-this"],
        ["test", "tests/evals", "--regression-threshold", "latency_ms=0.5"],
    ],
)
def test_usage_errors_exit_two_before_any_case_runs(project, args):
    out = ragmetrics(project, *args)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.strip()
    if "--tags" not in args:
        assert not (project / "ran.marker").exists()
    assert not (project / "outside.json").exists()


def test_junit_xml_and_json_outputs(project):
    add(project, "eval_fail.py", FAILING)
    out = ragmetrics(
        project, "test", "tests/evals", "--junit-xml", "reports/junit.xml", "--json", "reports/run.json"
    )
    assert out.returncode == 1
    suite = ET.parse(project / "reports" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "0")
    failed = next(c for c in suite.iter("testcase") if c.get("name") == "eval_too_low")
    assert failed.get("classname") == "tests.evals.eval_fail"
    failure = failed.find("failure")
    assert failure is not None and "below min_score 0.9" in failure.get("message", "")
    props = {p.get("name"): p.get("value") for p in failed.iter("property")}
    assert props["score"] == "0.5" and props["cost_usd"] == "0.02"

    data = json.loads((project / "reports" / "run.json").read_text())
    assert data["exit_code"] == 1 and data["summary"] == {"passed": 3, "failed": 1, "error": 0}
    by_name = {c["name"].split("::")[1]: c for c in data["cases"]}
    assert by_name["eval_too_low"]["violations"][0]["bound"] == "min_score"
    assert by_name["eval_summarization"]["latency_ms"] == 1200.0


def test_save_then_compare_gates_on_regressions(project, tmp_path):
    assert ragmetrics(project, "test", "tests/evals", "--save", "v1.0").returncode == 0
    assert (project / ".ragmetrics_evals" / "v1.0.json").exists()
    same = ragmetrics(project, "test", "tests/evals", "--compare", "v1.0", "--fail-on-regression")
    assert same.returncode == 0, same.stdout
    assert "No regressions." in same.stdout

    evals = project / "tests" / "evals" / "eval_basic.py"
    evals.write_text(
        evals.read_text().replace('"score": 0.85, "cost_usd": 0.02', '"score": 0.81, "cost_usd": 0.03')
    )
    report_only = ragmetrics(project, "test", "tests/evals", "--compare", "v1.0")
    assert report_only.returncode == 0  # cases pass their own bounds; regressions are reported only
    assert "REGRESSED" in report_only.stdout
    gated = ragmetrics(project, "test", "tests/evals", "--compare", "v1.0", "--fail-on-regression")
    assert gated.returncode == 1
    assert "2 regressions: tests/evals/eval_basic.py::eval_summarization.score, " in gated.stdout
    loose = ragmetrics(
        project,
        "test",
        "tests/evals",
        "--compare",
        "v1.0",
        "--fail-on-regression",
        "--regression-threshold",
        "score=-0.1",
        "--regression-threshold",
        "cost_usd=none",
    )
    assert loose.returncode == 0, loose.stdout


def test_snapshot_dir_is_configurable(project):
    assert (
        ragmetrics(project, "test", "tests/evals", "--save", "v1.0", "--snapshot-dir", "my_evals").returncode
        == 0
    )
    assert (project / "my_evals" / "v1.0.json").exists()
    assert ragmetrics(project, "test", "tests/evals", "--compare", "v1.0").returncode == 2
    assert (
        ragmetrics(
            project, "test", "tests/evals", "--compare", "v1.0", "--snapshot-dir", "my_evals"
        ).returncode
        == 0
    )


def test_alpha_requires_significance_for_regressions_backed_by_samples(project):
    (project / "tests" / "evals" / "eval_basic.py").unlink()
    add(project, "eval_sampled.py", SAMPLED)
    assert ragmetrics(project, "test", "tests/evals", "--save", "base").returncode == 0
    small = {
        "DROP": "0.03",
        "SEED": "13",
    }  # a 3-point drop on 40 samples with 0.15 noise: past the 2% threshold, not significant
    noisy = ragmetrics(project, "test", "tests/evals", "--compare", "base", "--fail-on-regression", env=small)
    assert noisy.returncode == 1
    tested = ragmetrics(
        project,
        "test",
        "tests/evals",
        "--compare",
        "base",
        "--fail-on-regression",
        "--alpha",
        "0.05",
        env=small,
    )
    assert tested.returncode == 0, tested.stdout
    assert "regressed (not significant)" in tested.stdout
    real = ragmetrics(
        project,
        "test",
        "tests/evals",
        "--compare",
        "base",
        "--fail-on-regression",
        "--alpha",
        "0.05",
        env={"DROP": "0.10", "SEED": "13"},
    )
    assert real.returncode == 1 and "REGRESSED" in real.stdout


def test_a_file_given_explicitly_runs_whatever_its_name(project):
    path = project / "checks.py"
    path.write_text(
        textwrap.dedent(FAILING).replace('"score": 0.5, "cost_usd": 0.02', '"score": 0.95, "cost_usd": 0')
    )
    out = ragmetrics(project, "test", "checks.py")
    assert out.returncode == 0 and "checks.py::eval_too_low" in out.stdout


def test_the_console_script_is_installed(project):
    script = Path(sys.executable).with_name("ragmetrics")
    if not script.exists():
        pytest.skip("console script not installed next to this interpreter")
    out = subprocess.run(
        [str(script), "test", "tests/evals"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
