"""Exports of pipeline records: JSONL, CSV, pandas and Hugging Face datasets.

JSONL is lossless (:func:`read_jsonl` reads it back); CSV, pandas and ``datasets`` hold one flat row per
record (:func:`flat_row`): the user's own columns under their own names and in their order (contexts a
list, extra columns and metadata as they came), then a score, status and reason column per metric and
the totals. ``level="claims"`` gives one row per claim instead (:func:`claim_rows`); ``level="turns"``
one per conversation turn and ``level="conversations"`` one per conversation
(:mod:`ragmetrics.pipeline.conversation_summary`).

Text that UTF-8 cannot encode (a lone surrogate, e.g. in ``meta`` or an error message) never stops an
export: JSON writes it as a JSON escape (read back as it was) and CSV writes it backslash-escaped.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from ragmetrics._check import check_choice
from ragmetrics.errors import MissingDependencyError
from ragmetrics.pipeline.conversation_summary import conversation_table, turn_table
from ragmetrics.pipeline.records import EvaluationResult

_Model = TypeVar("_Model", bound=BaseModel)
Level = Literal["samples", "claims", "turns", "conversations"]
CLAIM_COLUMNS = (
    "index",
    "id",
    "metric",
    "claim",
    "verdict",
    "relevance",
    "context_index",
    "evidence",
    "quote_found",
    "judge_verdict",
    "span_found",
    "reason",
)
"""The columns of ``level="claims"``: the sample, the metric, the claim, its verdict and evidence."""


def _metric_names(records: Sequence[EvaluationResult]) -> list[str]:
    names: dict[str, None] = {}
    for r in records:
        for name in r.scores:
            names.setdefault(name, None)
    return list(names)


def _pandas(feature: str) -> Any:
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingDependencyError("pandas", "pandas", feature) from exc
    return pd


def _input_columns(record: EvaluationResult, lists: bool) -> dict[str, Any]:
    sample = record.sample
    if not record.columns:
        return {
            "id": record.id,
            "question": sample.question if sample else None,
            "answer": sample.answer if sample else None,
            "contexts": _contexts(list(sample.contexts), lists) if sample else None,
            "reference": sample.reference if sample else None,
        }
    row: dict[str, Any] = {}
    if "id" not in record.columns.values():
        row["id"] = record.id
    for column, field in record.columns.items():
        if column in record.extra:
            value = record.extra[column]
        elif sample is None or field is None:
            value = None
        elif field == "contexts":
            value = list(sample.contexts)
        else:
            value = getattr(sample, field)
        row[column] = value if lists or not isinstance(value, (list, tuple, dict)) else _json(value)
    return row


def _contexts(contexts: list[str], lists: bool) -> Any:
    return contexts if lists else _json(contexts)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def flat_row(
    record: EvaluationResult, metrics: Sequence[str] | None = None, *, lists: bool = False
) -> dict[str, Any]:
    """One record as a flat mapping: its input, a score, status and reason column per metric, totals, errors.

    The input is the source row's own columns, by their own names and in their order (see
    ``EvaluationResult.columns``), with ``id`` first when no column held it; for Samples and column
    lists, ``id``, ``question``, ``answer``, ``contexts``, ``reference``. A column named like one this
    adds (``index``, ``faithfulness``, ``faithfulness_status``, ``mean_score``...) takes the new value.

    Args:
        record: The record.
        metrics: The metric columns, in order (default: the record's).
        lists: Keep contexts and other lists and mappings as Python objects (pandas, ``datasets``);
            False writes them as JSON text (CSV).
    """
    names = list(metrics) if metrics is not None else list(record.scores)
    row: dict[str, Any] = {"index": record.index, **_input_columns(record, lists)}
    for name in names:
        applies = name in record.scores  # a conversation-level metric is on the conversation's row only
        row[name] = record.scores.get(name)
        row[f"{name}_status"] = record.status_of(name) if applies else None
        row[f"{name}_reason"] = _reason(record, name) if applies else None
        spread = record.spread.get(name)
        if spread is not None:
            row[f"{name}_std"] = spread.std
    row["mean_score"] = record.mean_score
    row["calls"] = record.usage.calls
    row["reasks"] = record.usage.reasks
    row["retries"] = record.usage.retries
    row["unmetered_calls"] = record.usage.unmetered
    row["cached_calls"] = record.usage.cached_calls
    row["prompt_tokens"] = record.usage.prompt_tokens
    row["completion_tokens"] = record.usage.completion_tokens
    row["cost_usd"] = record.usage.cost_usd
    row["latency_ms"] = record.latency_ms
    row["errors"] = "; ".join(f"{e.metric or 'row'}: {e.status}: {e.message}" for e in record.errors) or None
    return row


def _reason(record: EvaluationResult, name: str) -> str | None:
    """The metric's reasoning; for a metric without a score, why (for an untrusted judge, both).

    That is its message, or the error record's: the metric's own, else the row's when the whole row
    was refused.
    """
    result = record.results.get(name)
    if result is not None and result.status == "judge_untrusted":  # why first, then what the judge said
        return (
            f"{result.message} The judge's reasoning: {result.reasoning}"
            if result.reasoning
            else result.message
        )
    if result is not None and (result.reasoning or result.score is not None):
        return result.reasoning
    if result is not None and result.message:
        return result.message
    return next((e.message for e in record.errors if e.metric in (name, None)), None)


def dump_json(model: BaseModel, *, indent: int | None = None, **options: Any) -> str:
    """``model`` as JSON; a string UTF-8 cannot encode (a lone surrogate) is written as a JSON escape.

    pydantic refuses to serialise such a string; the standard library escapes it (six ASCII characters),
    which :func:`load_json_model` reads back unchanged.
    """
    try:
        return model.model_dump_json(indent=indent, fallback=str, **options)
    except PydanticSerializationError:
        data = model.model_dump(mode="json", fallback=str, **options)
        separators = (",", ":") if indent is None else None  # compact, as pydantic writes it
        return json.dumps(data, indent=indent, separators=separators, ensure_ascii=True, allow_nan=False)


def load_json_model(cls: type[_Model], text: str | bytes) -> _Model:
    """Read a model written by :func:`dump_json` (pydantic's own parser refuses a lone-surrogate escape)."""
    try:
        return cls.model_validate_json(text)
    except ValidationError as exc:
        if not any(e["type"] == "json_invalid" for e in exc.errors()):
            raise
        try:
            data = json.loads(text)
        except ValueError:
            raise exc from None
        return cls.model_validate(data)


def write_jsonl(records: Iterable[EvaluationResult], path: str | Path) -> Path:
    """Write records as JSON lines, one per record, in the order given."""
    out = Path(path)
    with out.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(dump_json(record))
            fh.write("\n")
    return out


def read_jsonl(path: str | Path) -> Iterator[EvaluationResult]:
    """Read back records written by :func:`write_jsonl`."""
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield load_json_model(EvaluationResult, line)


def write_csv(
    records: Iterable[EvaluationResult], path: str | Path, *, metrics: Sequence[str] | None = None
) -> Path:
    """Write records as CSV, one flat row each (see :func:`flat_row`); text cells pass :func:`csv_cell`."""
    out = Path(path)
    items = list(records)
    names = list(metrics) if metrics is not None else _metric_names(items)
    rows = [flat_row(r, names) for r in items]
    fields: dict[str, None] = {}
    for row in rows:
        for key in row:
            fields.setdefault(key, None)
    with out.open("w", encoding="utf-8", errors="backslashreplace", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(fields) or ["index", "id"])
        writer.writerow({k: csv_cell(k) for k in writer.fieldnames})
        for row in rows:
            writer.writerow({k: ("" if v is None else csv_cell(v)) for k, v in row.items()})
    return out


CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""First characters a spreadsheet reads as a formula (OWASP's CSV injection list)."""


def csv_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet runs: text starting with ``= + - @``, tab or CR gets a leading ``'``.

    Numbers are left as they are (``-0.5`` is a number, not a formula).
    """
    if isinstance(value, str) and value.startswith(CSV_FORMULA_STARTS):
        return "'" + value
    return value


def claim_rows(record: EvaluationResult) -> Iterator[dict[str, Any]]:
    """One row per claim of every metric of a record (see :data:`CLAIM_COLUMNS`)."""
    for metric, result in record.results.items():
        for claim in result.claims:
            yield {
                "index": record.index,
                "id": record.id,
                "metric": metric,
                "claim": claim.text,
                "verdict": claim.verdict,
                "relevance": claim.relevance,
                "context_index": claim.context_index,
                "evidence": claim.evidence,
                "quote_found": claim.evidence_verified,
                "judge_verdict": claim.judge_verdict,
                "span_found": claim.span_found,
                "reason": claim.reason,
            }


def table_rows(
    records: Iterable[EvaluationResult], *, metrics: Sequence[str] | None = None, level: Level = "samples"
) -> list[dict[str, Any]]:
    """The rows of ``to_pandas()``/``to_hf()``: one per record, per claim, per turn or per conversation.

    Raises:
        ConfigError: ``level`` is not one of ``samples``, ``claims``, ``turns``, ``conversations``.
    """
    items = list(records)
    if level == "claims":
        return [row for r in items for row in claim_rows(r)]
    check_choice(
        level,
        "level",
        "to_pandas()",
        ("samples", "turns", "conversations"),
        expected="'samples' (one row per sample), 'claims', 'turns' (one per conversation turn) "
        "or 'conversations'",
    )
    names = list(metrics) if metrics is not None else _metric_names(items)
    if level == "turns":
        return turn_table(items, names, lambda r: flat_row(r, names, lists=True))
    if level == "conversations":
        return conversation_table(items, names)
    return [flat_row(r, names, lists=True) for r in items]


def to_dataframe(
    records: Iterable[EvaluationResult], *, metrics: Sequence[str] | None = None, level: Level = "samples"
) -> Any:
    """Records as a pandas DataFrame: one row per record, or per claim (needs the ``pandas`` extra)."""
    pd = _pandas("to_pandas()")
    rows = table_rows(records, metrics=metrics, level=level)
    if level == "turns" and rows:  # a refused conversation's row has no turn: <NA>, not a float NaN
        return pd.DataFrame(rows).astype({"turn": "Int64", "message_index": "Int64"})
    if level != "claims":
        return pd.DataFrame(rows)
    frame = pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))
    return frame.astype({"index": "int64", "context_index": "Int64"})  # None stays <NA>, not a float NaN


def to_hf_dataset(
    records: Iterable[EvaluationResult], *, metrics: Sequence[str] | None = None, level: Level = "samples"
) -> Any:
    """Records as a Hugging Face ``datasets.Dataset``, with the rows of :func:`to_dataframe`."""
    try:
        import datasets
    except ImportError as exc:
        raise MissingDependencyError("datasets", "datasets", "to_hf()") from exc
    rows = table_rows(records, metrics=metrics, level=level)
    if level == "claims" and not rows:
        return datasets.Dataset.from_dict({name: [] for name in CLAIM_COLUMNS})
    return datasets.Dataset.from_list(rows)


def write_table_jsonl(rows: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Write flat rows (``to_jsonl(level="rows"|"claims")``) as JSON lines."""
    out = Path(path)
    with out.open("w", encoding="utf-8", errors="backslashreplace") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=str))
            fh.write("\n")
    return out
