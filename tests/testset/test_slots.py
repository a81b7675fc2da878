"""The slot layout leaves out chunks and pairs no question can be written from (one wasted call each)."""

from __future__ import annotations

from ragmetrics.testset import Chunk, plan_slots

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
