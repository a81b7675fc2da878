from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics.errors import ConfigError, SnapshotError
from ragmetrics.regression.compare import DEFAULT_THRESHOLDS, compare_snapshots, paired_test
from ragmetrics.regression.render import render_case_table, render_diff
from ragmetrics.regression.snapshot import SCHEMA_VERSION, EvalRegression, Snapshot, write_atomic


@pytest.fixture
def store(tmp_path) -> EvalRegression:
    return EvalRegression(store_dir=tmp_path / ".ragmetrics_evals")


def snap(name: str, *results: dict) -> Snapshot:
    return Snapshot.from_results(name, results)


def delta_of(diff, metric, case="c"):
    return next(d for d in diff.deltas if d.metric == metric and d.case_name == case)


# -- the document's example ------------------------------------------------------------------------


def test_document_example(store):
    results = [{"name": "qa_test", "score": 0.85, "cost_usd": 0.02, "latency_ms": 1200}]
    store.save_snapshot("v1.0", results)
    new_results = [{"name": "qa_test", "score": 0.80, "cost_usd": 0.03, "latency_ms": 1500}]
    store.save_snapshot("v1.1", new_results)

    report = store.compare("v1.0", "v1.1")
    assert report.has_regressions is True
    regressed = {d.metric: d for d in report.deltas if d.regressed}
    assert set(regressed) == {"score", "cost_usd", "latency_ms"}
    assert (regressed["score"].baseline, regressed["score"].current) == (0.85, 0.80)
    assert regressed["score"].relative == pytest.approx(-0.05 / 0.85)
    assert regressed["cost_usd"].relative == pytest.approx(0.5)
    assert regressed["latency_ms"].relative == pytest.approx(0.25)
    assert regressed["latency_ms"].change == pytest.approx(300)

    report = store.compare("v1.0", "v1.1", thresholds={"score": -0.05, "cost_usd": 0.20, "latency_ms": 0.50})
    assert {d.metric for d in report.deltas if d.regressed} == {"score", "cost_usd"}

    assert store.list_snapshots() == ["v1.0", "v1.1"]
    snapshot = store.load_snapshot("v1.0")
    assert snapshot.name == "v1.0" and len(snapshot.results) == 1
    assert snapshot.timestamp.tzinfo is not None
    assert snapshot.results[0].score == 0.85


def test_snapshot_file_is_plain_versioned_json_and_round_trips(store):
    store.save_snapshot(
        "base",
        [{"name": "a", "score": 0.5, "note": "kept", "samples": [{"id": 1, "score": 0.5}]}],
        meta={"git_sha": "abc123"},
    )
    data = json.loads((store.store_dir / "base.json").read_text())
    assert data["format"] == "ragmetrics-snapshot" and data["schema_version"] == SCHEMA_VERSION
    assert data["meta"] == {"git_sha": "abc123"}
    loaded = store.load_snapshot("base")
    assert loaded.results[0].model_extra == {"note": "kept"}
    assert loaded.results[0].samples[0].id == "1"
    assert store.load_snapshot("base") == loaded


# -- delta maths -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "base", "cur", "thresholds", "relative", "regressed"),
    [
        ("score", 1.0, 0.98, None, -0.02, False),  # exactly at the threshold: allowed
        ("score", 1.0, 0.979, None, -0.021, True),
        ("score", 0.5, 0.6, None, 0.2, False),  # an improvement
        ("score", 0.5, 0.45, {"score": 0.2}, -0.1, False),  # only the size of a threshold matters
        ("score", 0.5, 0.45, {"score": -0.05}, -0.1, True),
        ("score", 0.5, 0.1, {"score": None}, -0.8, False),  # not gated
        ("cost_usd", 0.02, 0.022, None, 0.1, False),
        ("cost_usd", 0.02, 0.0221, None, 0.105, True),
        ("cost_usd", 0.02, 0.01, None, -0.5, False),
        ("latency_ms", 1000, 1200, None, 0.2, False),
        ("latency_ms", 1000, 1201, None, 0.201, True),
        ("latency_ms", 1000, 1201, {"latency_ms": -0.5}, 0.201, False),
    ],
)
def test_known_deltas(metric, base, cur, thresholds, relative, regressed):
    diff = compare_snapshots(
        snap("b", {"name": "c", metric: base}), snap("n", {"name": "c", metric: cur}), thresholds
    )
    delta = delta_of(diff, metric)
    assert delta.change == pytest.approx(cur - base)
    assert delta.relative == pytest.approx(relative)
    assert delta.regressed is regressed
    assert diff.has_regressions is regressed


def test_a_zero_baseline_has_no_relative_change_and_regresses_only_in_the_bad_direction():
    base = snap("b", {"name": "c", "score": 0.0, "cost_usd": 0.0, "latency_ms": 0.0})
    same = compare_snapshots(base, snap("n", {"name": "c", "score": 0.0, "cost_usd": 0.0, "latency_ms": 0.0}))
    assert all(d.relative == 0.0 and not d.regressed for d in same.deltas)

    up = compare_snapshots(base, snap("n", {"name": "c", "score": 0.5, "cost_usd": 0.01, "latency_ms": 100}))
    assert delta_of(up, "score").relative is None and not delta_of(up, "score").regressed
    cost = delta_of(up, "cost_usd")
    assert cost.relative is None and cost.regressed and "baseline is 0" in cost.note
    assert delta_of(up, "latency_ms").regressed

    noise = compare_snapshots(base, snap("n", {"name": "c", "latency_ms": 5}))
    assert not delta_of(noise, "latency_ms").regressed  # inside the 20 ms noise floor


def test_the_latency_noise_floor_and_custom_floors():
    base, cur = snap("b", {"name": "c", "latency_ms": 1.0}), snap("n", {"name": "c", "latency_ms": 1.5})
    assert not compare_snapshots(base, cur).has_regressions
    assert compare_snapshots(base, cur, min_change={"latency_ms": 0}).has_regressions
    with pytest.raises(ConfigError, match="min_change"):
        compare_snapshots(base, cur, min_change={"latency_ms": -1})


def test_missing_values_and_one_sided_cases_are_reported():
    base = snap("b", {"name": "kept", "score": 0.9, "cost_usd": 0.1}, {"name": "gone", "score": 0.5})
    cur = snap("n", {"name": "kept", "score": None, "latency_ms": 30}, {"name": "new", "score": 0.7})
    diff = compare_snapshots(base, cur)
    assert diff.only_in_baseline == ["gone"] and diff.only_in_current == ["new"]
    lost = delta_of(diff, "score", "kept")
    assert lost.regressed and lost.current is None and "no value in the current run" in lost.note
    assert not delta_of(diff, "cost_usd", "kept").regressed
    assert delta_of(diff, "latency_ms", "kept").note == "no value in the baseline"
    assert {d.case_name for d in diff.deltas} == {"kept"}


def test_named_metrics_use_the_score_threshold_unless_given_their_own():
    base = snap("b", {"name": "c", "score": 0.9, "metrics": {"faithfulness": 0.9}})
    cur = snap("n", {"name": "c", "score": 0.9, "metrics": {"faithfulness": 0.85}})
    assert delta_of(compare_snapshots(base, cur), "faithfulness").regressed
    assert not compare_snapshots(base, cur, {"faithfulness": -0.1}).has_regressions
    assert compare_snapshots(base, cur, {"score": -0.1}).thresholds["score"] == -0.1


def test_unknown_threshold_names_and_bad_values_are_refused():
    base = snap("b", {"name": "c", "score": 0.9})
    with pytest.raises(ConfigError, match="unknown metric 'latency'"):
        compare_snapshots(base, base, {"latency": 0.5})
    with pytest.raises(ConfigError, match="finite number"):
        compare_snapshots(base, base, {"score": "x"})
    with pytest.raises(ConfigError, match="alpha"):
        compare_snapshots(base, base, alpha=1.0)
    assert DEFAULT_THRESHOLDS == {"score": -0.02, "cost_usd": 0.10, "latency_ms": 0.20}


def test_signature_changes_are_reported():
    base = snap("b", {"name": "c", "score": 0.9, "signature": "faithfulness|judge=a"})
    cur = snap("n", {"name": "c", "score": 0.9, "signature": "faithfulness|judge=b"})
    (change,) = compare_snapshots(base, cur).signature_changes
    assert (change.case_name, change.baseline, change.current) == (
        "c",
        "faithfulness|judge=a",
        "faithfulness|judge=b",
    )


# -- significance ----------------------------------------------------------------------------------


def noisy_pair(drop: float, n: int = 40, seed: int = 7):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.3, 0.9, n)
    base = np.clip(truth + rng.normal(0, 0.1, n), 0, 1)
    cur = np.clip(truth - drop + rng.normal(0, 0.1, n), 0, 1)
    ids = [f"q{i}" for i in range(n)]
    b = {
        "name": "c",
        "score": float(base.mean()),
        "samples": [{"id": i, "score": float(s)} for i, s in zip(ids, base, strict=True)],
    }
    # the current run lists its samples in another order: pairing is by id
    c = {
        "name": "c",
        "score": float(cur.mean()),
        "samples": [{"id": i, "score": float(s)} for i, s in reversed(list(zip(ids, cur, strict=True)))],
    }
    return snap("b", b), snap("n", c)


def test_a_one_point_drop_on_forty_noisy_samples_is_not_significant():
    base, cur = noisy_pair(0.01)
    delta = delta_of(compare_snapshots(base, cur), "score")
    assert delta.n_pairs == 40
    assert delta.p_value > 0.05 and delta.significant is False
    low, high = delta.ci
    assert low < 0 < high


def test_a_ten_point_drop_is_significant_and_its_interval_covers_the_change():
    base, cur = noisy_pair(0.10)
    diff = compare_snapshots(base, cur)
    delta = delta_of(diff, "score")
    assert delta.regressed and delta.significant is True and delta.p_value < 0.01
    low, high = delta.ci
    assert low < -0.05 and high < 0 and low < delta.change < high
    assert diff.regressions(require_significance=True) == [delta]
    assert diff.exit_code(require_significance=True) == 1


def test_requiring_significance_drops_only_tested_regressions():
    base, cur = noisy_pair(0.03)  # beyond the 2% threshold, within the noise
    diff = compare_snapshots(base, cur)
    delta = delta_of(diff, "score")
    assert delta.regressed and delta.significant is False
    assert diff.exit_code() == 1 and diff.exit_code(require_significance=True) == 0
    untested = compare_snapshots(
        snap("b", {"name": "c", "score": 0.9}), snap("n", {"name": "c", "score": 0.5})
    )
    assert untested.exit_code(require_significance=True) == 1  # no samples: the threshold decides


def test_significance_is_reproducible_and_needs_five_pairs():
    base, cur = noisy_pair(0.05)
    first, second = compare_snapshots(base, cur), compare_snapshots(base, cur)
    assert delta_of(first, "score").p_value == delta_of(second, "score").p_value
    few_b = snap("b", {"name": "c", "score": 0.9, "samples": [{"id": i, "score": 0.9} for i in range(4)]})
    few_c = snap("n", {"name": "c", "score": 0.5, "samples": [{"id": i, "score": 0.5} for i in range(4)]})
    delta = delta_of(compare_snapshots(few_b, few_c), "score")
    assert delta.n_pairs == 4 and delta.p_value is None and delta.significant is None


def test_per_metric_per_sample_columns_are_tested_per_metric():
    n = 30
    b = {
        "name": "c",
        "score": 0.8,
        "metrics": {"faithfulness": 0.9},
        "samples": {"id": list(range(n)), "score": [0.8] * n, "faithfulness": [0.9] * n},
    }
    c = {
        "name": "c",
        "score": 0.8,
        "metrics": {"faithfulness": 0.6},
        "samples": {"id": list(range(n)), "score": [0.8] * n, "faithfulness": [0.6] * n},
    }
    diff = compare_snapshots(snap("b", b), snap("n", c))
    assert delta_of(diff, "score").p_value == 1.0
    faith = delta_of(diff, "faithfulness")
    assert faith.regressed and faith.p_value < 0.001 and faith.ci == pytest.approx((-0.3, -0.3))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=1, max_size=60))
def test_paired_test_returns_a_probability_and_an_ordered_interval(diffs):
    p_value, (low, high) = paired_test(diffs, resamples=200)
    assert 0 < p_value <= 1
    assert low <= high + 1e-12
    assert min(diffs) - 1e-9 <= low and high <= max(diffs) + 1e-9


# -- files -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["../x", "/abs", "a/b", "a\\b", "", ".hidden", "..", "con", "x" * 101, "a b"]
)
def test_names_that_could_escape_the_store_are_refused(store, tmp_path, name):
    with pytest.raises(SnapshotError, match="invalid snapshot name"):
        store.save_snapshot(name, [{"name": "a", "score": 1.0}])
    with pytest.raises(SnapshotError, match="invalid snapshot name"):
        store.load_snapshot(name)
    assert not (tmp_path / "x.json").exists()


def test_unknown_corrupt_and_foreign_files_name_the_file(store):
    store.save_snapshot("good", [{"name": "a", "score": 1.0}])
    with pytest.raises(SnapshotError, match=r"no snapshot named 'nope' .*\(saved: good\)"):
        store.load_snapshot("nope")
    cases = {
        "truncated": '{"format": "ragmetrics-snapshot", "schema_version": 1, "na',
        "foreign": '{"some": "other tool"}',
        "alist": "[1, 2]",
        "future": '{"format": "ragmetrics-snapshot", "schema_version": 99}',
        "badversion": '{"format": "ragmetrics-snapshot", "schema_version": "1"}',
        "malformed": '{"format": "ragmetrics-snapshot", "schema_version": 1, "name": "m",'
        ' "timestamp": "2026-01-01T00:00:00Z", "results": [{"name": "a", "score": 7}]}',
        "binary": b"\xff\xfe\x00garbage",
    }
    messages = {
        "truncated": "corrupt",
        "foreign": "not a ragmetrics snapshot",
        "alist": "not a ragmetrics snapshot",
        "future": "newer than this ragmetrics reads",
        "badversion": "invalid schema_version",
        "malformed": "malformed: results.0.score",
        "binary": "corrupt",
    }
    for name, content in cases.items():
        path = store.store_dir / f"{name}.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        with pytest.raises(SnapshotError) as info:
            store.load_snapshot(name)
        assert str(path) in str(info.value) and messages[name] in str(info.value)


def test_malformed_results_are_refused_when_saving(store):
    for results, needle in [
        ([{"score": 0.5}], "results.0.name"),
        ([{"name": "a"}, {"name": "a"}], "repeated"),
        ([{"name": "a", "score": 1.5}], "results.0.score"),
        ([{"name": "a", "metrics": {"score": 0.5}}], "top-level"),
        (["qa_test"], "result 0 is a str"),
    ]:
        with pytest.raises(SnapshotError, match=needle):
            store.save_snapshot("x", results)
    assert store.list_snapshots() == []


def test_list_ignores_temporary_and_foreign_names(store):
    store.save_snapshot("b", [])
    store.save_snapshot("a", [])
    (store.store_dir / ".b.json.abc.tmp").write_text("partial")
    (store.store_dir / "notes.txt").write_text("x")
    assert store.list_snapshots() == ["a", "b"]
    assert EvalRegression(store.store_dir / "missing").list_snapshots() == []


def test_write_atomic_leaves_no_temporary_file_and_replaces(tmp_path):
    target = tmp_path / "sub" / "f.json"
    write_atomic(target, "one")
    write_atomic(target, b"two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]


WRITER = """
import sys
from ragmetrics.regression.snapshot import EvalRegression
store = EvalRegression(sys.argv[1])
big = [{"name": f"case{i}", "score": 0.5, "cost_usd": 0.01, "latency_ms": 100.0,
        "samples": [{"id": j, "score": 0.5} for j in range(5)]} for i in range(2000)]
i = 0
while True:
    for r in big:
        r["score"] = (i % 2) * 0.5 + 0.25
    store.save_snapshot("big", big)
    i += 1
    print(i, flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_writer_killed_at_random_moments_never_leaves_a_corrupt_snapshot(tmp_path):
    store = EvalRegression(tmp_path / "store")
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(WRITER))
    for delay in (0.02, 0.07, 0.11):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(store.store_dir)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert proc.stdout is not None
            proc.stdout.readline()  # at least one snapshot is complete
            time.sleep(delay)  # now it is somewhere in a later save (each takes ~0.1 s)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
        snapshot = store.load_snapshot("big")
        assert len(snapshot.results) == 2000
        assert {r.score for r in snapshot.results} in ({0.25}, {0.75})
        assert store.list_snapshots() == ["big"]


CRASHER = """
import os, signal, sys
from ragmetrics.regression.snapshot import EvalRegression
store = EvalRegression(sys.argv[1])
store.save_snapshot("v1", [{"name": "a", "score": 0.9}])
def die(fd):  # the new file is fully written but not yet renamed: the worst moment to crash
    os.kill(os.getpid(), signal.SIGKILL)
os.fsync = die
store.save_snapshot("v1", [{"name": "a", "score": 0.1}])
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_crash_between_writing_and_renaming_keeps_the_old_snapshot(tmp_path):
    store = EvalRegression(tmp_path / "store")
    script = tmp_path / "crasher.py"
    script.write_text(textwrap.dedent(CRASHER))
    proc = subprocess.run([sys.executable, str(script), str(store.store_dir)], check=False)
    assert proc.returncode == -signal.SIGKILL
    leftovers = [p.name for p in store.store_dir.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and leftovers[0].startswith(".v1.json.")
    assert store.load_snapshot("v1").results[0].score == 0.9
    assert store.list_snapshots() == ["v1"]
    store.save_snapshot("v1", [{"name": "a", "score": 0.5}])
    assert store.load_snapshot("v1").results[0].score == 0.5


# -- rendering -------------------------------------------------------------------------------------


def test_diff_rendering_is_pinned():
    base = snap(
        "v1.0",
        {"name": "qa_test", "score": 0.85, "cost_usd": 0.02, "latency_ms": 1200},
        {"name": "old", "score": 1.0},
    )
    cur = snap("v1.1", {"name": "qa_test", "score": 0.80, "cost_usd": 0.03, "latency_ms": 1500})
    text = render_diff(compare_snapshots(base, cur))
    assert text == textwrap.dedent(
        """\
        Comparison: baseline 'v1.0' -> current 'v1.1' (thresholds: score -2%, cost_usd +10%, latency_ms +20%)
        case     metric      baseline   current   change  relative  p  95% CI  verdict
        -------  ----------  --------  --------  -------  --------  -  ------  ---------
        qa_test  score           0.85       0.8    -0.05     -5.9%  -  -       REGRESSED
        qa_test  cost_usd       $0.02     $0.03   +$0.01    +50.0%  -  -       REGRESSED
        qa_test  latency_ms  1,200 ms  1,500 ms  +300 ms    +25.0%  -  -       REGRESSED
        Cases only in baseline (1): old
        3 regressions: qa_test.score, qa_test.cost_usd, qa_test.latency_ms
        """
    )
    markdown = render_diff(compare_snapshots(base, cur), fmt="markdown")
    assert "| `qa_test` | score | 0.85 | 0.8 | -0.05 | -5.9% | - | - | REGRESSED |" in markdown


def test_case_table_rendering_is_pinned():
    from ragmetrics.regression.case_result import CaseResult

    results = [
        CaseResult(
            name="evals/eval_qa.py::eval_ok", outcome="passed", score=0.85, cost_usd=0.02, latency_ms=1200
        ),
        CaseResult(
            name="evals/eval_qa.py::eval_low",
            outcome="failed",
            score=0.5,
            min_score=0.8,
            latency_ms=40.2,
            latency_measured=True,
            problems=["score 0.5 is below min_score 0.8 by 0.3"],
        ),
    ]
    assert render_case_table(results, details=False) == textwrap.dedent(
        """\
        case                        score     cost   latency  verdict
        --------------------------  -----  -------  --------  -------
        evals/eval_qa.py::eval_ok   0.850  $0.0200  1,200 ms  PASS
        evals/eval_qa.py::eval_low  0.500        -    40 ms*  FAIL

        1 passed, 1 failed (* latency measured by ragmetrics)
        """
    )
    markdown = render_case_table(results, fmt="markdown")
    assert "| `evals/eval_qa.py::eval_low` | 0.500 | - | 40 ms* | FAIL |" in markdown
    assert "- **FAILED** `evals/eval_qa.py::eval_low`: score 0.5 is below min_score 0.8 by 0.3" in markdown
