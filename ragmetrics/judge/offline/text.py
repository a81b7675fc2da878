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

It imports nothing from ragmetrics.
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
# Stopwords (shipped here; no nltk corpus)

_EN = """
a about above across after afterwards again against all almost along already also although always am
among amongst an and another any anybody anyhow anyone anything anyway anywhere are around as at be
became because become becomes been before being below beside besides between both but by can could
did do does doing done down during each either else etc even ever every everyone everything for from
further get gets got had has have having he her here hers herself him himself his how however i if in
into is it its itself just let may me might mine more most much must my myself neither nor of off
often on once one only onto or other others otherwise our ours ourselves out over own per perhaps
quite rather really same shall she should so some somehow something sometimes somewhat such than that
the their theirs them themselves then there thereby therefore these they this those though through
thus to too toward towards under until up upon us very via was we well were what whatever when
whenever where whereas wherever whether which while who whoever whom whose why will with within
would yes yet you your yours yourself yourselves oh ok okay yeah yep hi hello hey um uh like lot lots
s t d ll m re ve 's 're 've 'll 'd 'm i'm i've i'd i'll you're you've you'd you'll he's she's it's
we're we've we'd we'll
they're they've they'd they'll that's there's here's what's who's let's isn't aren't wasn't weren't
don't doesn't didn't haven't hasn't hadn't won't wouldn't can't cannot couldn't shouldn't mustn't
also many several various certain thing things way ways kind sort make makes made say says said
know think thought sure actually probably maybe definitely basically pretty not no never
especially particularly eventually usually typically generally mostly commonly currently recently
originally finally simply still even already almost nearly approximately roughly mainly largely
primarily certainly indeed
"""
_FR = """
le la les un une des du de d l au aux et ou mais donc or ni car que qu qui quoi dont où ce cet cette
ces ceci cela ça il elle ils elles on nous vous je j tu me m te se s lui leur leurs son sa ses mon ma
mes ton ta tes notre nos votre vos est sont était étaient être été a ont avait avaient avoir eu fait
dans sur sous par pour avec sans en y ne pas plus très aussi comme si tout tous toute toutes
"""
_DE = """
der die das den dem des ein eine einer eines einem einen und oder aber doch sondern denn dass daß
ist sind war waren sein gewesen hat haben hatte hatten wird werden wurde wurden im in am an auf aus
bei mit nach von vor zu zum zur über unter für durch um als auch noch nur schon sehr so wie wenn ob
er sie es wir ihr ich du man sich nicht kein keine dieser diese dieses jener welche welcher
"""
_ES = """
el la los las un una unos unas de del al y o pero que qué quien cual cuyo en por para con sin sobre
es son era eran ser sido fue fueron ha han había haber se su sus lo le les me te nos mi tu muy más
también como si este esta estos estas ese esa eso no ya
"""
_IT = """
il lo la i gli le un uno una di del della dei delle degli al alla ai e ed o ma che chi cui in da
con su per tra fra è sono era erano essere stato stata ha hanno aveva avere si suo sua suoi sue
mio mia non più molto anche come se questo questa quello quella
"""
_PT = """
o a os as um uma uns umas de do da dos das no na nos nas ao aos e ou mas que quem em por para com
sem sobre é são era eram ser foi foram tem têm ter se seu sua seus suas não mais muito também como
este esta isso isto esse essa
"""
_NL = """
de het een en of maar dat die dit deze in op aan van voor met door bij naar uit om als ook nog niet
geen is zijn was waren wordt worden werd hebben heeft had ik jij je hij zij ze wij we jullie u er
"""

_LANG_STOPWORDS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split())
    for lang, words in (
        ("en", _EN),
        ("fr", _FR),
        ("de", _DE),
        ("es", _ES),
        ("it", _IT),
        ("pt", _PT),
        ("nl", _NL),
    )
}
STOPWORDS: frozenset[str] = _LANG_STOPWORDS["en"]
"""English function words (case-folded, straight apostrophes); other languages via :func:`content_tokens`."""


def guess_language(tokens: Sequence[str]) -> str:
    """Guess the language of case-folded ``tokens`` from function-word hits: ``en``, ``fr``, ``de``, ...

    Returns ``en`` unless another shipped list matches clearly more tokens. Only used to choose
    stopwords; it is not a language identifier.
    """
    if not tokens:
        return "en"
    best, best_hits = "en", sum(t in _LANG_STOPWORDS["en"] for t in tokens)
    for lang, words in _LANG_STOPWORDS.items():
        if lang == "en":
            continue
        hits = sum(t in words for t in tokens)
        if hits > best_hits * 1.2 + 1:
            best, best_hits = lang, hits
    return best


def stopwords_for(language: str) -> frozenset[str]:
    """English stopwords plus those of ``language`` (when shipped)."""
    if language == "en" or language not in _LANG_STOPWORDS:
        return STOPWORDS
    return STOPWORDS | _LANG_STOPWORDS[language]


def content_tokens(
    tokens: Sequence[str], language: str | None = None, *, keep: frozenset[str] = frozenset()
) -> list[str]:
    """``tokens`` without stopwords (of English and of the guessed or given language).

    Single letters and hiragana (Japanese particles and endings) never pass; numbers, other single
    CJK characters and the words in ``keep`` always do.
    """
    stop = stopwords_for(language or guess_language(tokens))
    return [
        t
        for t in tokens
        if t in keep
        or (t not in stop and (len(t) > 1 or t.isdigit() or not (t.isascii() or _HIRAGANA.fullmatch(t))))
    ]


_HIRAGANA = re.compile("[\u3040-\u309f]+")


# --------------------------------------------------------------------------------------------------
# Sentences

_ABBREVIATIONS = frozenset(
    """
    e.g i.e etc vs al approx ca cf dr mr mrs ms prof sr jr st mt no nos fig figs vol pp ed eds inc ltd co
    corp jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n a.m p.m ph.d op est resp dept gen
    col lt sgt rev hon
    """.split()
)
_TERMINATOR = re.compile(r"[.!?…]+|[。！？]+|\n")
_CLOSERS = re.compile(r"[\"')\]»”’]*(?:\s*\[\d+(?:[,\-–]\s*\d+)*\])*[.!?]?")
_WORD_BEFORE = re.compile(r"([\w.]+)$")


def _is_abbreviation(text: str, dot: int) -> bool:
    """True when the ``.`` at ``dot`` ends an abbreviation, an initial or a list number."""
    m = _WORD_BEFORE.search(text, max(0, dot - 40), dot)
    if not m:
        return False
    word = m.group(1).casefold().rstrip(".")
    if word in _ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isalpha() and text[m.start(1)].isupper():
        return True  # an initial: "J. K. Rowling"
    if re.fullmatch(r"(?:[a-z]\.)+[a-z]", word):
        return True  # "U.S", "e.g"
    return False


def _soft_line_break(text: str, at: int) -> bool:
    """True for a single line break inside running text (lower-case or comma on both sides)."""
    before = text[:at].rstrip(" \t")
    after = text[at + 1 :].lstrip(" \t")
    if not before or not after or after[0] == "\n":
        return False
    return (before[-1].islower() or before[-1] in ",;") and after[0].islower()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``; each ``text[start:end]`` is stripped.

    Splits after ``. ! ? …`` (followed by whitespace or the end, or glued to a capitalised word after
    a lower-case one: ``not.However``), after ``。！？`` and at line breaks (a single line break
    between lower-case words is read as wrapped text). A full stop does not split after an
    abbreviation (``e.g.``, ``Dr.``), an initial, or inside a number (``3.5``). Closing quotes and
    citation markers (``[1]``, ``[2, 3]``) after the terminator stay with their sentence.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    n = len(text)
    for m in _TERMINATOR.finditer(text):
        if m.start() < start:
            continue  # inside closers already given to the previous sentence
        end = m.end()
        mark = m.group()
        if mark == "\n":
            if _soft_line_break(text, m.start()):
                continue
        elif mark[0] in ".!?…":
            glued = (  # "...or not.However" (a lost space): lower-case word, stop, capitalised word
                end + 1 < n
                and text[end].isupper()
                and text[end + 1].islower()
                and m.start() >= 2
                and text[m.start() - 2 : m.start()].isalpha()
                and text[m.start() - 1].islower()
            )
            if end < n and not text[end].isspace() and text[end] not in "\"')]»”’[" and not glued:
                continue  # "3.5", "example.com", "a.b"
            if mark == "." and _is_abbreviation(text, m.start()):
                continue
            closers = _CLOSERS.match(text, end)
            if closers:
                end = closers.end()
            if end < n and not text[end].isspace() and not glued:
                continue
        _add_span(text, start, end, spans)
        start = end
    _add_span(text, start, n, spans)
    return spans


def _add_span(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start and any(ch.isalnum() for ch in text[start:end]):
        spans.append((start, end))
    elif end > start and spans and spans[-1][1] <= start:
        # stray punctuation or a lone marker: glue it to the previous sentence
        spans[-1] = (spans[-1][0], end)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, each an exact (stripped) substring of it; see :func:`sentence_spans`."""
    return [text[s:e] for s, e in sentence_spans(text)]


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
