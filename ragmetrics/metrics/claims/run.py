"""Running a claim plan: the extraction calls, then the verification chunks, merged into one outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragmetrics.errors import ConfigError, JudgeError
from ragmetrics.judge import Judge, JudgeReply, JudgeRequest
from ragmetrics.judge.metering import note_unclaimed
from ragmetrics.metrics.claims.engine import ClaimPlan, quote_found
from ragmetrics.metrics.claims.schemas import (
    ClaimExtraction,
    ClaimVerification,
    ContextJudgement,
    VerifiedClaim,
)
from ragmetrics.metrics.claims.verification import Checked, Health, checked, quote_problems, span_problems
from ragmetrics.score import ClaimRecord, Usage, spent_by

__all__ = ["ClaimsOutcome", "run_claims"]


@dataclass(slots=True)
class ClaimsOutcome:
    """Claims of one text (and of the reference, for a joint task) with their verdicts, and the cost."""

    plan: ClaimPlan
    extraction: ClaimExtraction | None
    """None when the split text was empty (no call made)."""
    verdicts: list[VerifiedClaim | None]
    """Per claim (the split text's, then the reference's); None when verification was not run."""
    usage: Usage
    chunks: int = 0
    repairs: tuple[str, ...] = ()
    """Unambiguous slips in the judge's replies that were repaired instead of re-asked."""
    judged: tuple[ContextJudgement | None, ...] = ()
    """Per source, its judgement merged over chunks (None where the judge gave none)."""
    also_extraction: ClaimExtraction | None = None
    """The reference's claims, for a joint task (None without a reference)."""
    health: Health = Health()
    """How far the judge's replies check out against the texts (spans, quotes, re-asks)."""

    @property
    def n_main(self) -> int:
        """Claims of the split text (the reference's are numbered on from here)."""
        return len(self.extraction.claims) if self.extraction is not None else 0

    def records(self, *, also: bool = False) -> list[ClaimRecord]:
        """The claims (``also``: the reference's) as result records, the evidence quote checked."""
        sources = self.plan.sources
        extraction = self.also_extraction if also else self.extraction
        text = (self.plan.also_text or "") if also else self.plan.text
        claims = extraction.claims if extraction is not None else []
        offset = self.n_main if also else 0
        out = []
        for i, claim in enumerate(claims):
            v = self.verdicts[offset + i] if offset + i < len(self.verdicts) else None
            verified = None
            verdict = v.verdict if v else None
            if v is not None and v.verdict != "not_found":
                verified = (
                    v.context is not None
                    and 0 <= v.context < len(sources)
                    and quote_found(v.evidence, sources[v.context])
                )
                if not verified:  # a verdict whose quote is not in its context counts as not_found
                    verdict = "not_found"
            out.append(
                ClaimRecord(
                    text=claim.text,
                    span=claim.span,
                    span_found=quote_found(claim.span, text),
                    relevance=claim.relevance,
                    verdict=verdict,
                    judge_verdict=v.verdict if v is not None and verdict != v.verdict else None,
                    context_index=v.context if v else None,
                    evidence=v.evidence if v else "",
                    evidence_verified=verified,
                    reason=v.reason if v else "",
                    support=v.support if v else None,
                )
            )
        return out


_RANK = {"supported": 0, "contradicted": 1, "not_found": 2}


async def _extract(
    judge: Judge, request: JudgeRequest[ClaimExtraction] | None
) -> JudgeReply[ClaimExtraction] | None:
    return await judge.complete(request) if request is not None else None


async def run_claims(
    judge: Judge, claim_plan: ClaimPlan, *, claims: ClaimExtraction | None = None
) -> ClaimsOutcome:
    """Make the calls of ``claim_plan``: extract the claims, then verify them chunk by chunk.

    ``claims``: the split text's claims, already split and their spans checked against it by the
    caller (a test set's generator returns its reference's claims with the reference); no extraction
    call is made for them.

    Raises:
        JudgeError: A call failed for good; its ``usage`` covers every call made here (extraction and
            every verification chunk), not only the failed one.
    """
    usage = Usage()
    got: list[JudgeReply[ClaimExtraction] | BaseException | None]
    if claims is not None:
        if claim_plan.also_extract is not None:
            raise ConfigError("run_claims: claims given for a joint task (its reference would go unsplit)")
        n = len(claims.claims)
        return await _verified(judge, claim_plan, claims, None, usage, Health(spans=n, spans_found=n))
    if claim_plan.also_extract is None:  # one extraction: no task to gather
        try:
            got = [await _extract(judge, claim_plan.extract), None]
        except JudgeError as exc:
            got = [exc, None]
    else:
        got = list(
            await asyncio.gather(
                _extract(judge, claim_plan.extract),
                _extract(judge, claim_plan.also_extract),
                return_exceptions=True,
            )
        )
    for reply in got:
        if isinstance(reply, JudgeReply):
            usage = usage + reply.usage
        elif isinstance(reply, BaseException):
            usage = usage + spent_by(reply)
    failed = [r for r in got if isinstance(r, BaseException)]
    if failed:
        first = failed[0]
        raise first.with_usage(usage) if isinstance(first, JudgeError) else first
    main, also = (r if isinstance(r, JudgeReply) else None for r in got)
    main_check, also_check = await asyncio.gather(
        _check_extraction(judge, claim_plan.extract, main, claim_plan.text, "answer"),
        _check_extraction(judge, claim_plan.also_extract, also, claim_plan.also_text or "", "reference"),
    )
    health = Health()
    for check in (main_check, also_check):
        if check is not None:
            usage = usage + check.usage
            n = len(check.reply.value.claims)
            health = health + Health(
                spans=n,
                spans_found=n - len(check.problems),
                reasks=int(check.reasked),
                not_found=check.problems,
            )
    main = main_check.reply if main_check is not None else None
    also = also_check.reply if also_check is not None else None
    extraction: ClaimExtraction | None = main.value if main is not None else None
    also_extraction: ClaimExtraction | None = also.value if also is not None else None
    return await _verified(judge, claim_plan, extraction, also_extraction, usage, health)


async def _verified(
    judge: Judge,
    claim_plan: ClaimPlan,
    extraction: ClaimExtraction | None,
    also_extraction: ClaimExtraction | None,
    usage: Usage,
    health: Health,
) -> ClaimsOutcome:
    """The verification calls for the extracted claims, merged over chunks into the outcome.

    Only the claims whose span is in their text are sent: the others are set apart from every score
    (``Found.unverified``), so a verdict on them would buy nothing, and a judge that is not reading its
    input costs no verification call at all. The verdicts and supports come back renumbered to the
    extraction's indices; a claim not sent has no verdict.
    """
    main_keep = _spans_found(extraction, claim_plan.text)
    also_keep = _spans_found(also_extraction, claim_plan.also_text or "")
    n_main = len(extraction.claims) if extraction is not None else 0
    n_all = n_main + (len(also_extraction.claims) if also_extraction is not None else 0)
    original = [*main_keep, *(n_main + i for i in also_keep)]  # sent index -> extraction index
    claims = [extraction.claims[i].text for i in main_keep] if extraction is not None else []
    also_claims = [also_extraction.claims[i].text for i in also_keep] if also_extraction is not None else []
    verdicts: list[VerifiedClaim | None] = [None] * n_all
    requests = claim_plan.verify(claims, also_claims)
    if not requests:
        return ClaimsOutcome(
            claim_plan, extraction, verdicts, usage, also_extraction=also_extraction, health=health
        )
    # every chunk finishes (and is paid for) even when one fails, so the failure carries their usage
    try:
        answers: list[JudgeReply[ClaimVerification] | BaseException] = await asyncio.gather(
            *(judge.complete(request) for request in requests), return_exceptions=True
        )
    except asyncio.CancelledError:  # the sample timed out: the extractions were paid for all the same
        note_unclaimed(usage)
        raise
    failures = [a for a in answers if isinstance(a, BaseException)]
    for answer in answers:
        usage = usage + (answer.usage if isinstance(answer, JudgeReply) else spent_by(answer))
    if failures:
        raise _failure(failures[0], usage, health)
    initial = [a for a in answers if isinstance(a, JudgeReply)]
    checks: list[Checked] = list(
        await asyncio.gather(
            *(
                checked(judge, request, reply, _quotes_in([p.text for p in chunk]))
                for request, reply, chunk in zip(requests, initial, claim_plan.chunks, strict=True)
            )
        )
    )
    replies = [c.reply for c in checks]
    for check in checks:
        quoted = sum(v.verdict != "not_found" for v in check.reply.value.verdicts)
        usage = usage + check.usage
        health = health + Health(
            quotes=quoted,
            quotes_found=quoted - len(check.problems),
            reasks=int(check.reasked),
            not_found=check.problems,
        )
    repairs: list[str] = []
    text_verdicts: list[str | None] = [None] * n_all
    pieces: list[list[ContextJudgement]] = [[] for _ in claim_plan.sources]
    for chunk, chunk_reply in zip(claim_plan.chunks, replies, strict=True):  # gather: one per chunk
        result: ClaimVerification = chunk_reply.value
        repairs += [r for r in result.repairs if r not in repairs]
        for v in result.verdicts:
            local, claim = v.context, original[v.claim]
            mapped = v.model_copy(
                update={"claim": claim, "context": chunk[local].index if local is not None else None}
            )
            current = verdicts[claim]
            if current is None or _RANK[mapped.verdict] < _RANK[current.verdict]:
                verdicts[claim] = mapped
            seen = text_verdicts[claim]
            if v.text_verdict is not None and (seen is None or _RANK[v.text_verdict] < _RANK[seen]):
                text_verdicts[claim] = v.text_verdict
        for judged in result.contexts:
            renumbered = judged.model_copy(update={"supports": [original[i] for i in judged.supports]})
            pieces[chunk[judged.context].index].append(renumbered)
    for i, tv in enumerate(text_verdicts):
        current = verdicts[i]
        if current is not None and current.text_verdict != tv:
            verdicts[i] = current.model_copy(update={"text_verdict": tv})
    return ClaimsOutcome(
        claim_plan,
        extraction,
        verdicts,
        usage,
        chunks=len(claim_plan.chunks),
        repairs=tuple(repairs),
        judged=tuple(_merge(i, found) for i, found in enumerate(pieces)),
        also_extraction=also_extraction,
        health=health,
    )


async def _check_extraction(
    judge: Judge,
    request: JudgeRequest[ClaimExtraction] | None,
    reply: JudgeReply[ClaimExtraction] | None,
    text: str,
    what: str,
) -> Checked | None:
    """The extraction reply checked (every span found in ``text``), re-asked once if not."""
    if request is None or reply is None:
        return None
    return await checked(judge, request, reply, lambda value: span_problems(value, text, what))


def _failure(exc: BaseException, usage: Usage, health: Health) -> BaseException:
    """``exc`` carrying the sample's usage and the health of the extraction that came back before it."""
    if not isinstance(exc, JudgeError):
        return exc
    failed = exc.with_usage(usage)
    failed.health = health
    return failed


def _spans_found(extraction: ClaimExtraction | None, text: str) -> list[int]:
    """The indices of the claims whose span is in ``text`` (the same check as ``ClaimRecord.span_found``)."""
    if extraction is None:
        return []
    return [i for i, claim in enumerate(extraction.claims) if quote_found(claim.span, text)]


def _quotes_in(chunk: list[str]) -> Callable[[Any], list[str]]:
    return lambda value: quote_problems(value, chunk)


def _merge(index: int, pieces: Sequence[ContextJudgement]) -> ContextJudgement | None:
    """One context's judgement over its pieces: relevant if any piece is, the claims any supports."""
    if not pieces:
        return None
    flags = [p.relevant for p in pieces if p.relevant is not None]
    relevant = any(flags) if flags else None
    reason = next((p.reason for p in pieces if p.relevant == relevant and p.reason), pieces[0].reason)
    supports = sorted({i for p in pieces for i in p.supports})
    return ContextJudgement(context=index, relevant=relevant, supports=supports, reason=reason)
