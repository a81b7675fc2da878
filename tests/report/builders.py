"""Hand-made records for the HTML report tests: known claims, hostile text, and a large synthetic set.

Hand-made rather than judged, so the expected highlights do not move when the offline judge improves.
"""

from __future__ import annotations

import random

from ragmetrics.pipeline.report import CacheSummary, ErrorRecord, EvaluationResult, Report, RunStats
from ragmetrics.sample import Sample
from ragmetrics.score import ClaimRecord, JudgeInfo, MetricResult, Usage

METRICS = ("faithfulness", "relevancy", "groundedness")
JUDGE = JudgeInfo(provider="openai", model="gpt-4o-mini")
OFFLINE = JudgeInfo(provider="offline", model="lexical-v1", heuristic=True)

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = '"><img src=x onerror=alert(1)>'
XSS_FLAG = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'

KNOWN_ID = "known-1"
KNOWN_ANSWER = (
    "Python is a compiled language. It was created in 1991. It was designed by Guido van Rossum. "
    "Astronauts love it on Mars."
)
KNOWN_CONTEXTS = (
    "Python is an interpreted language created by Guido van Rossum in 1991. It is named after Monty Python.",
    "The language is used widely in science.",
)
# (claim text, span, verdict, relevance, context, evidence, verified)
KNOWN_CLAIMS = [
    (
        "Python is a compiled language.",
        "Python is a compiled language.",
        "contradicted",
        "direct",
        0,
        "Python is an interpreted language",
        True,
    ),
    (
        "Python was created in 1991.",
        "It was created in 1991.",
        "supported",
        "direct",
        0,
        "created by Guido van Rossum in 1991",
        True,
    ),
    (
        "Python was designed by Guido van Rossum.",
        "It was designed by Guido van Rossum.",
        "supported",
        "supporting",
        0,
        "Guido  van rossum",
        True,
    ),  # whitespace and case differ: found by the normalised search
    (
        "Astronauts love Python on Mars.",
        "Astronauts love it on Mars.",
        "not_found",
        "off_topic",
        None,
        "",
        None,
    ),
    (
        "Python is very popular.",
        "Python is hugely popular",
        "supported",
        "direct",
        1,
        "Python is loved by all",
        False,
    ),  # span not in the answer, quote not in the context
]
KNOWN_MARKS = {"supported": 2, "contradicted": 1, "not_found": 1}
"""Highlights expected in the known answer for faithfulness (the fifth claim's span is not in the answer)."""


def claims_of(metric: str) -> list[ClaimRecord]:
    out = []
    for text, span, verdict, relevance, ctx, evidence, verified in KNOWN_CLAIMS:
        if metric == "relevancy":
            out.append(ClaimRecord(text=text, span=span, relevance=relevance))
        else:
            out.append(
                ClaimRecord(
                    text=text,
                    span=span,
                    relevance=relevance,
                    verdict=verdict,
                    context_index=ctx,
                    evidence=evidence,
                    evidence_verified=verified if evidence else None,
                    reason=f"{verdict}: checked against context {ctx}",
                )
            )
    return out


def result(
    name: str,
    score: float | None,
    *,
    status: str = "ok",
    claims: list[ClaimRecord] | None = None,
    message: str | None = None,
    reasoning: str = "",
    judge: JudgeInfo = JUDGE,
    cost: float = 0.0004,
    threshold: float | None = 0.5,
) -> MetricResult:
    return MetricResult(
        name=name,
        score=score,
        status=status,
        message=message,
        reasoning=reasoning or f"{name} reasoning",
        claims=claims or [],
        threshold=threshold if score is not None else None,
        passed=(score >= threshold) if score is not None and threshold is not None else None,
        usage=Usage(calls=2, cached_calls=1, prompt_tokens=900, completion_tokens=120, cost_usd=cost),
        latency_ms=840.0,
        judge=judge,
        signature=f"{name}|prompts=x.v1:00000000|judge={judge.spec}",
        details={"chunks": 1},
    )


def record(
    index: int,
    rid: str,
    sample: Sample | None,
    results: dict[str, MetricResult],
    errors: list[ErrorRecord] | None = None,
) -> EvaluationResult:
    errors = list(errors or [])
    scores = {m: (results[m].score if m in results else None) for m in METRICS}
    usage = Usage()
    for r in results.values():
        usage = usage + r.usage
    return EvaluationResult(
        index=index,
        id=rid,
        sample=sample,
        scores=scores,
        results=results,
        errors=errors,
        usage=usage,
        latency_ms=900.0 + index,
    )


def known_record(index: int = 0) -> EvaluationResult:
    sample = Sample(
        question="What kind of language is Python and when was it created?",
        answer=KNOWN_ANSWER,
        contexts=KNOWN_CONTEXTS,
        id=KNOWN_ID,
    )
    return record(
        index,
        KNOWN_ID,
        sample,
        {
            "faithfulness": result("faithfulness", 0.6, claims=claims_of("faithfulness")),
            "relevancy": result("relevancy", 0.8, claims=claims_of("relevancy")),
            "groundedness": result("groundedness", 0.5, claims=claims_of("groundedness")),
        },
    )


def xss_record(index: int) -> EvaluationResult:
    answer = f"{XSS_IMG} and {XSS_SCRIPT} are both text. {XSS_FLAG}"
    context = f"{XSS_IMG} {XSS_SCRIPT} </script><!-- {XSS_FLAG}"
    sample = Sample(question=XSS_SCRIPT, answer=answer, contexts=(context,), reference=XSS_IMG, id="xss")
    claim = ClaimRecord(
        text=XSS_SCRIPT,
        span=XSS_IMG,
        verdict="supported",
        relevance="direct",
        context_index=0,
        evidence=XSS_SCRIPT,
        evidence_verified=True,
        reason=f"{XSS_IMG} reason",
    )
    return record(
        index,
        f"xss{XSS_IMG}",
        sample,
        {
            "faithfulness": result("faithfulness", 1.0, claims=[claim], reasoning=XSS_SCRIPT),
            "relevancy": result("relevancy", 1.0, claims=[claim.model_copy(update={"verdict": None})]),
        },
        errors=[
            ErrorRecord(
                metric="groundedness",
                status="provider_error",
                message=f"{XSS_IMG} 500 {XSS_SCRIPT}",
                type="JudgeError",
                traceback=XSS_SCRIPT,
            )
        ],
    )


def emoji_record(index: int) -> EvaluationResult:
    answer = "🎉 Paris is the capital of France. 🇫🇷 It has about 2 million people."
    context = "🏛️ Paris, the capital of France, has about 2 million people."
    sample = Sample(question="Tell me about Paris 🗼", answer=answer, contexts=(context,), id="emoji-1")
    claims = [
        ClaimRecord(
            text="Paris is the capital of France.",
            span="Paris is the capital of France.",
            verdict="supported",
            relevance="direct",
            context_index=0,
            evidence="the capital of France",
            evidence_verified=True,
        ),
        ClaimRecord(
            text="Paris has about 2 million people.",
            span="It has about 2 million people.",
            verdict="supported",
            relevance="direct",
            context_index=0,
            evidence="has about 2 million people",
            evidence_verified=True,
        ),
    ]
    return record(
        index,
        "emoji-1",
        sample,
        {
            m: result(
                m,
                1.0,
                claims=claims
                if m != "relevancy"
                else [c.model_copy(update={"verdict": None}) for c in claims],
            )
            for m in METRICS
        },
    )


def failed_record(index: int) -> EvaluationResult:
    sample = Sample(
        question="Why is the sky blue?",
        answer="Because of Rayleigh scattering.",
        contexts=("Rayleigh scattering makes the sky blue.",),
        id="failed-1",
    )
    return record(
        index,
        "failed-1",
        sample,
        {
            "relevancy": result("relevancy", 1.0),
            "groundedness": result(
                "groundedness",
                None,
                status="judge_output_invalid",
                message="the judge's reply did not match the schema after 2 re-asks",
            ),
        },
        errors=[
            ErrorRecord(
                metric="faithfulness",
                status="timeout",
                message="judge timed out after 30 s",
                type="JudgeError",
            ),
            ErrorRecord(
                metric="groundedness",
                status="judge_output_invalid",
                message="schema mismatch",
                type="JudgeOutputError",
            ),
        ],
    )


def invalid_record(index: int) -> EvaluationResult:
    return record(
        index,
        "invalid-1",
        None,
        {},
        errors=[
            ErrorRecord(
                metric=None,
                status="invalid_input",
                message="answer: expected a string, got 42",
                type="InvalidInputError",
                row=index,
                field="answer",
            )
        ],
    )


def filler_record(index: int, rng: random.Random, *, zebra: bool = False) -> EvaluationResult:
    words = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "maple", "copper", "violet"]
    sentence = lambda k: " ".join(rng.choice(words) for _ in range(k)).capitalize() + "."  # noqa: E731
    answer_sents = [sentence(6) for _ in range(rng.randint(1, 3))]
    if zebra:
        answer_sents.append("A zebra crossed.")
    answer = " ".join(answer_sents)
    contexts = tuple(" ".join(sentence(8) for _ in range(3)) for _ in range(2))
    claims = []
    for s in answer_sents:
        verdict = rng.choice(["supported", "supported", "not_found", "contradicted"])
        claims.append(
            ClaimRecord(
                text=s,
                span=s,
                verdict=verdict,
                relevance=rng.choice(["direct", "off_topic"]),
                context_index=0 if verdict != "not_found" else None,
                evidence=contexts[0].split(".")[0] if verdict != "not_found" else "",
                evidence_verified=True if verdict != "not_found" else None,
            )
        )
    supported = sum(c.verdict == "supported" for c in claims) / len(claims)
    rid = f"row-{index:03d}"
    sample = Sample(question=sentence(5).rstrip(".") + "?", answer=answer, contexts=contexts, id=rid)
    return record(
        index,
        rid,
        sample,
        {
            "faithfulness": result("faithfulness", supported, claims=claims),
            "relevancy": result(
                "relevancy",
                round(rng.random(), 3),
                claims=[c.model_copy(update={"verdict": None}) for c in claims],
            ),
            "groundedness": result("groundedness", supported * rng.uniform(0.5, 1.0), claims=claims),
        },
    )


def browser_records(fillers: int = 40) -> list[EvaluationResult]:
    rng = random.Random(7)
    out = [known_record(0), xss_record(1), emoji_record(2), failed_record(3), invalid_record(4)]
    for k in range(fillers):
        out.append(filler_record(len(out), rng, zebra=k in (3, 17, 29)))
    return out


def run_stats(records: list[EvaluationResult], judges: list[str] | None = None) -> RunStats:
    usage = Usage()
    for r in records:
        usage = usage + r.usage
    return RunStats(
        usage=usage,
        cache=CacheSummary(hits=120, shared=3, misses=240),
        retries=2,
        throttled=1,
        wall_time_s=12.5,
        judges=judges or [JUDGE.spec],
    )


def report_of(records: list[EvaluationResult], judges: list[str] | None = None) -> Report:
    return Report.from_records(records, run=run_stats(records, judges), metrics=list(METRICS))


# -- a large synthetic dataset ----------------------------------------------------------------------


def synthetic_records(n: int, seed: int = 0) -> list[EvaluationResult]:
    """``n`` distinct rows of realistic size: a question, 3 contexts of ~600 characters, a 3-claim answer."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghiklmnoprstuvwy") for _ in range(rng.randint(3, 9))) for _ in range(3000)
    ]

    def sentence(k: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(k)).capitalize() + "."

    judge = JUDGE
    out = []
    for i in range(n):
        contexts = tuple(" ".join(sentence(rng.randint(10, 16)) for _ in range(5)) for _ in range(3))
        claims = []
        parts = []
        for _ in range(3):
            verdict = rng.choices(["supported", "contradicted", "not_found"], weights=[6, 1, 3])[0]
            ctx = rng.randrange(3)
            quote = contexts[ctx].split(". ")[rng.randrange(5)].rstrip(".") if verdict != "not_found" else ""
            span = (" ".join(quote.split()[:8]) + ".") if quote else sentence(9)
            parts.append(span)
            claims.append(
                ClaimRecord(
                    text=span,
                    span=span,
                    verdict=verdict,
                    relevance=rng.choice(["direct", "supporting", "off_topic"]),
                    context_index=ctx if quote else None,
                    evidence=quote,
                    evidence_verified=bool(quote) or None,
                    reason=f"{verdict}: {rng.randint(1, 9)}/{rng.randint(9, 12)} words in context {ctx}",
                )
            )
        answer = " ".join(parts)
        sample = Sample(
            question=sentence(rng.randint(6, 12)).rstrip(".") + "?",
            answer=answer,
            contexts=contexts,
            id=f"syn-{i:05d}",
        )
        faith = sum(c.verdict == "supported" for c in claims) / 3
        results = {
            "faithfulness": result(
                "faithfulness",
                faith,
                claims=claims,
                judge=judge,
                reasoning=f"{round(faith * 3)} of 3 claims are supported by the contexts.",
            ),
            "relevancy": result(
                "relevancy",
                rng.random(),
                judge=judge,
                claims=[
                    c.model_copy(
                        update={
                            "verdict": None,
                            "context_index": None,
                            "evidence": "",
                            "evidence_verified": None,
                            "reason": "",
                        }
                    )
                    for c in claims
                ],
            ),
            "groundedness": result("groundedness", faith * rng.uniform(0.6, 1.0), claims=claims, judge=judge),
        }
        out.append(record(i, sample.id or str(i), sample, results))
    return out
