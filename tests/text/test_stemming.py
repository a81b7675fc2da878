"""The offline judge's stemmer is nltk's Porter stemmer without ``import nltk`` (issue 14, cold start)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

from ragmetrics.text import tokens as _text

CORPUS = Path(__file__).parent.parent / "data" / "parity_corpus.jsonl"
LIMIT = 2 * 1024**3


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_stemming_imports_no_part_of_nltk_nor_its_data_science_stack() -> None:
    code = (
        "import sys; from ragmetrics.text import tokens as _text; "
        "print(_text.stem('running'), _text.stem('generalizations'), "
        "sorted(m for m in sys.modules if m.split('.')[0] in ('nltk', 'sklearn', 'scipy', 'pandas')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, preexec_fn=_limit
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["run", "gener", "[]"]


def test_stems_equal_nltk_porter_stemmer_on_every_word_of_the_corpus_and_the_texts_module() -> None:
    from nltk.stem.porter import PorterStemmer

    reference = PorterStemmer()
    ours = _text._porter()
    assert type(ours).__module__ == "ragmetrics._nltk_porter"  # the isolated copy is in use
    words: set[str] = set()
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        words.update(_text.tokenize(json.dumps(json.loads(line), ensure_ascii=False)))
    words.update(_text.tokenize(Path(_text.__file__).read_text(encoding="utf-8")))
    words.update(["lies", "employing", "thankfully", "recreationally", "uses", "dying", "sky", "news"])
    assert len(words) > 500
    assert [ours.stem(w) for w in sorted(words)] == [reference.stem(w) for w in sorted(words)]
