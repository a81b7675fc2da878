"""The package as a whole: import cost, public surface, prompt files, layering, packaging."""

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


def test_import_loads_no_provider_sdk():
    code = (
        "import sys, ragmetrics; from ragmetrics import FaithfulnessMetric, EvaluationPipeline, "
        "RougeEvaluator, eval_case; "
        "print(sorted(m for m in ('openai', 'anthropic', 'instructor', 'httpx', 'httpx2', "
        "'opentelemetry', 'mlflow', 'phoenix', 'openinference') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    public, sdks = out.splitlines()
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
    "_terminal",
    "_check",
    "_textnorm",
    "sample",
    "score",
    "failure",
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
    "eval",
    "suite",
)
LAYERS = [
    {f"ragmetrics.{name}" for name in RECORDS},
    {"ragmetrics.judge"},
    {"ragmetrics.metrics"},
    {"ragmetrics.pipeline", "ragmetrics.traces"},  # traces: OTLP spans read as dataset rows
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
                targets = [
                    f"ragmetrics.{a.name}" if _is_submodule(package, a.name) else "ragmetrics"
                    for a in node.names
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
