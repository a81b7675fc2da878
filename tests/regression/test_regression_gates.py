"""Regression gates that never lie: `ragmetrics test` and the pytest plugin, run for real in subprocesses.

JUnit, --json, the terminal and the exit code agree; one drop is one regression; latency does not
flap on identical code but a real slowdown is caught when opted in; a missing p-value says why;
nothing scored is a failure; failure messages name the worst sample and its claim; suites run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

pytest_plugins = ["pytester"]

SUITE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "evaluators.md"

# The pytest-plugin tests each run a child pytest (10-50 s apiece) over code with nothing Python-version
# specific in it: `.ci/run` runs them on the main Python only, like Ray and the browser.
ONCE = pytest.mark.once

# One quality score per case, as a pipeline run gives it: `score` aggregates the named metric.
QUALITY = """
import os
from ragmetrics.regression.cases import eval_case

@eval_case
def eval_faithfulness():
    value = float(os.environ.get("FAITH", "0.9"))
    n = int(os.environ.get("SAMPLES", "0"))
    samples = [{"id": f"q{i}", "score": value, "scores": {"faithfulness": value}} for i in range(n)]
    return {"score": value, "metrics": {"faithfulness": value}, "latency_ms": 10, "samples": samples}

@eval_case
def eval_steady():
    return {"score": 0.8, "latency_ms": 10}
"""

# A cheap offline case: the real pipeline and the offline judge, three rows (the first call warms up).
OFFLINE = """
from ragmetrics import EvaluationPipeline, FaithfulnessMetric
from ragmetrics.regression.cases import eval_case

@eval_case(min_score=0.5)
async def eval_offline():
    pipeline = EvaluationPipeline(metrics=[FaithfulnessMetric(llm="offline")])
    return await pipeline.evaluate(
        questions=[f"What is Python? ({i})" for i in range(3)],
        answers=["Python is an interpreted language created in 1991."] * 3,
        contexts=[["Python is an interpreted language created by Guido van Rossum in 1991."]] * 3,
    )
"""

SLEEPY = """
import os
import time
from ragmetrics.regression.cases import eval_case

@eval_case
def eval_sleepy():
    time.sleep(float(os.environ.get("SLEEP_MS", "150")) / 1000)
    return {"score": 0.9}
"""

CONTRADICTED = """
from ragmetrics import EvaluationPipeline, FaithfulnessMetric
from ragmetrics.regression.cases import eval_case

@eval_case(min_score=0.8)
async def eval_contradicted():
    pipeline = EvaluationPipeline(metrics=[FaithfulnessMetric(llm="offline")])
    return await pipeline.evaluate(
        ids=["good", "bad"],
        questions=["What is Python?", "What is Python?"],
        answers=["Python was created in 1991.", "Python is a compiled language."],
        contexts=[["Python is an interpreted language created by Guido van Rossum in 1991."]] * 2,
    )
"""

# Relevancy judges the answer against the question: an empty question is invalid input, never scored.
UNSCORED = """
from ragmetrics import EvaluationPipeline, RelevancyMetric
from ragmetrics.regression.cases import eval_case

@eval_case
async def eval_nothing_scored():
    pipeline = EvaluationPipeline(metrics=[RelevancyMetric(llm="offline")])
    return await pipeline.evaluate(questions=["", " "], answers=["Paris.", "Rome."])
"""


def run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **env},
        check=False,
    )


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def junit_counts(path: Path) -> tuple[int, int, list[ET.Element]]:
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    failing = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    tests, failures = int(suite.get("tests", "-1")), int(suite.get("failures", "-1"))
    assert failures == len(failing) and tests == len(list(suite.iter("testcase")))
    return tests, failures, failing


# -- JUnit, --json, terminal and exit code agree; one drop is one regression --------------------------


def test_a_regressed_run_fails_in_junit_json_and_terminal_alike_and_counts_one_drop_once(tmp_path):
    write(tmp_path, "eval_quality.py", QUALITY)
    assert run(tmp_path, "test", "eval_quality.py", "--save", "v1").returncode == 0
    out = run(
        tmp_path,
        *("test", "eval_quality.py", "--compare", "v1", "--fail-on-regression"),
        *("--junit-xml", "evals.xml", "--json", "evals.json"),
        FAITH="0.6",
    )
    assert out.returncode == 1, out.stdout + out.stderr
    tests, failures, failing = junit_counts(tmp_path / "evals.xml")
    assert (tests, failures) == (3, 1)  # two cases, both passed their bounds; one regression
    assert failing[0].get("name") == "eval_quality.py::eval_faithfulness.faithfulness"
    message = failing[0].find("failure").get("message", "")  # type: ignore[union-attr]
    assert "0.9 -> 0.6" in message and "-33.3%" in message

    data = json.loads((tmp_path / "evals.json").read_text())
    assert data["exit_code"] == 1
    assert data["regressions"]["count"] == 1 and data["regressions"]["gated"] is True
    assert [(r["case"], r["metric"]) for r in data["regressions"]["items"]] == [
        ("eval_quality.py::eval_faithfulness", "faithfulness")
    ]
    assert "1 regression: eval_quality.py::eval_faithfulness.faithfulness" in out.stdout
    assert "regressed (counted as faithfulness)" in out.stdout  # the score row, not counted again


def test_without_fail_on_regression_the_junit_file_stays_green_like_the_exit_code(tmp_path):
    write(tmp_path, "eval_quality.py", QUALITY)
    run(tmp_path, "test", "eval_quality.py", "--save", "v1")
    out = run(tmp_path, "test", "eval_quality.py", "--compare", "v1", "--junit-xml", "e.xml", FAITH="0.6")
    assert out.returncode == 0 and "add --fail-on-regression" in out.stdout
    assert junit_counts(tmp_path / "e.xml")[:2] == (2, 0)


# -- latency gates that do not flap ----------------------------------------------------------------------


def test_identical_code_run_20_times_never_reports_a_latency_regression(tmp_path):
    write(tmp_path, "eval_offline.py", OFFLINE)
    assert run(tmp_path, "test", "eval_offline.py", "--save", "run0").returncode == 0
    for i in range(1, 21):
        out = run(
            tmp_path,
            *("test", "eval_offline.py", "--compare", f"run{i - 1}", "--save", f"run{i}"),
            "--fail-on-regression",
        )
        assert out.returncode == 0, f"pair {i}:\n{out.stdout}{out.stderr}"
        assert "No regressions." in out.stdout
        latency_row = next(
            line for line in out.stdout.splitlines() if re.search(r"::eval_offline\s+latency_ms", line)
        )
        assert latency_row.rstrip().endswith("not gated"), latency_row
    snapshot = json.loads((tmp_path / ".ragmetrics_evals" / "run20.json").read_text())
    result = snapshot["results"][0]
    warm = sorted(s["latency_ms"] for s in result["samples"])[1]
    assert result["latency_ms"] == pytest.approx(warm)  # the median row, not the first call's warm-up


def test_a_real_2x_slowdown_is_caught_when_latency_gating_is_opted_in(tmp_path):
    write(tmp_path, "eval_sleepy.py", SLEEPY)
    assert run(tmp_path, "test", "eval_sleepy.py", "--save", "fast", SLEEP_MS="150").returncode == 0
    slow = ("test", "eval_sleepy.py", "--compare", "fast", "--fail-on-regression")
    opted = run(tmp_path, *slow, "--regression-threshold", "latency_ms=0.5", SLEEP_MS="300")
    assert opted.returncode == 1, opted.stdout
    assert "1 regression: eval_sleepy.py::eval_sleepy.latency_ms" in opted.stdout
    assert run(tmp_path, *slow, SLEEP_MS="300").returncode == 0  # off by default: reported, not gated


# -- say why a statistic is missing ----------------------------------------------------------------------


def test_alpha_with_too_few_pairs_says_why_and_falls_back_to_the_threshold_rule(tmp_path):
    write(tmp_path, "eval_quality.py", QUALITY)
    run(tmp_path, "test", "eval_quality.py", "--save", "v1", SAMPLES="2")
    out = run(
        tmp_path,
        *("test", "eval_quality.py", "--compare", "v1", "--fail-on-regression", "--alpha", "0.05"),
        FAITH="0.6",
        SAMPLES="2",
    )
    assert out.returncode == 1
    assert "p-value needs at least 5 paired samples; this comparison has 2" in out.stdout
    assert "--alpha cannot apply, so the threshold rule (-2%) decides: REGRESSED" in out.stdout
    row = next(line for line in out.stdout.splitlines() if " faithfulness " in line)
    assert " n=2 " in row  # the p column says how many pairs there were instead of a bare '-'


# -- failure messages name the cause; nothing scored fails -----------------------------------------------


def test_a_failed_case_names_its_worst_sample_and_the_claim_that_failed(tmp_path):
    write(tmp_path, "eval_claims.py", CONTRADICTED)
    out = run(tmp_path, "test", "eval_claims.py")
    assert out.returncode == 1
    assert "worst sample 'bad' scored 0" in out.stdout
    assert "faithfulness claim 'Python is a compiled language.' was contradicted" in out.stdout


def test_a_case_whose_metric_scored_nothing_fails_and_says_what_happened(tmp_path):
    write(tmp_path, "eval_unscored.py", UNSCORED)
    out = run(tmp_path, "test", "eval_unscored.py", "--json", "r.json")
    assert out.returncode == 1, out.stdout
    assert "nothing scored: relevancy: 0 of 2 samples scored: invalid_input 2" in out.stdout
    case = json.loads((tmp_path / "r.json").read_text())["cases"][0]
    assert case["outcome"] == "failed" and case["score"] is None


# -- suites from the command line ------------------------------------------------------------------------

SUITE = """
name: checks
cases:
  - id: capital
    input: What is the capital of France?
    expected: Paris
    output: Paris
    evaluators: [exact_match]
  - id: wrong
    input: What is the capital of Spain?
    expected: Madrid
    output: Barcelona
    evaluators: [exact_match, {type: contains, value: Madrid}]
  - id: unscored
    input: Say hello in JavaScript terms
    output: hello
    evaluators:
      - {type: custom, value: "(output) => { throw new Error('grader crashed') }"}
"""


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_yaml_or_json_suite_runs_from_the_command_line(tmp_path, suffix):
    import yaml

    text = textwrap.dedent(SUITE)
    if suffix == ".json":
        text = json.dumps(yaml.safe_load(text))
    (tmp_path / f"checks{suffix}").write_text(text, encoding="utf-8")
    out = run(tmp_path, "test", f"checks{suffix}", "--junit-xml", "s.xml")
    assert out.returncode == 1, out.stderr
    assert "not a Python file" not in out.stderr
    assert re.search(rf"checks{re.escape(suffix)}::capital\s+1\.000 .* PASS", out.stdout)
    assert "exact_match: score 0 did not pass" in out.stdout
    assert "nothing scored: 0 of 1 evaluators produced a score (invalid_input)" in out.stdout
    assert "grader crashed" in out.stdout
    assert junit_counts(tmp_path / "s.xml")[:2] == (3, 2)
    only = run(tmp_path, "test", f"checks{suffix}", "-k", "capital")
    assert only.returncode == 0 and "1 passed" in only.stdout


def test_a_broken_suite_file_is_an_error_naming_the_field(tmp_path):
    (tmp_path / "bad.yaml").write_text("cases:\n  - input: hi\n    evaluators: [no_such_type]\n")
    out = run(tmp_path, "test", "bad.yaml")
    assert out.returncode == 1 and "cases[0].evaluators[0]" in out.stdout


def test_the_docs_suite_example_passes_as_written(tmp_path):
    text = SUITE_PAGE.read_text(encoding="utf-8")
    match = re.search(r"<!-- docs-suite -->\n```yaml\n# (\S+)\n(.*?)```", text, re.DOTALL)
    assert match, "the docs' suite example is marked <!-- docs-suite -->"
    name, body = match.groups()
    (tmp_path / name).write_text(body, encoding="utf-8")
    command = re.search(
        r"<!-- docs-suite -->.*?```bash\n(ragmetrics test [^\n#]*?)\s*(?:#[^\n]*)?\n", text, re.DOTALL
    )
    assert command, "the docs run the suite with a ragmetrics test command"
    out = run(tmp_path, *command.group(1).split()[1:])
    assert out.returncode == 0, out.stdout + out.stderr
    cases = re.findall(r"^  - id: (\S+)", body, re.MULTILINE)
    assert len(cases) == 3 and "faithfulness" in body  # the classic evaluators and a RAG case
    assert f"{len(cases)} passed" in out.stdout


# -- regression gating in pytest too ---------------------------------------------------------------------


@pytest.fixture
def evals(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    write(pytester.path, "eval_quality.py", QUALITY)
    return pytester


@ONCE
def test_the_plugin_saves_compares_and_fails_on_a_regression_like_the_cli(evals, monkeypatch):
    saved = evals.runpytest_subprocess("eval_quality.py", "-p", "no:asyncio", "--ragmetrics-save", "v1")
    assert saved.ret == 0 and (evals.path / ".ragmetrics_evals" / "v1.json").is_file()
    saved.stdout.fnmatch_lines(["*Saved snapshot 'v1'*"])

    monkeypatch.setenv("FAITH", "0.6")
    args = ("eval_quality.py", "-p", "no:asyncio", "--ragmetrics-compare", "v1")
    report = evals.runpytest_subprocess(*args)
    assert report.ret == 0  # compared and shown, not gated
    report.stdout.fnmatch_lines(["*1 regression: eval_quality.py::eval_faithfulness.faithfulness*"])

    gated = evals.runpytest_subprocess(*args, "--ragmetrics-fail-on-regression", "--junitxml", "p.xml")
    assert gated.ret == 1
    gated.stdout.fnmatch_lines(
        [
            "*1 regression against snapshot 'v1'*",
            "*eval_quality.py::eval_faithfulness.faithfulness regressed: 0.9 -> 0.6 (-33.3%)*",
            "*FAILED ragmetrics-regression-gate*",
        ]
    )
    assert junit_counts(evals.path / "p.xml")[:2] == (3, 1)

    cli = run(
        evals.path, "test", "eval_quality.py", "--compare", "v1", "--fail-on-regression", "--json", "c.json"
    )
    assert cli.returncode == 1  # the same verdict, from the same comparison
    items = json.loads((evals.path / "c.json").read_text())["regressions"]["items"]
    assert [(i["case"], i["metric"]) for i in items] == [
        ("eval_quality.py::eval_faithfulness", "faithfulness")
    ]

    monkeypatch.setenv("FAITH", "0.9")
    assert evals.runpytest_subprocess(*args, "--ragmetrics-fail-on-regression").ret == 0


@ONCE
def test_plugin_gating_options_are_checked_up_front(evals):
    missing = evals.runpytest_subprocess("eval_quality.py", "--ragmetrics-compare", "nope")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*no snapshot named 'nope'*"])
    alone = evals.runpytest_subprocess("eval_quality.py", "--ragmetrics-fail-on-regression")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*needs --ragmetrics-compare NAME*"])


@ONCE
def test_nothing_scored_fails_under_the_plugin_too(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    write(pytester.path, "eval_unscored.py", UNSCORED)
    result = pytester.runpytest_subprocess("eval_unscored.py", "-p", "no:asyncio")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*nothing scored: relevancy: 0 of 2 samples scored: invalid_input 2*"])


def test_a_dict_case_whose_named_metric_has_no_score_fails(tmp_path):
    write(
        tmp_path,
        "eval_none.py",
        """
        from ragmetrics.regression.cases import eval_case

        @eval_case
        def eval_half():
            return {"score": 0.8, "metrics": {"faithfulness": 0.8, "relevancy": None}}
        """,
    )
    out = run(tmp_path, "test", "eval_none.py")
    assert out.returncode == 1
    assert "nothing scored for metric(s) relevancy" in out.stdout


WARMING = """
import time
from ragmetrics.regression.cases import eval_case

_calls = []

@eval_case
def eval_warming():
    time.sleep(0.4 if not _calls else 0.01)  # the first call pays a warm-up (imports, a connection)
    _calls.append(1)
    return {"score": 0.9}
"""


def test_warm_latency_leaves_out_the_first_calls_warm_up_and_a_2x_slowdown_is_still_caught(tmp_path):
    write(tmp_path, "eval_warming.py", WARMING)
    cold = run(tmp_path, "test", "eval_warming.py", "--json", "cold.json")
    assert json.loads((tmp_path / "cold.json").read_text())["cases"][0]["latency_ms"] >= 400
    out = run(tmp_path, "test", "eval_warming.py", "--warm-latency", "--json", "warm.json", "--save", "warm")
    assert cold.returncode == out.returncode == 0
    case = json.loads((tmp_path / "warm.json").read_text())["cases"][0]
    assert case["latency_ms"] < 300 and case["details"]["cold_latency_ms"] >= 400

    write(tmp_path, "eval_sleepy.py", SLEEPY)
    gate = ("--warm-latency", "--regression-threshold", "latency_ms=0.5")
    assert (
        run(tmp_path, "test", "eval_sleepy.py", "--warm-latency", "--save", "v1", SLEEP_MS="150").returncode
        == 0
    )
    same = run(
        tmp_path, "test", "eval_sleepy.py", "--compare", "v1", "--fail-on-regression", *gate, SLEEP_MS="150"
    )
    slow = run(
        tmp_path, "test", "eval_sleepy.py", "--compare", "v1", "--fail-on-regression", *gate, SLEEP_MS="300"
    )
    assert (same.returncode, slow.returncode) == (0, 1), same.stdout + slow.stdout


@ONCE
def test_the_plugin_measures_warm_latency_when_asked(pytester):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    write(pytester.path, "eval_warming.py", WARMING)
    result = pytester.runpytest_subprocess("eval_warming.py", "-p", "no:asyncio", "--junitxml", "w.xml")
    warm = pytester.runpytest_subprocess(
        "eval_warming.py", "-p", "no:asyncio", "--ragmetrics-warm-latency", "--junitxml", "w2.xml"
    )
    assert result.ret == warm.ret == 0

    def latency(name: str) -> float:
        props = {
            p.get("name"): p.get("value") for p in ET.parse(pytester.path / name).getroot().iter("property")
        }
        return float(props["latency_ms"] or "nan")

    assert latency("w.xml") >= 400 and latency("w2.xml") < 300


DEAD_JUDGE = """
from ragmetrics import EvaluationPipeline, FaithfulnessMetric
from ragmetrics.regression.cases import eval_case

@eval_case
async def eval_dead_judge():
    judge = "openai:gpt-4o-mini@http://127.0.0.1:9/v1"  # nothing listens on port 9
    pipeline = EvaluationPipeline(metrics=[FaithfulnessMetric(llm=judge)])
    rows = {"questions": ["q1", "q2"], "answers": ["A b.", "C d."], "contexts": [["A b."], ["C d."]]}
    return await pipeline.evaluate(**rows)
"""


def test_a_dead_judge_case_fails_saying_nothing_was_scored_and_why(tmp_path):
    write(tmp_path, "eval_dead.py", DEAD_JUDGE)
    out = run(
        tmp_path, "test", "eval_dead.py", "--max-attempts", "1", "--junit-xml", "d.xml", OPENAI_API_KEY="sk-x"
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "nothing scored: faithfulness: 0 of 2 samples scored: provider_error 2: " in out.stdout
    assert "could not connect to http://127.0.0.1:9/v1" in out.stdout
    assert junit_counts(tmp_path / "d.xml")[:2] == (1, 1)


# -- a baseline case that vanished fails a gating run ------------------------------------------------------


def test_a_renamed_case_fails_the_gate_unless_allowed(tmp_path):
    """Before: rename a case, and `--compare base --fail-on-regression` printed `No regressions.`, exit 0."""
    write(tmp_path, "eval_quality.py", QUALITY)
    assert run(tmp_path, "test", "eval_quality.py", "--save", "base").returncode == 0
    write(tmp_path, "eval_quality.py", QUALITY.replace("def eval_steady", "def eval_steady_v2"))
    gating = ("test", "eval_quality.py", "--compare", "base", "--fail-on-regression")
    out = run(tmp_path, *gating, "--junit-xml", "g.xml")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 case of snapshot 'base' did not run: eval_quality.py::eval_steady " in out.stdout
    tests, failures, failing = junit_counts(tmp_path / "g.xml")
    assert (tests, failures) == (3, 1) and failing[0].get("classname") == "ragmetrics.missing"
    assert run(tmp_path, *gating, "--allow-missing-cases").returncode == 0
    assert run(tmp_path, *gating, "-k", "faithfulness").returncode == 0  # a filtered run left it out
    shown = run(tmp_path, "test", "eval_quality.py", "--compare", "base")
    assert shown.returncode == 0 and "did not run" in shown.stdout and "(not gating)" in shown.stdout


@ONCE
def test_the_plugin_fails_on_a_vanished_case_too(evals):
    assert (
        evals.runpytest_subprocess("eval_quality.py", "-p", "no:asyncio", "--ragmetrics-save", "base").ret
        == 0
    )
    write(evals.path, "eval_quality.py", QUALITY.replace("def eval_steady", "def eval_steady_v2"))
    args = (
        "eval_quality.py",
        "-p",
        "no:asyncio",
        "--ragmetrics-compare",
        "base",
        "--ragmetrics-fail-on-regression",
    )
    gated = evals.runpytest_subprocess(*args)
    assert gated.ret == 1
    gated.stdout.fnmatch_lines(["*1 case of snapshot 'base' did not run: eval_quality.py::eval_steady *"])
    assert evals.runpytest_subprocess(*args, "--ragmetrics-allow-missing-cases").ret == 0
