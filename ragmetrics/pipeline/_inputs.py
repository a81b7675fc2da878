"""What a run reads: a dataset or column lists turned into a :class:`~ragmetrics.pipeline.dataset.Dataset`.

Column lists (``questions=``, ``answers=``, ...) are zipped into rows after checking their lengths;
``strict=True`` validates every row up front, reporting the first bad row and how many others there are.
:class:`DuplicateIds` notices rows that share an id and warns once, at the end of the run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics._check import config_error
from ragmetrics.errors import ConfigError, InvalidInputError, printable, shorten
from ragmetrics.pipeline.dataset import Dataset, to_sample

__all__ = ["DuplicateIds", "columns_dataset", "to_dataset", "validate_all"]

log = logging.getLogger("ragmetrics.pipeline")
_NAMED = 10
"""Repeated ids named in the warning (the count covers the rest)."""


class DuplicateIds:
    """The record ids of one run, and those that came more than once.

    Records, CSV rows, report rows and snapshot comparisons are keyed by id, so a repeated id makes
    one row shadow another there. The run still scores every row; :meth:`warn` logs one warning on
    the ``ragmetrics.pipeline`` logger naming the repeated ids. Memory: one set entry per row.
    """

    __slots__ = ("_repeats", "_seen")

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._repeats: dict[str, int] = {}

    def add(self, record_id: str) -> None:
        """Count one record's id."""
        if record_id in self._seen:
            self._repeats[record_id] = self._repeats.get(record_id, 1) + 1
        else:
            self._seen.add(record_id)

    @property
    def repeated(self) -> dict[str, int]:
        """Each id that came more than once -> how many rows carry it, in order of first repeat."""
        return dict(self._repeats)

    def warn(self) -> None:
        """Log one warning naming the repeated ids, if there are any."""
        if not self._repeats:
            return
        named = ", ".join(
            f"'{printable(shorten(i, 80))}' x{n}" for i, n in list(self._repeats.items())[:_NAMED]
        )
        more = f" and {len(self._repeats) - _NAMED} more" if len(self._repeats) > _NAMED else ""
        log.warning(
            "ragmetrics: %d sample id(s) repeat: %s%s; every row was scored, but records, reports and "
            "snapshot comparisons key on the id, so give each row a unique id",
            len(self._repeats),
            named,
            more,
        )


def to_dataset(
    dataset: Any,
    questions: Any,
    answers: Any,
    contexts: Any,
    references: Any,
    ids: Any,
    *,
    columns: Mapping[str, str],
    required: Sequence[str],
) -> Dataset:
    """A dataset from either a dataset argument or column lists (not both).

    Args:
        dataset: A dataset, or None to use the column lists.
        questions: Column list, or None.
        answers: Column list, or None.
        contexts: Column list, or None.
        references: Column list, or None.
        ids: Column list, or None.
        columns: Sample field -> column name.
        required: The sample fields every row needs.

    Raises:
        ConfigError: Neither or both were given, or the column lists do not line up.
    """
    if dataset is None:
        if answers is None:
            raise ConfigError("evaluate(): pass a dataset, or answers= (with questions= and contexts=)")
        dataset = columns_dataset(questions, answers, contexts, references, ids)
    elif any(v is not None for v in (questions, answers, contexts, references, ids)):
        raise ConfigError(
            "evaluate(): pass either a dataset or column lists (questions=, answers=, ...), not both"
        )
    if isinstance(dataset, Dataset):
        return dataset
    return Dataset(dataset, columns=columns, required=required)


def validate_all(ds: Dataset, *, needs_contexts: bool) -> None:
    """Check every row before anything is called (``strict=True``).

    Raises:
        InvalidInputError: The first bad row, its message counting (and listing) the others.
    """
    bad: list[InvalidInputError] = []
    for row in ds.sample_rows():
        try:
            to_sample(row, require_contexts=needs_contexts)
        except InvalidInputError as exc:
            bad.append(exc)
    if bad:
        first = bad[0]
        if len(bad) > 1:
            more = ", ".join(str(e.row) for e in bad[1:11]) + (", ..." if len(bad) > 11 else "")
            first.args = (
                f"{first.args[0]} (strict=True: {len(bad)} bad rows; also rows {more}); nothing was run",
            )
        raise first


def columns_dataset(
    questions: Any, answers: Any, contexts: Any, references: Any, ids: Any
) -> list[dict[str, Any]]:
    """Zip column lists into rows, checking they have the same length."""
    given = {
        name: values
        for name, values in (
            ("questions", questions),
            ("answers", answers),
            ("contexts", contexts),
            ("references", references),
            ("ids", ids),
        )
        if values is not None
    }
    if "answers" not in given:
        raise ConfigError("pass answers= (a list with one answer per row)")
    for name, values in given.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise config_error("evaluate", f"{name}=", "a list with one entry per row", values)
    lengths = {name: len(values) for name, values in given.items()}
    if len(set(lengths.values())) > 1:
        raise ConfigError(f"column lists differ in length: {lengths}; give one entry per row in each")
    fields = {
        "questions": "question",
        "answers": "answer",
        "contexts": "contexts",
        "references": "reference",
        "ids": "id",
    }
    n = lengths["answers"]
    return [{fields[name]: values[i] for name, values in given.items()} for i in range(n)]
