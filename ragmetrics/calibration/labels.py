"""Human labels to calibrate against: the label format of ragmetrics' data files, and a plain JSONL.

Two shapes are read, one row per line (or a list of dicts in Python):

* ragmetrics' data format: ``{"question", "answer", "contexts", "label": {"faithful": true|false|null,
  "relevant": true|false|null, ...}, ...}``. ``faithful`` labels faithfulness and groundedness,
  ``relevant`` labels relevancy; ``null`` leaves the row out of that metric.
* a plain JSONL: ``{"question", "answer", "contexts", "label": true|false}`` (also ``1``/``0``,
  ``"yes"``/``"no"``), one label for every metric calibrated; or ``"label": {"<metric>": true, ...}``.

A label dict is read by the metric's own name first, then by the field above.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError

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
        f"{where}: a label must be true or false (or 1/0, yes/no, null for unlabelled), got {value!r}"
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


def _read(path: Path) -> Iterable[tuple[str, Any]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"calibrate: cannot read the labels file {path}: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path.name} line {number}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{where}: not valid JSON ({exc.msg}); one JSON object per line") from None


def load_labels(data: str | Path | Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> LabelledRows:
    """Read labelled rows for ``metrics``.

    Raises:
        ConfigError: The file cannot be read, a line is not JSON or has no ``label``, a label is not a
            boolean, or some metric has no labelled row (with the label fields that would label it).
    """
    if isinstance(data, (str, Path)):
        path = Path(data)
        if path.suffix.lower() not in (".jsonl", ".ndjson"):
            raise ConfigError(f"calibrate: the labels must be a .jsonl file (one row per line), got {path}")
        items: Iterable[tuple[str, Any]] = _read(path)
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
        found = {m: _label_for(item["label"], m, where) for m in metrics}
        if all(v is None for v in found.values()):
            continue
        row = {k: item[k] for k in _SAMPLE_FIELDS if k in item}
        row.setdefault("id", f"label-{len(rows)}")
        position = len(rows)
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
