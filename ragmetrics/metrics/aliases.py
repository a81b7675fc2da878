"""The names other tools give our metrics (RAGAS, DeepEval), and the closest name for a typo.

An alias is accepted wherever a metric is named (``evaluate(metrics=[...])``, ``EvaluationPipeline``,
the CLI's ``--metrics``, a suite's ``type:``) and builds our metric, whose results are recorded under
our name; the first use of each alias in a process is noted once on the ``ragmetrics`` logger (a
warning-level line, so it shows on stderr without a logging setup and never fails a test run that
turns warnings into errors).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping
from types import MappingProxyType

__all__ = ["METRIC_ALIASES", "canonical_metric_name", "did_you_mean"]

METRIC_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "answer_relevancy": "relevancy",  # RAGAS 0.1, DeepEval (AnswerRelevancyMetric)
        "response_relevancy": "relevancy",  # RAGAS 0.2 (ResponseRelevancy)
        "contextual_precision": "context_precision",  # DeepEval
        "contextual_recall": "context_recall",  # DeepEval
        "contextual_relevancy": "context_relevancy",  # DeepEval
        "answer_similarity": "cosine_similarity",  # RAGAS 0.1
        "semantic_similarity": "cosine_similarity",  # RAGAS 0.2 (SemanticSimilarity)
    }
)
"""Another tool's metric name -> ours."""

_logger = logging.getLogger("ragmetrics")
_noted: set[str] = set()
"""The aliases already noted in this process (a note per alias, not per metric built)."""


def canonical_metric_name(name: str) -> str:
    """Our name for ``name``: the target of an alias (noted once per process), or ``name`` itself."""
    target = METRIC_ALIASES.get(name)
    if target is None:
        return name
    if name not in _noted:
        _noted.add(name)
        _logger.warning(
            "ragmetrics: metric %r is ragmetrics' %r; its results are recorded as %r", name, target, target
        )
    return target


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` with the closest of ``known`` and the aliases, or an empty string."""
    close = difflib.get_close_matches(name, [*known, *METRIC_ALIASES], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
