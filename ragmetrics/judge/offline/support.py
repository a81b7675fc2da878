"""The offline judge's verification: lexical support of each claim, contradictions, evidence, verdicts.

See :mod:`ragmetrics.judge.offline.judge` for what the judge does and why; this module holds the
``claims.verify`` half.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from ragmetrics import text as _text
from ragmetrics.judge.offline.claims import _CITATION, _PRONOUNS, _SPEAKER, _content_pairs

SUPPORT_CENTRE = 0.6
"""Raw support (the mean of the three recall features) at which a claim is as likely supported as not."""

SUPPORT_SCALE = 0.1
"""Scale of the logistic curve from raw support to probability: raw 0.4 gives 0.12, raw 0.8 gives 0.90."""

CONTRADICTED_SUPPORT = 0.05
"""The most support a contradicted claim keeps."""

SPEAKER_SUPPORT = 0.1
"""The most support a statement about the speaker keeps when the contexts do not speak in the first person."""

CONTRADICTION_OVERLAP = 0.6
"""Share of the claim's other content stems the aligned sentence must hold (and at least two) before a
number, date or antonym mismatch with it makes the claim contradicted."""

NEGATION_OVERLAP = 0.8
"""The same for a negation mismatch, the noisiest cue (and at least three stems): the two statements
must say the same but for the negation."""

MISMATCH_PENALTY = 0.1
"""Raw support lost by a claim whose numbers are in no context."""


class Similarities(Protocol):
    """What verification needs of the semantic model (``offline+semantic``)."""

    def best_similarities(self, claims: Sequence[str], windows: Sequence[str]) -> list[float | None]:
        """Per claim, its highest similarity with any of ``windows`` (None: nothing to compare)."""
        ...


@dataclass(slots=True)
class _Sentence:
    start: int
    end: int
    tokens: list[str]
    """Case-folded surface tokens."""
    stems: list[str]
    offsets: list[tuple[int, int]]
    """Of each token, in the context."""


@dataclass(slots=True)
class _Context:
    text: str
    sentences: list[_Sentence]
    stems: set[str] = field(default_factory=set)
    bigrams: set[tuple[str, ...]] = field(default_factory=set)
    windows: list[tuple[set[str], set[tuple[str, ...]]]] = field(default_factory=list)
    """Stems and bigrams of each sentence with its two neighbours."""
    numbers: set[str] = field(default_factory=set)
    first_person: bool = False


@dataclass(slots=True)
class _Pool:
    """What all the contexts of one request hold together."""

    stems: set[str] = field(default_factory=set)
    bigrams: set[tuple[str, ...]] = field(default_factory=set)
    numbers: set[str] = field(default_factory=set)


def _prepare(context: str) -> _Context:
    sentences = []
    all_spans: list[tuple[str, int, int]] = []
    for start, end in _text.sentence_spans(context):
        spans = _text.token_spans(context[start:end])
        tokens = [t for t, _, _ in spans]
        offsets = [(start + a, start + b) for _, a, b in spans]
        all_spans.extend((t, a, b) for t, (a, b) in zip(tokens, offsets, strict=True))
        sentences.append(_Sentence(start, end, tokens, _text.stems(tokens), offsets))
    numbers = {n.value for n in _text.extract_numbers(context, all_spans)}
    ctx = _Context(context, sentences, numbers=numbers)
    for s in sentences:
        ctx.first_person = ctx.first_person or not _SPEAKER.isdisjoint(s.tokens)
        ctx.stems.update(s.stems)
        ctx.bigrams.update(_text.ngrams(s.stems, 2))
    for k in range(len(sentences)):
        near = sentences[max(0, k - 1) : k + 2]
        ctx.windows.append(
            ({x for s in near for x in s.stems}, {b for s in near for b in _text.ngrams(s.stems, 2)})
        )
    return ctx


def _pool(contexts: Sequence[_Context]) -> _Pool:
    pool = _Pool()
    for ctx in contexts:
        pool.stems |= ctx.stems
        pool.bigrams |= ctx.bigrams
        pool.numbers |= ctx.numbers
    return pool


def _recall(items: Sequence[Any], pool: set[Any]) -> float:
    return sum(map(pool.__contains__, items)) / len(items) if items else 1.0


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-(x - SUPPORT_CENTRE) / SUPPORT_SCALE))


def calibrate(raw: float) -> float:
    """The probability that a claim is supported, from its raw lexical support ``raw`` in [0, 1].

    A logistic curve centred on :data:`SUPPORT_CENTRE` (the raw support at which a claim is about as
    likely supported as not) with scale :data:`SUPPORT_SCALE`, stretched so that raw 0 (nothing of the
    claim in the contexts) gives 0 and raw 1 (every word and word pair of it there) gives 1.
    """
    low, high = _logistic(0.0), _logistic(1.0)
    return min(1.0, max(0.0, (_logistic(raw) - low) / (high - low)))


@dataclass(slots=True)
class _Support:
    raw: float = 0.0
    """Mean of the three recall features, less the mismatch penalties."""
    support: float = 0.0
    """:func:`calibrate` of ``raw``, capped for contradictions and statements about the speaker."""
    context: int | None = None
    window: int = 0
    content: float = 0.0
    words: float = 0.0
    bigram: float = 0.0
    semantic: float | None = None
    """Cosine similarity of the claim and its most similar context window (semantic judge only)."""
    n_content: int = 0
    n_found: int = 0
    missing: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    contradiction: bool = False
    speaker: bool = False
    evidence: tuple[int, int] = (0, 0)


@lru_cache(maxsize=1)
def _antonym_stems() -> tuple[tuple[str, str], ...]:
    return tuple((_text.stem(a), _text.stem(b)) for a, b in _text.ANTONYMS)  # on first use: nltk loads lazily


_NEGATION_SCOPE = 3
"""A negation cue negates the content words among the next three tokens (``not that different``)."""


def _negated_stems(tokens: Sequence[str], stems: Sequence[str]) -> tuple[set[str], set[str]]:
    """``(negated, plain)``: content stems in the scope of a negation cue, and those outside any.

    ``not only`` does not negate.
    """
    negated: set[str] = set()
    scope = 0
    plain: set[str] = set()
    for i, t in enumerate(tokens):
        if _text.negation_cues([t]) and not (t == "not" and i + 1 < len(tokens) and tokens[i + 1] == "only"):
            scope = _NEGATION_SCOPE
            continue
        content = t not in _text.STOPWORDS and len(t) > 1
        if scope:
            scope -= 1
            if content:
                negated.add(stems[i])
                continue
        if content:
            plain.add(stems[i])
    return negated, plain


def _negation_mismatch(claim_tokens: Sequence[str], aligned_tokens: Sequence[str]) -> bool:
    """Whether one side negates a word that the other states only plainly.

    A word that one side both negates and states plainly (``treatment options ... without
    treatment``) decides nothing.
    """
    c_neg, c_plain = _negated_stems(claim_tokens, _text.stems(claim_tokens))
    s_neg, s_plain = _negated_stems(aligned_tokens, _text.stems(aligned_tokens))
    return bool(((c_neg - c_plain) & (s_plain - s_neg)) or ((s_neg - s_plain) & (c_plain - c_neg)))


def _mismatches(
    claim_tokens: list[str],
    claim_stems: list[str],
    ctx: _Context,
    aligned: _Sentence,
    claim: str,
    pool: _Pool,
) -> tuple[list[str], set[str], list[str]]:
    """Mismatches between the claim and the part of the aligned sentence that matches it.

    Only that region counts (from three tokens before the first word the claim shares with the
    sentence to just after its last; six tokens either way for numbers, which trail their words): a
    negation or a number elsewhere in a long sentence is about something else. A negation counts
    only when the word it negates on one side is stated plainly on the other
    (``not interpreted`` against ``interpreted``).

    Returns:
        The flags (``date 1989 vs 1991``, ``antonym compiled vs interpreted``, ``negation mismatch``),
        the claim stems they involve, and the claim's numbers found in no context.
    """
    numbers = _text.extract_numbers(claim)
    unsupported = [n.text for n in numbers if n.value not in pool.numbers]
    claim_set = set(claim_stems)
    hits = [i for i, st in enumerate(aligned.stems) if st in claim_set]
    flags: list[str] = []
    involved: set[str] = set()
    if not hits:
        return flags, involved, unsupported
    lo, hi = max(0, hits[0] - 3), min(len(aligned.stems), hits[-1] + 2)
    n_lo, n_hi = max(0, hits[0] - 6), min(len(aligned.stems), hits[-1] + 7)  # numbers trail their words
    region_numbers = _text.extract_numbers(ctx.text[aligned.offsets[n_lo][0] : aligned.offsets[n_hi - 1][1]])
    for num in numbers:
        rivals = [n for n in region_numbers if n.kind == num.kind and n.value != num.value]
        if num.value not in pool.numbers and rivals:
            flags.append(
                f"{'date' if num.kind in ('year', 'month') else 'number'} {num.text} vs {rivals[0].text}"
            )
            involved.update(_text.stems(_text.tokenize(num.text)))
    if _negation_mismatch(claim_tokens, aligned.tokens[lo:hi]):
        flags.append("negation mismatch")
    near = dict(zip(aligned.stems[lo:hi], aligned.tokens[lo:hi], strict=True))
    surface = dict(zip(_text.stems(claim_tokens), claim_tokens, strict=True))
    for a, b in _antonym_stems():
        for x, y in ((a, b), (b, a)):
            if x in surface and y in near and y not in surface and x not in near:
                flags.append(f"antonym {surface[x]} vs {near[y]}")
                involved.add(x)
    return flags, involved, unsupported


def _support(
    claim: str, contexts: list[_Context], pool: _Pool | None = None, similarity: float | None = None
) -> _Support:
    """The support of ``claim`` by ``contexts`` (taken together), with its evidence and flags.

    ``similarity`` (semantic judge only) is a fourth equal-weight feature of raw support.
    """
    if pool is None:
        pool = _pool(contexts)
    tokens = _text.tokenize(_CITATION.sub(" ", claim))
    stems = _text.stems(tokens)
    keep = [t not in _PRONOUNS and not t.startswith("'") for t in tokens]  # pronouns and clitics ('s) aside
    words = [st for st, k in zip(stems, keep, strict=True) if k]
    bigrams = [(stems[i], stems[i + 1]) for i in range(len(stems) - 1) if keep[i] and keep[i + 1]]
    pairs = _content_pairs(claim)
    content = [s for _, s in pairs]
    best = _Support(n_content=len(content))
    if not (content or words) or not any(ctx.sentences for ctx in contexts):
        return best  # nothing to check, or nothing to check against: not found, support 0
    # the evidence: the three-sentence window sharing most of the claim's content words and word pairs
    best_local = -1.0
    for j, ctx in enumerate(contexts):
        for k, (w_stems, w_bigrams) in enumerate(ctx.windows):
            local = _recall(content, w_stems) + (_recall(bigrams, w_bigrams) if bigrams else 0.0)
            if local > best_local:
                best_local, best.context, best.window = local, j, k
    if best.context is None:
        return best
    best.content = _recall(content, pool.stems)
    best.words = _recall(words, pool.stems)
    best.bigram = _recall(bigrams, pool.bigrams) if bigrams else best.words
    if similarity is None:
        raw = (best.content + best.words + best.bigram) / 3
    else:
        best.semantic = similarity
        raw = (best.content + best.words + best.bigram + similarity) / 4
    ctx = contexts[best.context]
    content_set = set(content)
    # the aligned sentence: the one of the best window sharing most claim words (the centre on ties)
    k = best.window
    b = max(
        (i for i in (k, k - 1, k + 1) if 0 <= i < len(ctx.sentences)),
        key=lambda i: len(content_set & set(ctx.sentences[i].stems)),
    )
    aligned = ctx.sentences[b]
    sents = [aligned]
    covered = content_set & set(aligned.stems)
    for nb in (b - 1, b + 1):
        if 0 <= nb < len(ctx.sentences) and (content_set & set(ctx.sentences[nb].stems)) - covered:
            sents.append(ctx.sentences[nb])
            covered |= content_set & set(ctx.sentences[nb].stems)
    sents.sort(key=lambda s: s.start)
    best.evidence = (sents[0].start, sents[-1].end)
    best.n_found = sum(s in pool.stems for s in content)
    best.missing = sorted({w for w, s in pairs if s not in pool.stems})
    flags, involved, unsupported = _mismatches(tokens, content, ctx, aligned, claim, pool)
    others = [c for c in content if c not in involved]
    shared = sum(c in set(aligned.stems) for c in others)
    overlap = shared / len(others) if others else 0.0
    if shared < 2 or overlap < CONTRADICTION_OVERLAP:
        flags = []  # the sentence is not about the same thing: a mismatch with it means nothing
    elif "negation mismatch" in flags and (shared < 3 or overlap < NEGATION_OVERLAP):
        flags.remove("negation mismatch")
    best.contradiction = bool(flags)
    if unsupported and not any(f.startswith(("number", "date")) for f in flags):
        flags.append(f"{', '.join(unsupported[:3])} not in the contexts")
        raw -= MISMATCH_PENALTY
    best.flags = flags
    best.raw = max(0.0, raw)
    best.support = calibrate(best.raw)
    best.speaker = not ctx.first_person and not _SPEAKER.isdisjoint(tokens)
    if best.contradiction:
        best.support = min(best.support, CONTRADICTED_SUPPORT)
    elif best.speaker:
        best.support = min(best.support, SPEAKER_SUPPORT)
    best.support = round(best.support, 4)
    return best


def _pct(x: float) -> str:
    return f"{round(100 * x)}%"


def _verdict(i: int, sup: _Support, contexts: list[_Context]) -> dict[str, Any]:
    """The verdict on claim ``i``, with its support, evidence and a one-line reason naming the figures."""
    if sup.context is None:
        why = "no context to check against" if not any(c.sentences for c in contexts) else "no words to check"
        return {
            "claim": i,
            "verdict": "not_found",
            "context": None,
            "evidence": "",
            "reason": f"not found: {why}",
            "support": 0.0,
        }
    semantic = "" if sup.semantic is None else f", semantic similarity {sup.semantic:.2f}"
    figures = (
        f"{sup.n_found}/{sup.n_content} content words, {_pct(sup.words)} of words and {_pct(sup.bigram)} of "
        f"word pairs in the contexts{semantic}; support {sup.support:.2f}"
    )
    found = {
        "claim": i,
        "context": sup.context,
        "evidence": contexts[sup.context].text[sup.evidence[0] : sup.evidence[1]],
        "support": sup.support,
    }
    flags = f"; flags: {'; '.join(sup.flags)}" if sup.flags else ""
    if sup.contradiction:
        return {
            **found,
            "verdict": "contradicted",
            "reason": f"contradicted: {'; '.join(sup.flags)} (context {sup.context}; {figures})",
        }
    missing = f"; missing: {', '.join(sup.missing[:6])}" if sup.missing else ""
    if sup.speaker:
        why = "a statement about the speaker ('I', 'my', 'we'), which the contexts do not make"
    elif sup.support < 0.5:
        why = "too little of it is in the contexts"
    else:
        return {
            **found,
            "verdict": "supported",
            "reason": f"supported: best match in context {sup.context}; {figures}{missing}{flags}",
        }
    return {
        "claim": i,
        "verdict": "not_found",
        "context": None,
        "evidence": "",
        "reason": f"not found: {why} ({figures}{missing}{flags})",
        "support": sup.support,
    }


def _verify(
    claims: Sequence[str], contexts: Sequence[str], semantic: Similarities | None = None
) -> dict[str, Any]:
    prepared = [_prepare(c or "") for c in contexts]
    pool = _pool(prepared)
    if semantic is None:
        return {
            "verdicts": [
                _verdict(i, _support(c or "", prepared, pool), prepared) for i, c in enumerate(claims)
            ]
        }
    sims = semantic.best_similarities([c or "" for c in claims], _window_texts(prepared))
    return {
        "verdicts": [
            _verdict(i, _support(c or "", prepared, pool, sim), prepared)
            for i, (c, sim) in enumerate(zip(claims, sims, strict=True))
        ]
    }


def _window_texts(contexts: Sequence[_Context]) -> list[str]:
    """The text of each three-sentence window (a sentence and its neighbours), deduplicated."""
    texts: dict[str, None] = {}
    for ctx in contexts:
        n = len(ctx.sentences)
        for k in range(n):
            first, last = ctx.sentences[max(0, k - 1)], ctx.sentences[min(n, k + 2) - 1]
            text = ctx.text[first.start : last.end].strip()
            if text:
                texts.setdefault(text, None)
    return list(texts)
