"""Small documents the test-set tests generate from, and a PDF written by hand (no PDF library needed)."""

from __future__ import annotations

from pathlib import Path

PYTHON_MD = """# Python

Python is an interpreted programming language created by Guido van Rossum. It was first released in 1991. \
Python emphasises code readability with significant indentation.

## Typing

Python is dynamically typed and garbage-collected. It supports multiple programming paradigms, including \
structured, object-oriented and functional programming.
"""

RUST_MD = """# Rust

Rust is a compiled programming language focused on memory safety. Rust was first released in 2015 by Mozilla \
Research. It enforces memory safety without a garbage collector through its ownership system.

## Tooling

Cargo is the package manager of Rust. Cargo downloads dependencies and compiles packages.
"""

EIFFEL_HTML = """<html><head><title>t</title><style>p {color: red}</style><script>var x = 1;</script></head>
<body><h1>Eiffel Tower</h1><p>The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in
1889 for the World&#39;s Fair.</p><h2>Height</h2><p>The tower is 330 metres tall. It was the tallest man-made
structure in the world until 1930.</p></body></html>
"""

NOTES_TXT = """Mount Everest is the highest mountain above sea level. It lies in the Himalayas on the \
border of Nepal and China.

Tenzing Norgay and Edmund Hillary made the first confirmed ascent of Mount Everest in 1953.
"""


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "python.md").write_text(PYTHON_MD)
    (folder / "rust.md").write_text(RUST_MD)
    (folder / "sub").mkdir(exist_ok=True)
    (folder / "sub" / "eiffel.html").write_text(EIFFEL_HTML)
    (folder / "notes.txt").write_text(NOTES_TXT)
    (folder / "ignored.bin").write_bytes(b"\x00\x01")
    return folder


def write_pdf(path: Path, lines: list[str]) -> Path:
    """A one-page PDF with ``lines`` of text in Helvetica, offsets computed so any reader accepts it."""
    text_ops = ["BT", "/F1 12 Tf", "72 720 Td", "14 TL"]
    for line in lines:
        safe = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        text_ops += [f"({safe}) Tj", "T*"]
    text_ops.append("ET")
    stream = "\n".join(text_ops).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path
