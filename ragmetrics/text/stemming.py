"""The Porter stemmer for English-looking (ASCII) words, identity for any other token.

nltk's stemmer module is loaded on first use without running ``nltk/__init__`` (which imports most
of nltk and, when installed, its data-science stack); it needs no data files.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["stem", "stems"]


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
