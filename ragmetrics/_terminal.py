r"""Text bound for a terminal: the one function that makes untrusted text inert before it is printed.

Sample ids, questions, claims, judge reasons, model names and error messages come from data nobody
vetted. Printed raw, an ESC sequence in them can clear the screen, retitle the window, or move the
cursor up and erase lines already printed; a bidi override (U+202E) reverses what follows it; a lone
surrogate makes ``print`` itself raise. :func:`printable` shows each such character as a visible
escape (``\x1b``, ``\u202e``) instead. Everything the CLI writes to stdout or stderr, and every text
table it renders, goes through it.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

_UNSAFE = re.compile(
    "["
    "\x00-\x1f\x7f-\x9f"  # C0 controls (ESC, CR, BS, BEL...), DEL and the C1 controls (CSI, OSC...)
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides and isolates
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates (cannot be encoded; print would raise)
    "]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def _json_escape(char: str) -> str:
    return f"\\u{ord(char):04x}"


def printable(text: object, *, multiline: bool = False, json: bool = False) -> str:
    r"""``text`` with every control, bidi and surrogate character shown as a visible escape.

    Idempotent: the escapes are plain ASCII, so escaping twice changes nothing more.

    Args:
        text: What to print (anything; it is turned into a string first).
        multiline: Keep line feeds and tabs (for blocks we lay out ourselves: tables, tracebacks);
            by default they are escaped too, so that a value stays on its line.
        json: ``text`` is JSON: use ``\uXXXX`` escapes, which keep it valid JSON with the same value,
            and keep the line feeds, tabs and carriage returns that can only be its whitespace.

    Example:
        >>> printable("id\x1b[2J\u202e")
        'id\\x1b[2J\\u202e'
    """
    value = text if isinstance(text, str) else str(text)
    if not _UNSAFE.search(value):
        return value
    keep = ("\n", "\t", "\r") if json else ("\n", "\t") if multiline else ()
    escape = _json_escape if json else _escape
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else escape(m.group()), value)
