"""What each Ray worker runs: one EvaluationPipeline, fed Ray Data batches, giving back result tables.

:class:`BatchEvaluator` is the callable class of ``map_batches``: per actor it builds one
:class:`~ragmetrics.pipeline.runner.EvaluationPipeline`, points each judge's rate gate at the
cluster's bucket, and runs the pipeline on each batch, one at a time. Rows keep their position in the
whole dataset (``__ragmetrics_index``); results are Arrow tables of one fixed schema. A batch whose
worker keeps dying is counted at the bucket actor and, past ``max_attempts``, comes back as
``provider_error`` rows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.integrations._ray_bucket import ClusterGate
from ragmetrics.judge.limits import AdaptiveLimiter
from ragmetrics.metrics.base import needs_of
from ragmetrics.pipeline.dataset import Dataset, Row, turn_rows
from ragmetrics.pipeline.export import table_rows
from ragmetrics.pipeline.runner import EvaluationPipeline, share_judges

__all__ = ["INDEX_COLUMN", "BatchEvaluator", "needed_fields", "result_types"]

INDEX_COLUMN = "__ragmetrics_index"
"""The column holding each row's position in the whole dataset (added before, dropped from results)."""

_COUNTS = (
    "calls",
    "reasks",
    "retries",
    "unmetered_calls",
    "cached_calls",
    "prompt_tokens",
    "completion_tokens",
)


def needed_fields(metrics: Sequence[Any]) -> tuple[str, ...]:
    """The columns a tabular dataset must have for these metrics (as the pipeline decides them)."""
    needs = [needs_of(m) for m in metrics]
    return (
        ("answer",)
        + (("question",) if any(n.question for n in needs) else ())
        + (("contexts",) if any(n.contexts for n in needs) else ())
    )


def result_types(metrics: Sequence[str], repeats: int) -> dict[str, str]:
    """The Arrow type of every column ragmetrics adds to a result row (by name: ``int64``, ...)."""
    types = {"index": "int64", "id": "string"}
    for name in metrics:
        types |= {name: "float64", f"{name}_status": "string", f"{name}_reason": "string"}
        if repeats > 1:
            types[f"{name}_std"] = "float64"
    types |= {"mean_score": "float64", **dict.fromkeys(_COUNTS, "int64")}
    types |= {"cost_usd": "float64", "latency_ms": "float64", "errors": "string"}
    return types


def _load_sdks() -> None:
    """Import the provider SDKs now, not after the first request was granted (seconds on a busy node).

    The SDKs load their resource modules on first use (``client.chat``), a second or more of imports
    that would otherwise delay the first granted requests and send them in a bunch.
    """
    for name in ("openai.resources", "anthropic.resources"):
        try:
            importlib.import_module(name)
        except ImportError:  # pragma: no cover - core dependencies; a judge without one fails by itself
            pass
    try:
        instructor = importlib.import_module("instructor")
        for name in ("from_openai", "from_anthropic"):  # each loads its provider on first access
            getattr(instructor, name, None)
    except ImportError:  # pragma: no cover
        pass


class BatchEvaluator:
    """The ``map_batches`` callable: one pipeline per Ray actor, run on each batch in turn.

    Args:
        metrics: Metric objects, unresolved (each actor resolves its own judges).
        bucket: The cluster's ``RateBucket`` actor handle (None: no shared limit).
        columns: Sample field -> column name.
        pipeline_options: :class:`EvaluationPipeline` options.
        max_attempts: Starts of one batch (each a worker crash but the last) before its rows are
            given up as error rows.
    """

    def __init__(
        self,
        metrics: Sequence[Any],
        bucket: Any,
        columns: Mapping[str, str],
        pipeline_options: Mapping[str, Any],
        max_attempts: int = 3,
    ) -> None:
        self._bucket = bucket
        self._max_attempts = max_attempts
        # a worker scores many batches of one run and keeps no summary: no canaries per batch
        options = {"canaries": False, **dict(pipeline_options)}
        self._pipeline = EvaluationPipeline(list(metrics), columns=columns, progress=False, **options)
        self._columns = dict(columns)
        self._required = needed_fields(self._pipeline.metrics)
        self._types = result_types(self._pipeline.metric_names, self._pipeline.repeats)
        self._lock: asyncio.Lock | None = None
        self.gates: list[ClusterGate] = []
        if bucket is not None:
            for judge in share_judges(self._pipeline.metrics):  # resolves them: the same objects every run
                inner: Any = getattr(judge, "inner", None)
                limiter = getattr(inner, "limiter", None)
                if isinstance(limiter, AdaptiveLimiter) and hasattr(inner, "rate"):
                    gate = ClusterGate(bucket, limiter, inner.rate)
                    inner.rate = gate
                    self.gates.append(gate)
        if self.gates:
            _load_sdks()

    def _rows(self, batch: Any) -> list[Row]:
        """The batch's rows (a ``pyarrow.Table``) with their positions in the whole dataset."""
        positions = [int(i) for i in batch.column(INDEX_COLUMN).to_pylist()]
        frame = batch.drop_columns([INDEX_COLUMN]).to_pandas()
        data = Dataset(frame, columns=self._columns, required=self._required)
        return [dataclasses.replace(row, index=pos) for row, pos in zip(data.rows(), positions, strict=True)]

    async def __call__(self, batch: Any) -> Any:
        """Score one batch; return its result rows as a ``pyarrow.Table``."""
        if self._lock is None:  # made on the loop Ray runs async batches on
            self._lock = asyncio.Lock()
        rows = self._rows(batch)
        key = f"{rows[0].index}+{len(rows)}" if rows else ""
        if self._bucket is not None and rows:
            started = await self._bucket.attempt.remote(key)
            if started > self._max_attempts:
                return await self._given_up(rows, batch, started - 1)
        # a conversation's turns keep its position (other batches' turns cannot be counted here)
        turns = list(turn_rows(rows, self._pipeline.turns, shift=False))
        async with self._lock:
            results = await self._pipeline.evaluate(turns)
        if self._bucket is not None and rows:
            self._bucket.done.remote(key)
        return self._table(table_rows(results, metrics=results.metrics), batch)

    async def _given_up(self, rows: list[Row], batch: Any, crashes: int) -> Any:
        """The batch's rows as error rows: its worker died ``crashes`` times running it."""
        first, last = rows[0].index, rows[-1].index
        problem = (
            f"the Ray worker running rows {first}-{last} crashed {crashes} times (killed, out of "
            f"memory or a lost node); these rows were given up, not scored (raise max_attempts= or "
            "find the row that kills the worker)"
        )
        failed = [dataclasses.replace(row, values=None, problem=problem) for row in rows]
        async with self._lock:  # type: ignore[union-attr]
            results = await self._pipeline.evaluate(failed)
        out = table_rows(results, metrics=results.metrics)
        source = batch.drop_columns([INDEX_COLUMN]).to_pylist()
        for row, given in zip(out, source, strict=True):
            for name in self._pipeline.metric_names:
                row[f"{name}_status"] = "provider_error"
            for column, value in given.items():
                if row.get(column) is None:
                    row[column] = value
        return self._table(out, batch)

    def _table(self, rows: list[dict[str, Any]], batch: Any) -> Any:
        import pyarrow as pa

        table = pa.Table.from_pylist(rows)
        given = batch.schema
        fields = []
        for field in table.schema:
            if field.name in self._types:
                fields.append(pa.field(field.name, self._types[field.name]))
            elif pa.types.is_null(field.type) and field.name in given.names:
                fields.append(given.field(field.name))  # all None in this batch: the input's type
            else:
                fields.append(field)
        return table.cast(pa.schema(fields))
