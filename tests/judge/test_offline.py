from __future__ import annotations

import subprocess
import sys

import pytest

from ragmetrics.errors import JudgeOutputError
from ragmetrics.judge.base import Judge, JudgeRequest
from ragmetrics.judge.offline import MODEL, OfflineJudge, answer
from ragmetrics.metrics._schemas import ClaimExtraction, ClaimVerification

SEED_ANSWER = "Python is a compiled language created in 1991."
SEED_CONTEXT = "Python is an interpreted language created by Guido van Rossum in 1991."


def extract(answer_text: str, question: str | None = "What is Python?") -> dict:
    return answer("claims.extract", {"question": question, "answer": answer_text})


def verify(claims: list[str], contexts: list[str]) -> list[dict]:
    return answer("claims.verify", {"claims": claims, "contexts": contexts})["verdicts"]


def faithfulness(answer_text: str, contexts: list[str], question: str | None = None) -> float:
    claims = [c["text"] for c in extract(answer_text, question)["claims"]]
    if not claims:
        return 1.0
    return sum(v["verdict"] == "supported" for v in verify(claims, contexts)) / len(claims)


# -- the seed case -----------------------------------------------------------------------------------


def test_seed_answer_splits_into_two_claims_in_order():
    result = extract(SEED_ANSWER)
    assert [c["text"] for c in result["claims"]] == [
        "Python is a compiled language",
        "Python was created in 1991.",
    ]
    assert [c["span"] for c in result["claims"]] == ["Python is a compiled language", "created in 1991."]
    for claim in result["claims"]:
        assert claim["span"] in SEED_ANSWER
        assert claim["relevance"] == "direct"
    assert result["addresses_question"] == "yes"


def test_seed_verdicts_one_contradicted_one_supported():
    claims = [c["text"] for c in extract(SEED_ANSWER)["claims"]]
    contradicted, supported = verify(claims, [SEED_CONTEXT])
    assert contradicted["verdict"] == "contradicted"
    assert "compiled vs interpreted" in contradicted["reason"]
    assert contradicted["context"] == 0 and contradicted["evidence"] == SEED_CONTEXT
    assert supported["verdict"] == "supported"
    assert supported["context"] == 0 and supported["evidence"] in SEED_CONTEXT
    assert faithfulness(SEED_ANSWER, [SEED_CONTEXT]) == 0.5


def test_the_unsplit_seed_sentence_is_contradicted_not_supported():
    (verdict,) = verify([SEED_ANSWER], [SEED_CONTEXT])
    assert verdict["verdict"] == "contradicted"


# -- verdicts --------------------------------------------------------------------------------------


def test_number_mismatch_flags_a_contradiction():
    (verdict,) = verify(["Python was created in 1989."], [SEED_CONTEXT])
    assert verdict["verdict"] == "contradicted"
    assert "1989 vs 1991" in verdict["reason"]
    assert verdict["evidence"] in SEED_CONTEXT


def test_negation_of_a_copied_sentence_is_contradicted():
    (verdict,) = verify(["Python is not an interpreted language."], [SEED_CONTEXT])
    assert verdict["verdict"] == "contradicted"
    assert "negation" in verdict["reason"]


def test_a_negation_elsewhere_in_the_context_is_no_contradiction():
    context = (
        "The band was formed in 1985 in Los Angeles. Their music has also been called heavy metal, although "
        "they refer to themselves as a rock and roll band, nothing more, nothing less."
    )
    (verdict,) = verify(["Their music has also been called heavy metal."], [context])
    assert verdict["verdict"] == "supported"


def test_fully_copied_sentence_is_supported_with_an_exact_quote():
    contexts = [
        "Bananas are berries.",
        "The Eiffel Tower is in Paris.  It was completed in 1889 for the World's Fair.\n"
        "It is 330 metres tall.",
    ]
    (verdict,) = verify(["It was completed in 1889 for the World's Fair."], contexts)
    assert verdict["verdict"] == "supported"
    assert verdict["context"] == 1
    assert verdict["evidence"] in contexts[1]
    assert "It was completed in 1889 for the World's Fair." in verdict["evidence"]
    assert "content words" in verdict["reason"]


def test_evidence_is_always_an_exact_substring_of_the_cited_context():
    contexts = [
        "[1] https://example.org/page\n\nTitle | Heartbreak Hotel was released in January 1956 and became a "
        "number one hit.It sold well.",
        "Presley's first RCA single,   “Heartbreak Hotel”, was a hit…  Then   came more.",
    ]
    claims = ["Heartbreak Hotel was released in 1956 [1].", "“Heartbreak Hotel” was a hit", "It sold well"]
    for verdict in verify(claims, contexts):
        if verdict["verdict"] == "not_found":
            assert verdict["context"] is None and verdict["evidence"] == ""
        else:
            assert verdict["evidence"] and verdict["evidence"] in contexts[verdict["context"]]


def test_unrelated_claim_is_not_found():
    (verdict,) = verify(["Bananas are a good source of potassium."], [SEED_CONTEXT])
    assert verdict["verdict"] == "not_found"
    assert verdict["context"] is None and verdict["evidence"] == ""
    assert "missing: bananas" in verdict["reason"]


def test_statement_about_the_speaker_is_not_found():
    (verdict,) = verify(["I love Python, created in 1991."], [SEED_CONTEXT])
    assert verdict["verdict"] == "not_found"
    assert "speaker" in verdict["reason"]


def test_no_contexts_and_no_claims():
    assert verify([], [SEED_CONTEXT]) == []
    (verdict,) = verify(["Python was created in 1991."], [])
    assert verdict == {
        "claim": 0,
        "verdict": "not_found",
        "context": None,
        "evidence": "",
        "reason": "not found: no context to check against",
    }
    (verdict,) = verify(["Python was created in 1991."], ["", "   "])
    assert verdict["verdict"] == "not_found"


def test_one_verdict_per_claim_in_order():
    claims = ["Python was created in 1991.", "Bananas are yellow.", "Guido van Rossum created Python."]
    verdicts = verify(claims, [SEED_CONTEXT])
    assert [v["claim"] for v in verdicts] == [0, 1, 2]
    assert [v["verdict"] for v in verdicts] == ["supported", "not_found", "supported"]


# -- extraction ------------------------------------------------------------------------------------


def test_hedges_and_filler_are_not_claims():
    result = extract(
        "Yes, Python was created in 1991. I hope this helps! Let me know if you need anything else."
    )
    assert [c["text"] for c in result["claims"]] == ["Python was created in 1991."]
    assert result["claims"][0]["span"] == "Python was created in 1991."
    result = extract("Well, I think Guido van Rossum created Python. Thanks!", question="Who created Python?")
    assert [c["text"] for c in result["claims"]] == ["Guido van Rossum created Python."]


@pytest.mark.parametrize(
    "refusal",
    [
        "I don't know.",
        "idk",
        "As an AI language model, I cannot answer that.",
        "I'm sorry, but the provided context does not mention who created Python.",
        "Je ne sais pas.",
    ],
)
def test_refusals_address_nothing(refusal):
    result = extract(refusal, question="Who created Python?")
    assert result == {"claims": [], "addresses_question": "no"}


def test_refusal_with_a_partial_answer_is_partial():
    result = extract(
        "The context does not say who created Python. It was released in 1991.",
        question="When was Python released and who created it?",
    )
    assert [c["text"] for c in result["claims"]] == ["It was released in 1991."]
    assert result["addresses_question"] == "partially"


def test_relevance_from_overlap_with_the_question():
    result = extract(
        "Guido van Rossum created Python. Bananas are yellow.", question="Who created the Python language?"
    )
    assert [c["relevance"] for c in result["claims"]] == ["direct", "off_topic"]
    assert result["addresses_question"] == "yes"
    off = extract("Bananas are yellow.", question="Who created the Python language?")
    assert off["addresses_question"] == "no"
    no_question = extract("Bananas are yellow.", question=None)
    assert no_question["claims"][0]["relevance"] == "direct"


def test_clause_split_keeps_spans_verbatim_and_adds_the_subject():
    text = "Heartbreak Hotel was released in 1956 and became a number one hit in the United States."
    claims = extract(text, question="What about Heartbreak Hotel?")["claims"]
    assert [c["text"] for c in claims] == [
        "Heartbreak Hotel was released in 1956",
        "Heartbreak Hotel became a number one hit in the United States.",
    ]
    assert all(c["span"] in text for c in claims)


def test_lists_are_not_split_into_fragments():
    claims = extract("He played for Monaco, Juventus, Barcelona and New York Red Bulls.")["claims"]
    assert len(claims) == 1


@pytest.mark.parametrize(
    ("question", "text", "expected"),
    [
        (
            "Qui a créé Python ?",
            "Python est un langage interprété. Il a été créé par Guido van Rossum en 1991. "
            "J'espère que cela vous aide.",
            ["Python est un langage interprété.", "Il a été créé par Guido van Rossum en 1991."],
        ),
        (
            "Wer hat Python entwickelt?",
            "Python wurde von Guido van Rossum entwickelt; die erste Version erschien 1991.",
            ["Python wurde von Guido van Rossum entwickelt", "die erste Version erschien 1991."],
        ),
        (
            "誰がPythonを作りましたか？",
            "PythonはGuido van Rossumによって作られました。最初のバージョンは1991年に公開されました！",
            ["PythonはGuido van Rossumによって作られました。", "最初のバージョンは1991年に公開されました！"],
        ),
    ],
)
def test_non_english_claims_stay_in_the_answer_language(question, text, expected):
    result = extract(text, question=question)
    assert [c["text"] for c in result["claims"]] == expected
    assert all(c["span"] in text for c in result["claims"])
    assert result["claims"][0]["relevance"] == "direct"


def test_non_english_verification():
    context = "Python est un langage de programmation interprété, créé par Guido van Rossum en 1991."
    supported, contradicted = verify(
        ["Python est un langage interprété.", "Python a été créé en 1989."], [context]
    )
    assert supported["verdict"] == "supported" and supported["evidence"] == context
    assert contradicted["verdict"] == "contradicted" and "1989 vs 1991" in contradicted["reason"]


def test_citation_markers_leave_the_claim_text_but_stay_in_the_span():
    text = (
        "Cardiovascular diseases are the leading cause of death globally [1]. "
        "They kill 17.9 million people [2]."
    )
    claims = extract(text, question="What is the leading cause of death?")["claims"]
    assert [c["text"] for c in claims] == [
        "Cardiovascular diseases are the leading cause of death globally.",
        "They kill 17.9 million people.",
    ]
    assert [c["span"] for c in claims] == [
        "Cardiovascular diseases are the leading cause of death globally [1].",
        "They kill 17.9 million people [2].",
    ]


def test_empty_answer_has_no_claims():
    assert extract("") == {"claims": [], "addresses_question": "no"}
    assert extract("   ...  ") == {"claims": [], "addresses_question": "no"}


def test_determinism():
    text = "Python is a compiled language created in 1991. I think it is popular; many people use it daily."
    first = extract(text), verify(["Python was created in 1989.", "It is popular."], [SEED_CONTEXT])
    second = extract(text), verify(["Python was created in 1989.", "It is popular."], [SEED_CONTEXT])
    assert first == second
    code = (
        "import json; from ragmetrics.judge.offline import answer; "
        f"print(json.dumps(answer('claims.extract', {{'question': 'q', 'answer': {text!r}}}), "
        "sort_keys=True))"
    )
    runs = {
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
        for _ in range(2)
    }
    assert len(runs) == 1


# -- the Judge object ------------------------------------------------------------------------------


def _request(task: str, variables: dict, model: type, context: dict | None = None) -> JudgeRequest:
    return JudgeRequest(
        task=task, prompts=(), messages=(), response_model=model, variables=variables, context=context or {}
    )


async def test_offline_judge_validates_against_the_real_schemas():
    judge = OfflineJudge()
    assert isinstance(judge, Judge)
    assert judge.info.provider == "offline" and judge.info.model == MODEL and judge.info.heuristic
    assert judge.info.spec == "offline"
    reply = await judge.complete(
        _request("claims.extract", {"question": "What is Python?", "answer": SEED_ANSWER}, ClaimExtraction)
    )
    assert isinstance(reply.value, ClaimExtraction)
    claims = [c.text for c in reply.value.claims]
    assert len(claims) == 2
    assert reply.usage.calls == 0 and reply.usage.prompt_tokens == 0 and reply.usage.cost_usd == 0.0
    assert reply.latency_ms >= 0 and not reply.cached
    reply = await judge.complete(
        _request(
            "claims.verify",
            {"claims": claims, "contexts": [SEED_CONTEXT]},
            ClaimVerification,
            {"n_claims": 2, "n_contexts": 1},
        )
    )
    assert isinstance(reply.value, ClaimVerification)
    assert [v.verdict for v in reply.value.verdicts] == ["contradicted", "supported"]
    await judge.aclose()
    await judge.aclose()


async def test_unknown_task_raises_judge_output_error():
    with pytest.raises(JudgeOutputError) as info:
        await OfflineJudge().complete(_request("rubric.grade", {}, ClaimExtraction))
    assert info.value.provider == "offline"
    assert info.value.status == "judge_output_invalid"
    assert "rubric.grade" in str(info.value)
    with pytest.raises(JudgeOutputError):
        answer("nope", {})


def test_importing_the_judge_is_light():
    code = (
        "import sys, time; import ragmetrics.judge.base; t = time.perf_counter(); "
        "import ragmetrics.judge.offline; "
        "dt = time.perf_counter() - t; "
        "assert not {'nltk', 'sentence_transformers', 'torch'} & set(sys.modules); "
        "print(dt)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert float(out) < 0.5  # generous for slow CI; measured ~20-40 ms
