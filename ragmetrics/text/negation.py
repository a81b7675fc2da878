"""Negation cues and antonym pairs: the words that turn a statement into its contrary."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ANTONYMS", "NEGATION_CUES", "negation_cues"]

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
