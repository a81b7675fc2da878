"""`ragmetrics test --junit-xml` carries each judge's health as properties of the cases that ran claim
metrics (spans found share, quotes found share, reading rate, re-asks); other cases carry none."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from xml.etree import ElementTree as ET

from ragmetrics.testing import FakeLLMServer

EVALS = """
import os
from importlib import resources

import ragmetrics
from ragmetrics.regression.cases import eval_case

DATA = str(resources.files("ragmetrics") / "data" / "example.jsonl")


@eval_case
def eval_offline():
    return list(ragmetrics.evaluate_sync(DATA, ["faithfulness"], llm="offline", progress=False))


@eval_case
def eval_schema_filler():
    return list(ragmetrics.evaluate_sync(DATA, ["faithfulness"], llm=os.environ["JUDGE"], progress=False))


@eval_case
def eval_plain():
    return {"score": 0.9}
"""


def test_junit_properties_carry_judge_health_per_judge(tmp_path):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "eval_rag.py").write_text(textwrap.dedent(EVALS))
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        env = {**os.environ, "JUDGE": spec, "OPENAI_API_KEY": "test", "RAGMETRICS_CACHE_DIR": str(tmp_path)}
        proc = subprocess.run(
            [sys.executable, "-m", "ragmetrics.cli", "test", "evals", "--junit-xml", "junit.xml"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
    assert (tmp_path / "junit.xml").exists(), proc.stderr
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")}
    props = {n: {p.get("name"): p.get("value") for p in c.iter("property")} for n, c in cases.items()}
    offline = props["eval_offline"]
    assert offline["judge_health[offline].span_rate"] == "1.0"
    assert offline["judge_health[offline].quote_rate"] == "1.0"
    assert offline["judge_health[offline].reading_rate"] == "1.0"
    assert offline["judge_health[offline].reasks"] == "0"
    filler = props["eval_schema_filler"]
    assert float(filler[f"judge_health[{spec}].span_rate"]) < 0.5
    assert int(filler[f"judge_health[{spec}].reasks"]) > 0
    assert not any(k.startswith("judge_health") for k in props["eval_plain"])
