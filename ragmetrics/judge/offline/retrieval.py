"""The offline judge's context relevance: does one retrieved context bear on the question, by lexical overlap.

:func:`context_relevance` is what the offline judge (and so the fake server) answers for the
per-context relevance that ``context_relevancy`` asks; it sees words, not meaning, and says so in
every reason. The soft score is the equal-weight mean of two shares of the question's content stems:
**coverage** (found anywhere in the context) and **focus** (found in its best three-sentence window),
numbers and names weighing :data:`ENTITY_WEIGHT`. The context is relevant when the score reaches
:data:`RELEVANT_SCORE`; a question with no content words or an empty context scores 0. The constants
are round numbers, nothing is fitted; ``benchmarks/retrieval_quality.py`` measures them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragmetrics import text as _text
from ragmetrics.judge.offline.claims import _CITATION, _content_pairs

__all__ = ["ENTITY_WEIGHT", "RELEVANT_SCORE", "context_relevance"]

RELEVANT_SCORE = 0.25
"""The soft score from which a context counts as relevant to the question: a quarter of the question's
content by weight, the share from which the claim splitter calls a claim ``direct`` (``_DIRECT_SHARE``)."""

ENTITY_WEIGHT = 2.0
"""The weight of a number or a name among the question's content stems (other stems weigh 1)."""

_SHOWN = 6
"""At most this many matched and missing words are named in a reason."""


def _question_terms(question: str) -> dict[str, tuple[str, float]]:
    """The question's content stems: ``stem -> (surface word, weight)``, in order of first use."""
    text = _CITATION.sub(" ", question)
    names = _names(text)
    numbers = {n.value for n in _text.extract_numbers(text)}
    terms: dict[str, tuple[str, float]] = {}
    for surface, stem in _content_pairs(text):
        if stem in terms:
            continue
        entity = surface in names or surface.isdigit() or surface in numbers
        terms[stem] = (surface, ENTITY_WEIGHT if entity else 1.0)
    return terms


def _names(text: str) -> set[str]:
    """Case-folded words of ``text`` written as names: capitalised mid-sentence, or acronyms."""
    out: set[str] = set()
    for start, end in _text.sentence_spans(text):
        for k, (token, a, b) in enumerate(_text.token_spans(text[start:end])):
            word = text[start + a : start + b]
            if len(word) > 1 and word.isupper() or (k > 0 and word[:1].isupper()):
                out.add(token)
    return out


def _context_stems(context: str) -> tuple[frozenset[str], tuple[frozenset[str], ...]]:
    """All stems of ``context`` and those of each three-sentence window (a sentence and its neighbours)."""
    sentences = [
        frozenset(_text.stems(t for t, _, _ in _text.token_spans(context[a:b])))
        for a, b in _text.sentence_spans(context)
    ]
    windows = tuple(frozenset().union(*sentences[max(0, k - 1) : k + 2]) for k in range(len(sentences)))
    return frozenset().union(*sentences), windows


def _share(terms: dict[str, tuple[str, float]], stems: frozenset[str], total: float) -> float:
    """The weight of the question's stems among ``stems``, over ``total`` (walks the smaller of the two)."""
    if len(stems) < len(terms):
        return sum(terms[st][1] for st in stems if st in terms) / total
    return sum(w for st, (_, w) in terms.items() if st in stems) / total


def _listed(words: Sequence[str]) -> str:
    shown = ", ".join(words[:_SHOWN])
    return shown + (f" (+{len(words) - _SHOWN} more)" if len(words) > _SHOWN else "")


def context_relevance(question: str, context: str) -> tuple[bool, float, str]:
    """Whether ``context`` bears on ``question``, by lexical overlap of the question's content words.

    Deterministic and cheap (linear in the two texts). See the module docstring for the features.

    Args:
        question: The user's question (untrusted text: only read, never interpreted).
        context: One retrieved context.

    Returns:
        ``(relevant, score, reason)``: relevant when ``score`` (in [0, 1], rounded to 4 places)
        reaches :data:`RELEVANT_SCORE`; ``reason`` is one line naming the figures and words.
    """
    terms = _question_terms(question or "")
    if not terms:
        return False, 0.0, "lexical overlap: the question has no content words to look for"
    all_stems, windows = _context_stems(context or "")
    if not all_stems:
        return False, 0.0, "lexical overlap: the context has no words"
    total = sum(w for _, w in terms.values())
    coverage = _share(terms, all_stems, total)
    focus = max((_share(terms, w, total) for w in windows), default=0.0)
    score = round((coverage + focus) / 2, 4)
    relevant = score >= RELEVANT_SCORE
    found = [s for st, (s, _) in terms.items() if st in all_stems]
    missing = [s for st, (s, _) in terms.items() if st not in all_stems]
    entities = [s for st, (s, w) in terms.items() if w > 1.0]
    parts = [
        f"lexical overlap: {len(found)}/{len(terms)} question content words in the context "
        f"({round(100 * coverage)}% by weight, {round(100 * focus)}% in its best three-sentence window)"
    ]
    if found:
        parts.append(f"found: {_listed(found)}")
    if missing:
        parts.append(f"missing: {_listed(missing)}")
    if entities:
        hit = [e for e in entities if e in found]
        parts.append(f"names/numbers found {len(hit)}/{len(entities)}")
    verdict = "relevant" if relevant else "not relevant"
    parts.append(f"score {score:.2f}, {verdict} (threshold {RELEVANT_SCORE:.2f})")
    return relevant, score, "; ".join(parts)
