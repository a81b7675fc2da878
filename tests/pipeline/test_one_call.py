"""``ragmetrics.evaluate()`` as a RAGAS or DeepEval user calls it: judge options, other tools' metric names.

The judge is the fake LLM server over real HTTP with the real openai SDK, or the offline judge.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest

import ragmetrics
from ragmetrics import ConfigError, EvaluationPipeline
from ragmetrics.metrics import metric_from_name
from ragmetrics.regression.suite import Suite
from ragmetrics.testing import FakeLLMServer

ROWS = [
    {
        "id": "py",
        "question": "What is Python?",
        "answer": "Python is an interpreted language created in 1991.",
        "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
        "reference": "Python is an interpreted language.",
    }
]


# -- 1. judge options ---------------------------------------------------------------------------------
def test_judge_options_reach_the_metrics_built_by_name(fake_llm_server: FakeLLMServer) -> None:
    results = ragmetrics.evaluate_sync(
        ROWS,
        metrics=["faithfulness"],
        llm="openai:gpt-4o-mini",
        api_key="k",  # no OPENAI_API_KEY in the environment: this key is the one sent
        base_url=fake_llm_server.openai_base_url,
        timeout_s=5,
        max_attempts=1,
        cache=False,
        concurrency=2,  # a pipeline option beside them
        progress=False,
    )
    assert results[0].ok and results[0].faithfulness == 1.0
    requests = fake_llm_server.requests
    assert requests and all(r.has_api_key and r.model == "gpt-4o-mini" for r in requests)


def test_cache_false_reaches_the_judge(fake_llm_server: FakeLLMServer) -> None:
    options = {"llm": "openai:gpt-4o-mini", "api_key": "k", "base_url": fake_llm_server.openai_base_url}
    ragmetrics.evaluate_sync(ROWS, metrics=["faithfulness"], cache=False, progress=False, **options)
    first = fake_llm_server.calls.total()
    ragmetrics.evaluate_sync(ROWS, metrics=["faithfulness"], cache=False, progress=False, **options)
    assert first > 0 and fake_llm_server.calls.total() == 2 * first  # nothing was served from a cache


def test_an_unknown_option_is_a_config_error_with_a_suggestion() -> None:
    with pytest.raises(
        ConfigError, match=r"'concurency' \(did you mean 'concurrency'\?\); valid options: .*api_key"
    ):
        ragmetrics.evaluate_sync(ROWS, metrics=["faithfulness"], llm="offline", concurency=2)
    with pytest.raises(ConfigError, match=r"'timeout' \(did you mean 'timeout_s'\?\)"):
        ragmetrics.evaluate_sync(ROWS, metrics=["faithfulness"], llm="offline", timeout=2)


def test_judge_options_with_only_metric_objects_are_refused() -> None:
    metric = ragmetrics.FaithfulnessMetric(llm="offline")
    with pytest.raises(ConfigError, match="timeout_s apply to the metrics given by name"):
        ragmetrics.evaluate_sync(ROWS, metrics=[metric], timeout_s=3)


# -- 2. other tools' metric names ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("alias", "ours"),
    [
        ("answer_relevancy", "relevancy"),
        ("response_relevancy", "relevancy"),
        ("contextual_precision", "context_precision"),
        ("contextual_recall", "context_recall"),
        ("contextual_relevancy", "context_relevancy"),
    ],
)
def test_peer_names_build_our_metrics_recorded_under_our_name(alias: str, ours: str) -> None:
    results = ragmetrics.evaluate_sync(ROWS, metrics=[alias], llm="offline", progress=False)
    record = results[0]
    assert list(record.results) == [ours] and record.results[ours].score is not None


@pytest.mark.parametrize("alias", ["answer_similarity", "semantic_similarity"])
def test_similarity_names_build_cosine_similarity(alias: str) -> None:
    results = ragmetrics.evaluate_sync(ROWS, metrics=[alias], embeddings="fake", progress=False)
    assert list(results[0].results) == ["cosine_similarity"]
    assert 0.0 < results[0].results["cosine_similarity"].score <= 1.0


def test_an_alias_is_noted_once(caplog: pytest.LogCaptureFixture) -> None:
    from ragmetrics.metrics import aliases

    aliases._noted.discard("answer_relevancy")
    with caplog.at_level(logging.WARNING, logger="ragmetrics"):
        metric_from_name("answer_relevancy", llm="offline")
        metric_from_name("answer_relevancy", llm="offline")
    notes = [r.getMessage() for r in caplog.records if "answer_relevancy" in r.getMessage()]
    assert notes == [
        "ragmetrics: metric 'answer_relevancy' is ragmetrics' 'relevancy'; "
        "its results are recorded as 'relevancy'"
    ]


def test_unknown_names_get_the_closest_one() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown metric 'answer_relevance' \(did you mean 'answer_relevancy'\?\)"
    ):
        EvaluationPipeline(metrics=["answer_relevance"])
    with pytest.raises(ConfigError, match=r"unknown metric 'groundness' \(did you mean 'groundedness'\?\)"):
        ragmetrics.evaluate_sync(ROWS, metrics=["groundness"], llm="offline")


def test_suites_take_peer_names_and_suggest() -> None:
    suite = Suite.from_data(
        [{"input": "q", "output": "a", "contexts": ["a"], "evaluators": ["answer_relevancy"]}], llm="offline"
    )
    assert suite.cases[0].evaluators[0].evaluator.name == "relevancy"
    with pytest.raises(
        ConfigError, match=r"unknown evaluator type 'faithfulnes' \(did you mean 'faithfulness'\?\)"
    ):
        Suite.from_data([{"input": "q", "evaluators": ["faithfulnes"]}])


def test_cli_metrics_take_peer_names(capsys: pytest.CaptureFixture[str]) -> None:
    from ragmetrics.cli.app import main

    code = main(
        ["eval", "--example", "--metrics", "answer_relevancy,faithfulness", "--judge", "offline", "--json"]
    )
    out = capsys.readouterr().out
    assert code == 0 and '"relevancy"' in out and "answer_relevancy" not in out
    assert main(["eval", "--example", "--metrics", "contextual_recal", "--judge", "offline"]) == 2
    assert "did you mean 'contextual_recall'?" in capsys.readouterr().err


# -- 3. RAGAS 0.1's ground_truths ---------------------------------------------------------------------
RAGAS_01 = [
    {
        "question": "What is Python?",
        "answer": "Python is an interpreted language.",
        "contexts": ["Python is an interpreted language created by Guido van Rossum in 1991."],
        "ground_truths": ["Python is an interpreted language.", "It was created in 1991."],
    },
    {
        "question": "What is the capital of France?",
        "answer": "Paris is the capital of France.",
        "contexts": ["Paris is the capital and most populous city of France."],
        "ground_truths": [1991],  # not text: only the metrics that need a reference fail on this row
    },
]


def test_ground_truths_are_one_reference_joined_with_newlines() -> None:
    pd = pytest.importorskip("pandas")
    results = ragmetrics.evaluate_sync(
        RAGAS_01, metrics=["faithfulness", "context_recall", "exact_match"], llm="offline", progress=False
    )
    first, second = results
    assert first.sample is not None
    assert first.sample.reference == "Python is an interpreted language.\nIt was created in 1991."
    assert first.ok and first.results["context_recall"].score == 1.0  # both statements are in the context
    assert second.results["faithfulness"].score == 1.0  # faithfulness needs no reference: it scores
    assert second.scores["context_recall"] is None and second.scores["exact_match"] is None
    frame = results.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["faithfulness_status"]) == ["ok", "ok"]
    assert frame.loc[1, "context_recall_status"] == "invalid_input"
    reason = frame.loc[1, "context_recall_reason"]
    assert "field 'reference' must be a string or a list of strings, got list [1991]" in reason
    assert "read from column 'ground_truths'" in reason and frame.loc[1, "exact_match_reason"] == reason


def test_a_refused_row_names_its_reason_in_every_metric_column() -> None:
    pd = pytest.importorskip("pandas")
    rows = [{"question": "q", "answer": 5, "contexts": ["c"]}]
    frame = ragmetrics.evaluate_sync(
        rows, metrics=["faithfulness"], llm="offline", progress=False
    ).to_pandas()
    assert isinstance(frame, pd.DataFrame) and frame.loc[0, "faithfulness_status"] == "invalid_input"
    assert "field 'answer' must be a string" in frame.loc[0, "faithfulness_reason"]


# -- 5. Parquet input ---------------------------------------------------------------------------------
def _parquet(tmp_path: Any) -> Any:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "rows.parquet"
    pd.DataFrame(
        {
            "user_input": [ROWS[0]["question"]],
            "response": [ROWS[0]["answer"]],
            "retrieved_contexts": [ROWS[0]["contexts"]],
            "reference": [ROWS[0]["reference"]],
        }
    ).to_parquet(path)
    return path


def test_parquet_input_for_evaluate(tmp_path: Any) -> None:
    results = ragmetrics.evaluate_sync(
        _parquet(tmp_path), metrics=["faithfulness", "exact_match"], llm="offline", progress=False
    )
    assert results[0].ok and results[0].faithfulness == 1.0
    assert results[0].sample is not None and results[0].sample.contexts == tuple(ROWS[0]["contexts"])
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(ConfigError, match="cannot read it as Parquet"):
        ragmetrics.evaluate_sync(tmp_path / "bad.parquet", metrics=["exact_match"])


def test_parquet_input_for_the_cli(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from ragmetrics.cli.app import main

    path = _parquet(tmp_path)
    assert main(["eval", str(path), "--judge", "offline", "--metrics", "faithfulness", "--quiet"]) == 0


def test_parquet_without_pyarrow_names_the_extra(tmp_path: Any) -> None:
    path = _parquet(tmp_path)
    code = (
        "import sys; sys.modules['pyarrow'] = None\n"  # as if pyarrow were not installed
        "from ragmetrics.pipeline import Dataset\n"
        "try:\n    Dataset(sys.argv[1])\nexcept ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("MissingDependencyError reading rows.parquet (Parquet) needs the 'pyarrow'")
    assert "pip install 'ragmetrics[pandas]'" in out.stdout
