"""Evaluator suites: cases with an input, an expected value and several evaluators, loaded from YAML/JSON.

A :class:`Case` holds an input, an expected value and its evaluators, each scored independently; its
passing logic decides whether ``all`` of them or ``any`` one must pass (a result without a score never
passes). A :class:`Suite` is a list of cases, written in Python or loaded with :meth:`Suite.from_file`::

    name: capitals
    llm: openai:gpt-4o-mini        # judge for llm_judge / llm_rubric / g_eval entries without one
    embeddings: fake               # embedder for cosine_similarity entries without one
    cases:
      - id: france
        input: What is the capital of France?
        expected: Paris
        passing: all               # or any
        evaluators:
          - exact_match            # a bare type name takes the defaults
          - type: contains
            value: Paris, France   # this evaluator's own expected value
          - {type: rouge, threshold: 0.5}
          - {type: regex, value: "^Paris"}   # regex, custom, llm_rubric, g_eval: value = main argument

Every error names the file and the field (``suite.yaml: cases[2].evaluators[0]: ...``).
:func:`run_suite` scores the model outputs with a simple bounded gather; the batch pipeline will take
this over (cache, retries, progress). Judge token usage is summed separately from the model under test.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragmetrics.errors import ConfigError, InvalidInputError, RagMetricsError, shorten
from ragmetrics.failure import ErrorRecord, failure_from
from ragmetrics.metrics.evaluators.base import Evaluator
from ragmetrics.metrics.evaluators.factory import PRIMARY_OPTION, evaluator_options, make_evaluator
from ragmetrics.sample import check_text
from ragmetrics.score import MetricResult, Usage

__all__ = ["Case", "CaseOutcome", "Check", "Suite", "SuiteOutcome", "run_suite"]

Passing = Literal["all", "any"]
_CASE_KEYS = frozenset({"id", "description", "input", "expected", "output", "passing", "evaluators"})
_SUITE_KEYS = frozenset({"name", "description", "llm", "embeddings", "cases"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One evaluator of a case, with an optional expected value of its own."""

    evaluator: Evaluator
    """The evaluator."""
    value: Any = None
    """What this evaluator compares against; None: the case's ``expected``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """An input, the expected value, and the evaluators that judge the model's output.

    Raises:
        ConfigError: No evaluators, a bad ``passing`` value, or an input that is not a string.
    """

    input: str
    """What the model under test is given."""
    evaluators: tuple[Check, ...]
    """The checks, each scored independently (plain evaluators are wrapped in :class:`Check`)."""
    expected: Any = None
    """The expected value (a string; a mapping or list for json_match)."""
    passing: Passing = "all"
    """``all``: every evaluator must pass; ``any``: one is enough."""
    id: str = ""
    """Identifier used in reports (default: ``case-N``)."""
    description: str = ""
    """Free text."""
    output: str | None = None
    """A recorded model output, used when :func:`run_suite` gets no outputs."""

    def __post_init__(self) -> None:
        if not isinstance(self.input, str):
            raise ConfigError(
                f"case {self.id or '?'}: input must be a string, got {type(self.input).__name__}"
            )
        if self.passing not in ("all", "any"):
            raise ConfigError(f"case {self.id or '?'}: passing must be 'all' or 'any', got {self.passing!r}")
        checks = []
        for item in self.evaluators:
            if isinstance(item, Evaluator):
                item = Check(evaluator=item)
            if not isinstance(item, Check):
                raise ConfigError(
                    f"case {self.id or '?'}: evaluators must be Evaluator or Check objects, "
                    f"got {type(item).__name__}"
                )
            checks.append(item)
        if not checks:
            raise ConfigError(f"case {self.id or '?'}: give at least one evaluator")
        object.__setattr__(self, "evaluators", tuple(checks))

    def reference_for(self, check: Check) -> Any:
        """The expected value ``check``'s evaluator sees: a string, or a JSON value for json_match."""
        value = self.expected if check.value is None else check.value
        if check.evaluator.structured_reference:
            return "" if value is None else value
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def verdict(self, results: Sequence[MetricResult]) -> bool:
        """Whether the case passes: ``all`` or ``any`` of its results passed (None counts as failed)."""
        passed = [r.passed is True for r in results]
        return all(passed) if self.passing == "all" else any(passed)


@dataclass(frozen=True, slots=True, kw_only=True)
class Suite:
    """A named list of cases."""

    cases: tuple[Case, ...]
    name: str = "suite"
    description: str = ""
    source: str | None = None
    """The file it was loaded from."""

    def __post_init__(self) -> None:
        cases = tuple(
            c if c.id else Case(**{**_fields(c), "id": f"case-{i + 1}"}) for i, c in enumerate(self.cases)
        )
        seen: set[str] = set()
        for case in cases:
            if case.id in seen:
                raise ConfigError(f"{self.source or self.name}: duplicate case id '{case.id}'")
            seen.add(case.id)
        object.__setattr__(self, "cases", cases)

    @classmethod
    def from_file(cls, path: str | Path, *, llm: Any = None, embeddings: Any = None) -> Suite:
        """Load a suite from a YAML (``.yaml``/``.yml``) or JSON file.

        Args:
            path: The file.
            llm: A judge (spec or Judge) for LLM evaluators that name none; overrides the file's ``llm``.
            embeddings: An embedder (spec or object) for cosine_similarity; overrides the file's.

        Raises:
            ConfigError: The file is missing, not UTF-8 or malformed, or its YAML aliases expand past
                a small bound (a "billion laughs" file); the message names the file and the field.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the suite file: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{path}: byte {exc.object[exc.start]:#04x} at byte offset {exc.start} is not valid UTF-8 "
                f"({exc.reason}); save the suite file as UTF-8"
            ) from exc
        if path.suffix.lower() == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
                ) from exc
            except RecursionError as exc:
                raise ConfigError(f"{path}: the JSON is nested too deeply to read") from exc
        else:
            from ragmetrics.regression._suite_yaml import load_yaml

            data = load_yaml(text, str(path))
        return cls.from_data(data, source=str(path), llm=llm, embeddings=embeddings)

    @classmethod
    def from_data(
        cls, data: Any, *, source: str = "<suite>", llm: Any = None, embeddings: Any = None
    ) -> Suite:
        """Build a suite from parsed YAML/JSON: a mapping with ``cases``, or a bare list of cases.

        Raises:
            ConfigError: A malformed field; the message names ``source`` and the field.
        """
        if isinstance(data, list):
            data = {"cases": data}
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"{source}: the suite must be a mapping with 'cases' or a list of cases, "
                f"got {type(data).__name__}"
            )
        unknown = sorted(set(data) - _SUITE_KEYS)
        if unknown:
            raise ConfigError(f"{source}: unknown top-level field(s) {unknown}; known: {sorted(_SUITE_KEYS)}")
        cases = data.get("cases")
        if not isinstance(cases, list) or not cases:
            raise ConfigError(f"{source}: 'cases' must be a non-empty list")
        defaults = {
            "llm": llm if llm is not None else data.get("llm"),
            "embeddings": embeddings if embeddings is not None else data.get("embeddings"),
        }
        _check_strings({k: v for k, v in data.items() if k != "cases"}, source)
        built = [_case(raw, f"{source}: cases[{i}]", defaults) for i, raw in enumerate(cases)]
        for field_name in ("name", "description"):
            if field_name in data and not isinstance(data[field_name], str):
                raise ConfigError(f"{source}: {field_name} must be a string")
        return cls(
            cases=tuple(built),
            name=data.get("name") or Path(source).stem,
            description=data.get("description", ""),
            source=source,
        )


def _fields(case: Case) -> dict[str, Any]:
    return {f: getattr(case, f) for f in Case.__dataclass_fields__}


def _check(raw: Any, where: str, defaults: Mapping[str, Any]) -> Check:
    if isinstance(raw, str):
        raw = {"type": raw}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: an evaluator is a type name or a mapping with 'type', got {raw!r}")
    options = dict(raw)
    type_name = options.pop("type", None)
    if type_name is None:
        raise ConfigError(f"{where}: missing 'type' (e.g. type: exact_match)")
    value = None
    if "value" in options and type_name not in PRIMARY_OPTION:
        value = options.pop("value")
    try:
        for key in ("llm", "embeddings"):  # the suite's judge and embedder, for evaluators that take one
            if key not in options and defaults.get(key) is not None and key in evaluator_options(type_name):
                options[key] = defaults[key]
        evaluator = make_evaluator(type_name, **options)
    except RagMetricsError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    return Check(evaluator=evaluator, value=value)


def _check_strings(value: Any, where: str) -> None:
    """Refuse a lone surrogate in any string of ``value`` (keys too): it could never be scored or written."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            try:
                check_text(item, path.lstrip(".") or "value")
            except InvalidInputError as exc:
                raise ConfigError(f"{where}: {exc}") from None
        elif isinstance(item, Mapping):
            stack += [(k, f"{path} (a key)") for k in item] + [(v, f"{path}.{k}") for k, v in item.items()]
        elif isinstance(item, list):
            stack += [(v, f"{path}[{i}]") for i, v in enumerate(item)]


def _case(raw: Any, where: str, defaults: Mapping[str, Any]) -> Case:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: a case must be a mapping, got {type(raw).__name__}")
    _check_strings(raw, where)
    unknown = sorted(set(raw) - _CASE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {unknown}; known: {sorted(_CASE_KEYS)}")
    if "input" not in raw:
        raise ConfigError(f"{where}: missing 'input'")
    if not isinstance(raw["input"], str):
        raise ConfigError(f"{where}.input: must be a string, got {type(raw['input']).__name__}")
    for name in ("id", "description", "output"):
        if raw.get(name) is not None and not isinstance(raw[name], (str, int)):
            raise ConfigError(f"{where}.{name}: must be a string, got {type(raw[name]).__name__}")
    entries = raw.get("evaluators")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{where}.evaluators: must be a non-empty list")
    expected = raw.get("expected")
    checks = []
    for j, entry in enumerate(entries):
        entry_where = f"{where}.evaluators[{j}]"
        if (
            isinstance(entry, Mapping)
            and entry.get("type") == "regex"
            and "pattern" not in entry
            and "value" not in entry
            and isinstance(expected, str)
        ):
            entry = {**entry, "pattern": expected}  # a regex case's expected value is its pattern
        checks.append(_check(entry, entry_where, defaults))
    passing = raw.get("passing", "all")
    if passing not in ("all", "any"):
        raise ConfigError(f"{where}.passing: must be 'all' or 'any', got {passing!r}")
    output = raw.get("output")
    return Case(
        id=str(raw["id"]) if raw.get("id") is not None else "",
        description=raw.get("description") or "",
        input=raw["input"],
        expected=expected,
        passing=passing,
        evaluators=tuple(checks),
        output=str(output) if output is not None else None,
    )


# -- running ---------------------------------------------------------------------------------------


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


async def _output_for(case: Case, index: int, outputs: Outputs) -> tuple[str, Usage]:
    if outputs is None:
        if case.output is None:
            raise ConfigError(
                f"case '{case.id}': no model output (give outputs to run_suite or 'output' in the case)"
            )
        return case.output, Usage()
    usage = Usage()
    if callable(outputs):
        produced = outputs(case.input)
        if inspect.isawaitable(produced):
            produced = await produced
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
    return value, usage


async def run_suite(
    suite: Suite, model_outputs: Outputs = None, *, max_concurrency: int = 8, progress: bool | None = None
) -> SuiteOutcome:
    """Score every case's evaluators on the model outputs, at most ``max_concurrency`` at a time.

    It runs on the pipeline's machinery: judged evaluators that name the same judge share one caching
    judge (one cache, one concurrency limit, retries, identical requests made once), failures become
    records through the pipeline's one failure function, and a progress bar is drawn on a terminal.

    Args:
        suite: The suite.
        model_outputs: Per case, the model output: a mapping by case id, a list in case order, a
            function ``input -> output`` (sync or async), or None to use each case's ``output``. The
            function may return ``{"output": str, "usage": {"prompt_tokens": ..., "completion_tokens":
            ..., "cost_usd": ...}}``; that usage is reported as ``model_usage``, apart from the judge's.
        max_concurrency: Evaluations (and output calls) in flight at once.
        progress: True to draw a progress bar on stderr, False not to, None on a terminal only.

    Returns:
        Per-case verdicts and results, in suite order, and the judge's usage.

    Raises:
        ConfigError: ``max_concurrency`` below 1.
    """
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise ConfigError(f"run_suite: max_concurrency must be an integer >= 1, got {max_concurrency!r}")
    if isinstance(model_outputs, str):
        raise ConfigError("run_suite: model_outputs must be a mapping, a list or a function, not a string")
    from ragmetrics.pipeline.progress import ProgressBar
    from ragmetrics.pipeline.runner import share_judges

    judges = share_judges([c.evaluator for case in suite.cases for c in case.evaluators])
    bar = ProgressBar(len(suite.cases), enabled=progress)
    finished = failed = 0
    gate = asyncio.Semaphore(max_concurrency)

    async def bounded(coro: Awaitable[Any]) -> Any:
        async with gate:
            return await coro

    async def one_case(index: int, case: Case) -> tuple[CaseOutcome, Usage]:
        outcome, usage = await score_case(index, case)
        nonlocal finished, failed
        finished += 1
        failed += not outcome.passed
        bar.update(finished, failed=failed)
        return outcome, usage

    async def score_case(index: int, case: Case) -> tuple[CaseOutcome, Usage]:
        try:
            output, model_usage = await bounded(_output_for(case, index, model_outputs))
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
        settled = await asyncio.gather(
            *(
                bounded(c.evaluator.evaluate(output, case.reference_for(c), case.input))
                for c in case.evaluators
            ),
            return_exceptions=True,
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
        ), model_usage

    try:
        settled_cases = await asyncio.gather(*(one_case(i, c) for i, c in enumerate(suite.cases)))
    finally:
        bar.close()
        for judge in judges:
            await judge.aclose()
    usage = model_usage = Usage()
    for outcome, spent in settled_cases:
        model_usage = model_usage + spent
        for result in outcome.results:
            usage = usage + result.usage
    return SuiteOutcome(
        name=suite.name, cases=[o for o, _ in settled_cases], judge_usage=usage, model_usage=model_usage
    )
