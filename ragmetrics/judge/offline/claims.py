"""The offline judge's claim extraction: sentences and clauses, filler and refusals set aside.

See :mod:`ragmetrics.judge.offline.judge` for what the judge does and why; this module holds the
``claims.extract`` half.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ragmetrics import text as _text

_DIRECT_SHARE = 0.25
"""A claim sharing this share of the question's content stems (or two of them) is ``direct``."""

_CITATION = re.compile(r"(?<!\s)\s*\[\d+(?:\s*[,\-–]\s*\d+)*\]")
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
    r"|\bthe following(?:\s+[\w-]+){0,3})\s*(?:[:.]\s*)?(?:\(?\d{1,2}[.)]\s*)?$",  # one way to read spaces
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
# Every pattern that starts with a whitespace run starts it with (?<!\s): a match can only begin where
# the run begins (greedy, it always did), and finditer no longer tries each position inside the run
# again, which made a run of n spaces cost n**2 steps (16,000 spaces took 31 s; issue 22, item 13).
# clause breaks: group "rel" keeps its relative pronoun in the next piece ("which is ...")
_CLAUSE_BREAK = re.compile(
    r"(?<!\s)\s*;\s*"
    r"|,\s+(?:and|but|or|so|yet|while|whereas|although|though|because|since|as well as|thus|hence)\s+"
    r"|,\s+(?=(?P<rel>which|who|whom|where|making|allowing|enabling)\s)"
    r"|(?<!\s)\s+(?:but|whereas|while|because|although)\s+"
    r"|(?<!\s)\s+and\s+",
    re.IGNORECASE,
)
_SEMICOLON = re.compile(r"(?<!\s)\s*[;；]\s*")
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
    r"(?<!\s)\s+(?=(?:\w+ed|born|known|written|built|made|founded|held|taken|given|shown|grown|sold|led"
    r"|won|begun)\s+(?:in|on|at|by|from|during|since|as|for)\b)",
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
    cuts: list[tuple[int, int]] = []
    spans = _text.token_spans(sentence)
    if not spans:
        return cuts
    tokens = [t for t, _, _ in spans]
    starts = [s for _, s, _ in spans]
    ends = [e for _, _, e in spans]
    # counts over prefixes and suffixes, so each cut costs a bisection, not a pass over the sentence
    copulas_before = list(itertools.accumulate((t in _COPULA for t in tokens), initial=0))
    first_copula = next((i for i, t in enumerate(tokens) if t in _COPULA), -1)
    finite_from = list(itertools.accumulate((t in _FINITE for t in reversed(tokens)), initial=0))[::-1]
    for m in _PARTICIPLE.finditer(sentence):
        n_before = bisect.bisect_right(ends, m.start())  # tokens ending before the cut
        first_after = bisect.bisect_left(starts, m.end())  # the first token starting after it
        if (
            copulas_before[n_before] == 1
            and 1 <= n_before - first_copula - 1 <= 4  # "is [a compiled language] created in"
            and not finite_from[min(first_after + 1, len(tokens))]  # no finite verb after the participle
        ):
            cuts.append((m.start(), m.end()))
    return cuts


_LIST_CONJUNCTIONS = frozenset(("and", "or", "as well as"))
_LIST_STOP = re.compile(r"[,;]")


def _has_verb(text: str, start: int = 0) -> bool:
    """Whether ``text`` from ``start`` up to its next comma or semicolon reads as a clause, not a list item.

    A clause starts with a subject pronoun or a verb, or holds a common finite verb (``is``,
    ``became``, ...); a list item (``pulmonary nodules``, ``possibly biopsies``) does neither.
    """
    stop = _LIST_STOP.search(text, start)
    tokens = _text.tokenize(text[start : stop.start() if stop else len(text)])
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
    breaks = _CLAUSE_BREAK.finditer(sentence) if english else _SEMICOLON.finditer(sentence)
    for m in breaks:
        word = m.group().strip(" ,").lower()
        if word == "and":
            after = _text.tokenize(sentence[m.end() : m.end() + 40])
            verb = bool(after) and (after[0] in _FINITE or (after[0].endswith("ed") and len(after[0]) > 4))
            if not (verb or (after and after[0] in _SUBJECTS)):
                continue  # "A and B": a list, not two clauses
        elif word in _LIST_CONJUNCTIONS and not _has_verb(sentence, m.end()):  # no copy of the rest
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


def states_facts(answer: str) -> bool:
    """Whether the answer plainly asserts something: the splitter finds at least one claim in it.

    Refusals, "I don't know", greetings, filler and questions ("How can I help?") assert nothing; a
    judge that returns no claims for an answer that does is failing, not finding a perfect answer.
    Every piece this counts is one the offline judge extracts, so the offline judge always agrees.
    """
    return any(not _asks(answer, piece) for piece in _pieces(answer)[0])


def _asks(answer: str, piece: _Piece) -> bool:
    """Whether the piece is (the end of) a question."""
    return piece.text.rstrip().endswith("?") or answer[piece.end : piece.end + 3].lstrip().startswith("?")


def extract_claims(question: str | None, answer: str) -> dict[str, Any]:
    """The ``claims.extract`` answer: ``answer`` split into claims (text, span, relevance)."""
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
