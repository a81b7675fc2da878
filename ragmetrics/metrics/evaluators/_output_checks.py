"""Shared limits and hints of the output-contract evaluators (``structured``: JSON; ``html_validation``)."""

from __future__ import annotations

import re

from ragmetrics._check import check_int
from ragmetrics.metrics.evaluators.base import Scored

WRAPPED_ADVICE = "it is scored as a whole; tell the model to reply with the raw document and nothing else"
"""What to do about a payload wrapped in a fence or preamble."""
_FENCE = re.compile(r"\A\s*(```|~~~)")


def check_limit(value: object, option: str, owner: str, low: int, high: int | None = None) -> int:
    """``value`` if it is an integer (not a bool) in ``[low, high]``, else a ``ConfigError`` naming it."""
    return check_int(value, option, owner, minimum=low, maximum=high)


def too_long(text: str, max_chars: int, what: str) -> Scored | None:
    """An ``invalid_input`` result when ``text`` is over ``max_chars``, else None."""
    if len(text) <= max_chars:
        return None
    return Scored(
        score=None,
        status="invalid_input",
        message=f"the {what} is {len(text):,} characters, over the limit of {max_chars:,} (max_chars); "
        "not parsed",
    )


def fence_hint(text: str) -> str:
    """A sentence explaining that ``text`` is wrapped in a markdown code fence, or ''."""
    if _FENCE.match(text):
        return f" The output is wrapped in a markdown code fence: {WRAPPED_ADVICE}."
    return ""
