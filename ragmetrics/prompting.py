"""Prompt files: load them, check them against the manifest, render them safely, hash them.

Prompts live in ``prompts/<group>/<step>.v<N>.md`` (shipped in the wheel as ``ragmetrics/prompts``)
with ``$name`` placeholders. Every value rendered into a prompt is untrusted data: it is escaped
(``&``, ``<``, ``>``) so that it cannot close the ``<tag>...</tag>`` block it sits in, and the prompts
tell the judge that the blocks are data, not instructions. :func:`parse_blocks` reverses rendering
(the fake LLM server uses it to read the package's own prompts).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import string
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from ragmetrics.errors import PromptError

__all__ = [
    "Prompt",
    "Raw",
    "escape",
    "load_prompt",
    "numbered_blocks",
    "parse_blocks",
    "parse_numbered_blocks",
    "prompt_root",
    "render",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """One prompt file."""

    id: str
    """``<group>/<step>.v<N>``, e.g. ``claims/extract.v1``."""
    text: str
    """Exactly the text sent, with ``$name`` placeholders."""
    sha256: str
    """Hash of the file's bytes."""

    @property
    def short(self) -> str:
        """``extract.v1:3f9a1c2b``: the form used in signatures."""
        return f"{self.id.split('/')[-1]}:{self.sha256[:8]}"

    @property
    def placeholders(self) -> frozenset[str]:
        """The ``$name`` placeholders in the text."""
        names = set()
        for match in string.Template.pattern.finditer(self.text):
            name = match.group("named") or match.group("braced")
            if name:
                names.add(name)
        return frozenset(names)


@dataclass(frozen=True, slots=True)
class Raw:
    """A value already escaped and delimited (built by :func:`numbered_blocks`); rendered as is."""

    text: str


def prompt_root() -> Path:
    """The folder holding the prompt files: in the installed wheel, or the source checkout's."""
    packaged = resources.files("ragmetrics") / "prompts"
    if packaged.is_dir():
        return Path(str(packaged))
    source = Path(__file__).resolve().parent.parent / "prompts"
    if source.is_dir():
        return source
    raise PromptError(
        "the prompt files were not found (looked in ragmetrics/prompts and ../prompts); "
        "reinstall ragmetrics: the wheel ships them as package data"
    )


@cache
def _manifest(root: Path) -> dict[str, str]:
    path = root / "manifest.json"
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise PromptError(f"cannot read the prompt manifest {path}: {exc}") from exc


@cache
def load_prompt(prompt_id: str) -> Prompt:
    """Load a prompt by id and check its hash against ``manifest.json``.

    Args:
        prompt_id: ``<group>/<step>.v<N>``, e.g. ``claims/extract.v1``.

    Raises:
        PromptError: The file is missing, or differs from the hash recorded for it (released prompt
            files are never edited: add a ``v<N+1>`` file instead).
    """
    root = prompt_root()
    path = root / f"{prompt_id}.md"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PromptError(f"prompt '{prompt_id}' not found at {path}") from exc
    digest = hashlib.sha256(data).hexdigest()
    recorded = _manifest(root).get(f"{prompt_id}.md")
    if recorded is None:
        raise PromptError(f"prompt '{prompt_id}' is not listed in {root / 'manifest.json'}")
    if recorded != digest:
        raise PromptError(
            f"prompt '{prompt_id}' was edited in place (sha256 {digest[:12]} != manifest "
            f"{recorded[:12]}); released prompts are frozen: add a new version file instead"
        )
    return Prompt(id=prompt_id, text=data.decode("utf-8"), sha256=digest)


def escape(value: str) -> str:
    """Escape untrusted text so it cannot open or close a delimited block."""
    return html.escape(value, quote=False)


def numbered_blocks(tag: str, items: list[str] | tuple[str, ...], *, start: int = 0) -> Raw:
    """Render ``items`` as ``<tag index="i">escaped</tag>`` blocks, one per line."""
    if not items:
        return Raw(f"(no {tag}s)")
    return Raw("\n".join(f'<{tag} index="{i}">{escape(item)}</{tag}>' for i, item in enumerate(items, start)))


def numbered_lines(noun: str, items: list[str] | tuple[str, ...], *, start: int = 0) -> Raw:
    """Render one-line ``items`` as ``i. escaped`` lines (whitespace runs become one space).

    Shorter than :func:`numbered_blocks` (2 tokens of markup an item, not 8) for short texts such as
    claims; the escaping still keeps an item from opening or closing a block, and a line break in
    an item cannot start another.
    """
    if not items:
        return Raw(f"(no {noun}s)")
    return Raw("\n".join(f"{i}. {escape(' '.join(item.split()))}" for i, item in enumerate(items, start)))


def render(prompt: Prompt, **variables: str | Raw | None) -> str:
    """Fill a prompt's placeholders; str values are escaped, :class:`Raw` values go in as is.

    Raises:
        PromptError: A placeholder has no value, or a value has no placeholder.
    """
    wanted = prompt.placeholders
    given = set(variables)
    if wanted - given:
        raise PromptError(f"prompt '{prompt.id}' needs {sorted(wanted - given)}; not given")
    if given - wanted:
        raise PromptError(f"prompt '{prompt.id}' has no placeholder for {sorted(given - wanted)}")
    values = {k: (v.text if isinstance(v, Raw) else escape(v or "(none)")) for k, v in variables.items()}
    return string.Template(prompt.text).substitute(values)


_BLOCK = re.compile(r"<(?P<tag>[a-z_]+)>\n?(?P<body>.*?)\n?</(?P=tag)>", re.DOTALL)
_NUMBERED = re.compile(r'<(?P<tag>[a-z_]+) index="(?P<i>\d+)">(?P<body>.*?)</(?P=tag)>', re.DOTALL)


def parse_blocks(text: str) -> dict[str, str]:
    """Read back the un-numbered ``<tag>...</tag>`` blocks of a rendered prompt, still escaped.

    Bodies are returned as rendered (a container block holds numbered blocks); apply
    ``html.unescape`` to a leaf block's body to get the original text back.
    """
    return {m["tag"]: m["body"] for m in _BLOCK.finditer(text)}


_LINE = re.compile(r"^(?P<i>\d+)\. (?P<body>.*)$", re.MULTILINE)


def parse_numbered_lines(body: str) -> list[str]:
    """Read back the lines of a :func:`numbered_lines` block body, unescaped, in index order."""
    found = sorted((int(m["i"]), html.unescape(m["body"])) for m in _LINE.finditer(body))
    return [text for _, text in found]


def parse_numbered_blocks(text: str, tag: str) -> list[str]:
    """Read back the ``<tag index="i">`` blocks of a rendered prompt, unescaped, in index order."""
    found = sorted(
        (int(m["i"]), html.unescape(m["body"])) for m in _NUMBERED.finditer(text) if m["tag"] == tag
    )
    return [body for _, body in found]
