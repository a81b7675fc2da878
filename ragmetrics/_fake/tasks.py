"""Which ragmetrics task a request stands for, its variables as read from the prompt, its default answer.

The response schema's name (tool, function or ``json_schema`` name, or the schema's title in JSON
modes) names the task (``ClaimExtraction`` -> ``claims.extract``); a schema sent without a name is
recognised by its field names. The variables are read back from the rendered user message, and
``ragmetrics.judge.offline.judge.answer(task, variables)`` gives the default answer.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from ragmetrics._fake.wire import Call
from ragmetrics.metrics.claims.schemas import ClaimExtraction, ClaimVerification
from ragmetrics.metrics.conversation.judgements import read_transcript
from ragmetrics.metrics.conversation.schemas import (
    CompletenessJudgement,
    KnowledgeRetentionJudgement,
    TaskCompletionJudgement,
)
from ragmetrics.metrics.evaluators.rubric import (
    EvaluationSteps,
    GEvalGrade,
    JudgeRating,
    RubricGrade,
)
from ragmetrics.prompting import parse_blocks, parse_numbered_blocks, parse_numbered_lines
from ragmetrics.testset.records import GeneratedItem

__all__ = ["TASKS", "Answerer", "Task", "offline_answer", "task_for"]

Answerer = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Task:
    """A ragmetrics task the fake server answers by default, and how it recognises the task."""

    name: str
    """The task name (``claims.extract``)."""
    read: Callable[[Sequence[str]], dict[str, Any] | None]
    """Reads the task's variables back from the user messages (None if they are not there)."""
    model: type[BaseModel]
    """The response model; its JSON schema's property names recognise a schema sent without a name
    or title (fields left out of the schema, such as ``repairs``, do not count)."""


def _block_value(text: str | None) -> str | None:
    """A leaf block's raw value: unescaped, and None for the ``(none)`` that ``render`` writes for None.

    ``parse_blocks`` returns bodies as rendered (escaped), so they are unescaped here.
    """
    if text is None:
        return None
    text = html.unescape(text)
    return None if text == "(none)" else text


def _extract_variables(user_texts: Sequence[str]) -> dict[str, Any] | None:
    for text in user_texts:
        blocks = parse_blocks(text)
        if "answer" in blocks:
            return {
                "question": _block_value(blocks.get("question")),
                "answer": _block_value(blocks["answer"]) or "",
            }
    return None


def _verify_variables(user_texts: Sequence[str]) -> dict[str, Any] | None:
    for text in user_texts:
        if "<claims>" in text:
            blocks = parse_blocks(text)
            found: dict[str, Any] = {
                "claims": _claims(blocks, "claims", text, "claim"),
                "contexts": parse_numbered_blocks(text, "context"),
            }
            if "<reference_claims>" in text:  # a joint prompt: the reference, the per-context part
                found["reference_claims"] = _claims(blocks, "reference_claims", text, "reference_claim")
                for name in ("question", "answer", "reference"):
                    found[name] = _block_value(blocks.get(name))
                found["per_context"] = 2 if found["question"] is not None else 1
            return found
    return None


def _claims(blocks: Mapping[str, str], name: str, text: str, tag: str) -> list[str]:
    """A block's claims: numbered lines (``claims/verify.v3`` on), else numbered blocks (earlier)."""
    lines = parse_numbered_lines(blocks.get(name, ""))
    return lines or parse_numbered_blocks(text, tag)


def _blocks_reader(**names: str) -> Callable[[Sequence[str]], dict[str, Any] | None]:
    """Reads variables from leaf blocks: ``variable=block tag``; the first block must be present."""
    first = next(iter(names.values()))

    def read(user_texts: Sequence[str]) -> dict[str, Any] | None:
        for text in user_texts:
            blocks = parse_blocks(text)
            if first in blocks:
                return {var: _block_value(blocks.get(tag)) or "" for var, tag in names.items()}
        return None

    return read


def _generate_reader(user_texts: Sequence[str]) -> dict[str, Any] | None:
    for text in user_texts:
        if "<passages>" in text:
            blocks = parse_blocks(text)
            return {
                "kind": _block_value(blocks.get("kind")) or "single_hop",
                "style": _block_value(blocks.get("style")) or "plain",
                "headings": parse_numbered_blocks(text, "heading"),
                "passages": parse_numbered_blocks(text, "passage"),
            }
    return None


def _transcript_reader(user_texts: Sequence[str]) -> dict[str, Any] | None:
    """A conversation-level prompt's messages (and goal, for task completion), read back."""
    for text in user_texts:
        if "<messages>" in text:
            found: dict[str, Any] = {"messages": read_transcript(text)}
            blocks = parse_blocks(text)
            if "goal" in blocks:
                found["goal"] = _block_value(blocks["goal"])
            return found
    return None


def _steps_reader(user_texts: Sequence[str]) -> dict[str, Any] | None:
    found = _blocks_reader(criteria="criteria", steps="steps", input="input", output="output")(user_texts)
    if found is not None:
        found["steps"] = [s for s in found["steps"].splitlines() if s.strip()]
    return found


TASKS: Mapping[str, Task] = MappingProxyType(
    {
        task.model.__name__: task
        for task in (
            Task("claims.extract", _extract_variables, ClaimExtraction),
            Task("claims.verify", _verify_variables, ClaimVerification),
            Task(
                "llm_judge.grade",
                _blocks_reader(prediction="response", input="input", reference="reference"),
                JudgeRating,
            ),
            Task(
                "llm_rubric.grade",
                _blocks_reader(rubric="rubric", input="input", output="output"),
                RubricGrade,
            ),
            Task("g_eval.steps", _blocks_reader(criteria="criteria"), EvaluationSteps),
            Task("g_eval.grade", _steps_reader, GEvalGrade),
            Task("testset.generate", _generate_reader, GeneratedItem),
            Task("conversation.retention", _transcript_reader, KnowledgeRetentionJudgement),
            Task("conversation.completeness", _transcript_reader, CompletenessJudgement),
            Task("conversation.task", _transcript_reader, TaskCompletionJudgement),
        )
    }
)
"""Response schema name -> the ragmetrics task and how to read its variables back from the prompt."""


def task_for(call: Call) -> Task | None:
    """The task a request's response schema stands for: by name, else by its field names."""
    if call.schema is not None:
        return TASKS.get(call.schema)
    if call.fields:
        for task in TASKS.values():
            if call.fields == frozenset(task.model.model_json_schema().get("properties", ())):
                return task
    return None


def offline_answer(task: str, variables: Mapping[str, Any]) -> Mapping[str, Any]:
    """The offline judge's answer to ``task`` (the default answerer).

    Test set generation is answered by the extractive generator (questions built from the passages' own
    sentences).
    """
    if task == "testset.generate":
        from ragmetrics.testset.extractive import answer

        return answer(variables)
    from ragmetrics.judge.offline import (
        judge as offline,  # lazy: written in parallel, and heavier than this module
    )

    return offline.answer(task, variables)
