"""Issue 13's metrics: context recall, context precision, context relevancy, answer correctness.

Each score definition is checked on hand-worked examples, first on the pure scoring functions, then
end to end through the real openai SDK against the fake server with a scripted judge whose verdicts
are known (a claim is supported where its words appear), where the call budget is counted too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from ragmetrics import (
    AnswerCorrectnessMetric,
    ContextPrecisionMetric,
    ContextRecallMetric,
    ContextRelevancyMetric,
    EvaluationPipeline,
)
from ragmetrics.metrics import RAG_METRICS, ClaimMetric, ClaimTask, Found, metric_from_name
from ragmetrics.metrics.claims.answer_correctness import answer_correctness
from ragmetrics.metrics.claims.context_precision import average_precision, context_precision
from ragmetrics.metrics.claims.context_recall import context_recall
from ragmetrics.metrics.claims.context_relevancy import context_relevancy
from ragmetrics.metrics.claims.faithfulness import faithfulness
from ragmetrics.metrics.claims.schemas import ClaimExtraction, ContextJudgement
from ragmetrics.pipeline.estimate import estimate
from ragmetrics.sample import Sample
from ragmetrics.score import ClaimRecord
from ragmetrics.testing import FakeLLMServer

# -- hand-worked score definitions on the pure functions ---------------------------------------------


@pytest.mark.parametrize(
    ("relevant", "expected"),
    [
        ([True, False, True], (1 / 1 + 2 / 3) / 2),  # ranks 1 and 3: 0.8333
        ([False, True], (1 / 2) / 1),  # rank 2 only: 0.5
        ([False, True, True, False], (1 / 2 + 2 / 3) / 2),  # ranks 2 and 3: 0.5833
        ([False, False, True], 1 / 3),
        ([True, True, False], 1.0),  # the relevant ones first: perfect whatever follows
        ([False, False], 0.0),  # none relevant
        ([], 0.0),
    ],
)
def test_average_precision_is_rank_aware(relevant: list[bool], expected: float) -> None:
    assert average_precision(relevant) == pytest.approx(expected)


def _claims(*verdicts: str | None) -> list[ClaimRecord]:
    return [ClaimRecord(text=f"Claim number {i}.", verdict=v) for i, v in enumerate(verdicts)]  # type: ignore[arg-type]


def _judged(*supports: list[int], relevant: list[bool] | None = None) -> tuple[ContextJudgement, ...]:
    flags = relevant or [None] * len(supports)  # type: ignore[list-item]
    return tuple(
        ContextJudgement(context=j, supports=s, relevant=flags[j], reason=f"why {j}")
        for j, s in enumerate(supports)
    )


SAMPLE = Sample(question="Q?", answer="A.", contexts=("c0", "c1", "c2", "c3"), reference="R.")
EXTRACTION = ClaimExtraction(claims=[], addresses_question="yes")


def _found(
    claims: list[ClaimRecord], judged: tuple[Any, ...], text_verdicts: tuple[Any, ...] = (), **kw: Any
) -> Found:
    return Found(
        sample=kw.pop("sample", SAMPLE),
        claims=claims,
        extraction=EXTRACTION,
        sources=kw.pop("sources", SAMPLE.contexts),
        judged=judged,
        text_verdicts=text_verdicts,
        **kw,
    )


def test_context_recall_is_the_share_of_reference_claims_the_contexts_support() -> None:
    reference = _found(_claims("supported", "not_found", "supported"), _judged([0], [], [2], []))
    got = context_recall(_found(_claims("supported"), (), other=reference))
    assert got.score == pytest.approx(2 / 3)
    assert got.details["supported_claims"] == 2
    assert [c["supports"] for c in got.details["contexts"]] == [[0], [], [2], []]
    assert [c.text for c in got.claims or []] == [c.text for c in reference.claims]  # the reference's claims


def test_context_precision_uses_the_reference_claims_when_there_is_a_reference() -> None:
    # the answer's claims would make context 0 relevant; the reference's make contexts 1 and 2 relevant
    reference = _found(_claims("supported", "supported"), _judged([], [0], [1], []))
    answer = _found(_claims("supported"), _judged([0], [], [], []), other=reference)
    got = context_precision(answer)
    assert got.score == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert got.details["claims_of"] == "reference"
    assert got.details["contexts"] == [
        {"index": 0, "relevant": False, "supports": [], "reason": None},
        {"index": 1, "relevant": True, "supports": [0], "reason": None},
        {"index": 2, "relevant": True, "supports": [1], "reason": None},
        {"index": 3, "relevant": False, "supports": [], "reason": None},
    ]
    # without a reference, the answer's claims decide: context 0 at rank 1 -> 1.0
    no_ref = Sample(question="Q?", answer="A.", contexts=SAMPLE.contexts)
    alone = context_precision(_found(_claims("supported"), _judged([0], [], [], []), sample=no_ref))
    assert alone.score == 1.0 and alone.details["claims_of"] == "answer"


def test_context_relevancy_is_the_share_of_contexts_bearing_on_the_question() -> None:
    judged = _judged([], [], [], [], relevant=[True, False, True, False])
    got = context_relevancy(_found([], judged))
    assert got.score == 0.5
    assert [c["relevant"] for c in got.details["contexts"]] == [True, False, True, False]
    assert got.details["contexts"][1]["reason"] == "why 1" and "context 1 (why 1)" in got.reasoning


def test_a_context_without_its_judgement_gives_no_score_rather_than_a_guess() -> None:
    judged = (*_judged([], [], [], relevant=[True, True, True]), None)
    got = context_relevancy(_found([], judged))
    assert got.score is None and got.status == "judge_output_invalid" and "[3]" in (got.message or "")


def test_answer_correctness_is_claim_f1_with_contradictions_apart() -> None:
    reference = _found(
        _claims("supported", "not_found", "supported"), (), ("supported", "supported", "not_found")
    )
    answer = _found(_claims("supported", "supported"), (), ("supported", "contradicted"), other=reference)
    got = answer_correctness(answer)
    precision, recall = 1 / 2, 2 / 3
    assert got.score == pytest.approx(2 * precision * recall / (precision + recall))  # 4/7
    assert got.details["precision"] == precision and got.details["recall"] == pytest.approx(recall)
    assert got.details["f1"] == got.score and got.details["contradicted"] == [1]
    assert [c.verdict for c in got.claims or []] == ["supported", "contradicted"]  # against the reference
    assert "Contradicted by the reference: claim 1" in got.reasoning


# -- end to end through the fake server ---------------------------------------------------------------

_SENT = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")


def _core(text: str) -> str:
    return text.rstrip(".").lower()


def scripted(task: str, v: Any) -> dict[str, Any]:
    """A judge with known verdicts: a claim is supported where its words appear verbatim."""
    if task == "claims.extract":
        sents = [s.strip() for s in _SENT.split(v["answer"]) if s.strip()]
        return {
            "claims": [{"text": s, "span": s, "relevance": "direct"} for s in sents],
            "addresses_question": "yes",
        }
    claims = list(v["claims"]) + list(v.get("reference_claims") or [])
    n = len(v["claims"])
    contexts = v["contexts"]
    out = []
    for i, claim in enumerate(claims):
        hit = next((j for j, c in enumerate(contexts) if _core(claim) in c.lower()), None)
        verdict: dict[str, Any] = {
            "claim": i,
            "verdict": "supported" if hit is not None else "not_found",
            "context": hit,
            "evidence": claim.rstrip(".") if hit is not None else "",
            "reason": "stated" if hit is not None else "absent",
        }
        if v.get("reference") is not None:
            other = v["reference"] if i < n else v["answer"]
            verdict["text_verdict"] = "supported" if _core(claim) in other.lower() else "not_found"
        out.append(verdict)
    reply: dict[str, Any] = {"verdicts": out}
    if v.get("per_context"):
        words = set(_WORD.findall((v.get("question") or "").lower())) - {"what", "is", "the", "of"}
        reply["contexts"] = [
            {
                "context": j,
                "supports": [i for i, c in enumerate(claims) if _core(c) in ctx.lower()],
                "relevant": bool(words & set(_WORD.findall(ctx.lower()))),
                "reason": "shares a question word"
                if words & set(_WORD.findall(ctx.lower()))
                else "off topic",
            }
            for j, ctx in enumerate(contexts)
        ]
    return reply


Q = "What is the capital of France?"
CONTEXTS = [
    "Bananas are yellow.",  # rank 1: irrelevant
    "Paris is the capital of France. Paris lies on the Seine.",  # rank 2: both reference claims
    "France is in Europe.",  # rank 3: bears on the question, supports nothing
]
ROW = {
    "id": "r",
    "question": Q,
    "answer": "Paris is the capital of France. Paris has a big airport.",
    "contexts": CONTEXTS,
    "reference": "Paris is the capital of France. Paris lies on the Seine.",
}
NO_REF = {k: v for k, v in ROW.items() if k != "reference"} | {"id": "n"}


@pytest.fixture(scope="module")
def scripted_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(answer=scripted) as srv:
        yield srv


@pytest.fixture
def spec(scripted_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    scripted_server.reset()
    yield f"openai:gpt-4o-mini@{scripted_server.openai_base_url}"
    scripted_server.reset()


def _seven(spec: str) -> list[Any]:
    return [cls(llm=spec, cache=False) for cls in RAG_METRICS.values()]


def test_the_four_metrics_score_as_hand_worked(spec: str) -> None:
    # the scripted judge answers these rows only (it fails any canary): the scores are worked by hand
    result = EvaluationPipeline(_seven(spec), progress=False, canaries=False).run([ROW])[0]
    assert result.context_recall == 1.0  # both reference claims are in context 1
    assert result.context_precision == pytest.approx(1 / 2)  # only rank 2 is relevant: (1/2) / 1
    assert result.context_relevancy == pytest.approx(2 / 3)  # contexts 1 and 2 mention France / capital
    # answer claims: "capital" in the reference, "airport" not: P = 1/2; reference claims: "capital" in
    # the answer, "Seine" not: R = 1/2; F1 = 1/2
    assert result.answer_correctness == pytest.approx(0.5)
    assert result.faithfulness == 0.5  # unchanged definition: 1 of 2 answer claims in the contexts
    precision = result.results["context_precision"].details["contexts"]
    assert precision == [
        {"index": 0, "relevant": False, "supports": [], "reason": None},
        {"index": 1, "relevant": True, "supports": [0, 1], "reason": None},
        {"index": 2, "relevant": False, "supports": [], "reason": None},
    ]
    relevancy = result.results["context_relevancy"].details["contexts"]
    assert [c["reason"] for c in relevancy] == [
        "off topic",
        "shares a question word",
        "shares a question word",
    ]
    recall = result.results["context_recall"]
    assert [(c.verdict, c.context_index, c.evidence_verified) for c in recall.claims] == [
        ("supported", 1, True),
        ("supported", 1, True),
    ]
    details = result.results["answer_correctness"].details
    assert (details["precision"], details["recall"], details["contradicted"]) == (0.5, 0.5, [])


BOGUS = "The judge made this claim up."


def _with_a_made_up_claim(task: str, v: Any) -> dict[str, Any]:
    """The scripted judge, but every extraction starts with a claim whose span is in no text."""
    reply = scripted(task, v)
    if task == "claims.extract":
        reply["claims"].insert(0, {"text": BOGUS, "span": BOGUS, "relevance": "direct"})
    return reply


def test_a_claim_whose_span_is_in_no_text_is_not_sent_for_verification(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a made-up claim first in the answer's and the reference's extraction: it is set apart from every score,
    # so it is not verified; the claims after it are sent renumbered and their verdicts and the contexts'
    # supports come back to the right claims: every score is the hand-worked one above
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    with FakeLLMServer(answer=_with_a_made_up_claim) as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        result = EvaluationPipeline(_seven(spec), progress=False, canaries=False).run([ROW])[0]
        sent = [r.variables or {} for r in srv.requests if r.task == "claims.verify"]
    assert sent and all(BOGUS not in [*v["claims"], *(v.get("reference_claims") or [])] for v in sent)
    assert result.context_recall == 1.0 and result.faithfulness == 0.5
    assert result.context_precision == pytest.approx(1 / 2) and result.answer_correctness == pytest.approx(
        0.5
    )
    precision = result.results["context_precision"].details["contexts"]
    assert [c["supports"] for c in precision] == [[], [0, 1], []]
    faithfulness = result.results["faithfulness"].claims
    assert [(c.text, c.span_found, c.verdict) for c in faithfulness] == [
        ("Paris is the capital of France.", True, "supported"),
        ("Paris has a big airport.", True, "not_found"),
        (BOGUS, False, None),
    ]


def _verification_out_of_range(task: str, v: Any) -> dict[str, Any]:
    """The scripted judge, but every verification reply cites a claim the request does not have."""
    reply = scripted(task, v)
    if task == "claims.verify":
        reply["verdicts"][0]["claim"] = 99
    return reply


def test_a_verification_that_fails_keeps_the_health_of_the_extraction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the extraction reads (both spans in the answer), every verification reply is invalid: the sample fails,
    # and the extraction's health stays on the result, so the run's judge health still counts the sample
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    with FakeLLMServer(answer=_verification_out_of_range) as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        metric = ContextRelevancyMetric(llm=spec, cache=False)
        results = EvaluationPipeline([metric], progress=False, canaries=False).run([ROW])
    result = results[0].results["context_relevancy"]
    assert (result.score, result.status) == (None, "judge_output_invalid")
    health = result.details["judge_health"]
    assert (health["spans"], health["spans_found"], health["reasks"]) == (2, 2, 0), health
    [tally] = results.summary().judge_health.values()
    assert (tally.samples, tally.spans, tally.spans_found) == (1, 2, 2)


def test_without_a_reference_precision_follows_the_answer_and_the_reference_metrics_say_why(
    spec: str,
) -> None:
    result = EvaluationPipeline(_seven(spec), progress=False, canaries=False).run([NO_REF])[0]
    assert result.context_precision == pytest.approx(1 / 2)  # the answer's claim 0 is in context 1
    assert result.results["context_precision"].details["claims_of"] == "answer"
    for name in ("context_recall", "answer_correctness"):
        assert getattr(result, name) is None and result.status_of(name) == "invalid_input"
        message = next(e.message for e in result.errors if e.metric == name)
        assert "field 'reference'" in message
    assert result.faithfulness == 0.5 and result.context_relevancy == pytest.approx(2 / 3)


def test_call_budget_counted_at_the_fake_server(spec: str, scripted_server: FakeLLMServer) -> None:
    three = [RAG_METRICS[n](llm=spec, cache=False) for n in ("faithfulness", "relevancy", "groundedness")]
    EvaluationPipeline(three, progress=False, canaries=False).run([ROW])
    today_calls, today_tokens = scripted_server.calls.total(), scripted_server.prompt_tokens
    assert today_calls == 2  # the three RAG metrics alone: extraction + the plain verify.v1, as before
    for row, budget in ((ROW, 4), (NO_REF, 2)):
        scripted_server.reset()
        seven = _seven(spec)
        predicted = estimate(seven, [row], canaries=False)
        EvaluationPipeline(seven, progress=False, canaries=False).run([row])
        calls = scripted_server.calls.total()
        assert calls <= budget and predicted.calls == calls
        assert scripted_server.prompt_tokens <= 2 * today_tokens
    assert calls == 2  # without a reference: extraction + one verification for all seven


def test_names_work_in_the_pipeline_and_metric_table() -> None:
    for name in ("context_recall", "context_precision", "context_relevancy", "answer_correctness"):
        assert isinstance(metric_from_name(name, llm="offline"), ClaimMetric)
    pipeline = EvaluationPipeline(["context_precision", "context_recall"], progress=False)
    assert pipeline.metric_names == ["context_precision", "context_recall"]
    assert {
        ContextRecallMetric,
        ContextPrecisionMetric,
        ContextRelevancyMetric,
        AnswerCorrectnessMetric,
    } <= set(RAG_METRICS.values())


def test_a_metric_alone_keeps_its_own_task_and_joins_a_merged_one_in_a_run(spec: str) -> None:
    faith = RAG_METRICS["faithfulness"](llm=spec, cache=False)
    assert faith.active_task == ClaimTask()  # alone: the plain request
    EvaluationPipeline([faith, ContextRelevancyMetric(llm=spec, cache=False)], progress=False).run([NO_REF])
    assert faith.active_task == ClaimTask(per_context=2)
    EvaluationPipeline([faith], progress=False).run([NO_REF])
    assert faith.active_task == ClaimTask()
    assert faithfulness is type(faith).scoring


def test_cli_accepts_the_new_names(tmp_path: Any) -> None:
    import subprocess
    import sys

    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(ROW) + "\n" + json.dumps(NO_REF) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    names = "faithfulness,context_precision,context_recall,context_relevancy,answer_correctness"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmetrics.cli",
            "eval",
            str(data),
            "--metrics",
            names,
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: the row without a reference is unscored on two
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert set(records[0]["scores"]) == set(names.split(","))
    assert (
        records[1]["scores"]["context_recall"] is None and records[0]["scores"]["context_recall"] is not None
    )
