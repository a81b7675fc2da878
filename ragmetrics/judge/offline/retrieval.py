"""The offline judge's retrieval heuristics: does a context bear on the question?

:func:`context_relevance` is lexical, deterministic and labelled as a heuristic in every reason: a
context is relevant when it holds at least half of the question's content stems (or two of them).
"""

from __future__ import annotations

from ragmetrics.judge.offline import text as _text

__all__ = ["RELEVANT_SHARE", "context_relevance"]

RELEVANT_SHARE = 0.5
"""Share of the question's content stems a context must hold to count as relevant."""


def _content_stems(text: str) -> list[str]:
    tokens = _text.tokenize(text)
    return list(dict.fromkeys(_text.stems(_text.content_tokens(tokens))))


def context_relevance(question: str, context: str) -> tuple[bool, float, str]:
    """Whether ``context`` bears on ``question``: (relevant, soft score in [0, 1], a one-line reason).

    The soft score is the share of the question's content stems found in the context; relevant when it
    is at least :data:`RELEVANT_SHARE` or two stems are found. A question without content words makes
    every context relevant (nothing to tell them apart).
    """
    wanted = _content_stems(question or "")
    if not wanted:
        return True, 1.0, "the question has no content words to look for"
    have = set(_content_stems(context or ""))
    found = [s for s in wanted if s in have]
    share = len(found) / len(wanted)
    relevant = share >= RELEVANT_SHARE or len(found) >= 2
    missing = [s for s in wanted if s not in have][:5]
    reason = f"{len(found)} of {len(wanted)} question terms found ({share:.0%})"
    if missing and not relevant:
        reason += f"; missing: {', '.join(missing)}"
    return relevant, share, reason
