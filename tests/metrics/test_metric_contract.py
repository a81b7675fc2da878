"""Issue 12's done-means: a claim metric that splits the REFERENCE, defined here in a few lines, runs
through the pipeline, the estimator (predicted calls == calls the fake server counts) and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragmetrics import EvaluationPipeline
from ragmetrics.errors import ConfigError
from ragmetrics.metrics import ClaimMetric, ClaimScore, ClaimTask, Found, metric_from_name
from ragmetrics.metrics.base import Needs, needs_of
from ragmetrics.pipeline.estimate import estimate
from ragmetrics.testing import FakeLLMServer

# -- the metric under test: the whole definition ------------------------------------------------------


def recall(found: Found) -> ClaimScore:
    """Share of the reference's claims that the contexts support."""
    hits = sum(c.verdict == "supported" for c in found.claims)
    return ClaimScore(score=hits / len(found.claims), reasoning=f"{hits} of {len(found.claims)} supported")


class ToyRecall(ClaimMetric):
    name = "toy_recall"
    task = ClaimTask(split="reference", against="contexts")
    scoring = staticmethod(recall)


# -----------------------------------------------------------------------------------------------------

Q = "What is the capital of France?"
ROWS = [
    {
        "id": "full",
        "question": Q,
        "answer": "Paris.",
        "contexts": ["Paris is the capital of France. It lies on the Seine river."],
        "reference": "Paris is the capital of France. Paris lies on the Seine river.",
    },
    {
        "id": "half",
        "question": Q,
        "answer": "It is Paris.",
        "contexts": ["Berlin is the capital of Germany.", "Paris is the capital of France."],
        "reference": "Paris is the capital of France. The Louvre museum opened in 1793.",
    },
    {"id": "no_ref", "question": Q, "answer": "The capital is Paris.", "contexts": ["Paris is in France."]},
]

CLAIMS_BY_ROW = {
    "full": ["Paris is the capital of France.", "Paris lies on the Seine river."],
    "half": ["Paris is the capital of France.", "The Louvre museum opened in 1793."],
}


def test_needs_are_declared_as_data() -> None:
    metric = ToyRecall(llm="offline", cache=False)
    assert metric.needs == Needs(contexts=True, reference=True, judge=True, shares_judge=True)
    assert needs_of(lambda sample: 1.0) == Needs()  # a plain function needs the answer only

    class Bad:
        name = "bad"
        needs = "contexts"

        async def evaluate_sample(self, sample):
            return 1.0

    with pytest.raises(ConfigError, match="needs must be a ragmetrics.metrics.base.Needs"):
        EvaluationPipeline([Bad()])


def test_the_plan_splits_the_reference_and_checks_it_against_the_contexts() -> None:
    from ragmetrics.sample import Sample

    metric = ToyRecall(llm="offline", cache=False)
    sample = Sample(question=Q, answer="Paris.", contexts=("c0", "c1"), reference="Paris is in France.")
    (plan,) = metric.plans(sample)
    assert plan.extract is not None
    assert plan.text == "Paris is in France." and plan.extract.variables["answer"] == "Paris is in France."
    assert plan.sources == ("c0", "c1") and len(plan.verify(["a claim"])) == 1
    assert metric.plans(Sample(question=Q, answer="Paris.", contexts=("c0",))) == []  # no reference
    # the empty-text check follows the split text: an empty answer still has a reference to split
    (plan,) = metric.plans(Sample(question=Q, answer="", contexts=("c0",), reference="R is R."))
    assert plan.extract is not None


def test_pipeline_and_estimate_agree_with_the_fake_server(
    openai_spec: str, fake_llm_server: FakeLLMServer
) -> None:
    metric = ToyRecall(llm=openai_spec, cache=False)
    predicted = estimate([metric], ROWS, canaries=False)
    results = EvaluationPipeline([metric], progress=False, canaries=False).run(ROWS)
    counted = fake_llm_server.calls
    # two rows with a reference: one extraction (of the reference) and one verification each
    assert predicted.calls == counted.total() == 4
    assert counted["claims.extract"] == 2 and counted["claims.verify"] == 2
    assert predicted.samples == 3
    by_id = {r.id: r for r in results}
    for row_id, claims in CLAIMS_BY_ROW.items():
        assert [c.text for c in by_id[row_id].results["toy_recall"].claims] == claims
    assert by_id["full"].toy_recall == 1.0  # both reference claims are in the context
    assert by_id["half"].toy_recall == 0.5  # the Louvre claim is in no context
    assert by_id["half"].results["toy_recall"].claims[1].verdict == "not_found"
    missing = by_id["no_ref"]
    assert missing.toy_recall is None and missing.status_of("toy_recall") == "invalid_input"
    assert "'reference'" in missing.errors[0].message


def _write_module(folder: Path) -> None:
    (folder / "my_metrics.py").write_text(
        textwrap.dedent(
            """
            from ragmetrics.metrics import ClaimMetric, ClaimScore, ClaimTask

            def recall(found):
                hits = sum(c.verdict == "supported" for c in found.claims)
                return ClaimScore(score=hits / len(found.claims), reasoning=f"{hits} supported")

            class ToyRecall(ClaimMetric):
                name = "toy_recall"
                task = ClaimTask(split="reference", against="contexts")
                scoring = staticmethod(recall)
            """
        ),
        encoding="utf-8",
    )


def _cli(*args: str, path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    paths = [str(path), *filter(None, [os.environ.get("PYTHONPATH")])]
    return subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "PYTHONPATH": os.pathsep.join(paths)},
        timeout=120,
    )


def test_cli_runs_a_metric_given_by_import_path(tmp_path: Path, fake_llm_server: FakeLLMServer) -> None:
    _write_module(tmp_path)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    spec = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    env = {"OPENAI_API_KEY": "sk-test-dummy"}
    common = (str(data), "--metrics", "faithfulness,my_metrics:ToyRecall", "--judge", spec, "--no-cache")
    est = _cli("estimate", "--no-canaries", *common, "--json", path=tmp_path, env=env)
    assert est.returncode == 0, est.stderr
    predicted = json.loads(est.stdout)["calls"]
    out = tmp_path / "out.jsonl"
    run = _cli("eval", "--no-canaries", *common, "--quiet", "--out", str(out), path=tmp_path, env=env)
    assert run.returncode in (0, 1), run.stderr  # 1: the row without a reference is unscored
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert records["full"]["scores"]["toy_recall"] == 1.0 and records["half"]["scores"]["toy_recall"] == 0.5
    assert records["no_ref"]["scores"]["toy_recall"] is None
    # faithfulness: 3 extractions + 3 verifications; toy_recall: 2 + 2 (none on the row without a reference)
    assert predicted == fake_llm_server.calls.total() == 10


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_such_module_xyz:Metric", "cannot import module 'no_such_module_xyz'"),
        ("my_metrics:Missing", "has no attribute 'Missing'"),
        ("my_metrics:", "an import path is 'package.module:attr'"),
        ("my_metrics:NOT_A_METRIC", "name a metric object, a metric class or a function"),
    ],
)
def test_a_bad_import_path_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, message: str
) -> None:
    _write_module(tmp_path)
    (tmp_path / "my_metrics.py").write_text(
        (tmp_path / "my_metrics.py").read_text() + "\nNOT_A_METRIC = 3\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=message):
        metric_from_name(path, llm="offline")


def test_cli_reports_a_bad_import_path_as_a_usage_error(tmp_path: Path) -> None:
    proc = _cli("eval", "--example", "--metrics", "nowhere_xyz:M", path=tmp_path, env={})
    assert proc.returncode == 2
    assert "cannot import module 'nowhere_xyz'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "name", ["json", "copy", "dict", "model_dump", "model_anything", "schema", "mean_score"]
)
def test_a_metric_named_like_a_result_attribute_is_refused(name: str) -> None:
    def metric(sample):
        return 1.0

    metric.__name__ = name
    with pytest.raises(ConfigError, match=f"metric name '{name}' clashes with an EvaluationResult attribute"):
        EvaluationPipeline([metric])


def test_attribute_access_still_reads_the_scores() -> None:
    def answer_length(sample):
        return min(1.0, len(sample.answer) / 10)

    result = EvaluationPipeline([answer_length], progress=False).run([{"answer": "Paris."}])[0]
    assert result.answer_length == 0.6 and result.mean_score == 0.6
    assert callable(result.model_dump) and result.json is not None  # pydantic's own names stay theirs
