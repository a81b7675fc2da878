"""Eval cases over conversations (issue 41): a case returns the records of a conversation run, and the
snapshot keeps every turn and every conversation's own record with the metrics that score it; a turn
that goes wrong is one regression named after its metric. Run for real through ``ragmetrics test``.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ragmetrics.metrics import metric_from_name
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.regression.case_result import judge_value
from tests.regression.test_cases_rag import run

# Four chats of two turns; TURN=bad makes every second answer contradict its context.
CASE = """
import os
from ragmetrics import EvaluationPipeline
from ragmetrics.regression.cases import eval_case

CITIES = [("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid")]

@eval_case
async def eval_chats():
    bad = os.environ.get("TURN") == "bad"
    chats = []
    for country, city in CITIES:
        fact = f"{city} is the capital of {country}."
        river = f"{city} lies on a river." if not bad else f"{city} lies on no river."
        chats.append({"id": country, "messages": [
            {"role": "user", "content": f"What is the capital of {country}?"},
            {"role": "assistant", "content": fact, "contexts": [fact]},
            {"role": "user", "content": "Does it lie on a river?"},
            {"role": "assistant", "content": river, "contexts": [f"{city} lies on a river."]}]})
    pipeline = EvaluationPipeline(["faithfulness", "knowledge_retention"], progress=False)
    return list(await pipeline.evaluate(chats))
"""


def test_a_conversation_case_is_saved_per_turn_and_a_bad_turn_is_one_regression(tmp_path: Path) -> None:
    (tmp_path / "eval_chats.py").write_text(textwrap.dedent(CASE), encoding="utf-8")
    saved = run(tmp_path, "test", "eval_chats.py", "--save", "v1")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    (result,) = json.loads((tmp_path / ".ragmetrics_evals" / "v1.json").read_text())["results"]
    assert set(result["metrics"]) == {"faithfulness", "knowledge_retention"}
    samples = {s["id"]: s["scores"] for s in result["samples"]}
    assert len(samples) == 12  # 4 conversations x (2 turns + their own record)
    assert set(samples["France#turn1"]) == {"faithfulness"} and set(samples["France"]) == {
        "knowledge_retention"
    }

    out = run(
        tmp_path,
        *("test", "eval_chats.py", "--compare", "v1", "--fail-on-regression", "--json", "c.json"),
        TURN="bad",
    )
    assert out.returncode == 1, out.stdout + out.stderr
    report = json.loads((tmp_path / "c.json").read_text())
    assert {r["metric"] for r in report["regressions"]["items"]} == {"faithfulness"}
    assert "eval_chats.py::eval_chats.faithfulness" in out.stdout


async def test_a_conversation_level_metric_is_not_unscored_on_the_turns() -> None:
    answer = {"role": "assistant", "content": "Rome is in Italy.", "contexts": ["Rome is in Italy."]}
    chat = {"id": "c", "messages": [{"role": "user", "content": "Where is Rome?"}, answer]}
    metrics = [
        metric_from_name(name, llm="offline", cache=False) for name in ("faithfulness", "task_completion")
    ]
    results = await EvaluationPipeline(metrics, progress=False, canaries=False).evaluate([chat])
    verdict = judge_value(list(results), name="case", elapsed_ms=1.0)
    assert verdict.passed, [v.message for v in verdict.violations]
    assert "no score" not in str(verdict.details.get("note", ""))
    assert [sorted(s.scores) for s in verdict.samples] == [["faithfulness"], ["task_completion"]]
