"""One dataset row: :class:`Row` as read, :func:`to_sample` to validate it, :func:`provenance` for its record.

:mod:`ragmetrics.pipeline.dataset` reads sources into rows and re-exports these; a bad row is not an
exception there: :func:`to_sample` raises ``InvalidInputError`` naming the row and the field (and the
column it was read from), and the pipeline turns it into that row's error record. A conversation row
(``Row.conversation``) is validated by :func:`to_conversation` instead, and scored turn by turn
(:mod:`ragmetrics.pipeline._turn_rows`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ragmetrics._check import MAX_NESTING, check_nesting, nesting_depth
from ragmetrics.errors import InvalidInputError
from ragmetrics.pipeline.conversations import read_conversation
from ragmetrics.sample import Conversation, Sample, check_sample_text

if TYPE_CHECKING:
    from ragmetrics.metrics.conversation.turns import EvidenceMap

__all__ = [
    "Row",
    "RowLevel",
    "contexts_problem",
    "plain_value",
    "provenance",
    "reference_problem",
    "to_conversation",
    "to_sample",
]


RowLevel = Literal["sample", "turn", "conversation"]


@dataclass(frozen=True, slots=True)
class Row:
    """One dataset row before validation."""

    index: int
    """Position in the dataset (0-based)."""
    values: Mapping[str, Any] | Sample | None
    """The row's values by sample field (missing keys absent), a ready Sample, or None if unreadable."""
    problem: str | None = None
    """Why the row could not be read at all (a JSONL line that is not JSON, an undecodable byte); the
    values then hold at most the row's ``id`` (a trace's), for its record."""
    columns: Mapping[str, str] | None = None
    """The column each field was read from (for messages)."""
    source: Mapping[Any, Any] | None = None
    """The row as it came in, by its own column names (kept on the record for the exports)."""
    field_problems: Mapping[str, str] | None = None
    """Why a field is unusable though the row was read (``contexts``: a trace's documents recorded without
    their text): the metrics that need it get ``invalid_input`` with this message, the others score."""
    conversation: Mapping[str, Any] | Conversation | None = None
    """The row as a conversation (a record with ``messages``, a RAGAS ``user_input`` list or DeepEval
    ``turns``, and no answer; or a ready Conversation), read by :func:`to_conversation`; ``values`` then
    holds at most the record's ``id``. None for a sample row."""
    evidence: EvidenceMap | None = None
    """For a conversation's turn row (see :mod:`ragmetrics.pipeline._turn_rows`): where each of its
    sample's contexts came from, so its record names the message each claim cites."""
    refusal: InvalidInputError | None = None
    """Why a conversation, or one of its turns, cannot be scored: :func:`to_sample` raises it as it is
    (it names the message at fault, ``messages[3].tool_call_id``)."""
    level: RowLevel = "sample"
    """What the row stands for: a sample (every metric runs; a conversation-level metric refuses it,
    and a conversation refused whole is one too), a conversation's ``turn`` (every metric but the
    conversation-level ones) or a ``conversation`` record (only those; see :attr:`session`)."""
    session: Conversation | None = None
    """For a ``conversation`` row: the conversation the conversation-level metrics score."""


_TOO_DEEP = f"(dropped: nested more than {MAX_NESTING} levels deep)"
"""What a record keeps of a source value nested past ``MAX_NESTING`` (the exports could not write it)."""


def plain_value(value: Any, _depth: int = 0) -> Any:
    """numpy/pandas scalars and arrays to plain Python; NaN (pandas' missing value) to None.

    Lists and mappings are converted all the way down (a conversation's messages read by pandas or Ray
    are arrays of mappings holding arrays). Past ``MAX_NESTING`` levels the value is left as it is (no
    deeper recursion): the row is refused.
    """
    if value is None or isinstance(value, (str, bool, int)) or _depth > MAX_NESTING:
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, (list, tuple, dict)):
        return plain_value(tolist(), _depth)
    if isinstance(value, (list, tuple)):
        return [plain_value(v, _depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: plain_value(v, _depth + 1) for k, v in value.items()}
    return value


def to_sample(row: Row, *, require_contexts: bool = False) -> Sample:
    """Validate one row into a sample.

    Args:
        row: The row.
        require_contexts: Whether a missing or None ``contexts`` is an error (a metric checks the
            answer against the contexts); an explicit empty list is allowed.

    Raises:
        InvalidInputError: The row is unreadable, lacks its answer, a field has the wrong type, or a
            value nests deeper than ``MAX_NESTING`` levels; the message names the row and the field
            (and the column it was read from).
    """
    values = row.values
    if row.refusal is not None:
        raise row.refusal
    if row.conversation is not None and row.problem is None:
        raise InvalidInputError(
            "messages",
            "absent from a sample row",
            row=row.index,
            detail="this row is a conversation (chat messages, RAGAS user_input messages or DeepEval "
            "turns); Dataset.sample_rows() reads it as one sample row per assistant turn",
        )
    if values is None or row.problem is not None:
        exc = InvalidInputError("(row)", "a dict of sample fields or a Sample", row=row.index)
        if row.problem is not None:  # escaped as InvalidInputError escapes (a path may hold surrogates)
            message = f"row {row.index}: {row.problem}"
            exc.args = (message.encode("utf-8", "backslashreplace").decode("utf-8"),)
        raise exc
    if isinstance(values, Sample):
        return check_sample_text(values, row.index)
    used = row.columns or {}
    for field, value in values.items():  # first: a deep value breaks repr() in the messages below
        check_nesting(value, used.get(field, field), row=row.index)
    taken = set(used.values())
    for column, value in (row.source or {}).items():
        if str(column) not in taken:
            check_nesting(value, str(column), row=row.index)

    if "answer" not in values:
        keys = ", ".join(sorted(values)) or "none"
        raise InvalidInputError(
            "answer",
            "present in every row",
            row=row.index,
            detail=f"this row has no answer (fields found: {keys})",
        )
    if require_contexts and values.get("contexts") is None:
        got = "no contexts field" if "contexts" not in values else "contexts is None"
        column = used.get("contexts", "contexts")
        where = f" (column '{column}')" if column != "contexts" else ""
        raise InvalidInputError(
            "contexts",
            "a list of strings (use [] for none)",
            row=row.index,
            detail=f"{got}{where}; the metrics check the answer against the contexts",
        )
    try:
        return Sample.from_fields(
            question=values.get("question"),
            answer=values.get("answer"),
            contexts=values.get("contexts"),
            reference=_reference(values, row.index, used)[0],
            id=values.get("id"),
            meta=_meta(values.get("meta"), used.get("meta", "meta")),
            row=row.index,
        )
    except InvalidInputError as exc:
        base = exc.field.split("[", 1)[0]
        column = used.get(base, base)
        if column != base:
            exc.args = (f"{exc.args[0]} (read from column '{column}')",)
        raise


def to_conversation(row: Row) -> Conversation:
    """Validate one conversation row (``Row.conversation``) into a conversation.

    Raises:
        InvalidInputError: The row is unreadable or a sample row, or its record is refused (see
            :func:`ragmetrics.pipeline.conversations.read_conversation`); the message names the row.
    """
    if row.problem is not None or row.conversation is None:
        what = (
            row.problem
            or "a sample row, not a conversation (it has no messages, nor RAGAS or DeepEval turns)"
        )
        exc = InvalidInputError("messages", "a conversation record", row=row.index)
        message = f"row {row.index}: {what}"
        exc.args = (message.encode("utf-8", "backslashreplace").decode("utf-8"),)
        raise exc
    if isinstance(row.conversation, Conversation):
        return row.conversation
    return read_conversation(row.conversation, row=row.index)


def _reference(
    values: Mapping[str, Any], index: int, used: Mapping[str, str]
) -> tuple[str | None, InvalidInputError | None]:
    """A row's reference as the sample holds it, and why it was dropped (None when it was not).

    A list of strings (RAGAS 0.1's ``ground_truths``) is one reference: its non-empty items joined
    with newlines (an empty list is no reference). Any other value that is not a string is dropped, and
    the error is kept for the metrics that need a reference: they alone fail on this row.
    """
    value = plain_value(values.get("reference"))
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        value = "\n".join(v for v in value if v.strip()) or None
    try:
        if value is not None and not isinstance(value, str):
            raise InvalidInputError("reference", "a string or a list of strings", value, row=index)
        reference = Sample.from_fields(answer="", reference=value, row=index).reference
    except InvalidInputError as exc:
        column = used.get("reference", "reference")
        where = f"read from column '{column}'; " if column != "reference" else ""
        exc.args = (f"{exc.args[0]} ({where}only the metrics that need a reference fail on this row)",)
        return None, exc
    return reference, None


def reference_problem(row: Row) -> InvalidInputError | None:
    """Why the row's reference was dropped (not a string, nor a list of strings), or None."""
    if not isinstance(row.values, Mapping) or row.values.get("reference") is None:
        return None
    return _reference(row.values, row.index, row.columns or {})[1]


def contexts_problem(row: Row) -> InvalidInputError | None:
    """Why the row's contexts cannot be checked against (``field_problems``), or None."""
    problem = (row.field_problems or {}).get("contexts")
    if problem is None:
        return None
    exc = InvalidInputError("contexts", "the text of every retrieved document", row=row.index)
    message = f"row {row.index}: {problem} (only the metrics that need the contexts fail on this row)"
    exc.args = (message.encode("utf-8", "backslashreplace").decode("utf-8"),)
    return exc


def _meta(value: Any, column: str) -> Any:
    """A row's metadata: a mapping as it is, a JSON object text parsed, any other value under its column."""
    if value is None or isinstance(value, Mapping):
        return value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, Mapping):
            return parsed
    return {column: value}


def _field_value(sample: Sample, field: str) -> Any:
    if field == "contexts":
        return list(sample.contexts)
    return getattr(sample, field)


def provenance(row: Row, sample: Sample | None) -> tuple[dict[str, str | None], dict[str, Any]]:
    """What a record keeps of its source row: every column name -> the field it fed, and the rest.

    Returns:
        ``columns``: each of the row's column names, in order, mapped to the sample field read from
        it (None for an extra column); ``extra``: the value of every column the sample does not hold
        as it came (extra columns, and all of them when the row was invalid), numpy values made plain.
        Both are empty for a row given as a Sample or with no column names (column lists).
    """
    if row.source is None or isinstance(row.values, Sample):
        return {}, {}
    values = row.values or {}
    fields = {column: field for field, column in (row.columns or {}).items()} if values else {}
    columns: dict[str, str | None] = {}
    extra: dict[str, Any] = {}
    for name, raw in row.source.items():
        key = str(name)
        field = fields.get(key)
        columns[key] = field
        if field is None or sample is None or _field_value(sample, field) != values.get(field):
            value = plain_value(raw) if field is None else values.get(field)
            extra[key] = _TOO_DEEP if nesting_depth(value) > MAX_NESTING else value
    return columns, extra
