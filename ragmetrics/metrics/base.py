"""The Metric seam shared by the RAG metrics and the classic evaluators.

Every metric has a snake_case ``name`` and answers ``evaluate_sample(sample) -> MetricResult``; the
pipeline needs nothing else. RAG metrics add ``score``/``evaluate`` with keyword fields; evaluators add
``evaluate(prediction, reference, input)``. Both return the one result shape, ``MetricResult``
(exported as ``EvalResult`` too), and get their ``*_sync`` twins from :func:`ragmetrics._aio.run_sync`.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

from ragmetrics.errors import ConfigError
from ragmetrics.sample import Sample
from ragmetrics.score import MetricResult

__all__ = ["Metric", "check_threshold", "passed_at"]


@runtime_checkable
class Metric(Protocol):
    """Anything the pipeline can run over samples."""

    name: str
    """Snake_case name used in reports, config, the CLI and ``BUILTIN_METRICS``."""

    async def evaluate_sample(self, sample: Sample) -> MetricResult:
        """Score one sample. Judge failures become a result with a status, not an exception."""
        ...


def check_threshold(threshold: float | None, owner: str) -> float | None:
    """Validate a pass mark at construction time.

    Raises:
        ConfigError: The threshold is not a finite number in [0, 1].
    """
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or math.isnan(threshold):
        raise ConfigError(f"{owner}: threshold must be a number in [0, 1] or None, got {threshold!r}")
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"{owner}: threshold must lie in [0, 1], got {threshold}")
    return float(threshold)


def passed_at(score: float | None, threshold: float | None) -> bool | None:
    """``score >= threshold``, or None when either is missing."""
    if score is None or threshold is None:
        return None
    return score >= threshold
