"""The command line's shape: one module per command, short functions, options passed as values."""

from __future__ import annotations

import argparse
import ast
import os
from pathlib import Path

import pytest

import ragmetrics.cli
from ragmetrics.cli.app import _build_parser, main
from ragmetrics.settings import parse_judge_spec, run_defaults, suite_allowances

CLI = Path(ragmetrics.cli.__file__).parent
MODULES = sorted(CLI.rglob("*.py"))
_ENV_WRITERS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _is_environ(node: ast.expr) -> bool:
    """``os.environ`` or a bare ``environ`` (``from os import environ``)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


def _environ_writes(tree: ast.AST) -> list[int]:
    """The lines that write the process environment."""
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        if any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in targets):
            lines.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if (func.attr in _ENV_WRITERS and _is_environ(func.value)) or (
                func.attr in ("putenv", "unsetenv")
                and isinstance(func.value, ast.Name)
                and func.value.id == "os"
            ):
                lines.append(node.lineno)
    return lines


def test_the_environment_check_sees_every_kind_of_write() -> None:
    source = (
        "import os\nfrom os import environ\n"
        "os.environ['A'] = '1'\ndel os.environ['A']\nos.environ.setdefault('A', '1')\n"
        "os.environ.update(A='1')\nos.putenv('A', '1')\nenviron.pop('A')\nos.environ['A'] += '1'\n"
        "x = os.environ.get('A')\n"
    )
    assert sorted(_environ_writes(ast.parse(source))) == [3, 4, 5, 6, 7, 8, 9]


def test_no_cli_module_writes_the_environment() -> None:
    problems = [
        f"{path.relative_to(CLI.parent.parent)}:{line}"
        for path in MODULES
        for line in _environ_writes(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert problems == [], "options are passed as values (ragmetrics.settings.run_defaults), not os.environ"


def test_no_cli_function_is_longer_than_60_lines() -> None:
    long = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({length} lines)")
    assert long == []


def _handlers() -> dict[str, object]:
    parser = _build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub.get_default("handler") for name, sub in commands.choices.items()}


def test_each_command_has_its_handler_in_its_own_module() -> None:
    handlers = _handlers()
    assert set(handlers) >= {"eval", "estimate", "generate", "test", "calibrate", "fake-server"}
    modules = {name: getattr(handler, "__module__", None) for name, handler in handlers.items()}
    assert all(m and m.startswith("ragmetrics.cli.") and m != "ragmetrics.cli.app" for m in modules.values())
    assert len(set(modules.values())) == len(modules), modules
    for name, handler in handlers.items():
        code = handler.__code__  # type: ignore[attr-defined]
        lines = max(line for _, _, line in code.co_lines() if line is not None) - code.co_firstlineno + 1
        assert lines <= 50, f"the handler of {name} is {lines} lines long"


def test_run_defaults_are_values_for_the_judges_built_inside_and_gone_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = "openai:x@http://127.0.0.1:1/v1"
    monkeypatch.setenv("RAGMETRICS_TIMEOUT_S", "7")
    monkeypatch.setenv("RAGMETRICS_MAX_ATTEMPTS", "many")  # a flag given wins: the variable is not read
    with run_defaults(max_attempts=2, suite_allow=["cache"]):
        settings = parse_judge_spec(spec)
        assert (settings.max_attempts, settings.timeout_s) == (2, 7.0)
        assert parse_judge_spec(spec, max_attempts=4).max_attempts == 4  # options given in code win
        with run_defaults(timeout_s=3.0, suite_allow=["judge_url"]):
            assert (parse_judge_spec(spec).max_attempts, parse_judge_spec(spec).timeout_s) == (2, 3.0)
            assert suite_allowances() == {"cache", "judge_url"}
        assert suite_allowances() == {"cache"}
    monkeypatch.delenv("RAGMETRICS_MAX_ATTEMPTS")
    assert suite_allowances() == frozenset()
    assert parse_judge_spec(spec).max_attempts == parse_judge_spec("offline").max_attempts


def test_a_command_leaves_neither_the_environment_nor_its_defaults_behind() -> None:
    before = dict(os.environ)
    argv = ["eval", "--example", "--judge", "offline", "--quiet", "--max-attempts", "2", "--timeout", "3"]
    assert main(argv) == 0
    assert dict(os.environ) == before
    settings = parse_judge_spec("openai:x@http://127.0.0.1:1/v1")
    assert (settings.max_attempts, settings.timeout_s) == (6, 60.0)
