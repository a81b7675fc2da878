"""The pytest plugin, driven through pytester: collection, verdicts, and leaving ordinary tests alone."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ragmetrics import pytest_plugin
from ragmetrics.regression import cases

pytest_plugins = ["pytester"]

EVALS = """
import asyncio
from ragmetrics.regression.cases import eval_case

@eval_case(min_score=0.8, max_cost_usd=0.05, max_latency_ms=2000, tags=["qa", "rag"])
async def eval_summarization():
    await asyncio.sleep(0.01)
    return {"score": 0.85, "cost_usd": 0.02, "latency_ms": 1200}

@eval_case(min_score=0.9)
def eval_retrieval():
    return {"score": 0.92}

@eval_case(min_score=0.9, max_cost_usd=0.01, tags=["slow"])
async def eval_too_low():
    return {"score": 0.5, "cost_usd": 0.02}

@eval_case
def eval_raises():
    raise RuntimeError("vector store unreachable")

@eval_case
def eval_wrong_shape():
    return 0.9

@eval_case
def eval_plain():
    return {"score": 0.7}

def helper_not_a_case():
    raise AssertionError("never collected")
"""

PASSED = {"eval_summarization", "eval_retrieval", "eval_plain"}
FAILED = {"eval_too_low", "eval_raises", "eval_wrong_shape"}


@pytest.fixture
def evals(pytester: pytest.Pytester) -> pytest.Pytester:
    # pytest-asyncio warns (an error here) when its loop scope is unset; users' projects set it or not
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.mkpydir("pkg")
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "eval_demo.py").write_text(textwrap.dedent(EVALS))
    return pytester


def outcomes(recorder: pytest.HookRecorder) -> tuple[set[str], set[str]]:
    reports = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    passed = {r.nodeid.split("::")[-1] for r in reports if r.passed}
    failed = {r.nodeid.split("::")[-1] for r in reports if r.failed}
    return passed, failed


def test_eval_cases_become_items_with_the_cli_verdicts(evals):
    result = evals.inline_run("evals", "-p", "no:asyncio")
    assert outcomes(result) == (PASSED, FAILED)
    result.assertoutcome(passed=3, failed=3)


def test_failure_messages_show_values_bounds_and_excess(evals):
    result = evals.runpytest("evals", "-p", "no:asyncio")
    text = result.stdout.str()
    assert "score 0.5 (min_score 0.9), cost_usd $0.02 (max $0.01)" in text
    assert "score 0.5 is below min_score 0.9 by 0.4" in text
    assert "cost_usd $0.02 exceeds max_cost_usd $0.01 by $0.01 (+100%)" in text
    assert "RuntimeError: vector store unreachable" in text and "in eval_raises" in text
    assert "returned float 0.9" in text
    result.stdout.fnmatch_lines(
        ["FAILED evals/eval_demo.py::eval_too_low - score 0.5 is below min_score 0.9*"]
    )
    result.stdout.fnmatch_lines(["*ragmetrics eval cases*", "case*score*cost*latency*verdict"])
    assert result.ret == 1


def test_pytest_and_the_cli_agree(evals):
    cli = subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", "test", "evals", "--json", "run.json", "--threshold", "0.8"],
        cwd=evals.path,
        capture_output=True,
        text=True,
        check=False,
    )
    import json

    cli_verdicts = {
        c["name"].split("::")[1]: c["outcome"] == "passed"
        for c in json.loads((evals.path / "run.json").read_text())["cases"]
    }
    passed, failed = outcomes(evals.inline_run("evals", "--ragmetrics-threshold", "0.8"))
    assert cli_verdicts == {**dict.fromkeys(passed, True), **dict.fromkeys(failed, False)}
    assert cli.returncode == 1 and "eval_plain" in failed


def test_async_cases_run_alongside_pytest_asyncio_in_auto_mode(evals):
    evals.makepyfile(test_ordinary="async def test_async_ordinary():\n    assert True\n")
    result = evals.inline_run("evals", "test_ordinary.py", "-p", "asyncio", "-o", "asyncio_mode=auto")
    passed, failed = outcomes(result)
    assert passed == PASSED | {"test_async_ordinary"} and failed == FAILED


def test_a_bare_run_leaves_eval_files_alone_unless_configured(evals):
    evals.makepyfile(test_ordinary="def test_ordinary():\n    assert True\n")
    result = evals.inline_run()
    result.assertoutcome(passed=1)
    evals.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nragmetrics_evals = always\n")
    result = evals.inline_run("-p", "no:asyncio")
    result.assertoutcome(passed=4, failed=3)
    evals.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nragmetrics_evals = never\n")
    evals.inline_run("evals").assertoutcome()
    evals.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nragmetrics_evals = sometimes\n")
    assert evals.runpytest("evals").ret == pytest.ExitCode.USAGE_ERROR


def test_ordinary_test_modules_are_untouched(evals):
    evals.makepyfile(
        test_mixed="""
        from ragmetrics.regression.cases import eval_case

        @eval_case(min_score=0.99)
        def eval_helper_in_a_test_module():
            return {"score": 0.1}

        def test_uses_it():
            assert eval_helper_in_a_test_module()["score"] == 0.1
        """
    )
    result = evals.inline_run("test_mixed.py")
    result.assertoutcome(passed=1)


def test_marked_test_functions_in_eval_files_are_collected_once(evals):
    (evals.path / "evals" / "eval_dupes.py").write_text(
        textwrap.dedent(
            """
        from ragmetrics.regression.cases import eval_case

        @eval_case(min_score=0.5)
        def test_marked():
            return {"score": 0.6}

        def test_regular():
            assert True
        """
        )
    )
    (evals.path / "evals" / "test_both_eval.py").write_text(
        textwrap.dedent(
            """
        from ragmetrics.regression.cases import eval_case

        @eval_case(min_score=0.5)
        def eval_in_a_file_matching_both_patterns():
            return {"score": 0.6}
        """
        )
    )
    items, _ = evals.inline_genitems("evals/eval_dupes.py", "evals/test_both_eval.py")
    names = [item.name for item in items]
    assert sorted(names) == ["eval_in_a_file_matching_both_patterns", "test_marked", "test_regular"]
    assert type(items[names.index("test_marked")]).__name__ == "EvalCaseItem"
    assert evals.inline_run("evals/eval_dupes.py", "evals/test_both_eval.py").ret == 0


def test_files_that_never_mention_eval_case_are_not_imported(evals):
    (evals.path / "evals" / "eval_script.py").write_text("raise SystemExit('training a model...')\n")
    evals.inline_run("evals", "-p", "no:asyncio").assertoutcome(passed=3, failed=3)


def test_selection_by_tag_keyword_marker_and_node_id(evals):
    assert outcomes(evals.inline_run("evals", "-k", "rag"))[0] == {"eval_summarization"}
    assert outcomes(evals.inline_run("evals", "-k", "slow"))[1] == {"eval_too_low"}
    assert outcomes(evals.inline_run("evals", "-m", "eval_case", "-k", "retrieval"))[0] == {"eval_retrieval"}
    assert outcomes(evals.inline_run("evals/eval_demo.py::eval_retrieval"))[0] == {"eval_retrieval"}


def test_junit_xml_carries_the_values(evals):
    evals.inline_run("evals", "--junit-xml", "junit.xml", "-k", "summarization")
    xml = (evals.path / "junit.xml").read_text()
    assert '<property name="score" value="0.85"' in xml
    assert '<property name="latency_ms" value="1200.0"' in xml


def test_bad_threshold_is_a_usage_error(evals):
    assert evals.runpytest("evals", "--ragmetrics-threshold", "2").ret == pytest.ExitCode.USAGE_ERROR


def test_an_eval_file_that_fails_to_import_is_a_collection_error(evals):
    (evals.path / "evals" / "eval_broken.py").write_text(
        "from ragmetrics.regression.cases import eval_case\nimport nope_xyz\n"
    )
    result = evals.runpytest("evals", "-p", "no:asyncio")
    result.stdout.fnmatch_lines(["*ERROR collecting evals/eval_broken.py*"])
    assert result.ret != 0


def test_the_plugin_is_registered_and_its_patterns_match_discovery(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("ragmetrics")
    assert pytest_plugin._EVAL_FILE_PATTERNS == cases.EVAL_FILE_PATTERNS


def test_loading_the_plugin_imports_no_case_machinery():
    # (what `import ragmetrics` itself costs is the package's business, not the plugin's)
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, ragmetrics.pytest_plugin; print([m for m in ('ragmetrics.regression.cases', "
            "'ragmetrics.regression.case_result', 'ragmetrics.regression.snapshot') if m in sys.modules])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "[]"
