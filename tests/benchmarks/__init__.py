"""Tests of the benchmarks' own arithmetic and data construction; :func:`load_benchmark` imports one."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` as a module (the folder is no package)."""
    spec = importlib.util.spec_from_file_location(f"_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
