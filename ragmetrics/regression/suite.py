"""Evaluator suites: cases with an input, an expected value and several evaluators, loaded from YAML/JSON.

A :class:`Case` holds an input, an expected value and its evaluators, each scored independently; its
``passing`` decides whether ``all`` or ``any`` must pass. A :class:`Suite` is a list of cases, written
in Python or loaded with :meth:`Suite.from_file` (every error names the file and the field). An
evaluator is any name of :data:`ragmetrics.metrics.BUILTIN_METRICS`; the RAG metrics
(:data:`ragmetrics.metrics.RAG_METRICS`) score the output as the answer to ``input`` over
``contexts``, with ``expected`` as the reference. :func:`run_suite` scores the model outputs on the
pipeline's run loop; judge usage is summed apart from the model under test.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from ragmetrics._check import check_int
from ragmetrics.errors import ConfigError, shorten
from ragmetrics.metrics.evaluators.base import Evaluator
from ragmetrics.pipeline.canaries import CanaryResult, run_canaries
from ragmetrics.pipeline.canary_draw import draw_canary
from ragmetrics.pipeline.progress import ProgressBar
from ragmetrics.pipeline.run_loop import run_bounded
from ragmetrics.pipeline.runner import share_judges
from ragmetrics.regression.suite_spec import Case, Check, Passing, Suite
from ragmetrics.sample import Sample
from ragmetrics.score import ErrorRecord, MetricResult, Usage, failure_from

__all__ = ["Case", "CaseOutcome", "Check", "Suite", "SuiteOutcome", "run_suite"]


class CaseOutcome(BaseModel):
    """How one case fared."""

    id: str
    """The case id."""
    passed: bool
    """The verdict under the case's passing logic."""
    passing: Passing
    """``all`` or ``any``."""
    output: str | None
    """The model output that was scored (None when there was none)."""
    results: list[MetricResult] = Field(default_factory=list)
    """One result per evaluator, in the case's order."""
    errors: list[str] = Field(default_factory=list)
    """Evaluators or outputs that failed with an exception (the case then fails), one line each."""
    failures: list[ErrorRecord] = Field(default_factory=list)
    """The failure records behind ``errors``, in the same order (type, message, traceback, usage)."""


class SuiteOutcome(BaseModel):
    """How a suite fared."""

    name: str
    """The suite's name."""
    cases: list[CaseOutcome]
    """Per case, in suite order."""
    judge_usage: Usage = Field(default_factory=Usage)
    """LLM usage of the judge (llm_judge, llm_rubric, g_eval), apart from the model under test."""
    model_usage: Usage = Field(default_factory=Usage)
    """Usage of the model under test, as reported by the outputs function (see :func:`run_suite`)."""
    canaries: list[CanaryResult] = Field(default_factory=list)
    """Each judge on the known-answer probes, put to it before the cases (its usage is in ``judge_usage``)."""

    @property
    def passed(self) -> int:
        """Cases that passed."""
        return sum(c.passed for c in self.cases)

    @property
    def failed(self) -> int:
        """Cases that failed."""
        return len(self.cases) - self.passed

    @property
    def pass_rate(self) -> float:
        """Share of cases that passed (1.0 for an empty suite)."""
        return self.passed / len(self.cases) if self.cases else 1.0


Outputs = Mapping[str, str] | Sequence[str] | Callable[[str], "str | Awaitable[str]"] | None


@dataclass(frozen=True, slots=True)
class _Produced:
    """What the model under test gave for one case."""

    output: str
    usage: Usage
    contexts: tuple[str, ...] | None = None
    """The contexts it retrieved, when the outputs function returned them."""


def _split_usage(value: Any) -> tuple[Any, Usage]:
    """An outputs function may return ``{"output": str, "usage": {...}}`` to report what it spent."""
    if isinstance(value, Mapping) and "output" in value:
        raw = value.get("usage") or {}
        usage = (
            raw
            if isinstance(raw, Usage)
            else Usage(
                calls=int(raw.get("calls", 1)),
                prompt_tokens=int(raw.get("prompt_tokens", 0)),
                completion_tokens=int(raw.get("completion_tokens", 0)),
                cost_usd=float(raw.get("cost_usd", 0.0)),
            )
        )
        return value["output"], usage
    return value, Usage()


def _contexts_of(value: Any, case: Case) -> tuple[str, ...] | None:
    """The ``contexts`` an outputs function returned beside its ``output`` (None when it gave none)."""
    if not isinstance(value, Mapping) or value.get("contexts") is None:
        return None
    contexts = value["contexts"]
    if isinstance(contexts, str) or not isinstance(contexts, Sequence):
        raise ConfigError(f"case '{case.id}': the outputs function's 'contexts' must be a list of strings")
    for i, text in enumerate(contexts):
        if not isinstance(text, str):
            raise ConfigError(
                f"case '{case.id}': the outputs function's contexts[{i}] must be a string, "
                f"got {type(text).__name__}"
            )
    return tuple(contexts)


async def _output_for(case: Case, index: int, outputs: Outputs) -> _Produced:
    if outputs is None:
        if case.output is None:
            raise ConfigError(
                f"case '{case.id}': no model output (give outputs to run_suite or 'output' in the case)"
            )
        return _Produced(case.output, Usage())
    usage = Usage()
    contexts = None
    if callable(outputs):
        produced = outputs(case.input)
        if inspect.isawaitable(produced):
            produced = await produced
        contexts = _contexts_of(produced, case)
        value, usage = _split_usage(produced)
    elif isinstance(outputs, Mapping):
        if case.id not in outputs:
            raise ConfigError(f"case '{case.id}': no output in the outputs mapping")
        value = outputs[case.id]
    else:
        if index >= len(outputs):
            raise ConfigError(f"case '{case.id}': only {len(outputs)} outputs for {index + 1}+ cases")
        value = outputs[index]
    if not isinstance(value, str):
        raise ConfigError(f"case '{case.id}': the model output must be a string, got {type(value).__name__}")
    return _Produced(value, usage, contexts)


async def run_suite(
    suite: Suite,
    model_outputs: Outputs = None,
    *,
    max_concurrency: int = 8,
    progress: bool | None = None,
    canaries: bool = True,
) -> SuiteOutcome:
    """Score every case's evaluators on the model outputs, at most ``max_concurrency`` cases at a time.

    It runs on the pipeline's machinery: the pipeline's run loop (a case is a row: its output call,
    then its evaluators together), judged evaluators that name the same judge share one caching
    judge (one cache, one concurrency limit, retries, identical requests made once), failures become
    records through the one failure function, and a progress bar is drawn on a terminal. An
    evaluator that needs a reference (``rouge``, ``exact_match``...) on a case without an expected
    value gets status ``invalid_input`` naming the field, never a silent 0.

    Args:
        suite: The suite.
        model_outputs: Per case, the model output: a mapping by case id, a list in case order, a
            function ``input -> output`` (sync or async), or None to use each case's ``output``. The
            function may return ``{"output": str, "usage": {"prompt_tokens": ..., "completion_tokens":
            ..., "cost_usd": ...}}``; that usage is reported as ``model_usage``, apart from the judge's.
            A RAG app may add ``"contexts": [...]``, what it retrieved, which the RAG metrics then
            judge in place of the case's ``contexts``.
        max_concurrency: Cases in flight at once (each one output call, then its evaluators).
        progress: True to draw a progress bar on stderr, False not to, None on a terminal only.
        canaries: Put the known-answer probes (:mod:`ragmetrics.pipeline.canaries`) to each judge of
            the suite first, as a pipeline run does: at most 4 cached calls per judge, in
            ``SuiteOutcome.canaries`` and ``judge_usage``, never in a case. False leaves them out.

    Returns:
        Per-case verdicts and results, in suite order, and the judge's usage.

    Raises:
        ConfigError: ``max_concurrency`` below 1.
    """
    check_int(max_concurrency, "max_concurrency", "run_suite", minimum=1)
    if isinstance(model_outputs, str):
        raise ConfigError("run_suite: model_outputs must be a mapping, a list or a function, not a string")
    judges = share_judges([c.evaluator for case in suite.cases for c in case.evaluators])
    bar = ProgressBar(len(suite.cases), enabled=progress)
    settled: dict[int, tuple[CaseOutcome, Usage]] = {}
    failed = 0
    probes: list[CanaryResult] = []

    async def one_case(item: tuple[int, Case]) -> tuple[int, CaseOutcome, Usage]:
        index, case = item
        return (index, *await _score_case(index, case, model_outputs))

    try:
        if canaries and judges and suite.cases:
            # drawn from the cases' own inputs and contexts, as a pipeline run draws from its rows
            rows = [
                Sample(question=c.input, contexts=c.contexts)
                for c in suite.cases
                if isinstance(c.input, str) and c.contexts
            ]
            probes = await run_canaries(judges, draw_canary(rows))
        async with contextlib.aclosing(
            run_bounded(iter(enumerate(suite.cases)), one_case, concurrency=max_concurrency)
        ) as finished:
            async for index, outcome, spent in finished:
                settled[index] = (outcome, spent)
                failed += not outcome.passed
                bar.update(len(settled), failed=failed)
    finally:
        bar.close()
        for judge in judges:
            await judge.aclose()
    ordered = [settled[i] for i in range(len(suite.cases))]
    usage, model_usage = sum((c.usage for c in probes), Usage()), Usage()
    for outcome, spent in ordered:
        model_usage = model_usage + spent
        for result in outcome.results:
            usage = usage + result.usage
    return SuiteOutcome(
        name=suite.name,
        cases=[o for o, _ in ordered],
        judge_usage=usage,
        model_usage=model_usage,
        canaries=probes,
    )


async def _score_case(index: int, case: Case, model_outputs: Outputs) -> tuple[CaseOutcome, Usage]:
    """One case: its output, then its evaluators together; failures become records (never raises)."""
    try:
        produced = await _output_for(case, index, model_outputs)
    except Exception as exc:  # noqa: BLE001 - one case's failure is recorded, the rest go on
        record = failure_from(exc, row=index)
        return CaseOutcome(
            id=case.id,
            passed=False,
            passing=case.passing,
            output=None,
            errors=[f"model output: {record.type}: {shorten(record.message, 300)}"],
            failures=[record],
        ), Usage()
    output = produced.output
    settled = await asyncio.gather(
        *(_evaluate(check, case, produced) for check in case.evaluators), return_exceptions=True
    )
    results: list[MetricResult] = []
    errors = []
    failures = []
    for check, item in zip(case.evaluators, settled, strict=True):
        if isinstance(item, MetricResult):
            results.append(item)
        elif isinstance(item, Exception):
            record = failure_from(item, metric=check.evaluator.name, row=index)
            failures.append(record)
            errors.append(f"{check.evaluator.name}: {record.type}: {shorten(record.message, 300)}")
        else:  # a BaseException such as cancellation: let it through
            raise item
    passed = not errors and case.verdict(results) if case.passing == "all" else case.verdict(results)
    return CaseOutcome(
        id=case.id,
        passed=passed,
        passing=case.passing,
        output=output,
        results=results,
        errors=errors,
        failures=failures,
    ), produced.usage


async def _evaluate(check: Check, case: Case, produced: _Produced) -> MetricResult:
    """One evaluator or metric on the output; an input it needs and the case lacks gives ``invalid_input``."""
    metric = check.evaluator
    sample = case.sample_for(check, produced.output, produced.contexts)
    has_contexts = produced.contexts is not None or case.contexts is not None
    missing = case.missing_for(check, sample, has_contexts=has_contexts)
    if missing is not None:
        return MetricResult(
            name=metric.name,
            score=None,
            threshold=metric.threshold,
            reasoning=f"No score: {missing}",
            signature=metric.signature if isinstance(metric, Evaluator) else "",
            **failure_from(missing).result_fields(),
        )
    if isinstance(metric, Evaluator):
        return await metric.evaluate(produced.output, case.reference_for(check), case.input)
    result = await metric.evaluate_sample(sample)
    if not isinstance(result, MetricResult):
        raise TypeError(f"metric {metric.name!r} returned {type(result).__name__}, not a MetricResult")
    return result
