"""What the offline judge is and what it misses, in the words the terminal and the reports show.

The offline judge matches words, not meaning: a faithful answer that paraphrases its contexts scores low.
Wherever its scores are shown (``ragmetrics eval``'s summary and worst samples, the HTML report, the
notebook view), these lines stand beside them, so a low score is never read as a broken metric.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["WORST_NOTE", "caveat_lines", "offline_specs"]

WORST_NOTE = "offline judge: low scores may be paraphrases it cannot match"
"""The note beside a list of worst samples scored by the offline judge."""

_MISSES = "It matches words, not meaning: a faithful paraphrase or a reworded fact scores low."
_INSTEAD = "For scores that judge meaning, use --judge PROVIDER:MODEL (e.g. --judge openai:gpt-4o-mini)."


def offline_specs(specs: Iterable[str]) -> list[str]:
    """The offline judges among judge specs (``offline``, ``offline+semantic``), each once, in order."""
    return list(dict.fromkeys(s for s in specs if s == "offline" or s.startswith("offline+")))


def caveat_lines(spec: str = "offline") -> list[str]:
    """What the offline judge ``spec`` is and what it misses, as three lines of plain text.

    Args:
        spec: ``offline`` or ``offline+semantic`` (the latter adds a small local embedding model).
    """
    if spec == "offline":
        what = "Note: the offline judge is a deterministic lexical judge (no LLM, no API key)."
    else:
        what = (
            f"Note: the {spec} judge is a deterministic heuristic (word overlap and a small local "
            "embedding model; no LLM, no API key)."
        )
    return [what, _MISSES, _INSTEAD]
