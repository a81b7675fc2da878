"""The offline generator: deterministic, extractive, no LLM and no key.

Questions are built from the documents' own sentences by fixed templates, and each reference is one
or more sentences copied from the chunks: no paraphrase, no inference beyond putting two copied
sentences side by side. It exists so that examples, CI and the fake LLM server run with no key; its
items go through the same verification as an LLM's. Kinds: ``single_hop`` (the sentence with the
rarest terms), ``multi_hop`` / ``comparison`` (sentences of two chunks sharing a term), ``summary``
(a chunk's first two sentences) and ``unanswerable`` (a year and a term the chunk does not join).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.judge.offline.claims import extract_claims
from ragmetrics.text import content_tokens, split_sentences, tokenize

__all__ = ["answer", "extract_item", "has_sentence", "style_question", "usable_sentences"]

_COPULA = re.compile(
    r"^(?P<subject>(?:[A-Z][\w'-]*|the|The|an?|An?)(?:\s+[\w'-]+){0,5}?)\s+"
    r"(?P<verb>is|are|was|were|has|have|had)\s+(?P<rest>.+)$"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")


def _heading_free(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def usable_sentences(text: str) -> list[str]:
    """The sentences of ``text`` outside its headings, of four words or more (what items are built of)."""
    return [s.strip() for s in split_sentences(_heading_free(text)) if len(s.split()) >= 4]


def has_sentence(text: str) -> bool:
    """Whether ``text`` has a sentence of four words or more outside its headings (a usable chunk)."""
    return bool(usable_sentences(text))


def _terms(text: str) -> list[str]:
    return [t for t in content_tokens(tokenize(text)) if len(t) > 2 and not t.isdigit()]


def _rarest(sentence: str, df: Counter[str], n_docs: int) -> str | None:
    words = _terms(sentence)
    if not words:
        return None
    return max(words, key=lambda t: (math.log((1 + n_docs) / (1 + df[t])), len(t), t))


def _best_sentence(sentences: Sequence[str], df: Counter[str], n_docs: int) -> str | None:
    def score(s: str) -> tuple[float, int]:
        terms = set(_terms(s))
        idf = sum(math.log((1 + n_docs) / (1 + df[t])) for t in terms)
        return (idf / math.sqrt(len(terms) + 1), -len(s))

    return max(sentences, key=score) if sentences else None


_PRONOUNS = frozenset({"it", "they", "this", "these", "that", "those", "he", "she", "its", "their"})


def _question_for(sentence: str, term: str, heading: str = "") -> str:
    m = _COPULA.match(sentence.rstrip("."))
    if m and len(m["subject"].split()) <= 6 and len(m["rest"].split()) >= 2:
        subject = m["subject"]
        if subject.lower() in _PRONOUNS:
            if not heading:
                return f"What does the text say about {term}?"
            subject = heading
        subject = subject[0].lower() + subject[1:] if subject.split()[0] in ("The", "A", "An") else subject
        rest = m["rest"].split()
        verb = m["verb"]
        if verb in ("has", "have", "had"):
            return f"What {'did' if verb == 'had' else 'does' if verb == 'has' else 'do'} {subject} have?"
        if rest[0].lower() in ("a", "an", "the", "one"):
            return f"What {verb} {subject}?"
        participle = next((w for w in rest[:2] if w.lower().endswith(("ed", "en"))), None)
        if participle is None:
            return f"What does the text say about {subject}?"
        # passive: ask how, up to the first preposition ("was first released in ...")
        head = []
        for word in rest:
            if word.lower() in ("in", "on", "at", "by", "for", "from", "with", "to", "of", "until", "since"):
                break
            head.append(word)
        return f"What does the text say about how {subject} {verb} {' '.join(head[:4])}?"
    return f"What does the text say about {term}?"


def style_question(question: str, style: str, seed: int = 0) -> str:
    """The question in a style: ``short`` (as is), ``conversational`` or with ``typos`` (seeded)."""
    if style == "conversational":
        return f"Hi, I was wondering: {question[0].lower()}{question[1:]}"
    if style == "typos":
        words = question.split()
        long_ones = [i for i, w in enumerate(words) if len(w) > 4 and w.isalpha()]
        for k, i in enumerate(long_ones[:2]):
            w = words[i]
            j = 1 + (seed + k) % (len(w) - 2)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
        return " ".join(words)
    return question


def _year_absent(texts: Sequence[str]) -> str:
    years = {int(y) for t in texts for y in re.findall(r"\b(1[5-9]\d\d|20\d\d)\b", t)}
    year = 1847
    while year in years:
        year += 1
    return str(year)


def extract_item(
    kind: str,
    chunks: Sequence[str],
    headings: Sequence[str] = (),
    *,
    df: Counter[str] | None = None,
    n_docs: int = 1,
    style: str = "plain",
    seed: int = 0,
) -> dict[str, Any]:
    """A :class:`~ragmetrics.testset.records.GeneratedItem` as a dict, built from the chunks' sentences.

    Args:
        kind: The question kind.
        chunks: One chunk's text, or two for ``multi_hop`` / ``comparison``.
        headings: The chunks' headings (or document ids), for the question's wording.
        df: Document frequency of terms over the corpus (default: over ``chunks``).
        n_docs: Chunks ``df`` counts over.
        style: The question's style.
        seed: Seeds the typos.

    Returns:
        ``{"question", "reference", "claims", "quotes", "missing_fact"}``: the reference's claims as the
        offline judge splits it (none for ``unanswerable``); an empty question when the chunks have
        no usable sentence (the candidate is then rejected).
    """
    if df is None:
        df = Counter(t for c in chunks for t in set(_terms(c)))
        n_docs = max(1, len(chunks))
    empty: dict[str, Any] = {"question": "", "reference": "", "claims": [], "quotes": [], "missing_fact": ""}
    per_chunk = [usable_sentences(c) for c in chunks]
    if not per_chunk or not per_chunk[0]:
        return empty
    first = per_chunk[0]
    if kind in ("multi_hop", "comparison") and len(per_chunk) > 1 and per_chunk[1]:
        shared = set(_terms(chunks[0])) & set(_terms(chunks[1]))
        if not shared:
            return empty
        term = max(shared, key=lambda t: (-df[t], len(t), t))  # the most specific shared term
        a = next((s for s in first if term in _terms(s)), first[0])
        b = next((s for s in per_chunk[1] if term in _terms(s)), per_chunk[1][0])
        if a == b:
            return empty
        if kind == "comparison":
            h1, h2 = (headings[0], headings[1]) if len(headings) > 1 else ("the first text", "the second")
            question = f"How do '{h1}' and '{h2}' differ in what they say about {term}?"
        else:
            question = f"What do the documents say about {term}, taken together?"
        item: dict[str, Any] = {
            "question": question,
            "reference": f"{a} {b}",
            "quotes": [a, b],
            "missing_fact": "",
        }
    elif kind == "summary":
        picked = first[:2]
        about = (
            headings[0] if headings and headings[0] else (_rarest(picked[0], df, n_docs) or "this passage")
        )
        question = f"Summarise what the passage on '{about}' says."
        item = {"question": question, "reference": " ".join(picked), "quotes": picked, "missing_fact": ""}
    elif kind == "unanswerable":
        best = _best_sentence(first, df, n_docs)
        rare = _rarest(best or "", df, n_docs)
        if best is None or rare is None:
            return empty
        term = rare
        year = _year_absent(chunks)
        question = f"Who paid for the work on {term} in {year}?"
        item = {
            "question": question,
            "reference": f"The documents do not say who paid for the work on {term} in {year}.",
            "quotes": [],
            "missing_fact": f"A private sponsor paid for the work on {term} in {year}.",
        }
    else:
        chosen = _best_sentence(first, df, n_docs)
        key = _rarest(chosen or "", df, n_docs)
        if chosen is None or key is None:
            return empty
        sentence, term = chosen, key
        item = {
            "question": _question_for(sentence, term, headings[0] if headings else ""),
            "reference": sentence,
            "quotes": [sentence],
            "missing_fact": "",
        }
    item["question"] = style_question(str(item["question"]), style, seed)
    split = extract_claims(str(item["question"]), str(item["reference"]))["claims"]
    item["claims"] = [] if kind == "unanswerable" else [{"text": c["text"], "span": c["span"]} for c in split]
    return item


def answer(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The fake LLM server's default answer to the generation prompt (variables read from it)."""
    return extract_item(
        str(variables.get("kind") or "single_hop"),
        list(variables.get("passages") or []),
        list(variables.get("headings") or []),
        style=str(variables.get("style") or "plain"),
    )
