"""Offline answers for the model-graded evaluators (llm_judge, llm_rubric, g_eval).

These are plain lexical stand-ins, not judgement: a rating is the content-word overlap of the output
with what it is graded against (the expected answer for llm_judge; the rubric or criteria text
otherwise). They exist so that suites and tests run with no key, and every reason says what it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragmetrics.text import content_tokens, split_sentences, stems, tokenize

__all__ = ["TASKS", "answer_grading"]

_PLACEHOLDER = re.compile(r"\{\{\s*(output|input)\s*\}\}")


def _bag(text: str) -> set[str]:
    return set(stems(content_tokens(tokenize(_PLACEHOLDER.sub(" ", text or "")))))


def _f1(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    common = len(a & b)
    return 0.0 if common == 0 else 2 * common / (len(a) + len(b))


def _recall(wanted: set[str], found: set[str]) -> float:
    return len(wanted & found) / len(wanted) if wanted else 0.0


def _llm_judge(v: Mapping[str, Any]) -> dict[str, Any]:
    out = _bag(str(v.get("prediction") or ""))
    ref = str(v.get("reference") or "")
    if ref.strip():
        sim = _f1(out, _bag(ref))
        basis = "the expected answer"
    else:
        sim = _recall(_bag(str(v.get("input") or "")), out)
        basis = "the input"
    score = round(10 * sim, 1)
    return {"score": score, "reasoning": f"Offline heuristic: {sim:.0%} content-word overlap with {basis}."}


def _rubric(v: Mapping[str, Any]) -> dict[str, Any]:
    sim = _recall(_bag(str(v.get("rubric") or "")), _bag(str(v.get("output") or "")))
    return {
        "score": round(sim, 4),
        "passed": sim >= 0.5,
        "reason": f"Offline heuristic: the output contains {sim:.0%} of the rubric's content words.",
    }


def _steps(v: Mapping[str, Any]) -> dict[str, Any]:
    criteria = [s.strip() for s in split_sentences(str(v.get("criteria") or "")) if s.strip()]
    steps = [f"Check the output against: {c}" for c in criteria[:6]] or ["Read the criteria."]
    steps.append("Rate 0-10 by how much of the criteria the output meets.")
    return {"steps": steps}


def _g_eval(v: Mapping[str, Any]) -> dict[str, Any]:
    sim = _recall(_bag(str(v.get("criteria") or "")), _bag(str(v.get("output") or "")))
    score = round(10 * sim)
    return {
        "score": score,
        "passed": score >= 5,
        "reason": f"Offline heuristic: the output contains {sim:.0%} of the criteria's content words.",
    }


TASKS = {
    "llm_judge.grade": _llm_judge,
    "llm_rubric.grade": _rubric,
    "g_eval.steps": _steps,
    "g_eval.grade": _g_eval,
}
"""Grading task -> its offline answer."""


def answer_grading(task: str, variables: Mapping[str, Any]) -> dict[str, Any] | None:
    """The offline answer to a grading task, or None if the task is not one of :data:`TASKS`."""
    handler = TASKS.get(task)
    return None if handler is None else handler(variables)
