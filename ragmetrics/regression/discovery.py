"""Finding eval cases: eval files under folders, importing them by path as pytest does, and selecting cases.

Discovery finds files named ``eval_*.py`` or ``*_eval.py`` under folders (plus any file named
explicitly), imports each by path and collects the marked functions defined in it; a file that fails
to import becomes a :class:`CollectError` holding its failure record, and the other files still run.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ragmetrics.errors import ConfigError
from ragmetrics.regression.marker import EvalCase, EvalCaseMeta
from ragmetrics.score import ErrorRecord, failure_from

__all__ = [
    "EVAL_FILE_PATTERNS",
    "CollectError",
    "Collection",
    "case_failure",
    "collect_cases",
    "collect_module",
    "find_eval_files",
    "import_path",
    "is_eval_file",
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


_HIDE = tuple(os.path.join("ragmetrics", "regression", f) for f in ("cases.py", "discovery.py"))
"""The frames of discovery and of the case runner are left out of a case's traceback (and importlib's)."""


def case_failure(exc: BaseException) -> ErrorRecord:
    """The failure record of an eval file that did not import or of a case that raised."""
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
            errors.append(CollectError(id=_display(file), path=file, failure=case_failure(exc)))
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
