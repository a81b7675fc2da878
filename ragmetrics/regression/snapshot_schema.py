"""The snapshot file's records: :class:`Snapshot`, :class:`SnapshotResult`, :class:`SampleScore`.

The schema is described in :mod:`ragmetrics.regression.snapshot`, which saves, loads and compares
these records; :mod:`ragmetrics.regression.compare` reads them. Both import this module, and it imports
neither, so the dependency runs one way: ``snapshot_schema <- compare <- snapshot``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from numbers import Real
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from ragmetrics.errors import SnapshotError, shorten
from ragmetrics.pipeline.judge_health import JudgeHealth

__all__ = [
    "CORE_METRICS",
    "FORMAT",
    "SCHEMA_VERSION",
    "SampleScore",
    "Snapshot",
    "SnapshotResult",
    "problems",
]

CORE_METRICS = ("score", "cost_usd", "latency_ms")
"""The metrics every result has; named quality metrics come on top."""

SCHEMA_VERSION = 1
"""The snapshot schema this version writes and the newest it reads."""
FORMAT: Final = "ragmetrics-snapshot"


def _number(kind: str, low: float | None, high: float | None) -> Any:
    def check(value: object) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, Real):
            raise ValueError(
                f"{kind} must be a number or null, got {type(value).__name__} {shorten(value, 40)}"
            )
        out = float(value)
        if not math.isfinite(out):
            raise ValueError(f"{kind} must be finite, got {out}")
        if (low is not None and out < low) or (high is not None and out > high):
            bounds = f"[{low}, {high}]" if high is not None else f">= {low}"
            raise ValueError(f"{kind} must be {bounds}, got {out}")
        return out

    return BeforeValidator(check)


Score = Annotated[float | None, _number("a score", 0.0, 1.0)]
Cost = Annotated[float | None, _number("cost_usd", 0.0, None)]
Latency = Annotated[float | None, _number("latency_ms", 0.0, None)]


class SampleScore(BaseModel):
    """One sample's values inside a snapshot result, paired across snapshots by ``id``."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """The sample id (ints are stored as strings)."""
    score: Score = None
    """The sample's overall score in [0, 1]."""
    scores: dict[str, Score] = Field(default_factory=dict)
    """Named quality scores in [0, 1] (``faithfulness``...), matching the result's ``metrics``."""
    cost_usd: Cost = None
    """Cost spent on this sample."""
    latency_ms: Latency = None
    """Latency of this sample."""

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value


class SnapshotResult(BaseModel):
    """One case's values inside a snapshot. Unknown keys are kept as they are."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    """The case name, unique within a snapshot."""
    score: Score = None
    """The case's quality score in [0, 1]; None when it has none (it errored)."""
    cost_usd: Cost = None
    """What the case cost in USD."""
    latency_ms: Latency = None
    """How long the case took."""
    metrics: dict[str, Score] = Field(default_factory=dict)
    """Named quality scores in [0, 1], compared like ``score``."""
    samples: list[SampleScore] = Field(default_factory=list)
    """Per-sample values for the significance test; empty when unknown."""
    outcome: str | None = None
    """``passed``, ``failed`` or ``error`` when the result comes from an eval case run."""
    signature: str | None = None
    """What produced the score (metric, prompts, judge); a change is reported by ``compare``."""
    judge_health: dict[str, JudgeHealth] = Field(default_factory=dict)
    """Per judge spec, when the case ran claim metrics: spans and quotes found, re-asks. Empty in
    snapshots written before it existed; ``compare`` notes a drop of a judge's reading rate."""

    @field_validator("samples", mode="before")
    @classmethod
    def _columns_to_rows(cls, value: object) -> object:
        if not isinstance(value, Mapping):
            return value
        columns = {str(k): list(v) for k, v in value.items()}
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"per-metric sample lists must have one length, got {sorted(lengths)}")
        size = lengths.pop() if lengths else 0
        ids = columns.pop("id", list(range(size)))
        rows = []
        for i in range(size):
            row: dict[str, Any] = {"id": ids[i], "scores": {}}
            for key, col in columns.items():
                if key in CORE_METRICS:
                    row[key] = col[i]
                else:
                    row["scores"][key] = col[i]
            rows.append(row)
        return rows

    @field_validator("samples")
    @classmethod
    def _unique_ids(cls, value: list[SampleScore]) -> list[SampleScore]:
        seen: set[str] = set()
        for sample in value:
            if sample.id in seen:
                raise ValueError(f"sample id {sample.id!r} appears twice")
            seen.add(sample.id)
        return value

    @field_validator("metrics")
    @classmethod
    def _metric_names(cls, value: dict[str, float | None]) -> dict[str, float | None]:
        clash = sorted(set(value) & set(CORE_METRICS))
        if clash:
            raise ValueError(f"metrics may not be named {clash}; those are top-level fields")
        return value


class Snapshot(BaseModel):
    """A named, timestamped set of eval results, as stored in one JSON file."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["ragmetrics-snapshot"] = FORMAT
    """Marks the file as a ragmetrics snapshot."""
    schema_version: int = SCHEMA_VERSION
    """The schema the file follows."""
    name: str
    """The snapshot's name (its file name without ``.json``)."""
    timestamp: datetime
    """When it was taken (UTC)."""
    ragmetrics_version: str | None = None
    """The ragmetrics version that wrote it."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Free-form context: git commit, branch, dataset version."""
    results: list[SnapshotResult] = Field(default_factory=list)
    """One entry per case."""

    @field_validator("results")
    @classmethod
    def _unique_names(cls, value: list[SnapshotResult]) -> list[SnapshotResult]:
        names = [r.name for r in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"case names must be unique, repeated: {dupes}")
        return value

    @classmethod
    def from_results(
        cls, name: str, results: Iterable[object], *, meta: Mapping[str, Any] | None = None
    ) -> Snapshot:
        """Build an unsaved snapshot from dicts, ``SnapshotResult``s or objects with ``to_snapshot_result()``.

        Raises:
            SnapshotError: A result is malformed (the message names it).
        """
        records = []
        for i, item in enumerate(results):
            if hasattr(item, "to_snapshot_result"):
                item = item.to_snapshot_result()
            if isinstance(item, BaseModel):
                item = item.model_dump()
            if not isinstance(item, Mapping):
                raise SnapshotError(
                    f"snapshot '{name}': result {i} is a {type(item).__name__}; expected a dict such as "
                    "{'name': 'qa_test', 'score': 0.85, 'cost_usd': 0.02, 'latency_ms': 1200}"
                )
            records.append(dict(item))
        try:
            return cls(
                name=name,
                timestamp=datetime.now(timezone.utc),
                ragmetrics_version=_version(),
                meta=dict(meta or {}),
                results=records,
            )
        except ValidationError as exc:
            raise SnapshotError(f"snapshot '{name}': invalid results: {problems(exc)}") from exc

    def result(self, name: str) -> SnapshotResult | None:
        """The result of the case called ``name``, if any."""
        return next((r for r in self.results if r.name == name), None)


def _version() -> str | None:
    try:
        return version("ragmetrics")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return None


def problems(exc: ValidationError, limit: int = 5) -> str:
    """The first ``limit`` validation problems of ``exc``, one ``field: message`` each."""
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
