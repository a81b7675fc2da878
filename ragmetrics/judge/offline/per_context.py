"""The offline judge's answer to a joint (``verify.v4``) request: verdicts, text verdicts, per-context part.

The answer's claims and then the reference's are judged against the contexts as an ordinary
``claims.verify`` request; with a reference, each answer claim is also judged with the reference as
the only context and each reference claim with the answer; a context supports the claims it supports
on its own; its relevance comes from :func:`ragmetrics.judge.offline.retrieval.context_relevance`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmetrics.judge.offline.retrieval import context_relevance
from ragmetrics.judge.offline.support import Similarities, _verify

__all__ = ["verify_v2"]


def verify_v2(variables: Mapping[str, Any], semantic: Similarities | None = None) -> dict[str, Any]:
    """Answer a ``claims.verify`` request that has a reference or a per-context part."""
    claims = [str(c) for c in variables.get("claims") or []]
    reference_claims = [str(c) for c in variables.get("reference_claims") or []]
    everything = claims + reference_claims
    contexts = [str(c) for c in variables.get("contexts") or []]
    reference, answer = variables.get("reference"), variables.get("answer")
    per_context = int(variables.get("per_context") or 0)
    out = _verify(everything, contexts, semantic)
    if reference is not None:
        others = _verify(claims, [reference], semantic)["verdicts"]
        others += _verify(reference_claims, [answer or ""], semantic)["verdicts"]
        for verdict, other in zip(out["verdicts"], others, strict=True):
            verdict["text_verdict"] = other["verdict"]
    if per_context:
        judged = []
        for j, context in enumerate(contexts):
            alone = _verify(everything, [context], semantic)["verdicts"] if everything else []
            entry: dict[str, Any] = {
                "context": j,
                "supports": [i for i, v in enumerate(alone) if v["verdict"] == "supported"],
            }
            if per_context > 1:
                entry["relevant"], _, entry["reason"] = context_relevance(
                    variables.get("question") or "", context
                )
            judged.append(entry)
        out["contexts"] = judged
    return out
