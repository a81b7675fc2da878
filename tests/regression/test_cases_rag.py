"""Eval cases returning the retrieval and reference metrics (issue 13): snapshots and compare treat the
new names like faithfulness: each is a named metric, saved per sample, compared with a p-value, and a
drop in one of them is one regression named after it. Run for real through ``ragmetrics test``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from ragmetrics.metrics.claims.context_recall import ContextRecallMetric
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.regression.case_result import judge_value

NEW = ["context_recall", "context_precision", "context_relevancy", "answer_correctness"]

# Six rows; RETRIEVAL=bad swaps each row's supporting context for a distractor (retrieval broke).
CASE = """
import os
from ragmetrics import EvaluationPipeline
from ragmetrics.regression.cases import eval_case

CITIES = [("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"),
          ("Portugal", "Lisbon"), ("Austria", "Vienna")]

@eval_case
async def eval_retrieval():
    bad = os.environ.get("RETRIEVAL") == "bad"
    rows = []
    for country, city in CITIES:
        fact = f"{city} is the capital of {country}."
        support = "Bananas are yellow." if bad else fact
        rows.append({"id": country, "question": f"What is the capital of {country}?", "answer": fact,
                     "contexts": [support, "The sky is blue."], "reference": fact})
    metrics = ["context_recall", "context_precision", "context_relevancy", "answer_correctness"]
    pipeline = EvaluationPipeline(metrics, progress=False)
    return await pipeline.evaluate(rows)
"""


def run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "RAGMETRICS_JUDGE": "offline", **env},
        check=False,
    )


def test_a_drop_in_context_recall_is_one_regression_named_after_it(tmp_path: Path) -> None:
    (tmp_path / "eval_rag.py").write_text(textwrap.dedent(CASE), encoding="utf-8")
    saved = run(tmp_path, "test", "eval_rag.py", "--save", "v1")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    snapshot = json.loads((tmp_path / ".ragmetrics_evals" / "v1.json").read_text())
    (result,) = snapshot["results"]
    assert set(result["metrics"]) == set(NEW)
    assert len(result["samples"]) == 6 and all(set(s["scores"]) == set(NEW) for s in result["samples"])

    out = run(
        tmp_path,
        *("test", "eval_rag.py", "--compare", "v1", "--fail-on-regression", "--json", "c.json"),
        RETRIEVAL="bad",
    )
    assert out.returncode == 1, out.stdout + out.stderr
    report = json.loads((tmp_path / "c.json").read_text())
    regressed = {r["metric"] for r in report["regressions"]["items"]}
    assert "context_recall" in regressed and "answer_correctness" not in regressed  # the answer held
    assert "score" not in regressed  # one drop counted under the metric that fell, not again as score
    assert "eval_rag.py::eval_retrieval.context_recall" in out.stdout


async def test_judge_value_keeps_each_new_metric_and_names_the_claim_that_failed(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"r{i}",
            "question": "What is the capital of France?",
            "answer": "Paris is the capital of France.",
            "contexts": ["Paris is the capital of France." if i else "Bananas are yellow."],
            "reference": "Paris is the capital of France.",
        }
        for i in range(3)
    ]
    recall = ContextRecallMetric(llm="offline", cache=False)
    results = await EvaluationPipeline([recall], progress=False).evaluate(rows)
    verdict = judge_value(list(results), name="case", elapsed_ms=1.0, min_score=0.99)
    assert verdict.metrics["context_recall"] == sum(r.context_recall for r in results) / 3
    assert [s.scores["context_recall"] for s in verdict.samples] == [r.context_recall for r in results]
    (violation,) = verdict.violations
    assert "worst sample 'r0'" in violation.message and "context_recall claim" in violation.message
