"""The slot layout leaves out chunks and pairs no question can be written from (one wasted call each)."""

from __future__ import annotations

from ragmetrics.testset import Chunk, plan_slots
from tests.limited import PEAK_MB

TEXT = {
    "a": "Cargo is the package manager of Rust. Cargo downloads dependencies and compiles crates quickly.",
    "b": "The Rust compiler checks ownership at compile time. Cargo invokes the compiler for every crate.",
    "c": "Python packages are installed with pip. The pip resolver downloads dependencies from PyPI.",
}

WORDS = ["tides", "glaciers", "volcanoes", "deserts", "rainforests", "canyons", "reefs", "prairies"]


def chunk(doc: str, text: str) -> Chunk:
    return Chunk(id=f"{doc}#0", doc_id=doc, text=text, start=0, end=len(text))


def test_a_chunk_without_a_sentence_gets_no_slot():
    chunks = [
        chunk("heading.md", "# Installation\n\n## Linux"),
        chunk("a.md", TEXT["a"]),
        chunk("b.md", TEXT["b"]),
    ]
    slots = plan_slots(chunks, size=10, mix={"single_hop": 1, "summary": 1})
    assert slots and all(s.chunks[0].doc_id != "heading.md" for s in slots)
    # with no usable chunk at all, the chunks are kept (the rejects then say why)
    assert plan_slots(chunks[:1], size=2, mix={"single_hop": 1})


def test_two_copies_of_one_text_are_never_a_pair():
    copy = TEXT["a"] + " It was written in 2014."
    chunks = [
        chunk("page-1", "[1] https://x.org\n\n" + copy),
        chunk("page-7", "[7] https://x.org\n\n" + copy),
        chunk("b.md", TEXT["b"]),
        chunk("c.md", TEXT["c"]),
        # unrelated chunks, so that a term of three chunks is still specific enough to pair on
        *(
            chunk(f"other-{n}.md", f"Another chapter describes topic {w} in plain prose.")
            for n, w in enumerate(WORDS)
        ),
    ]
    pairs = {tuple(c.doc_id for c in s.chunks) for s in plan_slots(chunks, size=6, mix={"multi_hop": 1})}
    assert pairs and ("page-1", "page-7") not in pairs
    assert pairs <= {
        ("page-1", "b.md"),
        ("page-7", "b.md"),
        ("page-1", "c.md"),
        ("page-7", "c.md"),
        ("b.md", "c.md"),
    }


def test_pairing_many_chunks_that_share_terms_stays_within_its_budget():
    # 4,000 chunks drawing 40 of ~400 terms each: every term is in ~400 chunks (under n / 4, so each
    # counted as specific), and scoring every pair of every term was ~32 million dictionary updates
    # (an 8 MB corpus of real sentences, 9,346 chunks, took 183 s and 10 GB); the pair work is now
    # capped at PAIR_BUDGET, rarest terms first
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = textwrap.dedent(
        """
        import random, time
        from ragmetrics.testset import Chunk, plan_slots
        rng = random.Random(1)
        vocab = sorted({"".join(rng.choices("bcdfghjklmnpqrstvwxz", k=7)) + "a" for _ in range(400)})
        chunks = []
        for i in range(4000):
            text = "This chunk mentions " + " and ".join(rng.sample(vocab, 40)) + "."
            chunks.append(Chunk(id=f"d{i % 50}#{i}", doc_id=f"d{i % 50}", text=text, start=0, end=len(text)))
        t = time.perf_counter()
        slots = plan_slots(chunks, size=50, mix={"multi_hop": 1, "single_hop": 1})
        pairs = [s for s in slots if len(s.chunks) == 2]
        peak = PEAK_MB
        print(len(pairs), f"{time.perf_counter() - t:.1f}", peak)
        """
    ).replace("PEAK_MB", PEAK_MB)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    pairs, seconds, peak_mb = proc.stdout.split()
    assert int(pairs) == 75  # the two-chunk half of 3 x 50 slots
    assert float(seconds) < 30 and int(peak_mb) < 1000, proc.stdout


def test_a_small_corpus_pairs_as_before_the_budget():
    from ragmetrics.testset.slots import PAIR_BUDGET

    assert PAIR_BUDGET >= 1_000_000  # far above the pair work of corpora of a few hundred chunks
