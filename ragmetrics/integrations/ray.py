"""Evaluate on a Ray cluster: ``evaluate_ray`` over Ray Data, under one cluster-wide rate limit.

Needs the ``ray`` extra (``pip install 'ragmetrics[ray]'``); ray is imported only when
:func:`evaluate_ray` or :class:`ClusterRateLimit` is called. The input is numbered once, so each
result row carries its input position as ``index``; an async actor pool of ``workers`` actors each
runs an :class:`~ragmetrics.pipeline.runner.EvaluationPipeline` on its batches. A named actor
(:class:`ClusterRateLimit`) holds the cluster's request and token buckets, and a 429 anywhere halves
the shared rates. A batch that killed its worker ``max_attempts`` times comes back as error rows.
The result is a ``ray.data.Dataset`` with the columns of ``EvaluationResults.to_pandas()``, in no
guaranteed order (sort by ``index``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmetrics._check import check_int, check_number, check_option_text
from ragmetrics.errors import ConfigError, MissingDependencyError, shorten
from ragmetrics.evaluation import DEFAULT_METRICS
from ragmetrics.integrations._ray_bucket import RateBucket
from ragmetrics.integrations._ray_worker import INDEX_COLUMN, BatchEvaluator, needed_fields
from ragmetrics.pipeline.dataset import Dataset
from ragmetrics.pipeline.runner import EvaluationPipeline
from ragmetrics.sample import Sample

__all__ = ["ClusterRateLimit", "evaluate_ray"]

_REFUSED = {
    "max_cost_usd": "a budget would hold per batch, not for the run; estimate first (ragmetrics estimate)",
    "max_calls": "a call cap would hold per batch, not for the run; estimate first (ragmetrics estimate)",
    "callbacks": "they would run on the workers; read the result dataset instead",
    "progress": "Ray Data shows the run's progress",
    "batch": "a provider batch runs from one process (EvaluationPipeline(batch=True), eval --batch)",
}
"""Pipeline options that mean something else on a cluster, and what to do instead."""


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise MissingDependencyError("ray", "ray", "ragmetrics.integrations.ray") from exc
    return ray


_TEXT_OR_NONE = "a non-empty string or None"


def _rate(name: str, value: Any) -> float | None:
    if value is None:
        return None
    return check_number(value, name, "ClusterRateLimit", low=0, low_open=True, optional=True)


class ClusterRateLimit:
    """One requests/tokens-per-minute limit for every worker of a Ray cluster: a named Ray actor.

    Every judge request of :func:`evaluate_ray` waits for this bucket, so ``workers`` processes on
    any number of nodes together stay under the caps; a 429 seen by any of them halves the caps in
    force (climbing back over ``recover_s``) and every worker's concurrency limit. Pass one object to
    several :func:`evaluate_ray` calls, or give a ``name`` (and a ``namespace`` in ``ray.init``) so
    that several drivers share one quota.

    Args:
        requests_per_minute: Cap on requests started per minute over the cluster (None: none).
        tokens_per_minute: Cap on prompt + completion tokens per minute (None: none).
        name: The actor's name; an actor of that name is reused (its caps must match). None: a new one.
        burst_s: Seconds' worth of each rate the buckets may hold (the largest burst).
        recover_s: After a cut, the caps climb back linearly, by the full cap per ``recover_s``.

    Raises:
        ConfigError: A cap or time that is not a number > 0, or a reused actor with other caps.
        MissingDependencyError: ray is not installed.
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        name: str | None = None,
        burst_s: float = 1.0,
        recover_s: float = 10.0,
    ) -> None:
        rpm = _rate("requests_per_minute", requests_per_minute)
        tpm = _rate("tokens_per_minute", tokens_per_minute)
        burst = _rate("burst_s", burst_s)
        recover = _rate("recover_s", recover_s)
        check_option_text(name, "name", "ClusterRateLimit", optional=True, expected=_TEXT_OR_NONE)
        ray = _ray()
        self.name = name or f"ragmetrics-rate-limit-{uuid.uuid4().hex[:12]}"
        actor = ray.remote(RateBucket).options(
            name=self.name,
            get_if_exists=True,
            num_cpus=0,
            max_concurrency=10_000,  # requests waiting for the bucket (an async actor's coroutines)
            max_restarts=-1,
            max_task_retries=3,
        )
        self.handle = actor.remote(rpm, tpm, burst_s=burst, recover_s=recover)
        """The actor handle (what the workers call)."""
        if name is not None:
            found = ray.get(self.handle.config.remote())
            wanted = {"requests_per_minute": rpm, "tokens_per_minute": tpm}
            if found != wanted:
                raise ConfigError(
                    f"ClusterRateLimit {name!r} already exists with {found}, not {wanted}; "
                    "use another name, or the same caps"
                )

    def __repr__(self) -> str:
        return f"ClusterRateLimit(name={self.name!r})"

    def stats(self) -> dict[str, float]:
        """Requests granted so far, 429s reported, cuts made, the share of the caps in force, time waited."""
        result: dict[str, float] = _ray().get(self.handle.stats.remote())
        return result

    def log(self) -> dict[str, list[Any]]:
        """The bucket's latest grant times and Retry-After holds (``[set_at, until]``), on its own clock."""
        result: dict[str, list[Any]] = _ray().get(self.handle.log.remote())
        return result


def _metrics(
    metrics: Any, llm: Any, threshold: float | None, cache: Any, judge_options: Mapping[str, Any]
) -> list[Any]:
    from ragmetrics.metrics import metric_from_name

    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, Sequence) or not metrics:
        raise ConfigError(
            "evaluate_ray(): metrics= must be a non-empty list of metric names or metric objects"
        )
    if llm is not None and not isinstance(llm, str):
        raise ConfigError(
            f"evaluate_ray(): llm must be a judge spec string (each worker builds its own judge), "
            f"got {type(llm).__name__}; e.g. llm='openai:gpt-4o-mini'"
        )
    return [
        metric_from_name(m, llm=llm, threshold=threshold, cache=cache, **judge_options)
        if isinstance(m, str)
        else m
        for m in metrics
    ]


def _check_shippable(ray: Any, metrics: Sequence[Any]) -> None:
    """Every metric must travel to the workers (pickled); a resolved judge or an SDK client cannot."""
    for metric in metrics:
        try:
            ray.cloudpickle.dumps(metric)
        except Exception as exc:
            raise ConfigError(
                f"evaluate_ray(): metric {shorten(getattr(metric, 'name', metric), 60)!r} cannot be sent to "
                f"the Ray workers ({type(exc).__name__}: {shorten(exc, 120)}); pass its name with llm= as "
                "a spec string, or a metric object built with a spec string and not used yet"
            ) from exc


def _source(ray: Any, data: Any) -> Any:
    """``data`` as a ``ray.data.Dataset``."""
    if isinstance(data, ray.data.Dataset):
        return data
    if isinstance(data, (str, Path)):
        text = str(data)
        suffix = Path(text.rstrip("/")).suffix.lower()
        if "://" not in text and not Path(text).exists():
            raise ConfigError(f"evaluate_ray(): dataset path {text} does not exist")
        if suffix in (".jsonl", ".ndjson"):
            return ray.data.read_json(text, lines=True)
        if suffix == ".json":
            return ray.data.read_json(text)
        if suffix == ".parquet" or (suffix == "" and "://" not in text and Path(text).is_dir()):
            return ray.data.read_parquet(text)
        raise ConfigError(
            f"evaluate_ray(): unsupported dataset file {text}: use .jsonl, .json or .parquet (or a folder of "
            "Parquet files), or read it with ray.data yourself and pass the Dataset"
        )
    if hasattr(data, "itertuples") and hasattr(data, "columns"):
        return ray.data.from_pandas(data)
    if isinstance(data, Sequence) and not isinstance(data, (bytes, Mapping)):
        items = [item.model_dump() if isinstance(item, Sample) else item for item in data]
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise ConfigError(
                    f"evaluate_ray(): row {i} is a {type(item).__name__}, not a dict or a Sample"
                )
        return ray.data.from_items(items)
    raise ConfigError(
        "evaluate_ray(): dataset must be a ray.data.Dataset, a .jsonl/.json/.parquet path, a pandas "
        f"DataFrame or a list of dicts, got {type(data).__name__}"
    )


def _num_rows(table: Any) -> int:
    return int(table.num_rows)


def _with_index(table: Any, offset: int) -> Any:
    import pyarrow as pa

    if INDEX_COLUMN in table.column_names:
        table = table.drop_columns([INDEX_COLUMN])
    positions = pa.array(range(offset, offset + table.num_rows), type=pa.int64())
    return table.append_column(INDEX_COLUMN, positions)


def _numbered(ray: Any, ds: Any) -> Any:
    """The dataset with each row's position in an extra column (materialises the input once)."""
    refs = ds.to_arrow_refs()
    count = ray.remote(_num_rows)  # a whole CPU each: idle worker processes are reused, none spawned
    counts = ray.get([count.remote(ref) for ref in refs])
    add = ray.remote(_with_index)
    offset, numbered = 0, []
    for ref, n in zip(refs, counts, strict=True):
        if n:
            numbered.append(add.remote(ref, offset))
        offset += n
    if not numbered:
        raise ConfigError("evaluate_ray(): the dataset has no rows")
    return ray.data.from_arrow_refs(numbered)


def _positive_int(name: str, value: Any) -> int:
    return check_int(value, name, "evaluate_ray()", minimum=1)


def evaluate_ray(
    dataset: Any,
    metrics: Sequence[Any] | str = DEFAULT_METRICS,
    *,
    llm: str | None = None,
    threshold: float | None = None,
    columns: Mapping[str, str] | None = None,
    cache: bool | str | Path = True,
    judge_options: Mapping[str, Any] | None = None,
    workers: int = 2,
    batch_size: int = 256,
    num_cpus: float = 0.25,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    rate_limit: ClusterRateLimit | None = None,
    map_options: Mapping[str, Any] | None = None,
    max_attempts: int = 3,
    **pipeline_options: Any,
) -> Any:
    """Score a dataset on a Ray cluster; returns a lazy ``ray.data.Dataset`` of result rows.

    Args:
        dataset: A ``ray.data.Dataset``, a ``.jsonl``/``.json``/``.parquet`` path (local or a URI ray
            reads: ``s3://...``), a pandas DataFrame, or a list of dicts or Samples.
        metrics: Metric names (built on each worker with ``llm``) or metric objects not used yet.
        llm: The judge spec of the metrics given by name (``"openai:gpt-4o-mini"``); None: each
            worker's environment decides (``RAGMETRICS_JUDGE`` or a provider key).
        threshold: The pass mark of the metrics given by name.
        columns: Sample field -> your column name.
        cache: The judge cache of the metrics given by name: True (each node's platform cache
            folder, or its ``RAGMETRICS_CACHE_DIR``), False, or a folder that exists on every node.
        judge_options: More judge options of the metrics given by name (``max_concurrency``,
            ``timeout_s``, ``api_key``...).
        workers: Ray actors, each running one pipeline.
        batch_size: Rows per batch given to a worker.
        num_cpus: CPUs each worker reserves (judging waits on the network; a fraction is enough).
        requests_per_minute: Cap on requests per minute for the whole cluster (a new
            :class:`ClusterRateLimit`).
        tokens_per_minute: Cap on tokens per minute for the whole cluster.
        rate_limit: A :class:`ClusterRateLimit` to share (instead of ``requests_per_minute`` /
            ``tokens_per_minute``). With neither, a limit with no caps still spreads 429s.
        map_options: More ``Dataset.map_batches`` options (``memory``, ``resources``,
            ``runtime_env``...).
        max_attempts: Starts of one batch before its rows become error rows: Ray restarts a dead
            worker and retries its batch, and a batch that killed its worker this many times comes
            back as ``provider_error`` rows naming the rows and the crashes (the rest of the run goes on).
        pipeline_options: :class:`~ragmetrics.pipeline.runner.EvaluationPipeline` options applied on
            each worker (``concurrency``, ``timeout_per_sample_s``, ``repeats``...).

    Raises:
        ConfigError: Bad metrics, options or data (a needed column missing, an unsupported file), an
            ``llm`` that is not a spec string, or a metric that cannot be sent to the workers.
        MissingDependencyError: ray is not installed.
    """
    ray = _ray()
    for name, why in _REFUSED.items():
        if name in pipeline_options:
            raise ConfigError(f"evaluate_ray(): {name}= is not supported on a cluster: {why}")
    _positive_int("workers", workers)
    _positive_int("batch_size", batch_size)
    _positive_int("max_attempts", max_attempts)
    check_number(num_cpus, "num_cpus", "evaluate_ray()", low=0)
    if rate_limit is not None and (requests_per_minute is not None or tokens_per_minute is not None):
        raise ConfigError(
            "evaluate_ray(): pass rate_limit= or requests_per_minute= / tokens_per_minute=, not both"
        )
    built = _metrics(metrics, llm, threshold, cache, dict(judge_options or {}))
    pipeline = EvaluationPipeline(
        built, columns=columns, progress=False, **pipeline_options
    )  # checks options
    _check_shippable(ray, pipeline.metrics)
    ds = _numbered(ray, _source(ray, dataset))
    names = [n for n in ds.schema().names if n != INDEX_COLUMN]
    import pandas as pd

    Dataset(pd.DataFrame(columns=names), columns=columns, required=needed_fields(pipeline.metrics))
    limit = rate_limit or ClusterRateLimit(requests_per_minute, tokens_per_minute)
    return ds.map_batches(
        BatchEvaluator,
        fn_constructor_kwargs={
            "metrics": pipeline.metrics,
            "bucket": limit.handle,
            "columns": dict(columns or {}),
            "pipeline_options": pipeline_options,
            "max_attempts": max_attempts,
        },
        batch_size=batch_size,
        batch_format="pyarrow",
        # one batch running and one waiting per worker (they run one at a time): no worker hoards batches
        compute=ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=2),
        num_cpus=num_cpus,
        **dict(map_options or {}),
    )
