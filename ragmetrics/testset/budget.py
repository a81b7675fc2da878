"""What generating a test set will cost, before anything is called.

Each slot is priced as a run makes it: the generation request rendered exactly as sent (prompt tokens
= characters / 4 plus the response schema, as providers bill it; a request already in the judge cache
is counted as cached and free), then the verification request of a stand-in reference's claims (the
first sentences of the chunks, as long as a typical reference, one claim a sentence). The generator
splits its reference into claims itself, so no extraction call is priced: a run makes one only for a
reference whose claims do not check out (see :mod:`.verify`). Completion tokens are guessed from that
reference's length. The extractive generator makes no generation call. Cost comes from the judge's
price table (the offline judge costs nothing).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from pydantic import BaseModel

from ragmetrics.judge.cache import CachingJudge
from ragmetrics.judge.pricing import batch_cost_usd, cost_usd
from ragmetrics.metrics.claims.engine import verify_request
from ragmetrics.pipeline.estimate import Estimate, JudgeEstimate
from ragmetrics.testset.extractive import usable_sentences
from ragmetrics.testset.slots import Slot
from ragmetrics.testset.verify import generate_request
from ragmetrics.text import split_sentences, tokens_for_chars

__all__ = ["estimate_slots", "priced"]

_VERDICT_CHARS = 130
"""Characters of one verdict's JSON besides its quote (as the pipeline's estimate assumes)."""
_CLAIM_CHARS = 45
"""Characters of one extracted claim's JSON besides its text and span."""


@cache
def _schema_tokens(model: type[BaseModel]) -> int:
    return tokens_for_chars(len(json.dumps(model.model_json_schema(), separators=(",", ":"))))


def _prompt_tokens(request: Any) -> int:
    return tokens_for_chars(sum(len(m.content) for m in request.messages)) + _schema_tokens(
        request.response_model
    )


def priced(judge: CachingJudge) -> bool:
    """Whether the judge's model has a price (the offline judge always has: zero)."""
    if judge.info.heuristic:
        return True
    prices = getattr(judge.inner, "prices", None) or {}
    return any(judge.info.model.startswith(name) for name in prices.get(judge.info.provider, {}))


def _stand_in(slot: Slot) -> str:
    """A reference of typical length: the first sentence of each chunk (two for one chunk).

    Headings are left out: a heading line is not what a reference repeats.
    """
    per = 2 if len(slot.chunks) == 1 else 1
    parts = [s for c in slot.chunks for s in usable_sentences(c.text)[:per]]
    return " ".join(parts)[:600] or slot.chunks[0].text[:300]


def estimate_slots(judge: CachingJudge, slots: Sequence[Slot], *, extractive: bool) -> Estimate:
    """Predicted calls, tokens and cost of trying ``slots`` once each (every candidate accepted)."""
    calls = cached = prompt = completion = 0
    cost = batch = 0.0
    prices = getattr(judge.inner, "prices", None)
    info = judge.info

    def bill(p: int, c: int) -> None:
        nonlocal calls, prompt, completion, cost, batch
        calls += 1
        prompt += p
        completion += c
        if prices is not None and not info.heuristic:
            cost += cost_usd(prices, info.provider, info.model, p, c)
            batch += batch_cost_usd(prices, info.provider, info.model, p, c)

    for slot in slots:
        reference = _stand_in(slot)
        texts = [c.text for c in slot.chunks]
        claims = [s for s in split_sentences(reference) if s.strip()] or [reference]
        if slot.kind == "unanswerable":
            claims = claims[:1]
        if not extractive:
            request = generate_request(slot)
            if judge.peek(request) is not None:
                cached += 1
            else:  # the reference, its quotes, and its claims (text and span) with their JSON
                split = 0 if slot.kind == "unanswerable" else 2 * len(reference) + _CLAIM_CHARS * len(claims)
                bill(_prompt_tokens(request), tokens_for_chars(2 * len(reference) + 120 + split))
        vreq = verify_request(claims, texts)
        bill(_prompt_tokens(vreq), tokens_for_chars(sum(_VERDICT_CHARS + len(c) for c in claims)))
    spec = info.spec
    return Estimate(
        samples=len(slots),
        calls=calls,
        cached_calls=cached,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=cost,
        batch_cost_usd=batch,
        judges={
            spec: JudgeEstimate(
                judge=spec,
                calls=calls,
                cached_calls=cached,
                prompt_tokens=prompt,
                completion_tokens=completion,
                cost_usd=cost,
                batch_cost_usd=batch,
                priced=priced(judge),
            )
        },
        notes=[] if priced(judge) else [f"{spec} has no price in the price table: cost shown as 0"],
    )
