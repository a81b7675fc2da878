"""pytest plugin: eval cases as test items (registered through the ``pytest11`` entry point ``ragmetrics``).

Each ``@eval_case`` function in eval files (``eval_*.py`` / ``*_eval.py``) named on the command line,
directly or through a folder, becomes a test item judged as ``ragmetrics test`` judges it; a bare
``pytest`` run never collects them (ini option ``ragmetrics_evals = always|never`` changes that).
Files that do not mention ``eval_case`` are never imported, and ordinary test collection is left alone.
The ``--ragmetrics-*`` options mirror ``ragmetrics test``'s: save and compare snapshots, and with
``--ragmetrics-fail-on-regression`` a last item, ``ragmetrics-regression-gate``, fails on regressions
(through :func:`ragmetrics.regression.case_gate.gate_run`). Importing this module is cheap.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ragmetrics.errors import SnapshotError

if TYPE_CHECKING:
    from ragmetrics.regression.case_result import CaseResult
    from ragmetrics.regression.cases import EvalCase

__all__ = ["EvalCaseFailure", "EvalCaseItem", "RegressionGateItem"]

# Same as ragmetrics.regression.cases.EVAL_FILE_PATTERNS (a test keeps them equal); not imported from there so
# that loading the plugin in every pytest run does not import pydantic.
_EVAL_FILE_PATTERNS = ("eval_*.py", "*_eval.py")
_MODES = ("explicit", "always", "never")
_RESULTS = pytest.StashKey[list["CaseResult"]]()
_BASELINE = pytest.StashKey[Any]()
_GATE = pytest.StashKey[Any]()
_GATE_NAME = "ragmetrics-regression-gate"
_SAVED = pytest.StashKey[str]()
_ALLOW_BEFORE = pytest.StashKey["str | None"]()
_ALLOWANCES = {
    "judge_url": "send judge requests to any host they name",
    "suite_cache": "name cache folders outside your cache folder",
    "suite_settings": "set cost settings outside the sane ranges",
}
"""``--ragmetrics-allow-*`` options -> help text; the names in ``RAGMETRICS_SUITE_ALLOW`` drop ``suite_``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--ragmetrics-threshold`` and the ``ragmetrics_evals`` ini option."""
    group = parser.getgroup("ragmetrics", "ragmetrics eval cases")
    group.addoption(
        "--ragmetrics-threshold",
        dest="ragmetrics_threshold",
        type=float,
        default=None,
        metavar="SCORE",
        help="min_score for eval cases that set none (as `ragmetrics test --threshold`)",
    )
    group.addoption(
        "--ragmetrics-judge-health-min",
        dest="ragmetrics_judge_health_min",
        type=float,
        default=None,
        metavar="SHARE",
        help="fail an eval case whose judge's reading rate is below SHARE (default 0.5; as `ragmetrics "
        "test --judge-health-min`)",
    )
    group.addoption(
        "--ragmetrics-no-judge-gate",
        dest="ragmetrics_no_judge_gate",
        action="store_true",
        help="do not fail eval cases on their judge's health",
    )
    group.addoption("--ragmetrics-save", dest="ragmetrics_save", metavar="NAME", help="save a snapshot")
    group.addoption(
        "--ragmetrics-compare", dest="ragmetrics_compare", metavar="NAME", help="compare with snapshot NAME"
    )
    group.addoption(
        "--ragmetrics-fail-on-regression",
        dest="ragmetrics_fail_on_regression",
        action="store_true",
        help="fail (a last test item) when --ragmetrics-compare finds a regression",
    )
    group.addoption(
        "--ragmetrics-allow-missing-cases",
        dest="ragmetrics_allow_missing_cases",
        action="store_true",
        help="do not fail the gate when baseline cases did not run (a -k/-m run never counts them)",
    )
    group.addoption(
        "--ragmetrics-alpha",
        dest="ragmetrics_alpha",
        type=float,
        default=None,
        metavar="A",
        help="count a regression backed by per-sample data only when its p-value is below A",
    )
    group.addoption(
        "--ragmetrics-regression-threshold",
        dest="ragmetrics_thresholds",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="relative tolerance, e.g. score=-0.05, latency_ms=0.5 (latency is gated only when given)",
    )
    group.addoption(
        "--ragmetrics-warm-latency",
        dest="ragmetrics_warm_latency",
        action="store_true",
        help="run each eval case that reports no latency_ms twice and keep the second (warm) run",
    )
    group.addoption(
        "--ragmetrics-snapshot-dir",
        dest="ragmetrics_snapshot_dir",
        default=".ragmetrics_evals",
        metavar="DIR",
        help="where snapshots live (default .ragmetrics_evals)",
    )
    for name, what in _ALLOWANCES.items():
        group.addoption(
            f"--ragmetrics-allow-{name.replace('_', '-')}",
            dest=f"ragmetrics_allow_{name}",
            action="store_true",
            help=f"let suite files that eval cases load {what} (as `ragmetrics test --allow-...`)",
        )
    parser.addini(
        "ragmetrics_evals",
        help="collect eval files: explicit (named on the command line; default), always, never",
        default="explicit",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``eval_case`` marker and check the options."""
    config.addinivalue_line("markers", "eval_case: a ragmetrics eval case (added by the ragmetrics plugin)")
    mode = str(config.getini("ragmetrics_evals")).strip().lower()
    if mode not in _MODES:
        raise pytest.UsageError(f"ragmetrics_evals must be one of {', '.join(_MODES)}, got {mode!r}")
    threshold = config.getoption("ragmetrics_threshold", None)
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise pytest.UsageError(f"--ragmetrics-threshold must be in [0, 1], got {threshold}")
    health_min = config.getoption("ragmetrics_judge_health_min", None)
    if health_min is not None and not 0.0 <= health_min <= 1.0:
        raise pytest.UsageError(f"--ragmetrics-judge-health-min must be in [0, 1], got {health_min}")
    allowed = [
        n.removeprefix("suite_") for n in _ALLOWANCES if config.getoption(f"ragmetrics_allow_{n}", False)
    ]
    if allowed:  # suites loaded during the session read it (ragmetrics.regression.suite_trust)
        before = os.environ.get("RAGMETRICS_SUITE_ALLOW")
        config.stash[_ALLOW_BEFORE] = before
        given = [n for n in (before or "").split(",") if n.strip()]
        os.environ["RAGMETRICS_SUITE_ALLOW"] = ",".join(dict.fromkeys([*given, *allowed]))
    config.stash[_RESULTS] = []
    config.stash[_GATE] = None
    config.stash[_BASELINE] = _load_baseline(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Put ``RAGMETRICS_SUITE_ALLOW`` back as it was before the ``--ragmetrics-allow-*`` options."""
    if _ALLOW_BEFORE not in config.stash:
        return
    before = config.stash[_ALLOW_BEFORE]
    if before is None:
        os.environ.pop("RAGMETRICS_SUITE_ALLOW", None)
    else:
        os.environ["RAGMETRICS_SUITE_ALLOW"] = before


def _thresholds(config: pytest.Config) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for text in config.getoption("ragmetrics_thresholds", None) or []:
        metric, sep, raw = str(text).partition("=")
        if not sep or not metric.strip():
            raise pytest.UsageError(
                "--ragmetrics-regression-threshold: expected METRIC=VALUE (e.g. latency_ms=0.5), "
                f"got {text!r}"
            )
        try:
            out[metric.strip()] = None if raw.strip().lower() in ("none", "off") else float(raw)
        except ValueError:
            raise pytest.UsageError(
                f"--ragmetrics-regression-threshold: expected a number or 'none' after '=', got {text!r}"
            ) from None
    return out


def _load_baseline(config: pytest.Config) -> Any:
    """Check the snapshot options; the baseline snapshot when comparing (a bad option is a usage error)."""
    save = config.getoption("ragmetrics_save", None)
    compare = config.getoption("ragmetrics_compare", None)
    alpha = config.getoption("ragmetrics_alpha", None)
    thresholds = _thresholds(config)
    if config.getoption("ragmetrics_fail_on_regression", False) and not compare:
        raise pytest.UsageError("--ragmetrics-fail-on-regression needs --ragmetrics-compare NAME")
    if alpha is not None and not 0.0 < alpha < 1.0:
        raise pytest.UsageError(f"--ragmetrics-alpha must lie strictly between 0 and 1, got {alpha}")
    if not (save or compare):
        if thresholds or alpha is not None:
            raise pytest.UsageError(
                "--ragmetrics-regression-threshold and --ragmetrics-alpha need --ragmetrics-compare"
            )
        return None
    from ragmetrics.regression.case_gate import known_metrics
    from ragmetrics.regression.snapshot import EvalRegression

    store = EvalRegression(Path(config.invocation_params.dir) / config.getoption("ragmetrics_snapshot_dir"))
    try:
        if save:
            store.path_for(save)
        baseline = store.load_snapshot(compare) if compare else None
    except SnapshotError as exc:
        raise pytest.UsageError(str(exc)) from None
    if baseline is None:
        if thresholds or alpha is not None:
            raise pytest.UsageError(
                "--ragmetrics-regression-threshold and --ragmetrics-alpha need --ragmetrics-compare"
            )
        return None
    unknown = sorted(set(thresholds) - known_metrics(baseline))
    if unknown:
        raise pytest.UsageError(
            f"--ragmetrics-regression-threshold for unknown metric(s) {unknown}; "
            f"known: {sorted(known_metrics(baseline))}"
        )
    return baseline


def _gate(config: pytest.Config) -> Any:
    """The comparison of this session's eval case results with the baseline (computed once)."""
    if config.stash[_GATE] is None:
        from ragmetrics.regression.case_gate import gate_run
        from ragmetrics.regression.snapshot import Snapshot

        results: list[CaseResult] = config.stash[_RESULTS]
        current = Snapshot.from_results(config.getoption("ragmetrics_save") or "current", results)
        filtered = bool(config.getoption("keyword", "") or config.getoption("markexpr", ""))
        allow = bool(config.getoption("ragmetrics_allow_missing_cases", False)) or filtered
        config.stash[_GATE] = gate_run(
            config.stash[_BASELINE],
            current,
            _thresholds(config),
            alpha=config.getoption("ragmetrics_alpha"),
            allow_missing=allow,
        )
    return config.stash[_GATE]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """With ``--ragmetrics-fail-on-regression``, append the regression gate after the eval cases."""
    if config.stash.get(_BASELINE, None) is None or not config.getoption("ragmetrics_fail_on_regression"):
        return
    if any(isinstance(item, EvalCaseItem) for item in items):
        items.append(RegressionGateItem.from_parent(session, name=_GATE_NAME, nodeid=_GATE_NAME))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Save the snapshot (``--ragmetrics-save``) once every eval case has run."""
    config = session.config
    name = config.getoption("ragmetrics_save", None)
    results = config.stash.get(_RESULTS, [])
    if not name or not results:
        return
    from ragmetrics.regression.snapshot import EvalRegression, Snapshot

    store = EvalRegression(Path(config.invocation_params.dir) / config.getoption("ragmetrics_snapshot_dir"))
    store.save_snapshot(name, Snapshot.from_results(name, results))
    config.stash[_SAVED] = str(store.path_for(name))


def _is_eval_file(path: Path) -> bool:
    return path.name != "__init__.py" and any(fnmatch.fnmatchcase(path.name, p) for p in _EVAL_FILE_PATTERNS)


def _enabled(config: pytest.Config, path: Path) -> bool:
    mode = str(config.getini("ragmetrics_evals")).strip().lower()
    if mode != "explicit":
        return mode == "always"
    source = getattr(config, "args_source", None)
    if source is None or source != pytest.Config.ArgsSource.ARGS:
        return False
    base = Path(config.invocation_params.dir)
    path = path.resolve()
    for arg in config.args:
        root = (base / arg.split("::")[0]).resolve()
        if path == root or root in path.parents:
            return True
    return False


def _pytest_collects_it(parent: pytest.Collector, path: Path) -> bool:
    if parent.session.isinitpath(path):
        return True
    return any(fnmatch.fnmatch(path.name, p) for p in parent.config.getini("python_files"))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect an eval file as a module, unless pytest's python plugin already does."""
    if file_path.suffix != ".py" or not _is_eval_file(file_path) or not _enabled(parent.config, file_path):
        return None
    if _pytest_collects_it(parent, file_path):
        return None  # pytest makes the Module; pytest_pycollect_makeitem below takes the cases
    try:
        if "eval_case" not in file_path.read_text(encoding="utf-8", errors="replace"):
            return None
    except OSError:
        return None
    return pytest.Module.from_parent(parent, path=file_path)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> EvalCaseItem | None:
    """Turn an ``eval_case`` function of an eval file into an :class:`EvalCaseItem`."""
    try:
        meta = getattr(obj, "_eval_case_meta", None)
    except Exception:  # noqa: BLE001 - an odd object in a module namespace must not break collection
        return None
    if meta is None or not isinstance(collector, pytest.Module):
        return None
    if not _is_eval_file(collector.path) or not _enabled(collector.config, collector.path):
        return None
    from ragmetrics.regression.cases import EvalCase, EvalCaseMeta

    if not isinstance(meta, EvalCaseMeta) or getattr(obj, "__module__", None) != collector.module.__name__:
        return None
    case = EvalCase(id=f"{collector.nodeid}::{name}", name=name, path=collector.path, func=obj, meta=meta)  # type: ignore[arg-type]
    return EvalCaseItem.from_parent(collector, name=name, case=case)


class EvalCaseFailure(Exception):
    """Raised by an eval case item that did not pass; carries the case's result."""

    def __init__(self, result: CaseResult) -> None:
        self.result = result
        super().__init__(result.describe())


class EvalCaseItem(pytest.Item):
    """One eval case run as a pytest test."""

    def __init__(self, *, case: EvalCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.result: CaseResult | None = None
        self.add_marker("eval_case")
        self.extra_keyword_matches.update(case.meta.tags)

    def runtest(self) -> None:
        """Run the case as ``ragmetrics test`` does and fail with its reasons when it does not pass."""
        from ragmetrics._aio import run_sync
        from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN
        from ragmetrics.regression.cases import run_case

        threshold = self.config.getoption("ragmetrics_threshold", None)
        warm = bool(self.config.getoption("ragmetrics_warm_latency", False))
        given = self.config.getoption("ragmetrics_judge_health_min", None)
        off = bool(self.config.getoption("ragmetrics_no_judge_gate", False))
        gate = None if off else JUDGE_HEALTH_MIN if given is None else given
        result = run_sync(run_case(self.case, threshold=threshold, warm=warm, judge_health_min=gate))
        self.result = result
        self.config.stash[_RESULTS].append(result)
        for key in ("score", "cost_usd", "latency_ms"):
            value = getattr(result, key)
            if value is not None:
                self.user_properties.append((key, value))
        if not result.passed:
            raise EvalCaseFailure(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """The case's values, bounds and reasons (and the traceback when it raised)."""
        if isinstance(excinfo.value, EvalCaseFailure):
            from ragmetrics.errors import printable

            result = excinfo.value.result
            return printable("; ".join(result.reasons()) + "\n" + result.describe(), multiline=True)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the case is defined."""
        code = getattr(self.case.func, "__code__", None)
        return self.path, (code.co_firstlineno - 1 if code else 0), f"eval case {self.name}"


class RegressionGateError(Exception):
    """Raised by the regression gate item; carries the message."""


class RegressionGateItem(pytest.Item):
    """The last item of a ``--ragmetrics-fail-on-regression`` run: fails when the comparison regressed."""

    def runtest(self) -> None:
        """Compare this session's eval case results with the baseline; fail listing each regression."""
        from ragmetrics.regression.render import regression_message

        gate = _gate(self.config)
        self.user_properties.append(("regressions", len(gate.regressions)))
        if gate.failed:
            lines = [regression_message(d, gate.require_significance) for d in gate.regressions]
            lines += [gate.missing_message()] if gate.missing else []
            count = len(gate.regressions)
            head = (
                f"{count} regression{'s' if count != 1 else ''} against snapshot '{gate.diff.baseline_name}'"
            )
            raise RegressionGateError("\n".join([head, *(f"  {line}" for line in lines)]))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """The regressions, one line each."""
        if isinstance(excinfo.value, RegressionGateError):
            from ragmetrics.errors import printable

            return printable(str(excinfo.value), multiline=True)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the baseline lives."""
        return Path(self.config.invocation_params.dir), 0, f"ragmetrics regression gate ({_GATE_NAME})"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Print the table ``ragmetrics test`` prints, for the eval cases that ran, and the comparison."""
    results = config.stash.get(_RESULTS, [])
    if not results:
        return
    from ragmetrics.regression.render import render_case_table, render_diff

    terminalreporter.section("ragmetrics eval cases")
    terminalreporter.write(render_case_table(results, details=False))
    if config.stash.get(_BASELINE, None) is not None:
        gate = _gate(config)
        terminalreporter.write("\n" + render_diff(gate.diff, require_significance=gate.require_significance))
        if gate.regressions and not config.getoption("ragmetrics_fail_on_regression"):
            terminalreporter.write(
                "(not gating: add --ragmetrics-fail-on-regression to fail the run on these)\n"
            )
    saved = config.stash.get(_SAVED, None)
    if saved:
        terminalreporter.write(f"\nSaved snapshot '{config.getoption('ragmetrics_save')}' to {saved}\n")
