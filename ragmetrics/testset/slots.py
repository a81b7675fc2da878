"""Which chunks each candidate question is written from: a fixed list of slots, a pure function of the input.

Slot ``i`` has a kind (the requested mix interleaved by largest remainder), a style (in turn) and its
chunks: one for ``single_hop``, ``summary`` and ``unanswerable`` (a seeded walk alternating between
documents), two for ``multi_hop`` and ``comparison`` (pairs sharing specific terms, never neighbours
of one document). Because the list does not depend on the judge's answers, a resumed run walks the
same slots. Chunks with no sentence of four words or more, and pairs of two copies of one text
(:data:`COPY_SHARE`), get no slot.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragmetrics._check import check_int, check_number
from ragmetrics.errors import ConfigError
from ragmetrics.testset.documents import Chunk
from ragmetrics.testset.extractive import has_sentence
from ragmetrics.testset.records import KINDS, STYLES, TWO_CHUNK_KINDS
from ragmetrics.text import content_tokens, tokenize

__all__ = ["DEFAULT_MIX", "PAIR_BUDGET", "Slot", "chunk_terms", "normalise_mix", "plan_slots"]

DEFAULT_MIX: Mapping[str, float] = {
    "single_hop": 0.5,
    "multi_hop": 0.2,
    "comparison": 0.1,
    "summary": 0.1,
    "unanswerable": 0.1,
}
"""The default kind mix: half single-hop facts, the rest spread over the harder kinds."""

PAIR_BUDGET = 1_000_000
"""Pair scores added at most when two-chunk slots are paired (a term adds one to each pair of chunks
holding it): terms are taken rarest first, and those in more chunks are left out once it is spent.
Scoring every pair of every term in up to a quarter of the chunks was quadratic: 4,000 chunks
sharing ~400 terms took 43 s and 2.5 GB (9,346 chunks of real sentences: 183 s, 10 GB)."""

COPY_SHARE = 0.8
"""Share of their content terms two chunks have in common (Jaccard) above which a pair is the same text
twice (one page retrieved under two ids, a boilerplate section): no two-chunk question is made of it."""


@dataclass(frozen=True, slots=True)
class Slot:
    """One candidate: what to ask, in which style, from which chunks."""

    index: int
    kind: str
    style: str
    chunks: tuple[Chunk, ...]


def normalise_mix(mix: Mapping[str, float] | None) -> dict[str, float]:
    """The mix as shares summing to 1 (unknown kinds and negative weights refused).

    Raises:
        ConfigError: An unknown kind, a negative weight, or no positive weight.
    """
    mix = dict(DEFAULT_MIX if mix is None else mix)
    unknown = sorted(set(mix) - set(KINDS))
    if unknown:
        raise ConfigError(f"mix: unknown kind(s) {unknown}; the kinds are {', '.join(KINDS)}")
    for kind, weight in mix.items():
        check_number(weight, f"the weight of {kind}", "mix", low=0)
    total = sum(mix.values())
    if total <= 0:
        raise ConfigError("mix: at least one kind needs a positive weight")
    return {k: mix[k] / total for k in KINDS if mix.get(k, 0) > 0}


def chunk_terms(chunk: Chunk) -> set[str]:
    """The content terms of a chunk (stopwords, short words and numbers left out)."""
    return {t for t in content_tokens(tokenize(chunk.text)) if len(t) > 2 and not t.isdigit()}


def _single_order(chunks: Sequence[Chunk], rng: random.Random) -> list[Chunk]:
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    docs = sorted(by_doc)
    rng.shuffle(docs)
    for d in docs:
        rng.shuffle(by_doc[d])
    order: list[Chunk] = []
    depth = 0
    while len(order) < len(chunks):
        order += [by_doc[d][depth] for d in docs if depth < len(by_doc[d])]
        depth += 1
    return order


def _most_chunks_per_term(df: Counter[str], most: int) -> int:
    """``most``, lowered until the pairs of the terms in at most that many chunks fit :data:`PAIR_BUDGET`."""
    work: Counter[int] = Counter()
    for count in df.values():
        if 1 < count <= most:
            work[count] += count * (count - 1) // 2
    spent, fits = 0, 1
    for count in sorted(work):
        spent += work[count]
        if spent > PAIR_BUDGET:
            return fits
        fits = count
    return most


def _pairs(chunks: Sequence[Chunk], terms: Sequence[set[str]], limit: int) -> list[tuple[int, int]]:
    df: Counter[str] = Counter(t for ts in terms for t in ts)
    n = len(chunks)
    most = _most_chunks_per_term(df, max(2, n // 4))
    posting: dict[str, list[int]] = defaultdict(list)
    for i, ts in enumerate(terms):
        for t in ts:
            if 1 < df[t] <= most:  # shared, and specific enough to link two chunks
                posting[t].append(i)
    score: defaultdict[tuple[int, int], float] = defaultdict(float)
    for t, idx in posting.items():
        weight = math.log((1 + n) / df[t])
        for a_pos, a in enumerate(idx):
            for b in idx[a_pos + 1 :]:
                score[(a, b)] += weight

    def neighbours(a: int, b: int) -> bool:
        ca, cb = chunks[a], chunks[b]
        return ca.doc_id == cb.doc_id and (ca.end > cb.start and cb.end > ca.start or abs(a - b) <= 1)

    def copies(a: int, b: int) -> bool:  # the same text twice (a page cited twice): nothing to combine
        both = len(terms[a] & terms[b])
        return both >= COPY_SHARE * max(1, len(terms[a] | terms[b]))

    ranked = sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))
    used: Counter[int] = Counter()
    out: list[tuple[int, int]] = []
    for (a, b), _ in ranked:
        if neighbours(a, b) or copies(a, b) or used[a] >= 2 or used[b] >= 2:
            continue
        out.append((a, b))
        used[a] += 1
        used[b] += 1
        if len(out) >= limit:
            break
    return out


def plan_slots(
    chunks: Sequence[Chunk],
    *,
    size: int,
    mix: Mapping[str, float] | None = None,
    styles: Sequence[str] = ("plain",),
    seed: int = 0,
    max_slots: int | None = None,
) -> list[Slot]:
    """The candidate slots for a test set of ``size`` items (at most ``max_slots``, default 3 x size).

    A kind whose chunks (or chunk pairs) run out gets no more slots; the report shows the shortfall.
    Chunks without a usable sentence are left out (all of them are kept when none has one).

    Raises:
        ConfigError: A bad mix or style, no chunks, or a size below 1.
    """
    check_int(size, "size", "plan_slots()", minimum=1)
    if not chunks:
        raise ConfigError("no chunks to generate from: the documents are empty")
    bad = [s for s in styles if s not in STYLES]
    if bad or not styles:
        raise ConfigError(f"styles: unknown {bad}; the styles are {', '.join(STYLES)}")
    shares = normalise_mix(mix)
    chunks = [c for c in chunks if has_sentence(c.text)] or list(chunks)
    limit = max_slots if max_slots is not None else 3 * size
    rng = random.Random(seed)
    singles = _single_order(chunks, rng)
    terms = [chunk_terms(c) for c in chunks]
    pairs = _pairs(chunks, terms, limit) if TWO_CHUNK_KINDS & set(shares) else []
    pointer: Counter[str] = Counter()
    used: Counter[str] = Counter()
    assigned: Counter[str] = Counter()
    exhausted: set[str] = set()
    slots: list[Slot] = []
    i = 0
    while len(slots) < limit and len(exhausted) < len(shares):
        live = [k for k in shares if k not in exhausted]
        kind = max(live, key=lambda k: (shares[k] * (i + 1) - assigned[k], shares[k]))
        assigned[kind] += 1
        i += 1
        # the one-chunk kinds share one walk over the chunks (so each kind meets new chunks first);
        # a kind is done once it has seen every chunk (every pair, for the two-chunk kinds)
        if kind in TWO_CHUNK_KINDS:
            if pointer["pair"] >= len(pairs) or used[kind] >= len(pairs):
                exhausted.add(kind)
                continue
            a, b = pairs[pointer["pair"]]
            pointer["pair"] += 1
            picked: tuple[Chunk, ...] = (chunks[a], chunks[b])
        else:
            if used[kind] >= len(singles):
                exhausted.add(kind)
                continue
            picked = (singles[pointer["single"] % len(singles)],)
            pointer["single"] += 1
        used[kind] += 1
        slots.append(Slot(len(slots), kind, styles[len(slots) % len(styles)], picked))
    return slots
