"""Exports of pipeline records: JSONL, CSV and pandas.

JSONL is lossless (:func:`read_jsonl` reads it back); CSV and pandas hold one flat row per record
(:func:`flat_row`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import MissingDependencyError
from ragmetrics.pipeline.records import EvaluationResult


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


def flat_row(record: EvaluationResult, metrics: Sequence[str] | None = None) -> dict[str, Any]:
    """One record as a flat mapping: ids, input, a score and a status column per metric, totals, errors."""
    names = list(metrics) if metrics is not None else list(record.scores)
    sample = record.sample
    row: dict[str, Any] = {
        "index": record.index,
        "id": record.id,
        "question": sample.question if sample else None,
        "answer": sample.answer if sample else None,
        "contexts": json.dumps(list(sample.contexts), ensure_ascii=False) if sample else None,
        "reference": sample.reference if sample else None,
    }
    for name in names:
        row[name] = record.scores.get(name)
        row[f"{name}_status"] = record.status_of(name)
        result = record.results.get(name)
        row[f"{name}_reason"] = result.reasoning if result is not None else None
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


def write_jsonl(records: Iterable[EvaluationResult], path: str | Path) -> Path:
    """Write records as JSON lines, one per record, in the order given."""
    out = Path(path)
    with out.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(record.model_dump_json())
            fh.write("\n")
    return out


def read_jsonl(path: str | Path) -> Iterator[EvaluationResult]:
    """Read back records written by :func:`write_jsonl`."""
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield EvaluationResult.model_validate_json(line)


def write_csv(
    records: Iterable[EvaluationResult], path: str | Path, *, metrics: Sequence[str] | None = None
) -> Path:
    """Write records as CSV, one flat row each (see :func:`flat_row`)."""
    out = Path(path)
    items = list(records)
    names = list(metrics) if metrics is not None else _metric_names(items)
    rows = [flat_row(r, names) for r in items]
    fields: dict[str, None] = {}
    for row in rows:
        for key in row:
            fields.setdefault(key, None)
    with out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(fields) or ["index", "id"])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return out


def to_dataframe(records: Iterable[EvaluationResult], *, metrics: Sequence[str] | None = None) -> Any:
    """Records as a pandas DataFrame, one flat row each (needs the ``pandas`` extra)."""
    pd = _pandas("to_pandas()")
    items = list(records)
    names = list(metrics) if metrics is not None else _metric_names(items)
    return pd.DataFrame([flat_row(r, names) for r in items])
