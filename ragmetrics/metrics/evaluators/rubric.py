"""Model-graded evaluators: llm_judge (Synaptic), llm_rubric and g_eval (Cannonade).

Each builds a :class:`~ragmetrics.judge.base.JudgeRequest` from a versioned prompt file and a pydantic
response schema and asks the (caching) judge; a :class:`~ragmetrics.errors.JudgeError` becomes a result
with its status and no score, never an exception. ``llm_judge`` normalises a 0-10 rating (passes at
0.5; a custom template holds ``{input}``, ``{prediction}`` and ``{reference}``). ``llm_rubric`` returns
a verdict and a score for a plain-language criterion. ``g_eval`` derives evaluation steps from the
criteria (memoised), then grades against them. ``llm_rubric`` and ``g_eval`` replace ``{{output}}``
and ``{{input}}`` in the criterion text; their optional threshold stacks on the verdict.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmetrics._aio import run_sync
from ragmetrics._check import check_option_text
from ragmetrics.errors import ConfigError, JudgeError, JudgeOutputError, shorten
from ragmetrics.judge import Judge, JudgeReply, JudgeRequest, Message
from ragmetrics.judge.base import ModelT
from ragmetrics.judge.metering import note_unclaimed
from ragmetrics.metrics._judged import JudgeHolder
from ragmetrics.metrics.base import Needs
from ragmetrics.metrics.evaluators._rubric_schemas import (
    EvaluationSteps,
    GEvalGrade,
    JudgeRating,
    JudgeReplyText,
    RubricGrade,
    parse_rating,
)
from ragmetrics.metrics.evaluators.base import Evaluator, Scored, judge_failure, package_version
from ragmetrics.prompting import Prompt, Raw, escape, load_prompt, numbered_blocks, render
from ragmetrics.score import MetricResult, Usage, spent_by

__all__ = [
    "EvaluationSteps",
    "GEvalEvaluator",
    "GEvalGrade",
    "JudgeRating",
    "JudgeReplyText",
    "LLMJudgeEvaluator",
    "LLMRubricEvaluator",
    "RubricGrade",
    "parse_rating",
]

LOGIC_VERSION = "1"


# -- shared judge plumbing -------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _check_criterion(text: object, option: str, owner: str) -> str:
    text = check_option_text(text, option, owner)
    unknown = sorted({m.group(1) for m in _PLACEHOLDER.finditer(text)} - {"output", "input"})
    if unknown:
        raise ConfigError(
            f"{owner}: unknown placeholder(s) {', '.join('{{' + u + '}}' for u in unknown)} in the {option}; "
            "use {{output}} and {{input}}"
        )
    return text


def _fill(criterion: str, output: str, input: str) -> Raw:  # noqa: A002
    """The criterion with ``{{output}}``/``{{input}}`` filled in; every part escaped once."""
    values = {"output": output, "input": input}
    parts, last = [], 0
    for match in _PLACEHOLDER.finditer(criterion):
        parts.append(escape(criterion[last : match.start()]))
        parts.append(escape(values[match.group(1)]))
        last = match.end()
    parts.append(escape(criterion[last:]))
    return Raw("".join(parts))


def _fill_plain(criterion: str, output: str, input: str) -> str:  # noqa: A002
    values = {"output": output, "input": input}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], criterion)


def _messages(system: Prompt, user: str) -> tuple[Message, ...]:
    return (Message(role="system", content=system.text.strip()), Message(role="user", content=user))


class _JudgedEvaluator(Evaluator, JudgeHolder):
    """Judge resolution (lazy, cached), sharing with the pipeline, and the sync twin that closes clients."""

    judged = True
    _prompt_ids: tuple[str, ...] = ()
    needs = Needs(judge=True, shares_judge=True)

    def __init__(
        self,
        llm: str | Judge | Any | None,
        *,
        threshold: float | None,
        negate: bool,
        cache: bool | str | Path,
        judge_options: dict[str, Any],
    ) -> None:
        super().__init__(threshold=threshold, negate=negate)
        self._init_judge(self.name, llm, cache, judge_options)

    def evaluate_sync(self, prediction: str, reference: Any = "", input: str = "") -> MetricResult:  # noqa: A002
        """Blocking twin of :meth:`evaluate`; closes the judge's clients and disk cache before returning."""
        return run_sync(self._closing(self.evaluate(prediction, reference, input)))

    def _prompts(self) -> list[Prompt]:
        return [load_prompt(p) for p in self._prompt_ids]

    @property
    def signature(self) -> str:
        """Name, prompt versions and hashes, judge, options, package version."""
        info = self.judge.info
        prompts = ",".join(p.short for p in self._prompts())
        opts = "|".join(f"{k}={v}" for k, v in self._options().items())
        return (
            f"{self.name}|prompts={prompts}|judge={info.spec}|temperature={info.temperature_text}|{opts}"
            f"|ragmetrics={package_version()}"
        )

    def _options(self) -> dict[str, object]:
        return {"threshold": self.threshold, "negate": self.negate}

    async def _ask(self, request: JudgeRequest[ModelT]) -> JudgeReply[ModelT]:
        return await self.judge.complete(request)

    def _reasoning(self, text: str) -> str:
        return f"[offline heuristic judge] {text}" if self.judge.info.heuristic else text


# -- llm_judge -------------------------------------------------------------------------------------

_TEMPLATE_FIELDS = ("input", "prediction", "reference")
_TEMPLATE_SLOT = re.compile(r"\{(input|prediction|reference)\}")


class LLMJudgeEvaluator(_JudgedEvaluator):
    """A judge rates the prediction 0-10 against the reference and input; normalised to 0-1.

    Args:
        llm: A judge spec (``openai:gpt-4o-mini``, ``anthropic:MODEL``, ``offline``, ...), an async
            openai / anthropic SDK client (name its ``model=``), a Judge, or None for the default judge.
        prompt: A custom template holding ``{input}``, ``{prediction}`` and ``{reference}``; the reply
            is parsed for a number between 0 and 10 (None: the default structured prompt).
        threshold: Pass mark on the 0-1 scale (default 0.5).
        negate: Invert the score.
        cache: True for the default disk cache, a folder, or False for memory only.
        **judge_options: Judge settings for spec strings (temperature, timeout_s, ...).

    Raises:
        ConfigError: A template without the three placeholders, a bad threshold or spec.
    """

    name = "llm_judge"

    def __init__(
        self,
        llm: str | Judge | Any | None = None,
        *,
        prompt: str | None = None,
        threshold: float = 0.5,
        negate: bool = False,
        cache: bool | str | Path = True,
        **judge_options: Any,
    ) -> None:
        super().__init__(llm, threshold=threshold, negate=negate, cache=cache, judge_options=judge_options)
        if prompt is not None:
            check_option_text(prompt, "prompt", "llm_judge", expected="a non-empty template string")
            missing = [f"{{{f}}}" for f in _TEMPLATE_FIELDS if f"{{{f}}}" not in prompt]
            if missing:
                raise ConfigError(f"llm_judge: the prompt template must contain {', '.join(missing)}")
            self._template: Prompt | None = Prompt(
                id="llm_judge/custom", text=prompt, sha256=hashlib.sha256(prompt.encode("utf-8")).hexdigest()
            )
            self._prompt_ids = ("llm_judge/custom_system.v1",)
        else:
            self._template = None
            self._prompt_ids = ("llm_judge/system.v1", "llm_judge/grade.v1")

    @classmethod
    def with_prompt(cls, llm: str | Judge | Any | None, template: str, **options: Any) -> LLMJudgeEvaluator:
        """An llm_judge with a custom prompt template (``{input}``, ``{prediction}``, ``{reference}``)."""
        return cls(llm, prompt=template, **options)

    def _prompts(self) -> list[Prompt]:
        prompts = super()._prompts()
        return [*prompts, self._template] if self._template is not None else prompts

    def _request(
        self,
        prediction: str,
        reference: str,
        input: str,  # noqa: A002
    ) -> JudgeRequest[JudgeRating | JudgeReplyText]:
        variables = {"input": input, "prediction": prediction, "reference": reference}
        if self._template is None:
            system, grade = self._prompts()
            return JudgeRequest(
                task="llm_judge.grade",
                prompts=(system, grade),
                messages=_messages(system, render(grade, **variables)),
                response_model=JudgeRating,
                variables=variables,
                version=LOGIC_VERSION,
            )
        system, template = self._prompts()
        user = _TEMPLATE_SLOT.sub(lambda m: variables[m.group(1)], template.text)
        return JudgeRequest(
            task="llm_judge.custom",
            prompts=(system, template),
            messages=_messages(system, user),
            response_model=JudgeReplyText,
            variables={**variables, "template": template.text},
            version=LOGIC_VERSION,
        )

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        info = self.judge.info
        try:
            reply = await self._ask(self._request(prediction, reference, input))
            value = reply.value
            rating: float | None
            if isinstance(value, JudgeRating):
                rating, why = value.score, value.reasoning
            else:
                text = getattr(value, "reply", "")
                rating, why = parse_rating(text), ""
                if rating is None:
                    raise JudgeOutputError(
                        "no number between 0 and 10 in the judge's reply to the llm_judge prompt",
                        last_reply=text,
                        problems=["no rating in 0..10"],
                        provider=info.provider,
                        model=info.model,
                        attempts=reply.usage.calls,
                        usage=reply.usage,
                    )
        except JudgeError as exc:
            return judge_failure(exc, info)
        reasoning = f"LLM judge score: {rating:.1f}/10" + (f". {why}" if why else "")
        return Scored(
            score=rating / 10.0,
            reasoning=self._reasoning(reasoning),
            details={"rating": rating},
            usage=reply.usage,
            judge=info,
        )


# -- llm_rubric ------------------------------------------------------------------------------------


class LLMRubricEvaluator(_JudgedEvaluator):
    """A judge decides whether the output satisfies a criterion written in plain language.

    The judge returns its verdict and a score in [0, 1]; an optional ``threshold`` stacks on top (the
    judge must pass the output *and* score it at least that high). ``{{output}}`` and ``{{input}}`` in
    the rubric are replaced with the output and the case input.

    Raises:
        ConfigError: An empty rubric, an unknown ``{{placeholder}}``, a bad threshold or spec.
    """

    name = "llm_rubric"
    primary_option = "rubric"
    _prompt_ids = ("rubric/system.v1", "rubric/grade.v1")

    def __init__(
        self,
        rubric: str,
        llm: str | Judge | Any | None = None,
        *,
        threshold: float | None = None,
        negate: bool = False,
        cache: bool | str | Path = True,
        **judge_options: Any,
    ) -> None:
        super().__init__(llm, threshold=threshold, negate=negate, cache=cache, judge_options=judge_options)
        self.rubric = _check_criterion(rubric, "rubric", self.name)

    def _options(self) -> dict[str, object]:
        return {"rubric": hashlib.sha256(self.rubric.encode()).hexdigest()[:12], **super()._options()}

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        info = self.judge.info
        system, grade = self._prompts()
        request = JudgeRequest(
            task="llm_rubric.grade",
            prompts=(system, grade),
            messages=_messages(
                system,
                render(grade, rubric=_fill(self.rubric, prediction, input), output=prediction, input=input),
            ),
            response_model=RubricGrade,
            variables={
                "rubric": _fill_plain(self.rubric, prediction, input),
                "output": prediction,
                "input": input,
            },
            version=LOGIC_VERSION,
        )
        try:
            reply = await self._ask(request)
        except JudgeError as exc:
            return judge_failure(exc, info)
        value = reply.value
        verdict = "passes" if value.passed else "fails"
        return Scored(
            score=value.score,
            verdict=value.passed,
            reasoning=self._reasoning(
                f"The judge {verdict} the output (score {value.score:.2f}): {value.reason}"
            ),
            details={"judge_passed": value.passed},
            usage=reply.usage,
            judge=info,
        )


# -- g_eval ----------------------------------------------------------------------------------------


class GEvalEvaluator(_JudgedEvaluator):
    """G-Eval: the judge turns the criteria into evaluation steps, then grades the output against them.

    Two judge calls per output, except that the steps are derived once per criteria and evaluator
    (and the judge cache keeps them across runs); pass ``steps`` to skip the first call. The grade is
    0-10, normalised to 0-1, with the judge's verdict; an optional ``threshold`` stacks on top.

    Raises:
        ConfigError: Empty criteria or steps, an unknown ``{{placeholder}}``, a bad threshold or spec.
    """

    name = "g_eval"
    primary_option = "criteria"
    _prompt_ids = ("g_eval/system.v1", "g_eval/steps.v1", "g_eval/grade.v1")

    def __init__(
        self,
        criteria: str,
        llm: str | Judge | Any | None = None,
        *,
        steps: Sequence[str] | None = None,
        threshold: float | None = None,
        negate: bool = False,
        cache: bool | str | Path = True,
        **judge_options: Any,
    ) -> None:
        super().__init__(llm, threshold=threshold, negate=negate, cache=cache, judge_options=judge_options)
        self.criteria = _check_criterion(criteria, "criteria", self.name)
        self._steps_memo: dict[str, tuple[str, ...]] = {}
        self._inflight: dict[tuple[int, str], asyncio.Future[tuple[str, ...] | None]] = {}
        if steps is not None:
            if (
                isinstance(steps, str)
                or not all(isinstance(s, str) and s.strip() for s in steps)
                or not steps
            ):
                raise ConfigError(
                    f"g_eval: steps must be a non-empty list of non-empty strings, got {steps!r}"
                )
            self._steps_memo[self.criteria] = tuple(s.strip() for s in steps)

    def _options(self) -> dict[str, object]:
        return {"criteria": hashlib.sha256(self.criteria.encode()).hexdigest()[:12], **super()._options()}

    async def steps_for(self, criteria: str) -> tuple[tuple[str, ...], Usage]:
        """The evaluation steps for ``criteria``: memoised; concurrent callers share one judge call.

        Raises:
            JudgeError: The judge failed to produce steps.
        """
        if (memo := self._steps_memo.get(criteria)) is not None:
            return memo, Usage()
        loop = asyncio.get_running_loop()
        key = (id(loop), criteria)
        pending = self._inflight.get(key)
        if pending is not None:
            shared = await asyncio.shield(pending)
            if shared is not None:
                return shared, Usage()
            return await self.steps_for(criteria)  # the leader failed: try again ourselves
        future: asyncio.Future[tuple[str, ...] | None] = loop.create_future()
        self._inflight[key] = future
        try:
            system, steps_prompt, _ = self._prompts()
            reply = await self._ask(
                JudgeRequest(
                    task="g_eval.steps",
                    prompts=(system, steps_prompt),
                    messages=_messages(system, render(steps_prompt, criteria=criteria)),
                    response_model=EvaluationSteps,
                    variables={"criteria": criteria},
                    version=LOGIC_VERSION,
                )
            )
            steps = tuple(reply.value.steps)
            self._steps_memo[criteria] = steps
            future.set_result(steps)
            return steps, reply.usage
        finally:
            if not future.done():
                future.set_result(None)
            del self._inflight[key]

    async def _score(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        info = self.judge.info
        usage = Usage()
        try:
            steps, steps_usage = await self.steps_for(self.criteria)
            usage = usage + steps_usage
            system, _, grade = self._prompts()
            reply = await self._ask(
                JudgeRequest(
                    task="g_eval.grade",
                    prompts=(system, grade),
                    messages=_messages(
                        system,
                        render(
                            grade,
                            criteria=_fill(self.criteria, prediction, input),
                            steps=numbered_blocks("step", list(steps), start=1),
                            input=input,
                            output=prediction,
                        ),
                    ),
                    response_model=GEvalGrade,
                    variables={
                        "criteria": _fill_plain(self.criteria, prediction, input),
                        "steps": list(steps),
                        "input": input,
                        "output": prediction,
                    },
                    version=LOGIC_VERSION,
                )
            )
        except asyncio.CancelledError:  # cut off by a timeout: the steps were paid for all the same
            note_unclaimed(usage)
            raise
        except JudgeError as exc:
            return judge_failure(exc, info, usage=usage + spent_by(exc))
        usage = usage + reply.usage
        value = reply.value
        verdict = "passes" if value.passed else "fails"
        return Scored(
            score=value.score / 10.0,
            verdict=value.passed,
            reasoning=self._reasoning(
                f"G-Eval score {value.score}/10; the judge {verdict} the output: {shorten(value.reason, 600)}"
            ),
            details={"steps": list(steps), "raw_score": value.score, "judge_passed": value.passed},
            usage=usage,
            judge=info,
        )
