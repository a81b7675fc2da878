"""Human labels to calibrate against: the label format of ragmetrics' data files, and a plain JSONL.

Two shapes are read, one row per line (or a list of dicts): ragmetrics' data format, whose ``label``
dict is read by the metric's name, else by :data:`LABEL_FIELDS` (``faithful``, ``relevant``...;
``null`` leaves the row out), and a plain JSONL with one boolean-like ``label`` for every metric. A
file is read as ``ragmetrics eval`` reads a JSONL dataset and each row checked as eval checks it, but
a bad row is a ``ConfigError`` naming the file, line and field before any row is scored: the labels
are the measurement.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ragmetrics._check import MAX_NESTING, check_nesting
from ragmetrics.errors import ConfigError, InvalidInputError, shorten
from ragmetrics.metrics.base import too_long_to_split
from ragmetrics.pipeline.dataset import Row, detect_encoding, read_lines, to_sample

__all__ = ["EXAMPLE_LABELS", "LABEL_FIELDS", "LabelledRows", "example_path", "load_labels"]

LABEL_FIELDS: dict[str, str] = {
    "faithfulness": "faithful",
    "groundedness": "faithful",
    "relevancy": "relevant",
    "answer_correctness": "correct",
    "context_relevancy": "relevant_contexts",
    "context_precision": "relevant_contexts",
    "context_recall": "complete_contexts",
}
"""Metric -> the field of a label dict that labels it (when the dict has no key named after the metric)."""

EXAMPLE_LABELS = "calibration_expertqa.jsonl"
"""The bundled labelled set (ExpertQA, MIT; see ``ragmetrics/data/ATTRIBUTION.md``)."""

_TRUE = {"true", "yes", "1", "pass", "passed", "good"}
_FALSE = {"false", "no", "0", "fail", "failed", "bad"}
_SAMPLE_FIELDS = ("id", "question", "answer", "contexts", "reference")


def example_path() -> Path:
    """The bundled labelled set's path."""
    return Path(str(resources.files("ragmetrics") / "data" / EXAMPLE_LABELS))


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelledRows:
    """The rows to score, and for each metric the rows it has a label for."""

    rows: list[dict[str, Any]]
    """The sample fields of every row that is labelled for at least one metric (ids filled in)."""
    labels: dict[str, dict[int, bool]]
    """Metric -> {row position in ``rows``: the human label}."""
    source: str
    """Where the labels came from (a path, or "rows")."""


def _bool(value: Any, where: str) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(
        f"{where}: a label must be true or false (or 1/0, yes/no, null for unlabelled), "
        f"got {shorten(repr(value), 80)}"
    )


def _label_for(raw: Any, metric: str, where: str) -> bool | None:
    if isinstance(raw, Mapping):
        if metric in raw:
            return _bool(raw[metric], f"{where} label.{metric}")
        field = LABEL_FIELDS.get(metric)
        if field is not None and field in raw:
            return _bool(raw[field], f"{where} label.{field}")
        return None
    return _bool(raw, f"{where} label")


def _read(path: Path, encoding: str | None) -> Iterable[tuple[str, Any]]:
    try:
        text_encoding = detect_encoding(path, encoding)
    except OSError as exc:
        raise ConfigError(f"calibrate: cannot read the labels file {path}: {exc.strerror or exc}") from None
    for line in read_lines(path, text_encoding):
        where = f"{path.name} line {line.number}"
        if line.problem is not None:
            raise ConfigError(f"{where}: {line.problem}")
        if not line.text.strip():
            continue
        try:
            yield where, json.loads(line.text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON ({exc.msg}); one JSON object per line") from None
        except RecursionError:
            raise ConfigError(
                f"{where}: nested too deeply to read (a row's values may nest {MAX_NESTING} levels, "
                "MAX_NESTING); flatten it or leave the field out"
            ) from None


def _checked(item: Mapping[str, Any], position: int, where: str) -> dict[str, Any]:
    """The row's sample fields, checked as ``eval`` checks a row (``to_sample``): types, nesting, text."""
    row = {k: item[k] for k in _SAMPLE_FIELDS if k in item}
    try:
        sample = to_sample(Row(position, row, source=item))
        long = too_long_to_split(sample, "calibrate")  # as eval's claim metrics refuse it: at once
        if long is not None:
            raise long
    except InvalidInputError as exc:
        message = str(exc).removeprefix(f"row {position}: ")
        raise ConfigError(f"{where}: {message}") from None
    return row


def load_labels(
    data: str | Path | Sequence[Mapping[str, Any]], metrics: Sequence[str], *, encoding: str | None = None
) -> LabelledRows:
    """Read labelled rows for ``metrics``.

    Args:
        data: A ``.jsonl`` file or a list of dicts.
        metrics: The metrics to read labels for.
        encoding: The file's text encoding (a Python codec name such as ``"cp1252"``); default UTF-8.

    Raises:
        ConfigError: The file cannot be read or decoded, a line is not JSON, is too long or nests too
            deeply, has no ``label`` or a bad sample field, a label is not a boolean, or some metric
            has no labelled row (with the label fields that would label it).
    """
    if isinstance(data, (str, Path)):
        path = Path(data)
        if path.suffix.lower() not in (".jsonl", ".ndjson"):
            raise ConfigError(f"calibrate: the labels must be a .jsonl file (one row per line), got {path}")
        items: Iterable[tuple[str, Any]] = _read(path, encoding)
        source = str(path)
    else:
        items = ((f"row {i}", row) for i, row in enumerate(data))
        source = "rows"
    rows: list[dict[str, Any]] = []
    labels: dict[str, dict[int, bool]] = {m: {} for m in metrics}
    for where, item in items:
        if not isinstance(item, Mapping):
            raise ConfigError(f"{where}: expected a JSON object, got {type(item).__name__}")
        if "label" not in item:
            raise ConfigError(
                f"{where}: no 'label' field (true/false, or a dict such as {{'faithful': true}})"
            )
        try:
            check_nesting(item["label"], "label")  # first: a label nested too deeply breaks repr() below
        except InvalidInputError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        found = {m: _label_for(item["label"], m, where) for m in metrics}
        if all(v is None for v in found.values()):
            continue
        position = len(rows)
        row = _checked(item, position, where)
        row.setdefault("id", f"label-{position}")
        rows.append(row)
        for metric, value in found.items():
            if value is not None:
                labels[metric][position] = value
    for metric, got in labels.items():
        if not got:
            field = LABEL_FIELDS.get(metric)
            also = f" or label.{field}" if field else ""
            raise ConfigError(
                f"calibrate: no row of {source} is labelled for {metric} (label: true/false, "
                f"label.{metric}{also})"
            )
    return LabelledRows(rows=rows, labels=labels, source=source)
