"""Canaries drawn from the run's own rows, so that a judge, a cache or a proxy cannot recognise them.

One of the first :data:`DRAW_ROWS` valid rows with contexts is drawn; the canary is its question and
contexts with an answer of three sentences in random order: one of its contexts verbatim
(*supported*), another with a number changed or ``not`` added (*contradicted*), and a sentence of
another row's contexts that shares little with this row's (*unrelated*). The draw is seeded by the
rows' text, so a re-run draws the same canary; when the rows offer no such sentences the bundled
canary is used and :attr:`CanaryDraw.source` says why.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ragmetrics.errors import InvalidInputError
from ragmetrics.sample import Sample
from ragmetrics.text import (
    NEGATION_CUES,
    content_tokens,
    extract_numbers,
    normalize_for_match,
    split_sentences,
    stems,
    tokenize,
)

__all__ = [
    "DRAW_ROWS",
    "CanaryDraw",
    "CanaryProbe",
    "bundled_draw",
    "canary_data",
    "draw_canary",
    "first_valid",
    "probe_verdicts",
]

Kind = Literal["supported", "contradicted", "unrelated"]

DRAW_ROWS = 64
"""The canary is drawn from at most this many valid rows, the first of the dataset."""
MIN_WORDS, MAX_WORDS, MAX_CHARS = 6, 40, 300
"""A sentence drawn has 6 to 40 words and at most 300 characters: a plain statement, not a heading."""
TRIES = 12
"""Canaries drawn and checked before the bundled one stands in."""
UNRELATED_OVERLAP = 0.2
"""An unrelated sentence has at most this share of its content words in the drawn row's contexts."""

_OPENERS = frozenset(
    "it he she they this these that those its their his her we i you there here such both also however "
    "but and or so then thus which who whose".split()
)
"""First words that lean on an earlier sentence: a sentence opening with one is not drawn."""
_NUMBER = re.compile(r"(?<![\w.,/\-])(\d{1,3}(?:,\d{3})+|\d+)(?![\w/\-]|[.,]\d)")
_NAMING = frozenset(
    "number no no. nr route room chapter section article page version v line platform flight unit "
    "apollo model type class grade level season episode act verse item figure table step phase".split()
)
"""Words before a number that names something rather than counts it."""
_COPULA = re.compile(r"\b(is|was|are|were)\b(?= )")


@dataclass(frozen=True, slots=True, kw_only=True)
class CanaryDraw:
    """A canary sample and the known verdict of each of its answer's sentences."""

    sample: Sample
    """The sample put to each judge (its id is never sent)."""
    probes: tuple[tuple[Kind, str], ...]
    """``(kind, sentence)`` per answer sentence, in the answer's order."""
    source: str
    """Where it came from: ``drawn from the run's rows`` or ``bundled (<why>)``."""


@cache
def canary_data() -> dict[str, Any]:
    """The bundled probes (``ragmetrics/data/canaries.json``)."""
    text = (resources.files("ragmetrics") / "data" / "canaries.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


class CanaryProbe(BaseModel):
    """One known-answer sentence and what the judge said about it."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind
    """What any reading judge says: ``supported``, ``contradicted``, or (``unrelated``) not supported."""
    sentence: str
    """The answer sentence."""
    got: str | None = None
    """The judge's verdict on it (None: no claim of it was extracted with its span in the answer)."""
    passed: bool = False
    """Whether the verdict is the known one."""


def probe_verdicts(claims: Iterable[Any], expected: Iterable[tuple[str, str]]) -> list[CanaryProbe]:
    """Each expected ``(kind, sentence)`` with the verdict ``claims`` gave it, and whether it is right.

    A claim counts for a sentence when its span (or text) and the sentence hold one another; a claim
    whose span was not found in the answer counts for none.
    """
    found = [(normalize_for_match(c.span or c.text), c.verdict) for c in claims if c.span_found is not False]
    probes = []
    for kind, text in expected:
        sentence = normalize_for_match(text)
        verdicts = [v for span, v in found if span and (span in sentence or sentence in span)]
        if not verdicts:
            got, passed = None, False
        elif kind == "unrelated":
            got = "supported" if "supported" in verdicts else verdicts[0]
            passed = got != "supported"
        else:
            got = kind if kind in verdicts else verdicts[0]
            passed = got == kind
        probes.append(CanaryProbe(kind=kind, sentence=text, got=got, passed=passed))
    return probes


def bundled_draw(why: str, data: dict[str, Any] | None = None) -> CanaryDraw:
    """The bundled canary (``ragmetrics/data/canaries.json``), with why it is used."""
    data = data or canary_data()
    probes = tuple((p["kind"], p["sentence"]) for p in data["probes"])
    sample = Sample(
        id="ragmetrics-canary",
        question=data["question"],
        contexts=data["contexts"],
        answer=" ".join(s for _, s in probes),
    )
    return CanaryDraw(sample=sample, probes=probes, source=f"bundled ({why})")


def draw_canary(samples: Iterable[Sample]) -> CanaryDraw:
    """The canary for a run whose first valid rows are ``samples`` (at most :data:`DRAW_ROWS` are read)."""
    rows = [s for s in _first(samples) if s.contexts and (s.question or "").strip()]
    if not rows:
        return bundled_draw("no row with a question and contexts to draw from")
    rng = random.Random(_seed(rows))
    anchors = [row for row in rows if _sentences(row.contexts)]
    if not anchors:
        return bundled_draw("no context sentence of 6 to 40 words to draw from")
    for _ in range(TRIES):
        row = rng.choice(anchors)
        pair = _pair(row, rng)
        if pair is None:
            continue
        kept, changed = pair
        probes: list[tuple[Kind, str]] = [
            ("supported", kept),
            ("contradicted", changed),
            ("unrelated", _unrelated(row, rows, rng)),
        ]
        rng.shuffle(probes)
        draw = CanaryDraw(
            sample=Sample(
                id="ragmetrics-canary",
                question=row.question,
                contexts=list(row.contexts),
                answer=" ".join(s for _, s in probes),
            ),
            probes=tuple(probes),
            source="drawn from the run's rows",
        )
        if _lexically_plain(draw):
            return draw
    return bundled_draw("no sentence of the rows could be changed into a plain contradiction")


def _lexically_plain(draw: CanaryDraw) -> bool:
    """Whether the offline judge's lexical check gives every probe its known verdict (no call is made).

    A sentence whose verdict hinges on a subtlety of wording (a negation far from its verb) is not drawn:
    a canary must be plain to any judge that reads.
    """
    from ragmetrics.judge.offline import judge as offline

    sample = draw.sample
    extracted = offline.answer("claims.extract", {"question": sample.question, "answer": sample.answer})
    claims = extracted.get("claims", [])
    verified = offline.answer(
        "claims.verify", {"claims": [c["text"] for c in claims], "contexts": sample.contexts}
    )
    verdicts = {v["claim"]: v["verdict"] for v in verified.get("verdicts", [])}
    found = [
        _Claim(span=c.get("span") or c["text"], text=c["text"], verdict=verdicts.get(i))
        for i, c in enumerate(claims)
    ]
    return all(p.passed for p in probe_verdicts(found, draw.probes))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Claim:
    span: str
    text: str
    verdict: str | None
    span_found: bool | None = True


def first_valid(rows: Iterable[Any], sample_of: Callable[[Any], Sample]) -> list[Sample]:
    """The first :data:`DRAW_ROWS` valid samples of ``rows`` (at most four times as many rows are read)."""
    out: list[Sample] = []
    for i, row in enumerate(rows):
        if i >= 4 * DRAW_ROWS or len(out) >= DRAW_ROWS:
            break
        try:
            out.append(sample_of(row))
        except InvalidInputError:
            continue
    return out


def _first(samples: Iterable[Sample]) -> list[Sample]:
    out = []
    for sample in samples:
        out.append(sample)
        if len(out) >= DRAW_ROWS:
            break
    return out


def _seed(rows: Sequence[Sample]) -> int:
    digest = hashlib.sha256()
    for row in rows:
        digest.update((row.question or "").encode("utf-8", "surrogatepass"))
        for context in row.contexts:
            digest.update(b"\x00" + context.encode("utf-8", "surrogatepass"))
        digest.update(b"\x01")
    return int.from_bytes(digest.digest()[:8], "big")


def _sentences(texts: Iterable[str]) -> list[str]:
    """The plain statements among ``texts``' sentences, each once."""
    seen: dict[str, None] = {}
    for text in texts:
        for raw in split_sentences(text):
            sentence = " ".join(raw.split())
            words = sentence.split()
            if (
                MIN_WORDS <= len(words) <= MAX_WORDS
                and len(sentence) <= MAX_CHARS
                and sentence[-1] in ".!"
                and (sentence[0].isupper() or sentence[0].isdigit())
                and words[0].lower().strip("\"'(") not in _OPENERS
            ):
                seen.setdefault(sentence, None)
    return list(seen)


def _pair(row: Sample, rng: random.Random) -> tuple[str, str] | None:
    """A sentence kept as it is and another one changed, both from ``row``'s contexts (None: none fit)."""
    sentences = _sentences(row.contexts)
    taken = {n.value for context in row.contexts for n in extract_numbers(context)}
    order = sentences[:]
    rng.shuffle(order)
    for change in (lambda s: _change_number(s, taken, rng), _negate):  # a number first: the plainest
        for changing in order:
            changed = change(changing)
            if changed is not None:
                # another sentence if there is one, else the same one beside its changed twin
                return rng.choice([s for s in sentences if s != changing] or [changing]), changed
    return None


def _change_number(sentence: str, taken: set[str], rng: random.Random) -> str | None:
    """``sentence`` with one of its numbers changed to one no context holds (None: no number to change).

    A year is changed first, else a quantity; a number that names something (``number 14``, ``route
    66``) is left alone: changing it makes a sentence about something else, not a contradiction.
    """
    ranked: list[tuple[int, re.Match[str]]] = []
    for match in _NUMBER.finditer(sentence):
        text = match.group(1)
        before = sentence[: match.start(1)].rstrip().rsplit(" ", 1)[-1].lower().strip("(\"'")
        if before in _NAMING or before.endswith("#"):
            continue
        year = len(text) == 4 and 1000 <= int(text) <= 2099
        ranked.append((0 if year else 1, match))
    rng.shuffle(ranked)
    ranked.sort(key=lambda pair: pair[0])
    for _, match in ranked:
        text = match.group(1)
        value = int(text.replace(",", ""))
        if len(text) == 4 and 1000 <= value <= 2099:  # a year stays a year
            options = [value + d for d in range(-29, 30) if abs(d) >= 3 and 1000 <= value + d <= 2099]
        elif value < 20:
            options = [v for v in range(2, 20) if abs(v - value) >= 2]
        else:
            options = [round(value * f) for f in (0.4, 0.5, 0.6, 0.7, 1.4, 1.5, 1.75, 2, 3)]
        options = [v for v in options if v != value and str(v) not in taken]
        if not options:
            continue
        new = rng.choice(options)
        written = f"{new:,}" if "," in text else str(new)
        return sentence[: match.start(1)] + written + sentence[match.end(1) :]
    return None


def _negate(sentence: str) -> str | None:
    """``sentence`` with ``not`` after its first ``is``/``was``/``are``/``were`` (None: none, or negated)."""
    if any(t in NEGATION_CUES for t in tokenize(sentence)):
        return None
    match = _COPULA.search(sentence)
    if match is None:
        return None
    return sentence[: match.end()] + " not" + sentence[match.end() :]


def _content_stems(text: str) -> set[str]:
    return set(stems(content_tokens(tokenize(text))))


def _unrelated(row: Sample, rows: Sequence[Sample], rng: random.Random) -> str:
    """A sentence of another row's contexts about something else, else a bundled unrelated sentence."""
    own = _content_stems(" ".join(row.contexts))
    numbers = {n.value for context in row.contexts for n in extract_numbers(context)}
    others = [r for r in rows if list(r.contexts) != list(row.contexts)]
    rng.shuffle(others)
    for other in others[:16]:
        sentences = _sentences(other.contexts)
        rng.shuffle(sentences)
        for sentence in sentences:
            words = _content_stems(sentence)
            if len(words) < 3 or len(words & own) > UNRELATED_OVERLAP * len(words):
                continue
            if any(n.value in numbers for n in extract_numbers(sentence)):
                continue
            return sentence
    pool = [str(s) for s in canary_data().get("unrelated", [])]
    fitting = [s for s in pool if len(_content_stems(s) & own) <= UNRELATED_OVERLAP * len(_content_stems(s))]
    return rng.choice(fitting or pool)
