"""The offline judge's answer to a ``verify.v2`` request: verdicts, text verdicts, per-context part.

The verdicts against the contexts are the ordinary ``claims.verify`` answer; the verdict against the
second text is the same judgement with that text as the only context; a context supports the claims it
supports on its own; its relevance comes from :func:`ragmetrics.judge.offline.retrieval.context_relevance`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.judge.offline.retrieval import context_relevance
from ragmetrics.judge.offline.support import Similarities, _verify

__all__ = ["verify_v2"]


def verify_v2(variables: Mapping[str, Any], semantic: Similarities | None = None) -> dict[str, Any]:
    """Answer a ``claims.verify`` request that has a second text or a per-context part."""
    claims: Sequence[str] = list(variables.get("claims") or [])
    contexts: Sequence[str] = list(variables.get("contexts") or [])
    text = variables.get("text")
    per_context = int(variables.get("per_context") or 0)
    out = _verify(claims, contexts, semantic)
    if text is not None:
        against_text = _verify(claims, [text], semantic)["verdicts"]
        for verdict, other in zip(out["verdicts"], against_text, strict=True):
            verdict["text_verdict"] = other["verdict"]
    if per_context:
        judged = []
        for j, context in enumerate(contexts):
            alone = _verify(claims, [context], semantic)["verdicts"] if claims else []
            entry: dict[str, Any] = {
                "context": j,
                "supports": [i for i, v in enumerate(alone) if v["verdict"] == "supported"],
            }
            if per_context > 1:
                relevant, _, reason = context_relevance(variables.get("question") or "", context)
                entry["relevant"] = relevant
                entry["reason"] = reason
            judged.append(entry)
        out["contexts"] = judged
    return out
