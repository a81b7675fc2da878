"""Eval snapshots: save, load and list them, and compare two of them (``EvalRegression``).

A snapshot is one JSON file, ``<store_dir>/<name>.json``, written atomically (a temporary file in the
same directory, flushed and fsynced, then ``os.replace``), so a crash mid-write leaves the previous
file intact. Its schema (``schema_version`` 1)::

    {
      "format": "ragmetrics-snapshot",
      "schema_version": 1,
      "name": "v1.0",
      "timestamp": "2026-01-31T12:00:00Z",
      "ragmetrics_version": "0.1.0",
      "meta": {},                                   # free-form: git sha, branch, ...
      "results": [
        {"name": "qa_test",                         # unique within the snapshot
         "score": 0.85, "cost_usd": 0.02, "latency_ms": 1200,   # each may be null
         "metrics": {"faithfulness": 0.9},          # optional named quality scores in [0, 1]
         "samples": [                               # optional per-sample values, paired by id
           {"id": "q1", "score": 0.9, "scores": {"faithfulness": 1.0},
            "cost_usd": 0.001, "latency_ms": 800}],
         "outcome": "passed", "signature": "...", ...}          # extra keys are kept
      ]
    }

``samples`` may also be given as per-metric lists, ``{"id": [...], "score": [...], "faithfulness":
[...]}``; they are stored in the list-of-objects form above (ids default to the list position).

``EvalRegression.compare`` compares two snapshots; how a delta is computed is documented in
:mod:`ragmetrics.regression.compare`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from numbers import Real
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from ragmetrics.errors import SnapshotError, shorten
from ragmetrics.regression.compare import CORE_METRICS, Delta, Diff, compare_snapshots

__all__ = [
    "SCHEMA_VERSION",
    "Delta",
    "Diff",
    "EvalRegression",
    "SampleScore",
    "Snapshot",
    "SnapshotResult",
    "write_atomic",
]

SCHEMA_VERSION = 1
"""The snapshot schema this version writes and the newest it reads."""
FORMAT: Final = "ragmetrics-snapshot"
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


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
            raise SnapshotError(f"snapshot '{name}': invalid results: {_problems(exc)}") from exc

    def result(self, name: str) -> SnapshotResult | None:
        """The result of the case called ``name``, if any."""
        return next((r for r in self.results if r.name == name), None)


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ragmetrics")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return None


def _problems(exc: ValidationError, limit: int = 5) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a mix.

    A temporary file in the same directory is written, flushed and fsynced, then renamed over
    ``path`` with ``os.replace``; the directory is fsynced too where the platform allows.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), 0o644)
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):
        with contextlib.suppress(OSError):
            dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


class EvalRegression:
    """Named snapshots of eval results in one directory, and regression checks between them.

    Args:
        store_dir: Where snapshots live (created on the first save).
    """

    def __init__(self, store_dir: str | os.PathLike[str] = ".ragmetrics_evals") -> None:
        self.store_dir = Path(store_dir)

    def __repr__(self) -> str:
        return f"EvalRegression(store_dir={str(self.store_dir)!r})"

    def path_for(self, name: str) -> Path:
        """The file that holds snapshot ``name``.

        Raises:
            SnapshotError: The name is empty, absolute, has path separators or other characters
                than letters, digits, ``.``, ``_``, ``-``, ``+``, or would escape the store.
        """
        if (
            not isinstance(name, str)
            or not _NAME_RE.fullmatch(name)
            or name.split(".")[0].lower() in _RESERVED
        ):
            raise SnapshotError(
                f"invalid snapshot name {shorten(name, 80)!r}: use 1-100 letters, digits, '.', '_', '-', "
                "'+', starting with a letter or digit (no path separators: write 'feature-x' for 'feature/x')"
            )
        path = self.store_dir / f"{name}.json"
        if path.resolve().parent != self.store_dir.resolve():  # pragma: no cover - the pattern forbids it
            raise SnapshotError(f"snapshot name {name!r} escapes the store {self.store_dir}")
        return path

    def save_snapshot(
        self, name: str, results: Iterable[object] | Snapshot, *, meta: Mapping[str, Any] | None = None
    ) -> Snapshot:
        """Save ``results`` as snapshot ``name`` (replacing one of that name) and return it.

        Args:
            name: The snapshot's name, e.g. ``v1.0`` or ``main-3f9a1c2``.
            results: Dicts with ``name`` and any of ``score``, ``cost_usd``, ``latency_ms``,
                ``metrics``, ``samples``; or ``CaseResult``s; or a ``Snapshot`` (saved under ``name``).
            meta: Free-form context stored with it (git commit, dataset version).

        Raises:
            SnapshotError: The name is unsafe, a result is malformed, or the file cannot be written.
        """
        path = self.path_for(name)
        if isinstance(results, Snapshot):
            snapshot = results.model_copy(update={"name": name, "meta": {**results.meta, **(meta or {})}})
        else:
            snapshot = Snapshot.from_results(name, results, meta=meta)
        try:
            write_atomic(path, snapshot.model_dump_json(indent=2) + "\n")
        except OSError as exc:
            raise SnapshotError(f"could not write snapshot '{name}' to {path}: {exc}") from exc
        return snapshot

    def load_snapshot(self, name: str) -> Snapshot:
        """Read snapshot ``name``.

        Raises:
            SnapshotError: There is no such snapshot, or its file is not valid JSON, not a ragmetrics
                snapshot, of a newer schema, or malformed. The message names the file.
        """
        path = self.path_for(name)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            saved = ", ".join(self.list_snapshots()) or "none"
            raise SnapshotError(f"no snapshot named '{name}' in {self.store_dir} (saved: {saved})") from None
        except OSError as exc:
            raise SnapshotError(f"could not read snapshot file {path}: {exc}") from exc
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SnapshotError(f"snapshot file {path} is corrupt (not valid JSON: {exc})") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise SnapshotError(f'{path} is not a ragmetrics snapshot (no "format": "{FORMAT}" marker)')
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise SnapshotError(f"snapshot file {path} has an invalid schema_version {version!r}")
        if version > SCHEMA_VERSION:
            raise SnapshotError(
                f"snapshot file {path} uses schema {version}, newer than this ragmetrics reads "
                f"({SCHEMA_VERSION}); upgrade ragmetrics"
            )
        try:
            snapshot = Snapshot.model_validate(data)
        except ValidationError as exc:
            raise SnapshotError(f"snapshot file {path} is malformed: {_problems(exc)}") from exc
        return snapshot.model_copy(update={"name": name}) if snapshot.name != name else snapshot

    def list_snapshots(self) -> list[str]:
        """Names of the saved snapshots, sorted."""
        if not self.store_dir.is_dir():
            return []
        return sorted(
            p.stem for p in self.store_dir.glob("*.json") if p.is_file() and _NAME_RE.fullmatch(p.stem)
        )

    def compare(
        self,
        baseline: str | Snapshot,
        current: str | Snapshot,
        thresholds: Mapping[str, float | None] | None = None,
        *,
        min_change: Mapping[str, float] | None = None,
        alpha: float = 0.05,
        resamples: int = 2000,
        seed: int = 0,
    ) -> Diff:
        """Compare two snapshots (names or ``Snapshot`` objects); see the module docstring for the maths.

        Args:
            baseline: The reference snapshot.
            current: The snapshot under test.
            thresholds: Relative tolerances by metric, merged over ``DEFAULT_THRESHOLDS``.
            min_change: Absolute noise floors by metric, merged over ``DEFAULT_MIN_CHANGE``.
            alpha: Significance level for ``Delta.significant``.
            resamples: Permutations and bootstrap resamples per significance test.
            seed: Seed of the test's random generator (results are reproducible).

        Raises:
            SnapshotError: A named snapshot cannot be loaded.
            ConfigError: A threshold names an unknown metric or is not a number; ``alpha`` or
                ``resamples`` is out of range.
        """
        base = self.load_snapshot(baseline) if isinstance(baseline, str) else baseline
        cur = self.load_snapshot(current) if isinstance(current, str) else current
        return compare_snapshots(
            base, cur, thresholds, min_change=min_change, alpha=alpha, resamples=resamples, seed=seed
        )
