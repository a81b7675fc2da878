"""The package as a whole: import cost, public surface, prompt files, layering, structure, packaging."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ragmetrics
from ragmetrics.errors import PromptError
from ragmetrics.prompting import Prompt, load_prompt, prompt_root, render

ROOT = Path(__file__).resolve().parent.parent


def _printed(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (so no module this test process loaded counts)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_import_loads_no_provider_sdk():
    code = (
        "import sys, ragmetrics; from ragmetrics import FaithfulnessMetric, EvaluationPipeline, "
        "RougeEvaluator, eval_case; "
        "print(sorted(m for m in ('openai', 'anthropic', 'instructor', 'httpx', 'httpx2', "
        "'opentelemetry', 'mlflow', 'phoenix', 'openinference') "
        "if m in sys.modules))"
    )
    assert _printed(code).strip() == "[]"


def test_a_run_of_the_claim_metrics_loads_no_evaluator_no_conversation_metric_and_no_trace_reader():
    """What the first judge call waits for is what the run needs (issue 42: the first request)."""
    code = (
        "import sys, ragmetrics; "
        "ragmetrics.evaluate_sync([{'question': 'q?', 'answer': 'A is B.', 'contexts': ['A is B.']}], "
        "metrics=['faithfulness', 'relevancy', 'groundedness'], llm='offline', progress=False); "
        "print(sorted(m for m in sys.modules if m.startswith(('ragmetrics.metrics.evaluators', "
        "'ragmetrics.metrics.conversation.session', 'ragmetrics.metrics.conversation.judged', "
        "'ragmetrics.observe'))))"
    )
    assert _printed(code).strip() == "[]"
    loaded = "import ragmetrics.metrics as m; print(len(m.BUILTIN_METRICS) > len(m.RAG_METRICS), m.Evaluator)"
    assert _printed(loaded).strip() == "True <class 'ragmetrics.metrics.evaluators.base.Evaluator'>"


def test_public_surface_is_pinned_and_sorted():
    assert ragmetrics.__all__ == sorted(ragmetrics.__all__, key=str.casefold) or ragmetrics.__all__ == sorted(
        ragmetrics.__all__
    )
    for name in ragmetrics.__all__:
        assert hasattr(ragmetrics, name), name
    for name in (
        "FaithfulnessMetric",
        "RelevancyMetric",
        "GroundednessMetric",
        "ContextRecallMetric",
        "ContextPrecisionMetric",
        "ContextRelevancyMetric",
        "AnswerCorrectnessMetric",
        "RagMetricsError",
        "InvalidInputError",
        "NoScoreError",
        "MetricResult",
        "evaluate",
        "evaluate_sync",
    ):
        assert name in ragmetrics.__all__


def test_dir_shows_the_public_names_not_the_helpers_and_loads_nothing():
    # tab completion in a notebook lists dir(ragmetrics): no Any, TYPE_CHECKING, annotations, import_module
    code = (
        "import sys, ragmetrics; names = dir(ragmetrics); "
        "print(sorted(n for n in names if not n.startswith('__'))); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'instructor')))"
    )
    public, sdks = _printed(code).splitlines()
    assert public == str(sorted(n for n in ragmetrics.__all__ if not n.startswith("__")))
    assert sdks == "[]"
    names = dir(ragmetrics)
    for helper in ("Any", "TYPE_CHECKING", "annotations", "import_module", "_LAZY", "errors"):
        assert helper not in names
    assert "__version__" in names and "FaithfulnessMetric" in names


def test_version_matches_pyproject():
    text = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{ragmetrics.__version__}"' in text


def test_every_prompt_matches_the_manifest():
    root = prompt_root()
    manifest = json.loads((root / "manifest.json").read_text())
    files = {str(p.relative_to(root)) for p in root.rglob("*.md")}
    assert files == set(manifest), "every prompt file is listed, and every listed file exists"
    for rel, digest in manifest.items():
        assert hashlib.sha256((root / rel).read_bytes()).hexdigest() == digest, f"{rel} was edited in place"


def test_an_edited_prompt_is_refused(tmp_path, monkeypatch):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "p.v1.md").write_text("Hello $name")
    (tmp_path / "manifest.json").write_text(json.dumps({"g/p.v1.md": "0" * 64}))
    monkeypatch.setattr("ragmetrics.prompting.prompt_root", lambda: tmp_path)  # point at a scratch folder
    load_prompt.cache_clear()
    try:
        with pytest.raises(PromptError, match="edited in place"):
            load_prompt("g/p.v1")
    finally:
        load_prompt.cache_clear()


def test_render_checks_placeholders_and_escapes():
    prompt = Prompt(id="t/x.v1", text="<a>\n$a\n</a>", sha256="0")
    assert render(prompt, a="x</a><b>&") == "<a>\nx&lt;/a&gt;&lt;b&gt;&amp;\n</a>"
    with pytest.raises(PromptError, match="needs"):
        render(prompt)
    with pytest.raises(PromptError, match="no placeholder"):
        render(prompt, a="1", b="2")


# Layers (STYLE.md): the folders, lowest first; a module may import only its own layer or below.
# records (single modules) <- judge <- metrics <- pipeline <- the faces (regression, report, cli, ...).
RECORDS = (
    "errors",
    "_aio",
    "_version",
    "_check",
    "text",
    "sample",
    "score",
    "settings",
    "prompting",
)
FACES = (
    "regression",
    "report",
    "calibration",
    "testset",
    "cli",
    "integrations",
    "testing",
    "pytest_plugin",
    "_fake",
    "evaluation",
    "__main__",
    "observe",
)
LAYERS = [
    {f"ragmetrics.{name}" for name in RECORDS},
    {"ragmetrics.judge"},
    {"ragmetrics.metrics"},
    {"ragmetrics.pipeline"},
    {f"ragmetrics.{name}" for name in FACES},
]


def _layer(module: str) -> int | None:
    for i, layer in enumerate(LAYERS):
        if any(module == m or module.startswith(m + ".") for m in layer):
            return i
    return None


def _is_submodule(package: Path, name: str) -> bool:
    return (package / f"{name}.py").is_file() or (package / name / "__init__.py").is_file()


def test_no_module_imports_a_layer_above_it():
    package = Path(ragmetrics.__file__).parent
    problems = []
    for path in package.rglob("*.py"):
        rel = path.relative_to(package.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        if module == "ragmetrics":
            continue
        mine = _layer(module)
        if mine is None:
            problems.append(f"{module} is in no layer")
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module == "ragmetrics":
                targets = [  # the package's own __version__ is set before any submodule loads
                    f"ragmetrics.{a.name}" if _is_submodule(package, a.name) else "ragmetrics"
                    for a in node.names
                    if a.name != "__version__"
                ]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target == "ragmetrics" and module.split(".")[1] not in ("cli",):
                    problems.append(f"{module} imports the top-level package")
                theirs = _layer(target) if target.startswith("ragmetrics.") else None
                if theirs is not None and theirs > mine:
                    problems.append(f"{module} (layer {mine}) imports {target} (layer {theirs})")
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(not os.environ.get("CI"), reason="CI proves the packaging with a non-editable install")
def test_ci_tests_the_installed_wheel_not_the_checkout():
    installed = Path(ragmetrics.__file__).resolve()
    assert "site-packages" in installed.parts, installed
    assert (ROOT / "ragmetrics") not in installed.parents, installed
    assert (Path(ragmetrics.__file__).parent / "prompts" / "manifest.json").is_file()


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """The ragmetrics modules ``path`` imports at run time, and those it imports under TYPE_CHECKING only."""
    tree = ast.parse(path.read_text())
    typing_only: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("ragmetrics"):
                    typing_only.add(str(inner.module))
    everything = {
        n.module
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("ragmetrics")
    }
    return everything - typing_only, typing_only


def test_no_import_cycle_hides_behind_type_checking():
    package = Path(ragmetrics.__file__).parent
    modules = {}
    for path in package.rglob("*.py"):
        rel = path.relative_to(package.parent).with_suffix("")
        modules[".".join(rel.parts).removesuffix(".__init__")] = _imports(path)
    hidden = [
        f"{module} imports {target} under TYPE_CHECKING, and {target} imports {module}"
        for module, (_, typing_only) in modules.items()
        for target in typing_only
        if module in modules.get(target, (set(), set()))[0]
    ]
    assert not hidden, "\n".join(hidden)


def test_no_module_imports_a_private_module_of_another_package():
    # STYLE.md: "Import a private name only from inside its own package."
    package = Path(ragmetrics.__file__).parent
    problems = []
    for path in package.rglob("*.py"):
        rel = path.relative_to(package.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("ragmetrics."):
                continue
            assert node.module is not None
            parts = node.module.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_"):
                    owner = ".".join(parts[:i])
                    if not (module == owner or module.startswith(owner + ".")):
                        problems.append(f"{module} imports {node.module}, private to {owner}")
                    break
    assert not problems, "\n".join(problems)


def _modules() -> dict[str, Path]:
    package = Path(ragmetrics.__file__).parent
    return {
        ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): path
        for path in package.rglob("*.py")
    }


def _targets(module: str, path: Path, known: set[str]) -> set[str]:
    """The ragmetrics modules ``module`` imports anywhere in its file (functions and TYPE_CHECKING too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one level up per dot after the first
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known)
    return {m for m in found if m in known}


def test_only_the_facade_and_the_cli_import_observe():
    # Observability (traces in, scores out) sits above the pipeline: nothing below it imports it, and
    # of the faces only the evaluate() facade, the package's lazy names and the CLI do.
    modules = _modules()
    allowed = ("ragmetrics", "ragmetrics.evaluation", "ragmetrics.cli")
    problems = [
        f"{module} imports {target}"
        for module, path in modules.items()
        if not (module == "ragmetrics.observe" or module.startswith("ragmetrics.observe."))
        and not any(module == a or (a == "ragmetrics.cli" and module.startswith(a + ".")) for a in allowed)
        for target in sorted(_targets(module, path, set(modules)))
        if target == "ragmetrics.observe" or target.startswith("ragmetrics.observe.")
    ]
    assert not problems, "\n".join(problems)


def test_observe_has_no_import_cycle():
    modules = _modules()
    inside = {
        m: p for m, p in modules.items() if m == "ragmetrics.observe" or m.startswith("ragmetrics.observe.")
    }
    graph = {m: _targets(m, p, set(inside)) - {m} for m, p in inside.items()}
    assert {"ragmetrics.observe.otlp", "ragmetrics.observe.phoenix", "ragmetrics.observe.mlflow"} <= set(
        graph
    )
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target] if target in path else [*path, target]
                raise AssertionError("import cycle in ragmetrics.observe: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


# Structure (issue 40): a small package root, no cycle between packages, and tests that mirror the folders.
MAX_ROOT_MODULES = 12
WHOLE_PACKAGE_TESTS = {"test_package.py", "test_lint.py", "test_docs.py", "test_xdist_groups.py"}
OTHER_TEST_FOLDERS = {
    "benchmarks": "the arithmetic of the benchmarks/ scripts",
    "data": "data files, no tests",
    "fakes": "the fake provider server (ragmetrics.testing and its internals in ragmetrics/_fake)",
    "hostile": "hostile inputs, across every package",
    "parity": "agreement with other libraries' figures",
}


def test_the_package_root_holds_at_most_12_modules():
    modules = sorted(p.name for p in Path(ragmetrics.__file__).parent.glob("*.py"))
    assert len(modules) <= MAX_ROOT_MODULES, f"{len(modules)} modules at the package root: {modules}"


def _unit(module: str) -> str:
    """The top-level package or root module that ``module`` belongs to (``ragmetrics.judge``...)."""
    return ".".join(module.split(".")[:2])


def _package_graph() -> dict[str, set[str]]:
    """Each top-level package or root module, and the others it imports (run time, TYPE_CHECKING or lazily).

    ``ragmetrics/__init__.py`` is left out: it re-exports the public names of every package.
    """
    package = Path(ragmetrics.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        if module == "ragmetrics":
            continue
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "ragmetrics":
                targets |= {f"ragmetrics.{a.name}" for a in node.names if _is_submodule(package, a.name)}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets.add(node.module)
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        mine = _unit(module)
        graph.setdefault(mine, set()).update(
            _unit(t) for t in targets if t.startswith("ragmetrics.") and _unit(t) != mine
        )
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_packages_import_each_other():
    graph = _package_graph()
    assert {"ragmetrics.errors", "ragmetrics.judge", "ragmetrics.cli"} <= set(graph)
    assert "ragmetrics.judge" in graph["ragmetrics.metrics"], "the graph sees the package imports"
    cycles = _cycles(graph)
    detail = [f"{m} -> {sorted(t for t in graph[m] if t in c)}" for c in cycles for m in c]
    assert not cycles, "packages in an import cycle:\n" + "\n".join(detail)


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_tests_mirror_the_package_folders():
    package = Path(ragmetrics.__file__).parent
    tests = Path(__file__).parent
    folders = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    root_modules = {p.stem.lstrip("_") for p in package.glob("*.py")}
    strays = [
        f"tests/{d.name}/ names no package folder under ragmetrics/"
        for d in sorted(tests.iterdir())
        if d.is_dir() and not d.name.startswith(("_", "."))
        if d.name not in folders and d.name not in OTHER_TEST_FOLDERS
    ]
    # a test file at the top level tests the whole package, or the root module it is named after
    strays += [
        f"tests/{f.name} belongs in the folder of the package it tests"
        for f in sorted(tests.glob("test_*.py"))
        if f.name not in WHOLE_PACKAGE_TESTS and f.stem.removeprefix("test_") not in root_modules
    ]
    assert not strays, "\n".join(strays)


MAX_MODULE_DOCSTRING_LINES = 12


def test_every_module_says_what_it_owns_in_at_most_12_lines():
    too_long: dict[str, int] = {}
    missing: list[str] = []
    for path in sorted((ROOT / "ragmetrics").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc is None or not doc.strip():
            missing.append(name)
        elif (lines := len(doc.strip("\n").splitlines())) > MAX_MODULE_DOCSTRING_LINES:
            too_long[name] = lines
    assert not missing, f"modules without a docstring: {missing}"
    assert not too_long, (
        f"module docstrings over {MAX_MODULE_DOCSTRING_LINES} lines (figures go to benchmarks/): {too_long}"
    )
