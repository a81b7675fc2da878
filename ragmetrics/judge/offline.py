"""The deterministic offline judge: claims and verdicts from lexical heuristics, no key, no network.

It answers the claim machinery's two structured requests itself from ``request.variables`` (the
prompts are not read), the same input always giving the same output.

``claims.extract`` (``question``, ``answer``)
    Claims are the answer's sentences, cut further at ``;`` and, for English, at clause boundaries
    (``, and`` / ``, but`` / ``, which`` / ``and`` + verb, ...) when every piece keeps two content words,
    and at a participle phrase after a copula (``Python is a compiled language | created in 1991``).
    A piece that starts with a verb gets the sentence's short subject (``Python was created in 1991``).
    Leading discourse markers and hedges (``yes,``, ``well``, ``I think``) are trimmed; sentences that
    assert nothing are not claims: filler ("I hope this helps"), refusals ("I don't know", "As an
    AI...") and statements about the context ("The context does not mention..."). A question with
    content words is kept as a claim: it usually presupposes something ("Did you know X was born in
    1955?"), and the judge cannot tell presupposing questions from rhetorical ones. Relevance: a claim
    sharing two content stems (or a quarter of them) with the question is ``direct``, one stem or the
    topic of a direct claim ``supporting``, nothing ``off_topic``; refusals with no direct claim make
    the answer not address the question.

``claims.verify`` (``claims``, ``contexts``)
    *Support* of a claim: the equal-weight mean of four lexical features, each taken from the context
    where the mean is highest: content-stem recall against the whole context and against its best
    three-sentence window, and word-bigram recall against the whole context and that window. A claim
    is ``supported`` when at least ``CONTENT_THRESHOLD`` of its content stems occur in that context and
    its support reaches ``SUPPORT_THRESHOLD``; else ``not_found``. It is ``contradicted`` when the
    aligned context sentence shares most of its other content words (``CONTRADICTION_OVERLAP``) but
    differs in a number or date, an antonym, or (near-identical statements only, ``NEGATION_OVERLAP``)
    a negation. A statement about the speaker ("I love snow") is never supported by a context that
    does not itself speak in the first person. The evidence is the aligned sentence, widened to the
    neighbours holding more of the claim's words: always an exact substring of the context. The reason
    names the figures, the missing words and any mismatch flag.

The thresholds are round numbers chosen on ``data/faithfulness_dev.jsonl`` (``benchmarks/
offline_quality.py``); no weights are fitted. On a small grid (content share 0, 0.6, 0.7, 0.75, 0.8
by support 0.4, 0.5, 0.6) three in four content words with support 0.6 had the best AUROC averaged
over the two sources and tied for the best overall balanced accuracy; its neighbours are within
0.01-0.03, which is noise at n=300. Faithfulness built on binary verdicts (supported / all)
is coarse for one- or two-sentence answers, which bounds its AUROC below that of the continuous
support: about 0.90 against 0.945 on BEGIN; see the benchmark for all figures.

Semantic similarity is not used: DESIGN measured that the optional MiniLM model added nothing to
these lexical features and cost seconds of import and inference, so the judge never loads
``sentence_transformers`` even when it is installed. nltk's Porter stemmer loads on first use.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ragmetrics import _text
from ragmetrics.errors import JudgeOutputError
from ragmetrics.judge.base import JudgeReply, JudgeRequest
from ragmetrics.judge.offline_grading import TASKS as GRADING_TASKS
from ragmetrics.judge.offline_grading import answer_grading
from ragmetrics.score import JudgeInfo, Usage

__all__ = [
    "CONTENT_THRESHOLD",
    "CONTRADICTION_OVERLAP",
    "MODEL",
    "NEGATION_OVERLAP",
    "SUPPORT_THRESHOLD",
    "OfflineJudge",
    "answer",
]

MODEL = "lexical-v1"
"""The offline judge's model name; bump it when the verdict logic changes (it is part of cache keys)."""

SUPPORT_THRESHOLD = 0.6
"""Support (mean of the four recall features, minus mismatch penalties) a supported claim needs."""

CONTENT_THRESHOLD = 0.75
"""Share of its content stems a supported claim must find in the context (three in four)."""

CONTRADICTION_OVERLAP = 0.6
"""Share of the claim's other content stems the aligned sentence must hold (and at least two) before a
number, date or antonym mismatch with it makes the claim contradicted."""

NEGATION_OVERLAP = 0.8
"""The same for a negation mismatch, the noisiest cue (and at least three stems): the two statements
must say the same but for the negation."""

MISMATCH_PENALTY = 0.1
"""Support lost per kind of mismatch flag (number/date, negation, antonym, number absent from the context)."""

_DIRECT_SHARE = 0.25
"""A claim sharing this share of the question's content stems (or two of them) is ``direct``."""

# --------------------------------------------------------------------------------------------------
# Claim extraction

_CITATION = re.compile(r"\s*\[\d+(?:\s*[,\-–]\s*\d+)*\]")
_FIRST_PERSON = frozenset(
    "i me my mine myself we us our ours ourselves i'm i've i'd i'll we're we've we'd we'll".split()
)
_SPEAKER = _FIRST_PERSON - {"us"}  # "us" is also the country

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
    kept = _text.content_tokens(_text.tokenize(_CITATION.sub(" ", text)), keep=_FIRST_PERSON)
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


def _clauses(sentence: str, english: bool) -> list[tuple[int, int, bool]]:
    """``(start, end, takes_subject)`` of the clauses of ``sentence``; each keeps two content words.

    ``takes_subject`` marks pieces after a coordinating break, whose missing subject is the sentence's.
    """
    cuts: list[tuple[int, int, bool]] = []
    breaks = _CLAUSE_BREAK.finditer(sentence) if english else re.finditer(r"\s*[;；]\s*", sentence)
    for m in breaks:
        if m.group().strip().lower() == "and":
            after = _text.tokenize(sentence[m.end() : m.end() + 40])
            verb = bool(after) and (after[0] in _FINITE or (after[0].endswith("ed") and len(after[0]) > 4))
            if not (verb or (after and after[0] in _SUBJECTS)):
                continue  # "A and B": a list, not two clauses
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
        if _REFUSAL.search(bare):
            refusals += 1
            continue
        if _FILLER.match(bare) or not _content(bare):
            continue
        start, sentence = _strip_leading(sentence, s_start)
        subject = _subject(sentence) if english else ""
        for a, b, takes_subject in _clauses(sentence, english):
            raw = sentence[a:b]
            lead = len(raw) - len(raw.lstrip(" ,;:"))
            raw = raw.strip(" ,;:")
            if not raw or not _content(raw):
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


def _prepare(context: str) -> _Context:
    sentences = []
    for start, end in _text.sentence_spans(context):
        spans = _text.token_spans(context[start:end])
        tokens = [t for t, _, _ in spans]
        offsets = [(start + a, start + b) for _, a, b in spans]
        sentences.append(_Sentence(start, end, tokens, _text.stems(tokens), offsets))
    ctx = _Context(context, sentences, numbers={n.value for n in _text.extract_numbers(context)})
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


def _recall(items: Sequence[Any], pool: set[Any]) -> float:
    return sum(x in pool for x in items) / len(items) if items else 1.0


@dataclass(slots=True)
class _Support:
    score: float = 0.0
    context: int | None = None
    window: int = 0
    content: float = 0.0
    content_local: float = 0.0
    bigram: float = 0.0
    bigram_local: float = 0.0
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


def _negated(tokens: Sequence[str]) -> bool:
    """Whether ``tokens`` hold a negation cue (``not only`` does not negate)."""
    return any(
        _text.negation_cues([t]) and not (t == "not" and i + 1 < len(tokens) and tokens[i + 1] == "only")
        for i, t in enumerate(tokens)
    )


def _mismatches(
    claim_tokens: list[str], claim_stems: list[str], ctx: _Context, aligned: _Sentence, claim: str
) -> tuple[list[str], set[str], list[str]]:
    """Mismatches between the claim and the part of the aligned sentence that matches it.

    Only that region counts (from three tokens before the first word the claim shares with the
    sentence to just after its last; six tokens either way for numbers, which trail their words): a
    negation or a number elsewhere in a long sentence is about something else.

    Returns:
        The flags (``date 1989 vs 1991``, ``antonym compiled vs interpreted``, ``negation mismatch``),
        the claim stems they involve, and the claim's numbers found nowhere in the context.
    """
    numbers = _text.extract_numbers(claim)
    unsupported = [n.text for n in numbers if n.value not in ctx.numbers]
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
        if num.value not in ctx.numbers and rivals:
            flags.append(
                f"{'date' if num.kind in ('year', 'month') else 'number'} {num.text} vs {rivals[0].text}"
            )
            involved.update(_text.stems(_text.tokenize(num.text)))
    if _negated(claim_tokens) != _negated(aligned.tokens[lo:hi]):
        flags.append("negation mismatch")
    near = dict(zip(aligned.stems[lo:hi], aligned.tokens[lo:hi], strict=True))
    surface = dict(zip(_text.stems(claim_tokens), claim_tokens, strict=True))
    for a, b in _antonym_stems():
        for x, y in ((a, b), (b, a)):
            if x in surface and y in near and y not in surface and x not in near:
                flags.append(f"antonym {surface[x]} vs {near[y]}")
                involved.add(x)
    return flags, involved, unsupported


def _support(claim: str, contexts: list[_Context]) -> _Support:
    tokens = _text.tokenize(_CITATION.sub(" ", claim))
    bigrams = _text.ngrams(_text.stems(tokens), 2)
    pairs = _content_pairs(claim)
    content = [s for _, s in pairs]
    best = _Support(n_content=len(content))
    for j, ctx in enumerate(contexts):
        if not ctx.sentences:
            continue
        local = [
            (_recall(content, w[0]), _recall(bigrams, w[1]) if bigrams else _recall(content, w[0]))
            for w in ctx.windows
        ]
        k = max(range(len(local)), key=lambda i: (local[i][0] + local[i][1], -i))
        whole = _recall(content, ctx.stems)
        feats = (whole, local[k][0], _recall(bigrams, ctx.bigrams) if bigrams else whole, local[k][1])
        score = sum(feats) / 4
        if best.context is None or score > best.score:
            best = _Support(score, j, k, *feats, n_content=len(content))
    if best.context is None:
        return best
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
    best.n_found = sum(s in ctx.stems for s in content)
    best.missing = sorted({w for w, s in pairs if s not in ctx.stems})
    flags, involved, unsupported = _mismatches(tokens, content, ctx, aligned, claim)
    others = [c for c in content if c not in involved]
    shared = sum(c in set(aligned.stems) for c in others)
    overlap = shared / len(others) if others else 0.0
    if shared < 2 or overlap < CONTRADICTION_OVERLAP:
        flags = []  # the sentence is not about the same thing: a mismatch with it means nothing
    elif "negation mismatch" in flags and (shared < 3 or overlap < NEGATION_OVERLAP):
        flags.remove("negation mismatch")
    best.contradiction = bool(flags)
    if unsupported and not any(f.startswith(("number", "date")) for f in flags):
        flags.append(f"{', '.join(unsupported[:3])} not in the context")
    best.flags = flags
    best.score = max(0.0, best.score - MISMATCH_PENALTY * len(flags))
    best.speaker = not ctx.first_person and not _SPEAKER.isdisjoint(tokens)
    return best


def _pct(x: float) -> str:
    return f"{round(100 * x)}%"


def _verdict(i: int, sup: _Support, contexts: list[_Context]) -> dict[str, Any]:
    """The verdict on claim ``i``, with its evidence and a one-line reason naming the figures."""
    if sup.context is None:
        why = (
            "no context to check against"
            if not any(c.sentences for c in contexts)
            else "no content words to check"
        )
        return {
            "claim": i,
            "verdict": "not_found",
            "context": None,
            "evidence": "",
            "reason": f"not found: {why}",
        }
    figures = (
        f"{sup.n_found}/{sup.n_content} content words and {_pct(sup.bigram)} of word pairs in context "
        f"{sup.context}, support {sup.score:.2f}"
    )
    found = {
        "claim": i,
        "context": sup.context,
        "evidence": contexts[sup.context].text[sup.evidence[0] : sup.evidence[1]],
    }
    if sup.contradiction:
        return {
            **found,
            "verdict": "contradicted",
            "reason": f"contradicted: {'; '.join(sup.flags)} ({figures})",
        }
    flags = f"; flags: {'; '.join(sup.flags)}" if sup.flags else ""
    missing = f"; missing: {', '.join(sup.missing[:6])}" if sup.missing else ""
    if sup.speaker:
        why = "a statement about the speaker ('I', 'my', 'we'), which the context does not make"
    elif sup.content < CONTENT_THRESHOLD:
        why = f"too few content words found (< {_pct(CONTENT_THRESHOLD)})"
    elif sup.score < SUPPORT_THRESHOLD:
        why = f"support below {SUPPORT_THRESHOLD}"
    else:
        return {**found, "verdict": "supported", "reason": f"supported: {figures}{missing}{flags}"}
    return {
        "claim": i,
        "verdict": "not_found",
        "context": None,
        "evidence": "",
        "reason": f"not found: {why} ({figures}{missing}{flags})",
    }


def _verify(claims: Sequence[str], contexts: Sequence[str]) -> dict[str, Any]:
    prepared = [_prepare(c or "") for c in contexts]
    return {"verdicts": [_verdict(i, _support(c or "", prepared), prepared) for i, c in enumerate(claims)]}


# --------------------------------------------------------------------------------------------------
# Public surface


def answer(task: str, variables: Mapping[str, Any]) -> dict[str, Any]:
    """Answer one claim-machinery task deterministically from its raw variables.

    Args:
        task: ``claims.extract``, ``claims.verify``, or a grading task of
            :mod:`ragmetrics.judge.offline_grading` (llm_judge, llm_rubric, g_eval).
        variables: ``{"question", "answer"}`` for extraction; ``{"claims", "contexts"}`` for verification.

    Returns:
        A dict matching ``ClaimExtraction`` or ``ClaimVerification``.

    Raises:
        JudgeOutputError: The task is not one the offline judge knows.
    """
    if task == "claims.extract":
        return _extract(variables.get("question"), str(variables.get("answer") or ""))
    if task == "claims.verify":
        return _verify(list(variables.get("claims") or []), list(variables.get("contexts") or []))
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
    """A :class:`~ragmetrics.judge.base.Judge` that needs no key and no network: deterministic heuristics."""

    def __init__(self) -> None:
        self.info = JudgeInfo(provider="offline", model=MODEL, heuristic=True)

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        """Answer ``request`` with :func:`answer` and validate it against the request's response model.

        Raises:
            JudgeOutputError: Unknown task, or a reply that does not validate (a bug, reported as such).
        """
        started = time.perf_counter()
        data = answer(request.task, request.variables)
        try:
            value = request.response_model.model_validate(data, context=dict(request.context))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise JudgeOutputError(
                f"the offline judge's reply to '{request.task}' does not validate against "
                f"{request.response_model.__name__}: {exc}",
                provider="offline",
                model=MODEL,
                last_reply=repr(data),
                problems=[str(exc)],
            ) from exc
        return JudgeReply(value=value, usage=Usage(), latency_ms=(time.perf_counter() - started) * 1000)

    async def aclose(self) -> None:
        """Nothing to release; safe to call twice."""
