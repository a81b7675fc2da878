"""The stemmer (ragmetrics/text/stemming.py) is nltk's Porter stemmer without ``import nltk`` (issue 14)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

from ragmetrics import text as _text
from ragmetrics.text.stemming import _porter

CORPUS = Path(__file__).parent.parent / "data" / "parity_corpus.jsonl"
LIMIT = 2 * 1024**3


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_stemming_imports_no_part_of_nltk_nor_its_data_science_stack() -> None:
    code = (
        "import sys; from ragmetrics import text as _text; "
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
    ours = _porter()
    assert type(ours).__module__ == "ragmetrics._nltk_porter"  # the isolated copy is in use
    words: set[str] = set()
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        words.update(_text.tokenize(json.dumps(json.loads(line), ensure_ascii=False)))
    for module in sorted(Path(_text.__file__).parent.glob("*.py")):  # the text package's own words
        words.update(_text.tokenize(module.read_text(encoding="utf-8")))
    words.update(["lies", "employing", "thankfully", "recreationally", "uses", "dying", "sky", "news"])
    assert len(words) > 500
    assert [ours.stem(w) for w in sorted(words)] == [reference.stem(w) for w in sorted(words)]


def test_stem_english_only_and_possessives():
    assert _text.stem("languages") == _text.stem("language")
    assert _text.stem("created") == _text.stem("creating")
    assert _text.stem("rossum's") == _text.stem("rossum")
    assert _text.stem("interprété") == "interprété"  # non-ASCII: left alone
    assert _text.stem("天") == "天"
    assert _text.stems(["runs", "running"]) == ["run", "run"]


def test_importing_text_does_not_import_nltk():
    code = (
        "import sys, ragmetrics.text as t; assert 'nltk' not in sys.modules; "
        "t.stem('running'); assert 'nltk' not in sys.modules"  # nor does stemming (nltk's file, isolated)
    )
    subprocess.run([sys.executable, "-c", code], check=True)
