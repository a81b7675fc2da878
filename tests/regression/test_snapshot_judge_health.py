"""Regression snapshots record each case's judge health per judge, the diff notes a drop, and a
snapshot written before judge health existed still reads (and compares) as before."""

from __future__ import annotations

import json
from importlib import resources

import ragmetrics
from ragmetrics.regression.case_result import judge_value
from ragmetrics.regression.render import render_diff
from ragmetrics.regression.snapshot import EvalRegression
from ragmetrics.testing import FakeLLMServer

DATA = str(resources.files("ragmetrics") / "data" / "example.jsonl")


def case(spec: str):
    results = ragmetrics.evaluate_sync(DATA, ["faithfulness"], llm=spec, progress=False)
    return judge_value(list(results), name="evals/eval_rag.py::eval_rag", elapsed_ms=1.0)


def test_snapshots_keep_judge_health_and_the_diff_notes_a_drop(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    store = EvalRegression(tmp_path / "snaps")
    store.save_snapshot("good", [case("offline")])
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        store.save_snapshot("bad", [case(spec)])
    good = store.load_snapshot("good").results[0].judge_health["offline"]
    assert (good.span_rate, good.quote_rate, good.reasks, good.samples) == (1.0, 1.0, 0, 12)
    saved = json.loads(store.path_for("bad").read_text(encoding="utf-8"))
    assert saved["results"][0]["judge_health"][spec]["reading_rate"] < 0.5

    # The same judge, reading less: the baseline is edited to the current spec with the offline figures.
    base = store.load_snapshot("good")
    healthy = base.results[0].judge_health["offline"].model_copy(update={"judge": spec})
    moved = base.results[0].model_copy(update={"judge_health": {spec: healthy}})
    store.save_snapshot("good-same-judge", base.model_copy(update={"results": [moved]}))
    diff = store.compare("good-same-judge", "bad")
    assert [(d.judge, d.baseline) for d in diff.judge_health_drops] == [(spec, 1.0)]
    assert diff.judge_health_drops[0].current < 0.5
    text = render_diff(diff)
    assert f"the judge {spec} reads less of its inputs now: reading rate 100% ->" in text
    assert "spans found" in text

    same = store.compare("good", "good")
    assert same.judge_health_drops == [] and "reads less" not in render_diff(same)


def test_a_snapshot_without_judge_health_still_reads_and_compares(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path / "cache"))
    store = EvalRegression(tmp_path / "snaps")
    store.save_snapshot("new", [case("offline")])
    old = json.loads(store.path_for("new").read_text(encoding="utf-8"))
    for result in old["results"]:
        del result["judge_health"]  # as written before judge health existed
    store.path_for("old").write_text(json.dumps(old), encoding="utf-8")
    loaded = store.load_snapshot("old")
    assert loaded.results[0].judge_health == {}
    diff = store.compare("old", "new")
    assert diff.judge_health_drops == [] and not diff.has_regressions
