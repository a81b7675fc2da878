from __future__ import annotations

import asyncio
import dataclasses
import math
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics.errors import ConfigError
from ragmetrics.regression.case_result import judge_value
from ragmetrics.regression.cases import (
    EvalCase,
    EvalCaseMeta,
    collect_cases,
    error_result,
    eval_case,
    find_eval_files,
    run_case,
    run_cases,
    run_cases_sync,
    select_cases,
)


def make_case(func, name: str | None = None) -> EvalCase:
    return EvalCase(
        id=f"t.py::{name or func.__name__}",
        name=name or func.__name__,
        path=Path("t.py"),
        func=func,
        meta=func._eval_case_meta,
    )


def run(func, **kwargs):
    return asyncio.run(run_case(make_case(func), **kwargs))


# -- the decorator ---------------------------------------------------------------------------------


def test_document_example_attaches_meta_and_keeps_the_function_callable():
    @eval_case(min_score=0.8, max_cost_usd=0.05, max_latency_ms=2000, tags=["qa", "rag"])
    async def eval_summarization():
        return {"score": 0.85, "cost_usd": 0.02, "latency_ms": 1200}

    @eval_case(min_score=0.9)
    def eval_retrieval():
        return {"score": 0.92}

    meta = eval_summarization._eval_case_meta
    assert isinstance(meta, EvalCaseMeta)
    assert (meta.min_score, meta.max_cost_usd, meta.max_latency_ms) == (0.8, 0.05, 2000)
    assert meta.tags == ["qa", "rag"]
    assert asyncio.run(eval_summarization()) == {"score": 0.85, "cost_usd": 0.02, "latency_ms": 1200}
    assert eval_retrieval() == {"score": 0.92}
    assert eval_retrieval._eval_case_meta == EvalCaseMeta(min_score=0.9)
    assert eval_retrieval.__name__ == "eval_retrieval"


def test_defaults_follow_the_document_table_and_meta_is_frozen():
    @eval_case
    def bare():
        return {}

    meta = bare._eval_case_meta
    assert meta == EvalCaseMeta(min_score=None, max_cost_usd=None, max_latency_ms=None, tags=[])
    with pytest.raises(dataclasses.FrozenInstanceError):
        meta.min_score = 0.5  # type: ignore[misc]
    assert hash(meta) == hash(EvalCaseMeta())
    assert [f.name for f in dataclasses.fields(EvalCaseMeta)] == [
        "min_score",
        "max_cost_usd",
        "max_latency_ms",
        "tags",
    ]


def test_decorated_function_is_returned_unchanged():
    def f():
        return {"score": 1.0}

    assert eval_case(min_score=0.5)(f) is f


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"min_score": 1.5}, "min_score"),
        ({"min_score": -0.1}, "min_score"),
        ({"min_score": True}, "min_score"),
        ({"min_score": float("nan")}, "min_score"),
        ({"min_score": "0.8"}, "min_score"),
        ({"max_cost_usd": -1}, "max_cost_usd"),
        ({"max_latency_ms": 0}, "max_latency_ms"),
        ({"max_latency_ms": math.inf}, "max_latency_ms"),
        ({"tags": "qa"}, "tags"),
        ({"tags": ["qa", 3]}, "tag"),
        ({"tags": ["a,b"]}, "tag"),
        ({"tags": [""]}, "tag"),
    ],
)
def test_bad_parameters_are_refused_at_decoration(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        eval_case(**kwargs)


def test_decorator_refuses_what_it_cannot_run():
    with pytest.raises(ConfigError, match="keyword arguments"):
        eval_case(0.8)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="no arguments"):
        eval_case(lambda x: x)
    with pytest.raises(ConfigError, match="not yield"):

        @eval_case
        def gen():
            yield {"score": 1}

    with pytest.raises(ConfigError, match="functions"):
        eval_case(min_score=0.5)(print)


# -- verdicts --------------------------------------------------------------------------------------


def test_a_case_within_its_bounds_passes_and_bounds_are_inclusive():
    @eval_case(min_score=0.8, max_cost_usd=0.05, max_latency_ms=2000)
    def on_the_line():
        return {"score": 0.8, "cost_usd": 0.05, "latency_ms": 2000}

    result = run(on_the_line)
    assert result.passed and result.reasons() == []
    assert (result.score, result.cost_usd, result.latency_ms, result.latency_measured) == (
        0.8,
        0.05,
        2000,
        False,
    )


def test_every_broken_bound_is_named_with_its_excess():
    @eval_case(min_score=0.8, max_cost_usd=0.05, max_latency_ms=2000)
    async def bad():
        return {"score": 0.72, "cost_usd": 0.06, "latency_ms": 2500}

    result = run(bad)
    assert result.outcome == "failed"
    by_bound = {v.bound: v for v in result.violations}
    assert set(by_bound) == {"min_score", "max_cost_usd", "max_latency_ms"}
    assert by_bound["min_score"].excess == pytest.approx(0.08)
    assert by_bound["max_cost_usd"].excess == pytest.approx(0.01)
    assert by_bound["max_latency_ms"].excess == pytest.approx(500)
    text = result.describe()
    assert "score 0.72 is below min_score 0.8 by 0.08" in text
    assert "cost_usd $0.06 exceeds max_cost_usd $0.05 by $0.01 (+20%)" in text
    assert "latency 2500 ms exceeds max_latency_ms 2000 ms by 500 ms (+25%)" in text


def test_threshold_applies_only_to_cases_without_their_own_min_score():
    @eval_case
    def plain():
        return {"score": 0.7}

    @eval_case(min_score=0.6)
    def own():
        return {"score": 0.7}

    assert run(plain).passed
    assert not run(plain, threshold=0.8).passed
    assert run(plain, threshold=0.8).min_score == 0.8
    assert run(own, threshold=0.8).passed
    with pytest.raises(ConfigError):
        run(plain, threshold=2)


def test_a_bound_that_cannot_be_checked_fails():
    @eval_case(min_score=0.5, max_cost_usd=0.01)
    def silent():
        return {"latency_ms": 3}

    result = run(silent)
    assert result.outcome == "failed"
    assert "min_score 0.5 is set but the case returned no score" in result.reasons()
    assert "max_cost_usd $0.01 is set but the case reported no cost_usd" in result.reasons()


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("0.9", "returned str"),
        (None, "forget to return"),
        ([1, 2], "returned list"),
        ([], "returned list"),
        ({"score": 1.5}, "score must be in [0, 1]"),
        ({"score": -0.01}, "score must be in [0, 1]"),
        ({"score": float("nan")}, "finite"),
        ({"score": float("inf")}, "finite"),
        ({"score": True}, "score must be a number, got bool"),
        ({"score": "0.9"}, "score must be a number, got str"),
        ({"score": 0.9, "cost_usd": -1}, "cost_usd must be >= 0"),
        ({"score": 0.9, "latency_ms": float("nan")}, "latency_ms must be a finite"),
        ({"score": 0.9, "cost": 0.01}, "did you mean 'cost_usd'"),
        ({"score": 0.9, "latency": 5}, "did you mean 'latency_ms'"),
        ({"score": 0.9, "metrics": {"faithfulness": 2}}, "metrics.faithfulness"),
        ({"score": 0.9, "metrics": [1]}, "metrics must be a dict"),
        ({"score": 0.9, "samples": [{"id": 1, "score": 3}]}, "samples.0.score"),
        ({"score": 0.9, "samples": [{"id": 1}, {"id": 1}]}, "appears twice"),
    ],
)
def test_wrong_return_shapes_fail_with_a_clear_message(value, needle):
    @eval_case
    def shaped():
        return value

    result = run(shaped)
    assert result.outcome == "failed"
    assert any(needle in r for r in result.reasons()), result.reasons()


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=5),
        st.lists(st.floats(0, 1), max_size=2),
    )
)
def test_a_score_passes_only_when_it_is_a_real_number_in_the_unit_interval(score):
    out = judge_value({"score": score}, name="p", elapsed_ms=1.0)
    valid = score is None or (
        not isinstance(score, bool)
        and isinstance(score, (int, float))
        and math.isfinite(score)
        and 0 <= score <= 1
    )
    assert out.passed is valid
    if not valid:
        assert out.problems


def test_unknown_keys_that_are_not_typos_are_kept_as_details():
    out = judge_value({"score": 0.9, "answer": "Paris"}, name="d", elapsed_ms=1.0)
    assert out.passed and out.details == {"answer": "Paris"}


def test_latency_is_measured_when_omitted():
    @eval_case(max_latency_ms=10)
    def slow():
        time.sleep(0.05)
        return {"score": 1.0}

    result = run(slow)
    assert result.latency_measured and result.latency_ms >= 50
    assert result.outcome == "failed" and result.violations[0].bound == "max_latency_ms"


def test_an_exception_is_an_error_with_its_traceback_not_a_pass():
    @eval_case
    async def boom():
        raise ValueError("the retriever is down")

    @eval_case
    def leaves():
        sys.exit(3)

    result = run(boom)
    assert result.outcome == "error"
    assert result.error == "ValueError: the retriever is down"
    assert "in boom" in result.traceback and "the retriever is down" in result.traceback
    assert run(leaves).outcome == "error"


def test_named_metrics_and_samples_are_carried():
    @eval_case
    def rich():
        return {
            "score": 0.5,
            "metrics": {"faithfulness": 0.75},
            "samples": {"id": ["a", "b"], "score": [0.4, 0.6], "faithfulness": [1.0, 0.5]},
        }

    result = run(rich)
    assert result.passed
    assert result.metrics == {"faithfulness": 0.75}
    assert [(s.id, s.score, s.scores) for s in result.samples] == [
        ("a", 0.4, {"faithfulness": 1.0}),
        ("b", 0.6, {"faithfulness": 0.5}),
    ]
    assert result.to_snapshot_result().samples == result.samples


# -- EvaluationResult-like returns -----------------------------------------------------------------


def evaluation_result(score, cost=None, latency=None, sample_id=None, via_usage=True):
    extra = {"usage": SimpleNamespace(cost_usd=cost)} if via_usage else {"cost_usd": cost}
    return SimpleNamespace(mean_score=score, latency_ms=latency, id=sample_id, **extra)


def test_one_evaluation_result_is_read_through_its_attributes():
    @eval_case(min_score=0.8, max_cost_usd=0.01)
    def single():
        return evaluation_result(0.91, cost=0.004, latency=850.0, sample_id="q1")

    result = run(single)
    assert result.passed
    assert (result.score, result.cost_usd, result.latency_ms) == (0.91, 0.004, 850.0)
    assert [s.id for s in result.samples] == ["q1"]


def test_a_list_of_evaluation_results_gives_mean_score_summed_cost_and_median_latency():
    @eval_case(min_score=0.8)
    def many():
        return [
            evaluation_result(0.9, 0.01, 100.0, "a"),
            evaluation_result(0.7, 0.02, 300.0, "b", via_usage=False),
            evaluation_result(None, 0.03, 200.0, "c"),
        ]

    result = run(many)
    assert result.score == pytest.approx(0.8)
    assert result.cost_usd == pytest.approx(0.06)
    assert result.latency_ms == 200.0 and not result.latency_measured  # warm: the median sample
    assert result.details["latency_max_ms"] == 300.0
    assert result.details["unscored_samples"] == 1 and "left out of the mean" in result.details["note"]
    assert [s.id for s in result.samples] == ["a", "b", "c"]


def test_a_malformed_evaluation_result_fails():
    @eval_case
    def bad():
        return [evaluation_result(1.2)]

    assert "result 0 mean_score must be in [0, 1]" in " ".join(run(bad).reasons())


# -- running many ----------------------------------------------------------------------------------


def test_async_cases_run_concurrently_within_the_bound_and_results_keep_input_order():
    in_flight = peak = 0

    def make(i):
        @eval_case
        async def case():
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.1)
            in_flight -= 1
            return {"score": i / 10}

        return make_case(case, name=f"case{i}")

    cases = [make(i) for i in range(6)]
    start = time.perf_counter()
    results = run_cases_sync(cases, concurrency=3)
    elapsed = time.perf_counter() - start
    assert peak == 3
    assert elapsed > 0.19  # two rounds of 0.1 s: never more than 3 in flight (peak proves they overlap)
    assert [r.score for r in results] == [i / 10 for i in range(6)]
    assert [r.name for r in results] == [f"t.py::case{i}" for i in range(6)]


def test_sync_cases_never_overlap_each_other():
    active, overlaps, lock = [0], [0], threading.Lock()

    def make(i):
        @eval_case
        def case():
            with lock:
                active[0] += 1
                overlaps[0] = max(overlaps[0], active[0])
            time.sleep(0.02)
            with lock:
                active[0] -= 1
            return {"score": 1.0}

        return make_case(case, name=f"s{i}")

    results = run_cases_sync([make(i) for i in range(5)], concurrency=5)
    assert all(r.passed for r in results) and overlaps[0] == 1


async def test_run_cases_sync_works_inside_a_running_loop():
    @eval_case
    async def inner():
        return {"score": 1.0}

    assert run_cases_sync([make_case(inner)])[0].passed
    assert (await run_cases([make_case(inner)]))[0].passed


def test_concurrency_must_be_positive():
    with pytest.raises(ConfigError, match="concurrency"):
        run_cases_sync([], concurrency=0)


# -- discovery -------------------------------------------------------------------------------------

CASE_SOURCE = """
from ragmetrics.regression.cases import eval_case

@eval_case(min_score=0.5, tags=["{tag}"])
def {name}():
    return {{"score": 0.9}}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    root = tmp_path / "evals"
    write(root / "eval_alpha.py", CASE_SOURCE.format(name="eval_one", tag="qa"))
    write(root / "beta_eval.py", CASE_SOURCE.format(name="eval_two", tag="rag"))
    write(root / "sub" / "eval_gamma.py", CASE_SOURCE.format(name="eval_three", tag="slow"))
    write(root / "helper.py", CASE_SOURCE.format(name="eval_hidden", tag="x"))
    write(root / "test_thing.py", CASE_SOURCE.format(name="eval_test", tag="x"))
    write(root / ".cache" / "eval_dot.py", CASE_SOURCE.format(name="eval_dot", tag="x"))
    write(root / "venv" / "eval_venv.py", CASE_SOURCE.format(name="eval_venv", tag="x"))
    write(root / "eval_script.py", "raise SystemExit('a script, never imported by discovery')\n")
    return tmp_path


def test_discovery_finds_eval_files_in_folders_and_skips_the_rest(project):
    found = [p.relative_to(project).as_posix() for p in find_eval_files(["evals"])]
    assert found == ["evals/beta_eval.py", "evals/eval_alpha.py", "evals/sub/eval_gamma.py"]
    collection = collect_cases(["evals", "evals/helper.py", "evals/eval_alpha.py"])
    assert [c.id for c in collection.cases] == [
        "evals/beta_eval.py::eval_two",
        "evals/eval_alpha.py::eval_one",
        "evals/sub/eval_gamma.py::eval_three",
        "evals/helper.py::eval_hidden",
    ]
    assert collection.errors == []


def test_missing_paths_and_non_python_files_are_usage_errors(project):
    with pytest.raises(ConfigError, match="path not found: nope"):
        find_eval_files(["nope"])
    write(project / "notes.txt", "hi")
    with pytest.raises(ConfigError, match="not a Python file"):
        find_eval_files(["notes.txt"])


def test_a_module_that_fails_to_import_is_an_error_and_the_others_still_run(project):
    write(
        project / "evals" / "eval_broken.py",
        "from ragmetrics.regression.cases import eval_case\nimport not_a_module_xyz\n",
    )
    collection = collect_cases(["evals"])
    assert len(collection.cases) == 3
    (error,) = collection.errors
    assert error.id == "evals/eval_broken.py"
    assert error.error == "ModuleNotFoundError: No module named 'not_a_module_xyz'"
    assert "eval_broken.py" in error.traceback and "importlib._bootstrap" not in error.traceback
    result = error_result(error)
    assert result.outcome == "error" and result.traceback == error.traceback


def test_same_file_names_in_two_folders_get_distinct_modules(project):
    write(project / "a" / "eval_same.py", CASE_SOURCE.format(name="eval_a", tag="x"))
    write(project / "b" / "eval_same.py", CASE_SOURCE.format(name="eval_b", tag="x"))
    cases = collect_cases(["a", "b"]).cases
    assert [c.id for c in cases] == ["a/eval_same.py::eval_a", "b/eval_same.py::eval_b"]
    assert cases[0].func.__module__ != cases[1].func.__module__
    assert [r.passed for r in run_cases_sync(cases)] == [True, True]


def test_neighbour_and_package_relative_imports_work(project):
    write(project / "flat" / "shared_data.py", "EXPECTED = 0.75\n")
    write(
        project / "flat" / "eval_flat.py",
        """
        from ragmetrics.regression.cases import eval_case
        from shared_data import EXPECTED

        @eval_case
        def eval_neighbour():
            return {"score": EXPECTED}
        """,
    )
    write(project / "pkg_evals" / "__init__.py", "")
    write(project / "pkg_evals" / "helpers.py", "SCORE = 0.6\n")
    write(
        project / "pkg_evals" / "eval_pkg.py",
        """
        from ragmetrics.regression.cases import eval_case
        from .helpers import SCORE

        @eval_case
        def eval_relative():
            return {"score": SCORE}
        """,
    )
    collection = collect_cases(["flat", "pkg_evals"])
    assert collection.errors == []
    assert [r.score for r in run_cases_sync(collection.cases)] == [0.75, 0.6]


def test_a_case_imported_from_another_module_is_collected_once(project):
    write(
        project / "evals" / "eval_reexport.py",
        "from ragmetrics.regression.cases import eval_case\nfrom eval_alpha import eval_one\n",
    )
    ids = [c.id for c in collect_cases(["evals"]).cases]
    assert ids.count("evals/eval_alpha.py::eval_one") == 1
    assert not any("eval_reexport" in i for i in ids)


def test_selection_by_keyword_and_tags(project):
    cases = collect_cases(["evals"]).cases

    def names(**kwargs):
        return [c.name for c in select_cases(cases, **kwargs)]

    assert names(keyword="one or three") == ["eval_one", "eval_three"]
    assert names(keyword="not (one or three)") == ["eval_two"]
    assert names(keyword="ALPHA and one") == ["eval_one"]
    assert names(keyword="rag") == ["eval_two"]
    assert names(tags=["qa", "rag"]) == ["eval_two", "eval_one"]
    assert names(exclude_tags=["slow"]) == ["eval_two", "eval_one"]
    for bad in ("one and", "(one", "or one", "one )"):
        with pytest.raises(ConfigError, match="-k expression"):
            names(keyword=bad)


def test_the_pipelines_evaluation_results_are_read_per_metric():
    from ragmetrics.pipeline.report import EvaluationResult
    from ragmetrics.score import Usage

    rows = [
        EvaluationResult(
            index=i,
            id=f"q{i}",
            scores={"faithfulness": f, "relevancy": r},
            usage=Usage(cost_usd=0.001),
            latency_ms=100.0 + i,
        )
        for i, (f, r) in enumerate([(1.0, 0.5), (0.5, None), (0.0, 1.0)])
    ]

    @eval_case(min_score=0.5, max_cost_usd=0.01)
    def pipeline_run():
        return rows

    result = run(pipeline_run)
    assert result.passed, result.reasons()
    assert result.score == pytest.approx((0.75 + 0.5 + 0.5) / 3)
    assert result.cost_usd == pytest.approx(0.003) and result.latency_ms == 101.0  # the median row
    assert result.metrics == {"faithfulness": 0.5, "relevancy": 0.75}
    assert [(s.id, s.scores) for s in result.samples][1] == ("q1", {"faithfulness": 0.5, "relevancy": None})
