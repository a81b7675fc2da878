"""Evaluator suites, defined: :class:`Check`, :class:`Case`, :class:`Suite`, and loading them from YAML/JSON.

A case's evaluators are named from :data:`ragmetrics.metrics.BUILTIN_METRICS` (the classic evaluators
and the RAG metrics; any other :class:`~ragmetrics.metrics.base.Metric` object in Python), or by
another tool's name for one of them. A RAG metric scores the case as a sample:
``input`` is the question, the model output the answer, the case's ``contexts`` the retrieved
passages and ``expected`` the reference.

The file format and how suites run are described in :mod:`ragmetrics.regression.suite`, which
re-exports these classes. Every error names the file and the field
(``suite.yaml: cases[2].evaluators[0]: ...``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragmetrics._check import check_choice
from ragmetrics.errors import ConfigError, InvalidInputError, RagMetricsError, shorten
from ragmetrics.metrics import BUILTIN_METRICS, RAG_METRICS
from ragmetrics.metrics.aliases import METRIC_ALIASES, canonical_metric_name, did_you_mean
from ragmetrics.metrics.base import Metric, missing_input
from ragmetrics.metrics.evaluators.base import DEFAULT_THRESHOLD, Evaluator
from ragmetrics.metrics.evaluators.factory import (
    PRIMARY_OPTION,
    evaluator_options,
    make_evaluator,
)
from ragmetrics.regression._suite_yaml import load_yaml
from ragmetrics.regression.suite_trust import SuiteTrust
from ragmetrics.sample import Sample, check_text
from ragmetrics.score import MetricResult

__all__ = ["Case", "Check", "Passing", "Suite"]

Passing = Literal["all", "any"]
_CASE_KEYS = frozenset(
    {"id", "description", "input", "contexts", "expected", "output", "passing", "evaluators"}
)
_CASE_FIELDS = {"question": "input", "reference": "expected"}
"""Where a suite case holds the sample fields a metric needs, named in its messages."""
_SUITE_KEYS = frozenset({"name", "description", "llm", "embeddings", "cases"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One evaluator of a case, with an optional expected value of its own."""

    evaluator: Evaluator | Metric
    """The evaluator, or a RAG metric (any :class:`~ragmetrics.metrics.base.Metric`)."""
    value: Any = None
    """What this evaluator compares against (a RAG metric: its reference); None: the case's ``expected``."""


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
    contexts: tuple[str, ...] | None = None
    """The retrieved passages the RAG metrics judge the output against, in retrieval order; None when
    the case has none (a metric that needs them then gets ``invalid_input``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.input, str):
            raise ConfigError(
                f"case {self.id or '?'}: input must be a string, got {type(self.input).__name__}"
            )
        check_choice(self.passing, "passing", f"case {self.id or '?'}", ("all", "any"))
        if self.contexts is not None:
            if isinstance(self.contexts, str) or not isinstance(self.contexts, Sequence):
                raise ConfigError(f"case {self.id or '?'}: contexts must be a list of strings")
            for i, text in enumerate(self.contexts):
                if not isinstance(text, str):
                    raise ConfigError(
                        f"case {self.id or '?'}: contexts[{i}] must be a string, got {type(text).__name__}"
                    )
            object.__setattr__(self, "contexts", tuple(self.contexts))
        checks = []
        for item in self.evaluators:
            if isinstance(item, (Evaluator, Metric)) and not isinstance(item, Check):
                item = Check(evaluator=item)
            if not isinstance(item, Check):
                raise ConfigError(
                    f"case {self.id or '?'}: evaluators must be Evaluator, Metric or Check objects, "
                    f"got {type(item).__name__}"
                )
            if not isinstance(item.evaluator, Evaluator) and item.evaluator.threshold is None:
                raise ConfigError(
                    f"case {self.id or '?'}: metric {item.evaluator.name!r} has no threshold; a case "
                    "passes on its metrics' pass marks, so give it one (threshold=0.8)"
                )
            checks.append(item)
        if not checks:
            raise ConfigError(f"case {self.id or '?'}: give at least one evaluator")
        object.__setattr__(self, "evaluators", tuple(checks))

    def reference_for(self, check: Check) -> Any:
        """The expected value ``check``'s evaluator sees: a string, or a JSON value for json_match."""
        value = self.expected if check.value is None else check.value
        if isinstance(check.evaluator, Evaluator) and check.evaluator.structured_reference:
            return "" if value is None else value
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def sample_for(self, check: Check, output: str, contexts: Sequence[str] | None = None) -> Sample:
        """The case as the sample ``check``'s metric scores: input, output, contexts and reference.

        Args:
            check: The check (its own ``value``, if any, is the reference).
            output: The model output (the answer).
            contexts: Contexts the outputs function returned; None: the case's own.
        """
        reference = self.reference_for(check)
        return Sample(
            question=self.input,
            answer=output,
            contexts=tuple(contexts if contexts is not None else self.contexts or ()),
            reference=reference if isinstance(reference, str) else json.dumps(reference, ensure_ascii=False),
            id=self.id or None,
        )

    def missing_for(self, check: Check, sample: Sample, *, has_contexts: bool) -> InvalidInputError | None:
        """The error for an input ``check``'s metric needs and the case lacks, naming the case's field."""
        metric = check.evaluator
        needs = metric.needs
        if needs.contexts and not has_contexts:
            return InvalidInputError(
                "contexts",
                "a list of strings",
                row=sample.id,
                detail=f"{metric.name} judges the output against the retrieved contexts: give the case "
                f"'contexts' (an empty list is allowed), or leave {metric.name} out",
            )
        return missing_input(sample, needs, metric.name, names=_CASE_FIELDS)

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
    def from_file(
        cls,
        path: str | Path,
        *,
        llm: Any = None,
        embeddings: Any = None,
        allow_judge_url: bool | None = None,
        allow_suite_cache: bool | None = None,
        allow_suite_settings: bool | None = None,
    ) -> Suite:
        """Load a suite from a YAML (``.yaml``/``.yml``) or JSON file.

        The file is data nobody vetted: what it may name (judge hosts, cache folders, cost settings)
        is bounded as :mod:`ragmetrics.regression.suite_trust` says, unless you allow more.

        Args:
            path: The file.
            llm: A judge (spec or Judge) for LLM evaluators that name none; overrides the file's ``llm``.
            embeddings: An embedder (spec or object) for cosine_similarity; overrides the file's.
            allow_judge_url: Let the file name any judge or embedding host (None: as
                ``RAGMETRICS_SUITE_ALLOW`` says; default: only the providers' own and yours).
            allow_suite_cache: Let the file name cache folders outside your cache folder.
            allow_suite_settings: Let the file set cost settings outside the sane ranges.

        Raises:
            ConfigError: The file is missing, not UTF-8 or malformed, its YAML aliases expand past
                a small bound (a "billion laughs" file), or it names what it may not; the message
                names the file and the field.
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
            data = load_yaml(text, str(path))
        return cls.from_data(
            data,
            source=str(path),
            llm=llm,
            embeddings=embeddings,
            allow_judge_url=allow_judge_url,
            allow_suite_cache=allow_suite_cache,
            allow_suite_settings=allow_suite_settings,
        )

    @classmethod
    def from_data(
        cls,
        data: Any,
        *,
        source: str = "<suite>",
        llm: Any = None,
        embeddings: Any = None,
        allow_judge_url: bool | None = None,
        allow_suite_cache: bool | None = None,
        allow_suite_settings: bool | None = None,
    ) -> Suite:
        """Build a suite from parsed YAML/JSON: a mapping with ``cases``, or a bare list of cases.

        The ``allow_*`` arguments are :meth:`from_file`'s: the data is bounded as a file's is.

        Raises:
            ConfigError: A malformed field, or one the data may not give; the message names
                ``source`` and the field.
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
        trust = SuiteTrust.resolve(
            allow_judge_url=allow_judge_url,
            allow_suite_cache=allow_suite_cache,
            allow_suite_settings=allow_suite_settings,
            llm=llm,
            embeddings=embeddings,
        )
        if llm is None:
            trust.check_spec(data.get("llm"), source)
        if embeddings is None:
            trust.check_spec(data.get("embeddings"), source, embeddings=True)
        defaults = {
            "llm": llm if llm is not None else data.get("llm"),
            "embeddings": embeddings if embeddings is not None else data.get("embeddings"),
        }
        _check_strings({k: v for k, v in data.items() if k != "cases"}, source)
        built = [_case(raw, f"{source}: cases[{i}]", defaults, trust) for i, raw in enumerate(cases)]
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


def _check(raw: Any, where: str, defaults: Mapping[str, Any], trust: SuiteTrust) -> Check:
    if isinstance(raw, str):
        raw = {"type": raw}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: an evaluator is a type name or a mapping with 'type', got {raw!r}")
    options = dict(raw)
    type_name = options.pop("type", None)
    if type_name is None:
        raise ConfigError(f"{where}: missing 'type' (e.g. type: exact_match)")
    trust.check_entry(type_name, options, where)
    value = None
    if "value" in options and type_name not in PRIMARY_OPTION:
        value = options.pop("value")
    if isinstance(type_name, str):
        type_name = canonical_metric_name(type_name)  # another tool's name (answer_relevancy) is ours
        if type_name not in BUILTIN_METRICS:
            raise ConfigError(
                f"{where}: unknown evaluator type {shorten(type_name, 80)!r}"
                f"{did_you_mean(type_name, BUILTIN_METRICS)}; known types: "
                f"{', '.join(BUILTIN_METRICS)} (and {', '.join(METRIC_ALIASES)} as aliases)"
            )
    if type_name in RAG_METRICS:
        return Check(evaluator=_rag_metric(type_name, options, where, defaults), value=value)
    try:
        for key in ("llm", "embeddings"):  # the suite's judge and embedder, for evaluators that take one
            if key not in options and defaults.get(key) is not None and key in evaluator_options(type_name):
                options[key] = defaults[key]
        evaluator = make_evaluator(type_name, **options)
    except RagMetricsError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    return Check(evaluator=evaluator, value=value)


_RAG_OPTIONS = ("threshold", "llm", "cache", "context_budget_tokens")
"""A RAG metric's options in a suite, besides the judge settings (``temperature``, ``timeout_s``...)."""


def _rag_metric(type_name: str, options: dict[str, Any], where: str, defaults: Mapping[str, Any]) -> Metric:
    """A RAG metric from a suite entry: the suite's ``llm`` as its judge unless the entry names one."""
    if options.get("llm") is None and defaults.get("llm") is not None:
        options["llm"] = defaults["llm"]
    options.setdefault("threshold", DEFAULT_THRESHOLD)  # as the graded evaluators: a case needs a pass mark
    try:
        metric: Metric = RAG_METRICS[type_name](**options)
    except RagMetricsError as exc:
        raise ConfigError(
            f"{where}: {exc} (a {type_name} entry takes {', '.join(_RAG_OPTIONS)} and judge settings)"
        ) from exc
    except TypeError as exc:
        raise ConfigError(f"{where}: {type_name}: invalid options: {exc}") from exc
    return metric


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


def _case(raw: Any, where: str, defaults: Mapping[str, Any], trust: SuiteTrust) -> Case:
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
        checks.append(_check(entry, entry_where, defaults, trust))
    passing = raw.get("passing", "all")
    if passing not in ("all", "any"):
        raise ConfigError(f"{where}.passing: must be 'all' or 'any', got {passing!r}")
    output = raw.get("output")
    contexts = raw.get("contexts")
    if contexts is not None and (
        not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts)
    ):
        raise ConfigError(f"{where}.contexts: must be a list of strings (the retrieved passages, in order)")
    return Case(
        id=str(raw["id"]) if raw.get("id") is not None else "",
        description=raw.get("description") or "",
        input=raw["input"],
        expected=expected,
        passing=passing,
        evaluators=tuple(checks),
        output=str(output) if output is not None else None,
        contexts=tuple(contexts) if contexts is not None else None,
    )
