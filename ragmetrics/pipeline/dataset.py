"""Datasets in, validated samples out: lists of dicts or samples, JSONL/JSON/CSV files, pandas, HF datasets.

:class:`Dataset` wraps any supported source and yields :class:`Row` values lazily, each keeping its
source row. Column names are configurable (``columns={"question": "query", ...}``); an unmapped field
is read from its own name, the names other tools use (``ALIASES``) or a looser one (``FALLBACKS``).
Files are UTF-8 unless ``encoding=`` says otherwise, decoded line by line (:mod:`._file_rows`). A
tabular source lacking a needed column is a ``ConfigError`` at once; a bad row is not an exception
here: :func:`to_sample` raises ``InvalidInputError`` naming the row and the field, which the pipeline
turns into that row's error record. A record without an answer that is a conversation (see
:func:`~ragmetrics.pipeline.conversations.conversation_format`) is a conversation row (``Row.conversation``);
:meth:`Dataset.sample_rows` reads it as one sample row per assistant turn, as the pipeline scores it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError, MissingDependencyError, shorten
from ragmetrics.pipeline._csv_contexts import csv_contexts
from ragmetrics.pipeline._file_rows import (
    Line,
    TextEncoding,
    csv_records,
    detect_encoding,
    read_lines,
    read_text,
)
from ragmetrics.pipeline._row import Row, plain_value, provenance, to_conversation, to_sample
from ragmetrics.pipeline._turn_rows import TurnOptions, turn_rows
from ragmetrics.pipeline.conversations import conversation_format
from ragmetrics.sample import Conversation, Sample

__all__ = [
    "ALIASES",
    "FALLBACKS",
    "FIELDS",
    "Dataset",
    "Row",
    "TurnOptions",
    "turn_rows",
    "detect_encoding",
    "provenance",
    "read_lines",
    "to_conversation",
    "to_sample",
]

FIELDS = ("question", "answer", "contexts", "reference", "id", "meta")
"""The sample fields a column can map to."""
ALIASES: Mapping[str, tuple[str, ...]] = {
    "question": ("user_input", "query", "input"),
    "answer": ("response", "actual_output"),
    "contexts": ("retrieved_contexts", "retrieval_context"),
    "reference": ("ground_truth", "expected_output"),
    "id": ("sample_id",),
}
"""The column names of other tools (RAGAS ``user_input``/``response``/``retrieved_contexts``/``reference``,
DeepEval ``input``/``actual_output``/``retrieval_context``/``expected_output``, LlamaIndex
``query``/``response``/``contexts``), recognised beside the field's own name when no mapping names
the column. Two of them (or one and the field's own name) in one dataset are ambiguous: an error."""
FALLBACKS: Mapping[str, tuple[str, ...]] = {
    "question": ("prompt",),
    "answer": ("output", "prediction", "generated_answer"),
    "contexts": ("context", "documents", "passages"),
    "reference": ("ground_truths", "reference_answer"),
    "id": ("qid", "uid"),
}
"""Looser names, tried only when neither the field's name nor an alias is there (DeepEval's ``context``,
the ideal context, gives way to its ``retrieval_context`` and is then kept as an extra column)."""
_MISSING = object()


def _read_parquet(path: Path) -> Any:
    """A Parquet file as a pandas DataFrame (pyarrow gives numpy arrays for lists: made plain per row).

    Raises:
        ConfigError: The file is missing or is not Parquet.
        MissingDependencyError: pandas or pyarrow is not installed.
    """
    if not path.is_file():
        raise ConfigError(f"dataset file {path} does not exist (or is not a file)")
    try:
        import pandas as pd
    except ImportError:
        raise MissingDependencyError("pandas", "pandas", f"reading {path.name} (Parquet)") from None
    try:
        import pyarrow  # noqa: F401 - the engine pandas needs; imported here for a clear message
    except ImportError:
        raise MissingDependencyError("pyarrow", "pandas", f"reading {path.name} (Parquet)") from None
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"dataset file {path}: cannot read it as Parquet: {exc}") from exc


class AmbiguousColumns(ValueError):
    """Two columns could both be one sample field."""

    def __init__(self, field: str, found: Sequence[str]) -> None:
        names = " and ".join(f"'{c}'" for c in found)
        super().__init__(
            f"columns {names} could both be the {field}; name the one to use with "
            f"columns={{'{field}': '{found[0]}'}} (or rename the other)"
        )


def _candidate(field: str, present: Any, taken: Any = ()) -> str | None:
    """The column for ``field`` among ``present`` names: its own name or an alias, else a fallback.

    Columns in ``taken`` (mapped to another field by ``columns=``) are not candidates.

    Raises:
        AmbiguousColumns: Two names of the same rank are present.
    """
    for names in ((field, *ALIASES.get(field, ())), FALLBACKS.get(field, ())):
        found = [n for n in names if n in present and n not in taken]
        if len(found) > 1:
            raise AmbiguousColumns(field, found)
        if found:
            return found[0]
    return None


class Dataset:
    """A dataset source, read lazily and as often as needed.

    Args:
        data: A list (or any iterable) of dicts or :class:`~ragmetrics.sample.Sample`; a path to a
            ``.jsonl``/``.ndjson``, ``.json`` (a list of objects), ``.csv`` or ``.parquet`` file (Parquet
            is read with pandas and pyarrow, the ``pandas`` extra); a pandas DataFrame; or a Hugging
            Face ``datasets.Dataset``.
        columns: Sample field -> column name, for the fields whose column is named differently.
        required: Fields every row must carry (checked as columns for tabular sources).
        encoding: A file's text encoding (a Python codec name such as ``"cp1252"``); default UTF-8.
            A byte order mark wins over it for the UTF family.

    Raises:
        ConfigError: Unknown field in ``columns``, an unsupported source or file type, a missing
            file, an unknown encoding (or one given for a source that is not a file), a CSV whose
            header cannot be read, or a tabular source without a needed column.
    """

    def __init__(
        self,
        data: Any,
        *,
        columns: Mapping[str, str] | None = None,
        required: Iterable[str] = ("answer",),
        encoding: str | None = None,
    ) -> None:
        columns = dict(columns or {})
        unknown = sorted(set(columns) - set(FIELDS))
        if unknown:
            raise ConfigError(
                f"columns: unknown sample field(s) {unknown}; map any of {list(FIELDS)} "
                "to your column names, e.g. columns={'answer': 'response'}"
            )
        if isinstance(data, (str, Path)) and Path(data).suffix.lower() == ".parquet":
            if encoding is not None:
                raise ConfigError(f"dataset file {data}: encoding= applies to text files, not to Parquet")
            data = _read_parquet(Path(data))
        self.data = data
        self.required = tuple(required)
        self._explicit = columns
        self._taken = frozenset(columns.values())
        self.kind = self._kind(data)
        self.encoding: TextEncoding | None = None
        if self.kind in ("jsonl", "json", "csv"):
            self.encoding = detect_encoding(Path(data), encoding)
        elif encoding is not None:
            raise ConfigError(f"dataset: encoding= applies to files only, not to a {type(data).__name__}")
        self.columns = dict(columns)
        self.turns = TurnOptions()
        """How conversation rows are read turn by turn (:meth:`sample_rows`); see :meth:`with_turns`."""
        names = self._column_names()
        if names is not None:
            self.columns = self._resolve(names)

    # -- what the source is ------------------------------------------------------------------------
    @staticmethod
    def _kind(data: Any) -> str:
        if isinstance(data, (str, Path)):
            path = Path(data)
            if not path.is_file():
                raise ConfigError(f"dataset file {path} does not exist (or is not a file)")
            suffix = path.suffix.lower()
            if suffix in (".jsonl", ".ndjson"):
                return "jsonl"
            if suffix == ".json":
                return "json"
            if suffix == ".csv":
                return "csv"
            raise ConfigError(
                f"dataset file {path}: unsupported type '{suffix}'; use .jsonl, .json, .csv or .parquet "
                "(or load it into a pandas DataFrame)"
            )
        if hasattr(data, "itertuples") and hasattr(data, "columns"):
            return "pandas"
        if hasattr(data, "column_names") and hasattr(data, "features"):
            return "hf"
        if isinstance(data, (Mapping, bytes)):
            raise ConfigError(
                "dataset: expected a list of rows (dicts or Samples), a file path, a DataFrame "
                f"or a datasets.Dataset, got a {type(data).__name__}; for column lists use "
                "evaluate(questions=..., answers=..., contexts=...)"
            )
        if isinstance(data, Iterable):
            return "rows"
        raise ConfigError(f"dataset: unsupported type {type(data).__name__}")

    def _column_names(self) -> list[str] | None:
        if self.kind == "pandas":
            return [str(c) for c in self.data.columns]
        if self.kind == "hf":
            return list(self.data.column_names)
        if self.kind == "csv":
            return self._csv_header()
        return None

    def _csv_header(self) -> list[str]:
        header = next(csv_records(self._lines()), None)
        if header is None:
            raise ConfigError(f"dataset file {self.data} is empty (no header row)")
        if header.fields is None:
            raise ConfigError(f"dataset file {self.data}: cannot read the header row: {header.problem}")
        return header.fields

    def _resolve(self, names: Sequence[str]) -> dict[str, str]:
        present = set(names)
        resolved: dict[str, str] = {}
        for field in FIELDS:
            if field in self._explicit:
                column = self._explicit[field]
                if column not in present:
                    raise ConfigError(
                        f"dataset has no column '{column}' (mapped to '{field}' by columns=); "
                        f"its columns are: {', '.join(names)}"
                    )
                resolved[field] = column
                continue
            try:
                alias = _candidate(field, present, self._taken)
            except AmbiguousColumns as exc:
                raise ConfigError(f"dataset: {exc}") from None
            if alias is not None:
                resolved[field] = alias
            elif field in self.required and not present & {"messages", "turns"}:  # a conversation table
                raise ConfigError(
                    f"dataset has no column '{field}' (needed by the metrics); its columns are: "
                    f"{', '.join(names)}; name yours with columns={{'{field}': '<column>'}}"
                )
        return resolved

    def __len__(self) -> int:
        total = self.total()
        if total is None:
            raise TypeError("this dataset's length is not known before it is read")
        return total

    def total(self) -> int | None:
        """The number of rows when it is known without reading them all (None for generators)."""
        if self.kind in ("pandas", "hf"):
            return len(self.data)
        if self.kind == "jsonl":
            return sum(1 for line in self._lines() if line.problem is not None or line.text.strip())
        if self.kind == "csv":
            return max(0, sum(1 for _ in csv_records(self._lines())) - 1)
        if self.kind == "json":
            return len(self._json_rows())
        if isinstance(self.data, Sequence):
            return len(self.data)
        return None

    def sample_total(self) -> int | None:
        """The number of rows :meth:`sample_rows` yields (a conversation counts its turns), when known."""
        total = self.total()
        if total is None or not self._may_hold_conversations():
            return total
        return sum(1 for _ in self.sample_rows())

    def _may_hold_conversations(self) -> bool:
        """False only when no row can be a conversation (checked without reading every row in full)."""
        keys = ("messages", "turns", "user_input")
        names = self._column_names()
        if names is not None:
            return any(k in names for k in keys)
        if self.kind == "jsonl":
            return any(f'"{k}"' in line.text for line in self._lines() for k in keys)
        items = self._json_rows() if self.kind == "json" else self.data
        return any(
            isinstance(item, Conversation)
            or (isinstance(item, Row) and item.conversation is not None)
            or (isinstance(item, Mapping) and conversation_format(item) is not None)
            for item in items
        )

    def with_turns(self, options: TurnOptions) -> Dataset:
        """This dataset with its conversations read with ``options`` (itself when they are its own)."""
        if options == self.turns:
            return self
        copy = Dataset.__new__(Dataset)
        copy.__dict__.update(self.__dict__)
        copy.turns = options
        return copy

    @property
    def rereadable(self) -> bool:
        """Whether the rows can be read again (False for a one-shot iterator, such as a generator)."""
        return not (self.kind == "rows" and not isinstance(self.data, Sequence))

    def materialize(self) -> Dataset:
        """A dataset that can be read twice (a one-shot iterator is read into a list)."""
        if self.kind == "rows" and not isinstance(self.data, Sequence):
            copy = Dataset.__new__(Dataset)
            copy.__dict__.update(self.__dict__)
            copy.data = list(self.data)
            return copy
        return self

    # -- reading ---------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Row]:
        return self.rows()

    def rows(self) -> Iterator[Row]:
        """Yield every row, in order."""
        if self.kind == "pandas":
            yield from self._pandas_rows()
        elif self.kind == "hf":
            for i, item in enumerate(self.data):
                yield self._mapped(i, item)
        elif self.kind == "jsonl":
            yield from self._jsonl_rows()
        elif self.kind == "json":
            for i, item in enumerate(self._json_rows()):
                yield self._row(i, item)
        elif self.kind == "csv":
            yield from self._csv_rows()
        else:
            for i, item in enumerate(self.data):
                yield self._row(i, item)

    def sample_rows(self) -> Iterator[Row]:
        """Every row as the pipeline scores it: a conversation row as one row per assistant turn.

        Each row keeps its index, shifted by the turns added before it; see
        :func:`ragmetrics.pipeline._turn_rows.turn_rows`.
        """
        return turn_rows(self.rows(), self.turns)

    def _row(self, index: int, item: Any) -> Row:
        if isinstance(item, Row):  # already read (``ragmetrics eval --limit`` passes the first rows)
            return item
        if isinstance(item, Sample):
            return Row(index, item)
        if isinstance(item, Conversation):
            return Row(index, None if item.id is None else {"id": item.id}, conversation=item)
        if isinstance(item, Mapping):
            return self._mapped(index, item)
        return Row(
            index,
            None,
            f"expected a dict or a Sample, got {type(item).__name__} {shorten(item, 80)}",
        )

    def _mapped(self, index: int, item: Mapping[str, Any]) -> Row:
        values: dict[str, Any] = {}
        used: dict[str, str] = {}
        for field in FIELDS:
            column = self.columns.get(field)
            if column is None:
                try:
                    column = _candidate(field, item, self._taken) or field
                except AmbiguousColumns as exc:
                    return Row(index, None, str(exc), source=item)
            value = item.get(column, _MISSING)
            if value is not _MISSING:
                values[field] = plain_value(value)
                used[field] = column
        if "answer" not in values and conversation_format(item) is not None:
            record = {str(key): plain_value(value) for key, value in item.items()}
            ident = {"id": record["id"]} if record.get("id") is not None else None
            return Row(index, ident, conversation=record, source=item)
        return Row(index, values, columns=used, source=item)

    def _pandas_rows(self) -> Iterator[Row]:
        names = [str(c) for c in self.data.columns]
        for i, values in enumerate(self.data.itertuples(index=False, name=None)):
            yield self._mapped(i, dict(zip(names, values, strict=True)))

    def _lines(self) -> Iterator[Line]:
        assert self.encoding is not None  # set for every file source
        return read_lines(Path(self.data), self.encoding)

    def _jsonl_rows(self) -> Iterator[Row]:
        index = 0
        for line in self._lines():
            where = f"line {line.number} of {self.data}"
            if line.problem is not None:
                yield Row(index, None, f"{where}: {line.problem}")
            elif not line.text.strip():
                continue
            else:
                try:
                    item = json.loads(line.text)
                except ValueError as exc:
                    yield Row(index, None, f"{where} is not valid JSON: {exc}")
                except RecursionError:
                    yield Row(index, None, f"{where} is nested too deeply to read")
                else:
                    yield self._row(index, item)
            index += 1

    def _json_rows(self) -> list[Any]:
        assert self.encoding is not None
        try:
            data = json.loads(read_text(Path(self.data), self.encoding))
        except RecursionError as exc:
            raise ConfigError(f"dataset file {self.data} is nested too deeply to read") from exc
        except ValueError as exc:
            raise ConfigError(f"dataset file {self.data} is not valid JSON: {exc}") from exc
        if isinstance(data, Mapping) and isinstance(data.get("data"), list):
            data = data["data"]
        if not isinstance(data, list):
            raise ConfigError(f"dataset file {self.data}: expected a JSON list of objects")
        return data

    def _csv_rows(self) -> Iterator[Row]:
        records = csv_records(self._lines())
        header = next(records, None)
        if header is None or header.fields is None:
            return
        for i, record in enumerate(records):
            if record.fields is None:
                yield Row(i, None, f"line {record.line} of {self.data}: {record.problem}")
                continue
            values: dict[str, Any] = dict(zip(header.fields, record.fields, strict=True))
            column = self.columns.get("contexts")
            if column is not None and column in values:
                try:
                    values[column] = csv_contexts(values[column])
                except ValueError as exc:
                    where = f"line {record.line} of {self.data}, column '{column}'"
                    yield Row(i, None, f"{where}: {exc}", source=values)
                    continue
            column = self.columns.get("meta")
            if column is not None and isinstance(values.get(column), str) and values[column]:
                try:
                    values[column] = json.loads(values[column])
                except (ValueError, RecursionError):  # kept as text
                    pass
            yield self._mapped(i, values)
