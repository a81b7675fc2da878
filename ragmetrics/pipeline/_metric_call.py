"""Metrics as the runner calls them: objects and plain functions normalised once; judges shared.

:class:`MetricCall` wraps a :class:`~ragmetrics.metrics.base.Metric` (``name``, ``needs``,
``threshold``, ``evaluate_sample``) or a function of a :class:`~ragmetrics.sample.Sample` (sync or
async) into ``await call(sample, repeat) -> MetricResult``, coercing floats, bools and dicts (a
conversation-level metric, ``needs.conversation``, is also given the row's conversation). This is
the one place a user's object is read (:func:`~ragmetrics.metrics.base.needs_of` gives its ``Needs``).
:func:`share_judges` gives the metrics that declare a shareable judge (``needs.shares_judge``) and
have an equal ``judge_key()`` one caching judge.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragmetrics.errors import ConfigError, shorten
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.metrics.base import JudgedMetric, check_threshold, needs_of, passed_at
from ragmetrics.metrics.claims.metric import share_tasks
from ragmetrics.pipeline.records import reserved_name
from ragmetrics.sample import Conversation, Sample
from ragmetrics.score import MetricResult

__all__ = ["MetricCall", "judged", "share_judges"]


class MetricCall:
    """One metric as the runner calls it: ``await call(sample, repeat) -> MetricResult``."""

    __slots__ = ("_fn", "_takes_repeat", "metric", "name", "needs", "threshold")

    def __init__(self, metric: Any) -> None:
        self.metric = metric
        method = getattr(metric, "evaluate_sample", None)
        if callable(method):
            fn = method
            name = getattr(metric, "name", None)
        elif callable(metric):
            fn = metric
            name = getattr(metric, "name", None) or getattr(metric, "__name__", None)
        else:
            raise ConfigError(
                f"metric {shorten(metric, 80)} is neither a metric (with name and evaluate_sample) "
                "nor a function of a Sample"
            )
        if not isinstance(name, str) or not name.isidentifier():
            raise ConfigError(
                f"metric {shorten(metric, 80)}: its name must be a snake_case identifier, got {name!r}"
            )
        if reserved_name(name):
            raise ConfigError(
                f"metric name '{name}' clashes with an EvaluationResult attribute (result.{name} would "
                "not be its score); give the metric another name"
            )
        self.name = name
        self._fn = fn
        self._takes_repeat = _accepts(fn, "repeat")
        self.threshold = check_threshold(getattr(metric, "threshold", None), name)
        self.needs = needs_of(metric)

    async def __call__(
        self, sample: Sample, repeat: int, conversation: Conversation | None = None
    ) -> MetricResult:
        if self.needs.conversation:  # a conversation-level metric: given the row's conversation, if any
            out = self._fn(sample, repeat=repeat, conversation=conversation)
        else:
            out = self._fn(sample, repeat=repeat) if self._takes_repeat else self._fn(sample)
        if inspect.isawaitable(out):
            out = await out
        return self._coerce(out)

    def _coerce(self, out: Any) -> MetricResult:
        if isinstance(out, MetricResult):
            return out
        if isinstance(out, bool) or (isinstance(out, (int, float)) and not isinstance(out, bool)):
            score = float(out)
            return MetricResult(
                name=self.name, score=score, passed=passed_at(score, self.threshold), threshold=self.threshold
            )
        if isinstance(out, Mapping) and "score" in out:
            reason = str(out.get("reason") or out.get("reasoning") or "")
            if out["score"] is None:
                raise ValueError(
                    f"metric '{self.name}' returned no score" + (f": {reason}" if reason else "")
                )
            score = float(out["score"])
            extra = {k: v for k, v in out.items() if k not in ("score", "reason", "reasoning")}
            return MetricResult(
                name=self.name,
                score=score,
                passed=passed_at(score, self.threshold),
                threshold=self.threshold,
                reasoning=reason,
                details=extra,
            )
        raise TypeError(
            f"metric '{self.name}' returned {type(out).__name__}; return a float in [0, 1], "
            "a bool, a dict with 'score', or a MetricResult"
        )


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def judged(metrics: Sequence[Any]) -> list[JudgedMetric]:
    """The metrics that declare a shareable judge (``needs.shares_judge``)."""
    return [m for m in metrics if needs_of(m).shares_judge]


def share_judges(metrics: Sequence[Any]) -> list[CachingJudge]:
    """Give judged metrics with equal ``judge_key()`` one caching judge; return the judges in use.

    The claim metrics on one judge then get one merged task (:func:`share_tasks`), so they ask the
    same requests and the cache makes each once.

    Resolving a judge is when a missing API key is reported (``ConfigError``), so this runs before
    the first call of a run.
    """
    groups: dict[Any, CachingJudge] = {}
    judges: dict[int, CachingJudge] = {}
    for metric in judged(metrics):
        key = metric.judge_key()
        if key in groups:
            metric.use_judge(groups[key])
        else:
            groups[key] = metric.judge
        judges[id(metric.judge)] = metric.judge
    share_tasks(metrics)
    return list(judges.values())
