"""Hostile input to the regression gate: `ragmetrics test` suites, JUnit regression cases, plugin options.

Every probe runs the real CLI (or pytest) in a subprocess; the one that could eat memory runs under
an address-space limit, so a regression fails the test instead of the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 1_500_000_000


def run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    return subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        preexec_fn=limit,
        check=False,
    )


def test_a_yaml_alias_bomb_given_to_ragmetrics_test_is_refused_under_a_memory_limit(tmp_path):
    levels = "".join(f"      k{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9))
    (tmp_path / "bomb.yaml").write_text(
        "cases:\n  - id: bomb\n    input: hi\n    output: '{}'\n    expected:\n"
        "      k0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        f"{levels}    evaluators: [json_match]\n"
    )
    out = run(tmp_path, "test", "bomb.yaml", "--junit-xml", "bomb.xml")
    assert out.returncode == 1, out.stderr[-2000:]
    assert "bomb.yaml: YAML aliases expand this document" in out.stdout
    suite = ET.parse(tmp_path / "bomb.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1"


CONTROL = """
import os
from ragmetrics.regression.cases import eval_case

@eval_case
def eval_x():
    value = float(os.environ.get("V", "0.9"))
    return {"score": value, "metrics": {"m\\x1b[2J\\x00<&>]]>": value}}
"""


def test_a_regression_on_a_metric_named_with_control_and_xml_characters_stays_parseable(tmp_path):
    (tmp_path / "eval_hostile.py").write_text(textwrap.dedent(CONTROL))
    assert run(tmp_path, "test", "eval_hostile.py", "--save", "v1").returncode == 0
    out = run(
        tmp_path,
        *("test", "eval_hostile.py", "--compare", "v1", "--fail-on-regression", "--junit-xml", "j.xml"),
        V="0.5",
    )
    assert out.returncode == 1
    assert "\x1b" not in out.stdout and "\x00" not in out.stdout
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    names = [
        c.get("name", "") for c in suite.iter("testcase") if c.get("classname") == "ragmetrics.regressions"
    ]
    assert len(names) == 1 and "\\x1b" in names[0] and "<&>]]>" in names[0]


@pytest.mark.parametrize("name", ["../escape", "/etc/passwd", "a/b", "con"])
def test_the_plugin_refuses_a_snapshot_name_that_would_leave_the_store(pytester, name):
    pytester.makepyfile(
        eval_ok="from ragmetrics.regression.cases import eval_case\n\n"
        "@eval_case\ndef eval_a():\n    return {'score': 1.0}\n"
    )
    result = pytester.runpytest_subprocess("eval_ok.py", "--ragmetrics-save", name)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid snapshot name*"])
    assert not list(pytester.path.rglob("*.json"))
