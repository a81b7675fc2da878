"""Eval snapshots: save, load and list them, and compare two of them (``EvalRegression``).

A snapshot is one JSON file, ``<store_dir>/<name>.json`` (``format`` ``ragmetrics-snapshot``,
``schema_version`` 1), written atomically (temporary file, fsync, ``os.replace``). It holds a name, a
timestamp, the ragmetrics version, free-form ``meta`` and one result per case: ``score``,
``cost_usd``, ``latency_ms``, named ``metrics`` and optional per-sample values paired by id (also
accepted as per-metric lists). The schema is :mod:`ragmetrics.regression.snapshot_schema`; how
``EvalRegression.compare`` computes a delta is in :mod:`ragmetrics.regression.compare`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmetrics.errors import SnapshotError, shorten
from ragmetrics.regression.compare import Delta, Diff, compare_snapshots
from ragmetrics.regression.snapshot_schema import (
    FORMAT,
    SCHEMA_VERSION,
    SampleScore,
    Snapshot,
    SnapshotResult,
    problems,
)

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

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


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
            raise SnapshotError(f"snapshot file {path} is malformed: {problems(exc)}") from exc
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
