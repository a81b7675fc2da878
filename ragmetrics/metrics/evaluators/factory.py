r"""The classic evaluators in one place, and building them by type name from config.

:data:`EVALUATOR_TYPES` is the one table of evaluators (type name -> class); everything else that
lists evaluators reads it. :func:`make_evaluator` builds one from a config mapping (a case file's
entry)::

    make_evaluator("rouge", threshold=0.5)
    make_evaluator("regex", pattern=r"\d{4}-\d{2}-\d{2}")

Unknown types and options raise :class:`~ragmetrics.errors.ConfigError` naming what is accepted.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.metrics.evaluators.base import Evaluator
from ragmetrics.metrics.evaluators.custom import CustomEvaluator
from ragmetrics.metrics.evaluators.embedding import (
    CosineSimilarityEvaluator,
    Embedder,
    EmbeddingDistanceEvaluator,
    FakeEmbeddings,
    OpenAIEmbeddings,
    SentenceTransformerEmbeddings,
    resolve_embedder,
)
from ragmetrics.metrics.evaluators.overlap import BleuEvaluator, RougeEvaluator
from ragmetrics.metrics.evaluators.rubric import GEvalEvaluator, LLMJudgeEvaluator, LLMRubricEvaluator
from ragmetrics.metrics.evaluators.structured import (
    HtmlValidationEvaluator,
    JsonMatchEvaluator,
    JsonValidityEvaluator,
)
from ragmetrics.metrics.evaluators.text import (
    ContainsEvaluator,
    ExactMatchEvaluator,
    F1Evaluator,
    LevenshteinEvaluator,
    RegexMatchEvaluator,
)
from ragmetrics.score import MetricResult
from ragmetrics.settings import JudgeSettings

EvalResult = MetricResult
"""The evaluators' name for the one result shape."""

__all__ = [
    "EVALUATOR_TYPES",
    "PRIMARY_OPTION",
    "BleuEvaluator",
    "ContainsEvaluator",
    "CosineSimilarityEvaluator",
    "CustomEvaluator",
    "Embedder",
    "EmbeddingDistanceEvaluator",
    "EvalResult",
    "Evaluator",
    "ExactMatchEvaluator",
    "F1Evaluator",
    "FakeEmbeddings",
    "GEvalEvaluator",
    "HtmlValidationEvaluator",
    "JsonMatchEvaluator",
    "JsonValidityEvaluator",
    "LLMJudgeEvaluator",
    "LLMRubricEvaluator",
    "LevenshteinEvaluator",
    "OpenAIEmbeddings",
    "RegexMatchEvaluator",
    "RougeEvaluator",
    "SentenceTransformerEmbeddings",
    "evaluator_options",
    "make_evaluator",
    "resolve_embedder",
]

EVALUATOR_TYPES: Mapping[str, type[Evaluator]] = MappingProxyType(
    {
        cls.name: cls
        for cls in (
            ExactMatchEvaluator,
            ContainsEvaluator,
            RegexMatchEvaluator,
            JsonValidityEvaluator,
            JsonMatchEvaluator,
            HtmlValidationEvaluator,
            RougeEvaluator,
            BleuEvaluator,
            F1Evaluator,
            LevenshteinEvaluator,
            EmbeddingDistanceEvaluator,
            LLMJudgeEvaluator,
            LLMRubricEvaluator,
            GEvalEvaluator,
            CustomEvaluator,
        )
    }
)
"""Type name -> evaluator class: the one table of evaluators (a fixed table, not a registry).

What each needs is data on its class (``by_name``, ``primary_option``, ``judged``); the metric
table (:data:`ragmetrics.metrics.BUILTIN_METRICS`) and the suites read it from here."""

PRIMARY_OPTION: Mapping[str, str] = MappingProxyType(
    {name: cls.primary_option for name, cls in EVALUATOR_TYPES.items() if cls.primary_option}
)
"""Types whose main argument may also be given as ``value`` in config (from ``primary_option``)."""


def _judge_setting_names() -> frozenset[str]:
    fixed = {"provider", "model", "base_url"}
    return frozenset(f.name for f in dataclasses.fields(JudgeSettings) if f.name not in fixed) | {"prices"}


def evaluator_options(type_name: str) -> tuple[str, ...]:
    """The config options an evaluator type accepts, sorted.

    Raises:
        ConfigError: Unknown type name.
    """
    cls = _lookup(type_name)
    params = inspect.signature(cls.__init__).parameters
    names = {n for n, p in params.items() if n != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD}
    if cls.judged:
        names |= _judge_setting_names()
    if type_name in PRIMARY_OPTION:
        names.add("value")
    return tuple(sorted(names))


def _lookup(type_name: object) -> type[Evaluator]:
    if not isinstance(type_name, str):
        raise ConfigError(f"evaluator type must be a string such as 'rouge', got {type_name!r}")
    cls = EVALUATOR_TYPES.get(type_name)
    if cls is None:
        close = difflib.get_close_matches(type_name, list(EVALUATOR_TYPES), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfigError(
            f"unknown evaluator type '{type_name}'{hint}; known types: {', '.join(EVALUATOR_TYPES)}"
        )
    return cls


def make_evaluator(type_name: str, **config: Any) -> Evaluator:
    """Build an evaluator from its type name and config options.

    Args:
        type_name: One of the names in :data:`EVALUATOR_TYPES`.
        **config: Constructor options (``threshold``, ``case_sensitive``, ``negate``, ``pattern``,
            ``llm``, ...). For regex, custom, llm_rubric and g_eval the main argument may be given as
            ``value``.

    Returns:
        The evaluator.

    Raises:
        ConfigError: Unknown type, unknown or invalid option, or a missing required option.
    """
    cls = _lookup(type_name)
    accepted = evaluator_options(type_name)
    options = dict(config)
    primary = PRIMARY_OPTION.get(type_name)
    if primary is not None and "value" in options:
        if primary in options:
            raise ConfigError(f"{type_name}: give '{primary}' or 'value', not both")
        options[primary] = options.pop("value")
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(
            f"{type_name}: unknown option(s) {', '.join(unknown)}; accepted: {', '.join(accepted)}"
        )
    params = inspect.signature(cls.__init__).parameters
    missing = [
        n
        for n, p in params.items()
        if n != "self"
        and p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
        and n not in options
    ]
    if missing:
        raise ConfigError(f"{type_name}: missing required option(s) {', '.join(missing)}")
    try:
        return cls(**options)
    except TypeError as exc:  # a wrongly typed option the constructor could not even take
        raise ConfigError(f"{type_name}: invalid options: {exc}") from exc
