"""Stopwords, shipped here (no nltk corpus is ever downloaded), and the content tokens they leave.

English function words plus the common ones of French, German, Spanish, Italian, Portuguese and Dutch,
applied only when the text looks like that language (:func:`guess_language`); hiragana are never
content.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["STOPWORDS", "content_tokens", "guess_language", "stopwords_for"]

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
