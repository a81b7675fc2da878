"""Eval cases: the ``eval_case`` marker, discovery by module scan, and running cases against their bounds.

``@eval_case(min_score=0.8, max_cost_usd=0.05, max_latency_ms=2000, tags=["qa"])`` only attaches an
:class:`EvalCaseMeta` to the function as ``_eval_case_meta``; the function stays as it was. Discovery
finds files named ``eval_*.py`` or ``*_eval.py`` under folders (plus any file named explicitly),
imports each by path and collects the marked functions defined in it, as pytest does for tests.

A case returns a dict with any of ``score`` (in [0, 1]), ``cost_usd``, ``latency_ms`` (measured when
omitted), and optionally ``metrics`` (named scores) and ``samples`` (per-sample values, see
:mod:`ragmetrics.regression.snapshot`); or an ``EvaluationResult`` or a list of them (mean score,
summed cost, median sample latency). How that value becomes a verdict lives in
:mod:`ragmetrics.regression.case_result`.
A case passes only when it ran, returned a well-formed value and broke no bound.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import importlib
import importlib.util
import inspect
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from types import ModuleType
from typing import Any, TypedDict, cast

from ragmetrics._aio import run_sync
from ragmetrics.errors import ConfigError, shorten
from ragmetrics.failure import ErrorRecord, failure_from
from ragmetrics.regression.case_result import CaseResult, Violation, judge_value

__all__ = [
    "EVAL_FILE_PATTERNS",
    "CaseResult",
    "Collection",
    "CollectError",
    "EvalCase",
    "EvalCaseMeta",
    "Violation",
    "collect_cases",
    "collect_module",
    "error_result",
    "eval_case",
    "find_eval_files",
    "import_path",
    "is_eval_file",
    "run_case",
    "run_cases",
    "run_cases_sync",
    "select_cases",
]

EVAL_FILE_PATTERNS = ("eval_*.py", "*_eval.py")
"""File names searched for eval cases inside folders."""
_NORECURSE = (
    "*.egg",
    ".*",
    "_darcs",
    "build",
    "CVS",
    "dist",
    "node_modules",
    "venv",
    "{arch}",
    "__pycache__",
)


class _Bounds(TypedDict):
    """A case's bounds and tags, as passed on to CaseResult and judge_value."""

    min_score: float | None
    max_cost_usd: float | None
    max_latency_ms: float | None
    tags: list[str]


def _bound(name: str, value: object, *, high: float | None = None, positive: bool = False) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ConfigError(f"eval_case: {name} must be a finite number or None, got {shorten(value, 60)!r}")
    number = cast(float, value)  # a finite Real; numbers.Real declares no typed comparisons
    if number < 0 or (positive and number == 0) or (high is not None and number > high):
        want = f"in [0, {high:g}]" if high is not None else ("> 0" if positive else ">= 0")
        raise ConfigError(f"eval_case: {name} must be {want}, got {value}")
    return float(value)


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


@dataclass(frozen=True, kw_only=True, slots=True)
class CollectError:
    """A file whose import failed: reported as an error, the other files still run."""

    id: str
    """The file, as shown in reports."""
    path: Path
    """The file."""
    failure: ErrorRecord
    """What the import raised, as the one failure record (traceback without importlib's frames)."""

    @property
    def error(self) -> str:
        """``ExceptionType: message``."""
        return self.failure.summary

    @property
    def traceback(self) -> str:
        """The formatted traceback, importlib frames left out."""
        return self.failure.traceback or ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Collection:
    """What discovery found."""

    cases: list[EvalCase]
    """The eval cases, file by file in definition order."""
    errors: list[CollectError]
    """Files that failed to import."""
    files: list[Path]
    """Every file scanned."""


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def is_eval_file(path: str | os.PathLike[str]) -> bool:
    """True for ``eval_*.py`` and ``*_eval.py`` files."""
    name = Path(path).name
    return name != "__init__.py" and any(fnmatch.fnmatchcase(name, p) for p in EVAL_FILE_PATTERNS)


def _mentions_eval_case(path: Path) -> bool:
    try:
        return "eval_case" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def find_eval_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Eval files under ``paths``: folders are searched for eval_*.py and *_eval.py; files are kept.

    A file found in a folder is kept only if its text mentions ``eval_case`` (so a script that
    happens to be called ``eval_model.py`` is never imported); a file named explicitly is always
    kept. Folders named like pytest's default ``norecursedirs`` (``.*``, ``build``, ``dist``, ``venv``,
    ``node_modules``...) and virtualenvs are skipped. Order is stable; duplicates are dropped.

    Raises:
        ConfigError: A path does not exist or is a file that is not a ``.py`` file.
    """
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ConfigError(f"path not found: {raw}")
        if path.is_file():
            if path.suffix != ".py":
                raise ConfigError(f"not a Python file: {raw}")
            found.setdefault(path.resolve())
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(
                d
                for d in dirs
                if not any(fnmatch.fnmatchcase(d, p) for p in _NORECURSE)
                and not (Path(root, d) / "pyvenv.cfg").exists()
            )
            for name in sorted(files):
                if is_eval_file(name) and _mentions_eval_case(Path(root, name)):
                    found.setdefault(Path(root, name).resolve())
    return list(found)


def import_path(path: str | os.PathLike[str]) -> ModuleType:
    """Import a Python file by path, as pytest's default (prepend) mode does.

    A file inside a package (its folder has ``__init__.py``) is imported under its dotted name with
    the package's parent folder put on ``sys.path``, so relative imports work. Any other file gets
    a unique module name derived from its path, with its folder put on ``sys.path`` so it can import
    its neighbours. Exceptions raised by the module propagate.
    """
    file = Path(path).resolve()
    root, parts = file.parent, [file.stem]
    while (root / "__init__.py").exists():
        parts.insert(0, root.name)
        root = root.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    if len(parts) > 1:
        module = importlib.import_module(".".join(parts))
        if Path(module.__file__ or "").resolve() != file:
            raise ImportError(
                f"module {module.__name__} is already imported from {module.__file__}, not {file}"
            )
        return module
    digest = hashlib.sha1(str(file).encode()).hexdigest()[:10]
    name = f"ragmetrics_eval_{re.sub(r'[^0-9A-Za-z_]', '_', file.stem)}_{digest}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has a loader
        raise ImportError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def collect_module(module: ModuleType, path: Path) -> list[EvalCase]:
    """The eval cases defined in ``module`` (imported ones are left to their own module), in order."""
    cases, seen = [], set()
    for attr, obj in list(vars(module).items()):
        try:
            meta = getattr(obj, "_eval_case_meta", None)
        except Exception:  # noqa: BLE001 - a lazy proxy in the namespace must not stop collection
            continue
        if not isinstance(meta, EvalCaseMeta) or getattr(obj, "__module__", None) != module.__name__:
            continue
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        cases.append(EvalCase(id=f"{_display(path)}::{attr}", name=attr, path=path, func=obj, meta=meta))
    return cases


_HIDE = (os.path.join("ragmetrics", "regression", "cases.py"),)
"""This module's frames are left out of a case's traceback (importlib's always are)."""


def _failure(exc: BaseException) -> ErrorRecord:
    return failure_from(exc, traceback=True, hide=_HIDE)


def collect_cases(paths: Iterable[str | os.PathLike[str]]) -> Collection:
    """Find eval files under ``paths``, import them and collect their cases.

    A file that fails to import (or calls ``sys.exit``) becomes a :class:`CollectError`; the rest
    are still collected.

    Raises:
        ConfigError: A path does not exist or is not a ``.py`` file.
    """
    files = find_eval_files(paths)
    cases: list[EvalCase] = []
    errors: list[CollectError] = []
    for file in files:
        try:
            module = import_path(file)
        except (Exception, SystemExit) as exc:
            errors.append(CollectError(id=_display(file), path=file, failure=_failure(exc)))
            continue
        cases.extend(collect_module(module, file))
    return Collection(cases=cases, errors=errors, files=files)


def _keyword_matcher(expression: str) -> Callable[[EvalCase], bool]:
    tokens: list[str] = re.findall(r"\(|\)|[^\s()]+", expression)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise ConfigError(f"-k expression {expression!r} ends too early")
        pos += 1
        return tokens[pos - 1]

    def parse_or() -> Callable[[EvalCase], bool]:
        parts = [parse_and()]
        while peek() == "or":
            take()
            parts.append(parse_and())
        return lambda c: any(p(c) for p in parts)

    def parse_and() -> Callable[[EvalCase], bool]:
        parts = [parse_not()]
        while peek() == "and":
            take()
            parts.append(parse_not())
        return lambda c: all(p(c) for p in parts)

    def parse_not() -> Callable[[EvalCase], bool]:
        if peek() == "not":
            take()
            inner = parse_not()
            return lambda c: not inner(c)
        token = take()
        if token == "(":
            inner = parse_or()
            if take() != ")":
                raise ConfigError(f"-k expression {expression!r}: missing ')'")
            return inner
        if token in (")", "and", "or"):
            raise ConfigError(f"-k expression {expression!r}: unexpected {token!r}")
        word = token.lower()
        return lambda c: word in c.id.lower() or word in (t.lower() for t in c.meta.tags)

    if not tokens:
        return lambda c: True
    matcher = parse_or()
    if pos != len(tokens):
        raise ConfigError(f"-k expression {expression!r}: unexpected {tokens[pos]!r}")
    return matcher


def select_cases(
    cases: Iterable[EvalCase],
    *,
    keyword: str | None = None,
    tags: Iterable[str] = (),
    exclude_tags: Iterable[str] = (),
) -> list[EvalCase]:
    """Filter cases like ``ragmetrics test -k/--tags/--exclude-tags``.

    Args:
        cases: The cases to filter.
        keyword: A pytest-style expression of words joined by ``and``/``or``/``not`` and brackets;
            a word matches a case whose id contains it or that has it as a tag (case-insensitive).
        tags: Keep cases having at least one of these tags (all cases when empty).
        exclude_tags: Drop cases having any of these tags.

    Raises:
        ConfigError: The keyword expression is malformed.
    """
    match = _keyword_matcher(keyword or "")
    want, drop = set(tags), set(exclude_tags)
    return [
        c for c in cases if match(c) and (not want or want & set(c.meta.tags)) and not drop & set(c.meta.tags)
    ]


def _check_threshold(threshold: float | None) -> float | None:
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not 0 <= threshold <= 1:
        raise ConfigError(f"threshold must be a number in [0, 1], got {threshold!r}")
    return float(threshold)


async def run_case(case: EvalCase, *, threshold: float | None = None, warm: bool = False) -> CaseResult:
    """Run one case and judge it against its bounds; exceptions become an ``error`` result.

    Sync cases run on a worker thread, so a running event loop keeps serving async cases. Latency
    is measured from the call to the return when the case reports none.

    Args:
        case: The case.
        threshold: The min_score for a case that sets none.
        warm: When the case reports no latency (ragmetrics measures it), run it a second time and
            keep that run, so the latency is a warm one (the first call's imports and connections
            are left out; the cold figure is kept in ``details["cold_latency_ms"]``). Used when
            latency is gated; a case that reports its latency runs once.

    Raises:
        ConfigError: ``threshold`` is not in [0, 1].
    """
    first = await _run_once(case, threshold=threshold)
    if not (warm and first.latency_measured and first.outcome != "error"):
        return first
    second = await _run_once(case, threshold=threshold)
    if second.latency_measured:
        second.details["cold_latency_ms"] = first.latency_ms
    return second


async def _run_once(case: EvalCase, *, threshold: float | None) -> CaseResult:
    min_score = case.meta.min_score if case.meta.min_score is not None else _check_threshold(threshold)
    bounds: _Bounds = {
        "min_score": min_score,
        "max_cost_usd": case.meta.max_cost_usd,
        "max_latency_ms": case.meta.max_latency_ms,
        "tags": case.meta.tags,
    }
    start = time.perf_counter()
    try:
        value = await case.func() if case.is_async else await asyncio.to_thread(case.func)
        if inspect.isawaitable(value):
            value = await value
    except (Exception, SystemExit) as exc:
        return error_result(_failure(exc), name=case.id, **bounds)
    return judge_value(value, name=case.id, elapsed_ms=(time.perf_counter() - start) * 1000.0, **bounds)


async def run_cases(
    cases: Sequence[EvalCase], *, threshold: float | None = None, concurrency: int = 8, warm: bool = False
) -> list[CaseResult]:
    """Run cases, at most ``concurrency`` at a time, results in input order.

    Async cases overlap; sync cases run one at a time (on a worker thread, beside the async ones),
    and a sync case waiting for its turn holds no concurrency slot. ``warm`` is :func:`run_case`'s.

    Raises:
        ConfigError: ``concurrency`` is below 1 or ``threshold`` is not in [0, 1].
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    _check_threshold(threshold)
    limit, sync_turn = asyncio.Semaphore(concurrency), asyncio.Lock()

    async def one(case: EvalCase) -> CaseResult:
        if case.is_async:
            async with limit:
                return await run_case(case, threshold=threshold, warm=warm)
        async with sync_turn, limit:
            return await run_case(case, threshold=threshold, warm=warm)

    return list(await asyncio.gather(*(one(c) for c in cases)))


def run_cases_sync(
    cases: Sequence[EvalCase], *, threshold: float | None = None, concurrency: int = 8, warm: bool = False
) -> list[CaseResult]:
    """Blocking twin of :func:`run_cases`; works inside a running event loop too."""
    return run_sync(run_cases(cases, threshold=threshold, concurrency=concurrency, warm=warm))


def error_result(error: CollectError | ErrorRecord, *, name: str | None = None, **bounds: Any) -> CaseResult:
    """The ``error`` result of a file that failed to import, or of a case whose failure record is given.

    Args:
        error: The file's collection error, or a case's failure record.
        name: The case id (a collection error names its file).
        bounds: The case's bounds and tags, kept on the result.
    """
    failure = error.failure if isinstance(error, CollectError) else error
    label = error.id if isinstance(error, CollectError) else name or "?"
    return CaseResult(
        name=label, outcome="error", error=failure.summary, traceback=failure.traceback, **bounds
    )
