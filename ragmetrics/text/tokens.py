"""Text normalisation and tokenisation shared by the text metrics and the offline judge.

This module owns the small, dependency-free language toolkit of ragmetrics:

* :func:`normalize`: Unicode NFKC, case folding, straight quotes and collapsed whitespace;
* :func:`tokenize` / :func:`token_spans`: words, numbers and single CJK characters (so that
  Chinese and Japanese text, which has no spaces, still gives usable tokens);
* :func:`sentence_spans` / :func:`split_sentences`: sentences as exact substrings of the input (split on
  ``. ! ?``, their CJK forms ``。！？``, ``…`` and line breaks; abbreviations, initials, decimals and
  trailing citation markers such as ``[1]`` are kept in place);
* :func:`stem`: the Porter stemmer for English-looking (ASCII) words, identity for anything else;
  nltk's stemmer module is loaded on first use, without running ``nltk/__init__`` (which costs
  ~0.2 s, or ~4 s when it finds scikit-learn installed);
* :data:`STOPWORDS`, :func:`stopwords_for`, :func:`guess_language` and :func:`content_tokens`: a
  shipped function-word list (English plus the common function words of French, German, Spanish,
  Italian, Portuguese and Dutch, applied only when the text looks like that language; hiragana are
  never content); no nltk data is ever downloaded;
* :func:`extract_numbers`: digits, number words, percentages, years and month names, normalised so
  that ``1,000`` and ``1000`` or ``two`` and ``2`` compare equal;
* :data:`NEGATION_CUES` / :func:`negation_cues` and :data:`ANTONYMS` for mismatch flags.

Stopwords live in :mod:`.stopwords` and sentences in :mod:`.sentences` (re-exported here); none of
the three imports anything else from ragmetrics.
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ragmetrics.text.sentences import sentence_spans, split_sentences
from ragmetrics.text.stopwords import STOPWORDS, content_tokens, guess_language, stopwords_for

__all__ = [
    "ANTONYMS",
    "NEGATION_CUES",
    "STOPWORDS",
    "Number",
    "content_tokens",
    "extract_numbers",
    "guess_language",
    "ngrams",
    "negation_cues",
    "normalize",
    "sentence_spans",
    "split_sentences",
    "stem",
    "stems",
    "stopwords_for",
    "token_spans",
    "tokenize",
]

# --------------------------------------------------------------------------------------------------
# Normalisation and tokens

_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"'})
_SPACE = re.compile(r"\s+")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(
    rf"(?<![^\W\d_])(?:n't|'(?:s|re|ve|ll|d|m))(?![^\W\d_])"  # detached clitics: "do n't", "it 's"
    rf"|\d+(?:[.,]\d+)*"  # numbers, with thousands separators or decimals
    rf"|[{_CJK}]"  # one Han / kana character per token
    rf"|[^\W\d_{_CJK}]+(?:'[^\W\d_{_CJK}]+)*"  # words, with inner apostrophes (don't, l'eau)
)


def normalize(text: str, *, lower: bool = True) -> str:
    """Return ``text`` in Unicode NFKC form, with straight quotes, collapsed whitespace, case-folded.

    Args:
        text: Any text.
        lower: Case-fold (the default); pass False to keep the case.
    """
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _SPACE.sub(" ", text).strip()
    return text.casefold() if lower else text


def token_spans(text: str) -> list[tuple[str, int, int]]:
    """Tokens of ``text`` with their character offsets: ``(normalised token, start, end)``.

    ``text`` is read as given (not re-normalised) so that the offsets index into it; each token is
    NFKC-normalised and case-folded on its own.
    """
    out = []
    for m in _TOKEN.finditer(text.translate(_QUOTES)):
        token = m.group()
        if not token.isascii():
            token = unicodedata.normalize("NFKC", token)
        out.append((token.casefold(), m.start(), m.end()))
    return out


def tokenize(text: str) -> list[str]:
    """Words, numbers and single CJK characters of ``text``, normalised and case-folded."""
    return [t for t, _, _ in token_spans(normalize(text))]


def ngrams(items: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The contiguous ``n``-grams of ``items`` (empty when there are fewer than ``n`` items)."""
    return [tuple(items[i : i + n]) for i in range(len(items) - n + 1)]


# --------------------------------------------------------------------------------------------------
# Stemming (nltk's Porter stemmer, imported lazily: it needs no data files)


@lru_cache(maxsize=1)
def _porter():  # type: ignore[no-untyped-def]
    """The Porter stemmer of nltk, loaded without running ``nltk/__init__``.

    ``import nltk.stem.porter`` runs the package's ``__init__``, which imports most of nltk and, when
    they are installed, scikit-learn, scipy and pandas (about 4 s on a data-science install). The
    stemmer itself is one self-contained module: it is compiled from nltk's own file with its
    ``from nltk... import`` lines (a no-op base class and the demo's printing helpers) left out, so the
    stems are nltk's exactly. If that module ever changes shape, the normal import is used instead.
    """
    stemmer = _porter_without_nltk_init()
    if stemmer is None:
        from nltk.stem.porter import PorterStemmer

        stemmer = PorterStemmer()
    return stemmer


_NLTK_IMPORT = re.compile(r"^from nltk(?:\.\w+)* import \w+(?:, \w+)*[ \t]*$", re.MULTILINE)


def _porter_without_nltk_init() -> Any:
    try:
        spec = importlib.util.find_spec("nltk")  # finds the package without importing it
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        path = Path(folders[0], "stem", "porter.py") if folders else None
        if path is None or not path.is_file():
            return None
        source = path.read_text(encoding="utf-8")
        imports = _NLTK_IMPORT.findall(source)
        if any(not line.startswith(_ALLOWED_NLTK_IMPORTS) for line in imports):
            return None
        namespace: dict[str, object] = {"__name__": "ragmetrics._nltk_porter", "StemmerI": object}
        exec(compile(_NLTK_IMPORT.sub("", source), str(path), "exec"), namespace)  # noqa: S102 - nltk's own file
        stemmer = namespace["PorterStemmer"]()  # type: ignore[operator]
        return stemmer if stemmer.stem("running") == "run" else None
    except Exception:  # noqa: BLE001 - any surprise: fall back to the normal import
        return None


_ALLOWED_NLTK_IMPORTS = (
    "from nltk.stem.api import StemmerI",
    "from nltk import redos",
    "from nltk.termsec import",
)
"""The imports of nltk's porter.py that may be dropped: the abstract base (replaced by ``object``) and
helpers its ``demo()`` uses; any other import means the module changed, and the normal import is used."""


_ASCII_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """The Porter stem of an English-looking (lower-case ASCII) word; any other token unchanged.

    Possessive ``'s`` is dropped first. Non-ASCII words (French, German, CJK, ...) are returned as
    given: a wrong-language stemmer does more harm than none.
    """
    if not _ASCII_WORD.fullmatch(token):
        return token
    if token.endswith("'s"):
        token = token[:-2]
    if len(token) <= 3:
        return token
    return str(_porter().stem(token))


def stems(tokens: Iterable[str]) -> list[str]:
    """:func:`stem` applied to each token."""
    return [stem(t) for t in tokens]


# --------------------------------------------------------------------------------------------------
# Numbers and dates

_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero _one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER_WORDS.update(
    {
        "thirty": "30",
        "forty": "40",
        "fifty": "50",
        "sixty": "60",
        "seventy": "70",
        "eighty": "80",
        "ninety": "90",
        "hundred": "100",
        "thousand": "1000",
        "million": "1000000",
        "billion": "1000000000",
        "dozen": "12",
        "half": "0.5",
        "twice": "2",
        "once": "1",
    }
)
_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ],
        start=1,
    )
    for m in names.split()
}
_NUMERIC = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w])(\s*%|\s*per\s*cent|\s*percent)?"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Number:
    """One number or date mention."""

    value: str
    """Canonical value: ``1000``, ``3.5``, ``1991``; for months ``month:3``."""
    kind: str
    """``year`` (1000-2099 written as four digits), ``percent``, ``month`` or ``number``."""
    text: str
    """The text as it appeared."""


def extract_numbers(text: str, spans: Sequence[tuple[str, int, int]] | None = None) -> list[Number]:
    """Numbers, percentages, years and month names in ``text``, in order of appearance.

    Number words from two to twenty, the tens, and ``hundred``/``thousand``/``million``/``billion``
    are read as numbers ("one" is too often a pronoun); ``may`` (and a three-letter month) counts as a
    month only when a day or year number is next to it. ``spans`` may pass ``token_spans(text)`` when
    the caller has it already.
    """
    found: list[tuple[int, Number]] = []
    for m in _NUMERIC.finditer(text):
        whole = m.group(1).replace(",", "")
        frac = m.group(2)
        value = whole.lstrip("0") or "0"
        if frac is not None and frac.strip("0"):
            value = f"{value}.{frac.rstrip('0')}"
        if m.group(3):
            kind = "percent"
        elif frac is None and len(whole) == 4 and 1000 <= int(whole) <= 2099 and "," not in m.group(1):
            kind = "year"
        else:
            kind = "number"
        found.append((m.start(), Number(value=value, kind=kind, text=m.group().strip())))
    tokens = token_spans(text) if spans is None else spans
    for i, (tok, start, _) in enumerate(tokens):
        if tok in _NUMBER_WORDS and tok not in ("once", "half"):
            found.append(
                (start, Number(value=_NUMBER_WORDS[tok], kind="number", text=text[start : start + len(tok)]))
            )
        elif tok in _MONTHS and (len(tok) > 3 or text[start].isupper()):
            near = [t for t, _, _ in tokens[max(0, i - 1) : i + 2] if t.isdigit()]
            if tok == "may" and not near:
                continue
            if (
                tok in ("mar", "jun", "jul", "sep", "dec", "jan", "oct", "nov", "aug", "apr", "feb")
                and not near
            ):
                continue
            found.append(
                (
                    start,
                    Number(value=f"month:{_MONTHS[tok]}", kind="month", text=text[start : start + len(tok)]),
                )
            )
    found.sort(key=lambda pair: pair[0])
    return [n for _, n in found]


# --------------------------------------------------------------------------------------------------
# Negation and antonyms

NEGATION_CUES: frozenset[str] = frozenset(
    """
    not no never none nobody nothing nowhere neither nor cannot without
    isn't aren't wasn't weren't don't doesn't didn't haven't hasn't hadn't won't wouldn't can't
    couldn't shouldn't mustn't needn't ain't n't unlikely unable
    ne pas jamais aucun aucune rien personne sans
    nicht kein keine keinen keinem keiner nie niemals nichts ohne
    nunca ningún ninguna ninguno nada sin
    mai nessun nessuna niente senza
    nenhum nenhuma nada sem
    geen nooit niets zonder
    """.split()
)
"""Words that negate a statement (case-folded), in English and the other shipped languages."""

_NEGATION_CONTRACTION = re.compile(r"n't$")


def negation_cues(tokens: Iterable[str]) -> list[str]:
    """The negation cues among case-folded ``tokens``, in order."""
    return [t for t in tokens if t in NEGATION_CUES or _NEGATION_CONTRACTION.search(t)]


ANTONYMS: tuple[tuple[str, str], ...] = (
    ("true", "false"),
    ("correct", "incorrect"),
    ("right", "wrong"),
    ("possible", "impossible"),
    ("legal", "illegal"),
    ("safe", "unsafe"),
    ("safe", "dangerous"),
    ("likely", "unlikely"),
    ("increase", "decrease"),
    ("increase", "reduce"),
    ("rise", "fall"),
    ("gain", "loss"),
    ("more", "less"),
    ("more", "fewer"),
    ("most", "least"),
    ("higher", "lower"),
    ("high", "low"),
    ("larger", "smaller"),
    ("large", "small"),
    ("bigger", "smaller"),
    ("big", "small"),
    ("long", "short"),
    ("longer", "shorter"),
    ("older", "younger"),
    ("old", "young"),
    ("old", "new"),
    ("early", "late"),
    ("earlier", "later"),
    ("before", "after"),
    ("first", "last"),
    ("begin", "end"),
    ("start", "end"),
    ("above", "below"),
    ("inside", "outside"),
    ("internal", "external"),
    ("north", "south"),
    ("east", "west"),
    ("left", "right"),
    ("up", "down"),
    ("hot", "cold"),
    ("warm", "cold"),
    ("heavy", "light"),
    ("fast", "slow"),
    ("faster", "slower"),
    ("strong", "weak"),
    ("rich", "poor"),
    ("win", "lose"),
    ("won", "lost"),
    ("winner", "loser"),
    ("victory", "defeat"),
    ("accept", "reject"),
    ("allow", "forbid"),
    ("allow", "prohibit"),
    ("always", "never"),
    ("all", "none"),
    ("everyone", "nobody"),
    ("maximum", "minimum"),
    ("positive", "negative"),
    ("male", "female"),
    ("man", "woman"),
    ("men", "women"),
    ("boy", "girl"),
    ("husband", "wife"),
    ("father", "mother"),
    ("son", "daughter"),
    ("brother", "sister"),
    ("king", "queen"),
    ("alive", "dead"),
    ("living", "dead"),
    ("born", "died"),
    ("open", "closed"),
    ("public", "private"),
    ("present", "absent"),
    ("include", "exclude"),
    ("success", "failure"),
    ("successful", "unsuccessful"),
    ("agree", "disagree"),
    ("like", "dislike"),
    ("love", "hate"),
    ("best", "worst"),
    ("better", "worse"),
    ("good", "bad"),
    ("compiled", "interpreted"),
    ("static", "dynamic"),
    ("synchronous", "asynchronous"),
    ("import", "export"),
    ("buy", "sell"),
    ("bought", "sold"),
    ("domestic", "foreign"),
    ("natural", "artificial"),
    ("wet", "dry"),
    ("acid", "base"),
    ("odd", "even"),
    ("major", "minor"),
    ("majority", "minority"),
    ("same", "different"),
    ("similar", "different"),
    ("rural", "urban"),
    ("ancient", "modern"),
    ("primary", "secondary"),
)
"""Pairs of (English) words whose exchange turns a statement into a contradiction."""
