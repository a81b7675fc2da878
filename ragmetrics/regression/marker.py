"""The ``eval_case`` marker and what discovery makes of a marked function (:class:`EvalCase`).

``@eval_case(min_score=0.8, max_cost_usd=0.05, max_latency_ms=2000, tags=["qa"])`` only attaches an
:class:`EvalCaseMeta` to the function as ``_eval_case_meta``; the function stays as it was. Finding,
importing and selecting cases is :mod:`ragmetrics.regression.discovery`; running them is
:mod:`ragmetrics.regression.cases`, which re-exports everything here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ragmetrics._check import check_number, config_error
from ragmetrics.errors import ConfigError, shorten

__all__ = ["EvalCase", "EvalCaseMeta", "eval_case"]


class _Bounds(TypedDict):
    """A case's bounds and tags, as passed on to CaseResult and judge_value."""

    min_score: float | None
    max_cost_usd: float | None
    max_latency_ms: float | None
    tags: list[str]


def _bound(name: str, value: object, *, high: float | None = None, positive: bool = False) -> float | None:
    if value is None:
        return None
    number = check_number(value, name, "eval_case", expected="a finite number or None")
    if number < 0 or (positive and number == 0) or (high is not None and number > high):
        want = f"in [0, {high:g}]" if high is not None else ("> 0" if positive else ">= 0")
        want = f"a number {want}"
        raise config_error("eval_case", name, want, value)
    return number


@dataclass(frozen=True, kw_only=True, slots=True)
class EvalCaseMeta:
    """The bounds and tags ``eval_case`` attaches to a function as ``_eval_case_meta``."""

    min_score: float | None = None
    """Lowest acceptable score (0.0-1.0); None: the run's ``--threshold``, if any."""
    max_cost_usd: float | None = None
    """Highest acceptable cost in USD."""
    max_latency_ms: float | None = None
    """Highest acceptable latency in milliseconds."""
    tags: list[str] = field(default_factory=list)
    """Tags for filtering and grouping."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "min_score", _bound("min_score", self.min_score, high=1.0))
        object.__setattr__(self, "max_cost_usd", _bound("max_cost_usd", self.max_cost_usd))
        object.__setattr__(
            self, "max_latency_ms", _bound("max_latency_ms", self.max_latency_ms, positive=True)
        )
        tags = self.tags
        if isinstance(tags, str) or not isinstance(tags, Iterable):
            raise ConfigError(f"eval_case: tags must be a list of strings, got {tags!r}")
        clean = list(tags)
        for tag in clean:
            if not isinstance(tag, str) or not tag.strip() or "," in tag:
                raise ConfigError(
                    f"eval_case: each tag must be a non-empty string without commas, got {tag!r}"
                )
        object.__setattr__(self, "tags", [t.strip() for t in clean])

    def __hash__(self) -> int:
        return hash((self.min_score, self.max_cost_usd, self.max_latency_ms, tuple(self.tags)))


def eval_case(
    func: Callable[..., Any] | None = None,
    /,
    *,
    min_score: float | None = None,
    max_cost_usd: float | None = None,
    max_latency_ms: float | None = None,
    tags: Iterable[str] = (),
) -> Any:
    """Mark a sync or async function as an eval case with quality, cost and latency bounds.

    Usable bare (``@eval_case``) or with keywords. The function is returned unchanged, with an
    :class:`EvalCaseMeta` attached as ``_eval_case_meta``.

    Raises:
        ConfigError: A bound is out of range, a tag is not a string, or the target is not a plain
            function callable without arguments.
    """
    meta = EvalCaseMeta(
        min_score=min_score,
        max_cost_usd=max_cost_usd,
        max_latency_ms=max_latency_ms,
        tags=tags,  # type: ignore[arg-type]  # __post_init__ checks any iterable and stores a list
    )

    def mark(target: Callable[..., Any]) -> Callable[..., Any]:
        if not inspect.isfunction(target):
            raise ConfigError(f"eval_case marks functions, not {type(target).__name__} {shorten(target, 60)}")
        if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
            raise ConfigError(f"eval case {target.__qualname__} must return its result, not yield it")
        required = [
            p.name
            for p in inspect.signature(target).parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        if required:
            raise ConfigError(
                f"eval case {target.__qualname__} must take no arguments; it requires {required}"
            )
        target._eval_case_meta = meta  # type: ignore[attr-defined]
        return target

    if func is None:
        return mark
    if not callable(func):
        raise ConfigError("eval_case takes keyword arguments only, e.g. @eval_case(min_score=0.8)")
    return mark(func)


@dataclass(frozen=True, kw_only=True, slots=True)
class EvalCase:
    """A discovered eval case."""

    id: str
    """``<path relative to the working directory>::<name>``; the name used in reports and snapshots."""
    name: str
    """The attribute name in its module."""
    path: Path
    """The file it was found in."""
    func: Callable[..., Any]
    """The marked function."""
    meta: EvalCaseMeta
    """Its bounds and tags."""

    @property
    def is_async(self) -> bool:
        """True for ``async def`` cases."""
        return inspect.iscoroutinefunction(self.func)
