"""The input record: one question, one answer, its retrieved contexts and an optional reference.

``Sample.from_fields`` is the single place where untrusted input is checked; every error names the
field (and the row, when known) and what was expected. :func:`check_text` is the one check that text
is real Unicode: a lone surrogate (U+D800 to U+DFFF, from a JSON escape without its pair or a
``surrogateescape`` decode) cannot be encoded, so it would break cache keys, requests and exports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics._check import check_field, check_nesting
from ragmetrics.errors import InvalidInputError

__all__ = ["Sample", "check_sample_text", "check_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")


class Sample(BaseModel):
    """One RAG interaction to score."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str | None = None
    """The user's question; ``None`` when the metric needs none (groundedness)."""
    answer: str = ""
    """The generated answer to judge."""
    contexts: tuple[str, ...] = ()
    """The retrieved passages the answer should rest on, in retrieval order."""
    reference: str | None = None
    """An optional reference (ground-truth) answer."""
    id: str | None = None
    """An optional identifier carried into results and reports."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Free-form metadata; metrics never read it."""

    @classmethod
    def from_fields(
        cls,
        *,
        question: object = None,
        answer: object = None,
        contexts: object = None,
        reference: object = None,
        id: object = None,  # noqa: A002 - the public field name
        meta: object = None,
        row: int | str | None = None,
        require_question: bool = False,
        require_answer: bool = True,
    ) -> Sample:
        """Check raw values and build a sample.

        Args:
            question: The question (str). Required when ``require_question``.
            answer: The answer (str). ``None`` is refused when ``require_answer``; ``""`` is allowed.
            contexts: A list or tuple of str, or None for no contexts. A bare string is refused.
            reference: An optional reference answer (str).
            id: An optional identifier (str or int).
            meta: An optional mapping of metadata.
            row: The dataset row, named in error messages.
            require_question: Whether an empty or missing question is an error.
            require_answer: Whether a missing answer is an error.

        Returns:
            The validated sample.

        Raises:
            InvalidInputError: A field has the wrong type, a required field is empty, or a text
                field holds a lone surrogate.
        """
        asked: str | None = check_field(question, "question", str, "a string", row=row, optional=True)
        if require_question and (asked is None or not asked.strip()):
            raise InvalidInputError(
                "question",
                "a non-empty string",
                question if question is not None else None,
                row=row,
                detail="this metric judges the answer against the question",
            )
        if answer is None:
            if require_answer:
                raise InvalidInputError(
                    "answer", 'a string (use "" for an empty answer)', row=row, detail="got None"
                )
            answer = ""
        answer = check_field(answer, "answer", str, "a string", row=row)
        ctx = _check_contexts(contexts, row)
        reference = check_field(reference, "reference", str, "a string or None", row=row, optional=True)
        id = check_field(id, "id", (str, int), "a string or an integer", row=row, optional=True)
        extra: Mapping[str, Any] | None = check_field(
            meta, "meta", Mapping, "a mapping", row=row, optional=True
        )
        sample = cls(
            question=asked,
            answer=answer,
            contexts=ctx,
            reference=reference,
            id=None if id is None else str(id),
            meta=dict(extra or {}),
        )
        return check_sample_text(sample, row)


def _string_contexts_detail(text: str) -> str:
    if text.lstrip().startswith("["):  # a list column read back from a CSV (pandas.read_csv) as its text
        return (
            "this text looks like a list saved as text (a CSV read back with pandas.read_csv?): parse it "
            "first (json.loads for a JSON list, ast.literal_eval for the Python lists DataFrame.to_csv "
            "writes), or pass the CSV file's path, which reads both forms"
        )
    return "wrap a single passage in a list: contexts=[text]"


def _check_contexts(contexts: object, row: int | str | None) -> tuple[str, ...]:
    if contexts is None:
        return ()
    passages = check_field(
        contexts,
        "contexts",
        Sequence,
        "a list of strings",
        row=row,
        detail=_string_contexts_detail(contexts) if isinstance(contexts, str) else None,
    )
    return tuple(
        check_field(item, f"contexts[{i}]", str, "a string", row=row) for i, item in enumerate(passages)
    )


def check_text(text: str, field: str, *, row: int | str | None = None) -> str:
    """Return ``text`` if it is valid Unicode (no lone surrogate).

    Raises:
        InvalidInputError: ``text`` holds a surrogate code point; the message names the field and
            the character position (and shows the code point escaped, never raw).
    """
    bad = _SURROGATE.search(text)
    if bad is None:
        return text
    code = ord(bad.group())
    raise InvalidInputError(
        field,
        "valid Unicode text",
        row=row,
        detail=f"a lone surrogate U+{code:04X} at character {bad.start()}, which no encoding can write "
        "(a JSON escape without its pair, or bytes decoded with errors='surrogateescape'); "
        "replace or drop it",
    )


def check_sample_text(sample: Sample, row: int | str | None = None) -> Sample:
    """Return ``sample`` if its text fields are valid Unicode (a Sample built directly skips from_fields).

    Raises:
        InvalidInputError: A field holds a lone surrogate (see :func:`check_text`), or ``meta`` nests
            deeper than ``MAX_NESTING`` levels.
    """
    check_nesting(sample.meta, "meta", row=row)
    for name in ("question", "answer", "reference", "id"):
        value = getattr(sample, name)
        if value is not None:
            check_text(value, name, row=row)
    for i, text in enumerate(sample.contexts):
        check_text(text, f"contexts[{i}]", row=row)
    return sample
