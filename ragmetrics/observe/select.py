"""Which traces to score: a seeded sample, a time window, attribute filters, and the incremental cursor.

The sample is decided per trace id (a hash of the seed and the id), not by position, so a trace is in
or out of ``--sample 0.1 --seed 7`` whatever else the file holds, and an hourly job keeps the same
decision for traces it has already seen. The cursor (``--incremental PATH``) is a JSON file of the trace
ids (and session ids: a session is one conversation) already scored; a trace is added once its record
is final (scored, or an input problem that a re-run cannot fix), so a provider error or a budget skip
is tried again next time; a session is added once every record of it is final.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.pipeline.dataset import Row

__all__ = ["FINAL_STATUSES", "Cursor", "parse_time", "parse_where", "select_traces"]

FINAL_STATUSES = frozenset({"ok", "invalid_input", "missing_input"})
"""Record statuses after which a trace counts as scored (a re-run would give the same)."""


def parse_time(text: str, flag: str) -> int:
    """An ISO 8601 time (``2026-12-01T10:00``, UTC unless it says) or unix seconds, as unix nanoseconds."""
    try:
        return int(float(text) * 1e9)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{flag}: expected an ISO 8601 time or unix seconds, got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1e9)


def parse_where(items: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` filters on the root span (``name`` or any attribute read from the trace)."""
    found: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--where: expected KEY=VALUE (e.g. root_name=rag-query), got {item!r}")
        found[key.strip()] = value
    return found


def _sampled(trace_id: str, rate: float, seed: int) -> bool:
    digest = hashlib.sha256(f"{seed}:{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


class Cursor:
    """The trace ids already scored, kept in a JSON file (written atomically)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.scored: set[str] = set()
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                ids = data["scored"] if data.get("format") == "ragmetrics-trace-cursor" else None
            except (OSError, ValueError, AttributeError, KeyError, TypeError):
                ids = None
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ConfigError(
                    f"--incremental: {self.path} is not a ragmetrics trace cursor (or is damaged); move it "
                    "away to score every trace again"
                )
            self.scored = set(ids)

    def add(self, records: Iterable[Any]) -> int:
        """Mark the traces whose records are final; returns how many were added."""
        added = 0
        final: dict[str, bool] = {}  # per trace or session: whether every record of it is final
        for record in records:
            meta = record.extra if record.sample is None else record.sample.meta
            key = meta.get("session_id") if isinstance(meta.get("session_id"), str) else None
            key = key or (
                (record.extra.get("trace_id") if record.sample is None else record.sample.id) or None
            )
            statuses = {record.status_of(m) for m in record.scores} or {"invalid_input"}
            if key:
                final[key] = final.get(key, True) and statuses <= FINAL_STATUSES
        for key, done in final.items():
            if done and key not in self.scored:
                self.scored.add(key)
                added += 1
        return added

    def save(self) -> None:
        """Write the cursor (atomically: a crash leaves the old one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"format": "ragmetrics-trace-cursor", "scored": sorted(self.scored)})
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".cursor-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(payload)
        os.replace(tmp, self.path)


def _root(row: Row) -> Mapping[str, Any]:
    return row.source or {}


def select_traces(
    rows: Sequence[Row],
    *,
    sample: float | None = None,
    seed: int = 0,
    since: int | None = None,
    until: int | None = None,
    where: Mapping[str, str] | None = None,
    cursor: Cursor | None = None,
) -> list[Row]:
    """The rows to score, renumbered in order. Rows with no trace id (unreadable lines) are always kept."""
    if sample is not None and not 0.0 < sample <= 1.0:
        raise ConfigError(f"--sample: a share in (0, 1], got {sample}")
    kept: list[Row] = []
    for row in rows:
        root = _root(row)
        trace_id = root.get("trace_id") or root.get("session_id")  # a session is sampled whole
        if trace_id:
            started = root.get("start_time_unix_nano") or 0
            if sample is not None and not _sampled(trace_id, sample, seed):
                continue
            if since is not None and started < since:
                continue
            if until is not None and started >= until:
                continue
            if where and any(
                str(root.get(k, root.get("attributes", {}).get(k))) != v for k, v in where.items()
            ):
                continue
            if cursor is not None and trace_id in cursor.scored:
                continue
        kept.append(dataclasses.replace(row, index=len(kept)))
    return kept
