"""The batch runner: ``EvaluationPipeline`` fans metrics out over a dataset and returns ``EvaluationResult``s.

How a run goes:

- **Judges are shared.** Claim metrics whose ``judge_key()`` is equal get one caching judge, so the
  claims of a sample are extracted once for faithfulness, relevancy and groundedness together (two
  calls per sample for all three) and one adaptive concurrency limit applies per provider+model.
- **Bounded work.** ``concurrency`` workers pull rows from the dataset lazily and push finished
  records through a bounded queue, so a stream of 100,000 rows holds only ``concurrency`` samples in
  flight; the judge bounds the LLM requests in flight (``max_concurrency``) and halves on 429s.
- **Failure is data.** :func:`failure_record` is the one place an exception becomes an
  :class:`~ragmetrics.pipeline.report.ErrorRecord`; a bad row, a metric that raises, a judge that
  fails for good or a sample that times out gives a record with a status and a message, never a
  missing row or a NaN. ``raise_on_error=True`` raises the first failure instead; ``strict=True``
  validates every row before the first call.
- **Money.** ``max_cost_usd`` reserves each sample's estimated cost before launching it and skips
  (with an error record saying so) the samples that would not fit.
- **Sync.** ``run()`` works with or without a running event loop (Jupyter) via ``run_sync``.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
import traceback as tb
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ragmetrics._aio import run_sync
from ragmetrics.errors import (
    ConfigError,
    InvalidInputError,
    JudgeError,
    NoScoreError,
    RagMetricsError,
    shorten,
)
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.metrics.base import check_threshold, passed_at
from ragmetrics.pipeline.dataset import Dataset, Row, to_sample
from ragmetrics.pipeline.progress import ProgressBar
from ragmetrics.pipeline.report import (
    RESERVED_NAMES,
    CacheSummary,
    ErrorRecord,
    EvaluationResult,
    Report,
    ReportBuilder,
    RunStats,
    ScoreSpread,
    to_dataframe,
    write_csv,
    write_jsonl,
)
from ragmetrics.sample import Sample
from ragmetrics.score import MetricResult, Usage

__all__ = [
    "EvaluationPipeline",
    "EvaluationResult",
    "EvaluationResults",
    "PipelineEvent",
    "PipelineRun",
    "failure_record",
    "share_judges",
]


class BudgetExceededError(RagMetricsError):
    """A sample was not run because its estimated cost would exceed ``max_cost_usd``."""


class SampleTimeoutError(RagMetricsError):
    """A sample did not finish within ``timeout_per_sample_s``."""


# -- the one function that turns an exception into a failure record ---------------------------------


def failure_record(exc: BaseException, *, metric: str | None = None, row: int | None = None) -> ErrorRecord:
    """Turn an exception into an error record: status, message, type and (when unexpected) traceback.

    Args:
        exc: What was raised (or built to describe a missing score).
        metric: The metric that failed; None when the whole row failed.
        row: The dataset row.
    """
    status = "error"
    field_name = None
    trace = None
    if isinstance(exc, InvalidInputError):
        status, field_name = "invalid_input", exc.field
        if isinstance(exc.row, int):
            row = exc.row
    elif isinstance(exc, (JudgeError, NoScoreError)):
        status = exc.status
    elif isinstance(exc, (SampleTimeoutError, asyncio.TimeoutError, TimeoutError)):
        status = "timeout"
    elif isinstance(exc, BudgetExceededError):
        status = "skipped"
    else:
        trace = "".join(tb.format_exception(type(exc), exc, exc.__traceback__))
    message = str(exc) or type(exc).__name__
    if status == "error" and metric is not None:
        message = f"metric '{metric}' raised {type(exc).__name__}: {shorten(message, 500)}"
    return ErrorRecord(
        metric=metric,
        status=status,
        message=message,
        type=type(exc).__name__,
        traceback=trace,
        row=row,
        field=field_name,
    )


# -- metrics, normalised once -------------------------------------------------------------------------


class _MetricCall:
    """One metric as the runner calls it: ``await call(sample, repeat) -> MetricResult``."""

    __slots__ = ("_fn", "_takes_repeat", "metric", "name", "needs_contexts", "needs_question", "threshold")

    def __init__(self, metric: Any) -> None:
        self.metric = metric
        method = getattr(metric, "evaluate_sample", None)
        if callable(method):
            fn = method
            name = getattr(metric, "name", None)
        elif callable(metric):
            fn = metric
            name = getattr(metric, "name", None) or getattr(metric, "__name__", None)
        else:
            raise ConfigError(
                f"metric {shorten(metric, 80)} is neither a metric (with name and evaluate_sample) "
                "nor a function of a Sample"
            )
        if not isinstance(name, str) or not name.isidentifier():
            raise ConfigError(
                f"metric {shorten(metric, 80)}: its name must be a snake_case identifier, got {name!r}"
            )
        if name in RESERVED_NAMES:
            raise ConfigError(
                f"metric name '{name}' clashes with an EvaluationResult attribute; give the metric "
                "another name"
            )
        self.name = name
        self._fn = fn
        self._takes_repeat = _accepts(fn, "repeat")
        self.threshold = check_threshold(getattr(metric, "threshold", None), name)
        self.needs_question = bool(getattr(metric, "needs_question", False))
        self.needs_contexts = bool(
            getattr(metric, "needs_contexts", getattr(metric, "needs_verification", False))
        )

    async def __call__(self, sample: Sample, repeat: int) -> MetricResult:
        out = self._fn(sample, repeat=repeat) if self._takes_repeat else self._fn(sample)
        if inspect.isawaitable(out):
            out = await out
        return self._coerce(out)

    def _coerce(self, out: Any) -> MetricResult:
        if isinstance(out, MetricResult):
            return out
        if isinstance(out, bool) or (isinstance(out, (int, float)) and not isinstance(out, bool)):
            score = float(out)
            return MetricResult(
                name=self.name, score=score, passed=passed_at(score, self.threshold), threshold=self.threshold
            )
        if isinstance(out, Mapping) and "score" in out:
            reason = str(out.get("reason") or out.get("reasoning") or "")
            if out["score"] is None:
                raise ValueError(
                    f"metric '{self.name}' returned no score" + (f": {reason}" if reason else "")
                )
            score = float(out["score"])
            extra = {k: v for k, v in out.items() if k not in ("score", "reason", "reasoning")}
            return MetricResult(
                name=self.name,
                score=score,
                passed=passed_at(score, self.threshold),
                threshold=self.threshold,
                reasoning=reason,
                details=extra,
            )
        raise TypeError(
            f"metric '{self.name}' returned {type(out).__name__}; return a float in [0, 1], "
            "a bool, a dict with 'score', or a MetricResult"
        )


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def share_judges(metrics: Sequence[Any]) -> list[CachingJudge]:
    """Give claim metrics with equal ``judge_key()`` one caching judge; return the judges in use.

    Resolving a judge is when a missing API key is reported (``ConfigError``), so this runs before
    the first call of a run.
    """
    groups: dict[Any, CachingJudge] = {}
    judges: dict[int, CachingJudge] = {}
    for metric in metrics:
        key_fn, use = getattr(metric, "judge_key", None), getattr(metric, "use_judge", None)
        if callable(key_fn) and callable(use):
            key = key_fn()
            if key in groups:
                use(groups[key])
            else:
                groups[key] = metric.judge
        judge = getattr(metric, "judge", None) if hasattr(type(metric), "judge") or callable(key_fn) else None
        if isinstance(judge, CachingJudge):
            judges[id(judge)] = judge
    return list(judges.values())


# -- results ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineEvent:
    """What a callback receives: the run started, a record finished, or the run ended."""

    kind: Literal["start", "record", "end"]
    done: int
    """Records finished so far."""
    total: int | None
    """Rows in the dataset, when known."""
    record: EvaluationResult | None = None
    """The record that finished (``kind == "record"``)."""
    stats: RunStats | None = None
    """Run counters so far (``start`` and ``end``)."""


class EvaluationResults(list[EvaluationResult]):
    """The records of a run, in dataset order, with the run's summary and exports."""

    def __init__(self, records: Sequence[EvaluationResult], builder: ReportBuilder, stats: RunStats) -> None:
        super().__init__(records)
        self._builder = builder
        self.stats = stats
        """Run counters: samples, failures, usage, cache hits and misses, retries, throttles, time."""
        self._report: Report | None = None

    def summary(self) -> Report:
        """Aggregates per metric (mean, count, statuses, 95% bootstrap CI, pass rate), counters, records."""
        if self._report is None:
            self._report = self._builder.build(self.stats, list(self))
        return self._report

    @property
    def metrics(self) -> list[str]:
        """Metric names, in the pipeline's order."""
        return list(self._builder.metrics)

    def to_jsonl(self, path: Any) -> Any:
        """Write the records as JSON lines."""
        return write_jsonl(self, path)

    def to_csv(self, path: Any) -> Any:
        """Write one flat row per record."""
        return write_csv(self, path, metrics=self.metrics)

    def to_pandas(self) -> Any:
        """The records as a pandas DataFrame (needs pandas)."""
        return to_dataframe(self, metrics=self.metrics)


@dataclass(slots=True)
class _Baseline:
    hits: int = 0
    shared: int = 0
    misses: int = 0
    retries: int = 0
    throttled: int = 0


def _judge_counters(judge: CachingJudge) -> _Baseline:
    inner = judge.inner
    limiter = getattr(inner, "limiter", None)
    return _Baseline(
        hits=judge.stats.hits,
        shared=judge.stats.shared,
        misses=judge.stats.misses,
        retries=int(getattr(inner, "retries", 0) or 0),
        throttled=int(getattr(limiter, "throttled", 0) or 0),
    )


@dataclass(slots=True)
class _RunState:
    """Counters and budget bookkeeping of one run."""

    judges: list[CachingJudge]
    builder: ReportBuilder
    total: int | None
    progress: ProgressBar
    max_cost_usd: float | None
    repeats: int
    started: float = field(default_factory=time.perf_counter)
    baselines: list[_Baseline] = field(default_factory=list)
    done: int = 0
    spent: float = 0.0
    reserved: float = 0.0
    reservations: int = 0
    """Samples in flight holding a share of the budget (an int, so 'none left' is exact)."""
    estimated: float = 0.0
    actual: float = 0.0
    budget_exhausted: bool = False
    budget_cond: asyncio.Condition | None = None

    def __post_init__(self) -> None:
        self.baselines = [_judge_counters(j) for j in self.judges]

    def stats(self) -> RunStats:
        cache = CacheSummary()
        retries = throttled = 0
        for judge, base in zip(self.judges, self.baselines, strict=True):
            now = _judge_counters(judge)
            cache.hits += now.hits - base.hits
            cache.shared += now.shared - base.shared
            cache.misses += now.misses - base.misses
            retries += now.retries - base.retries
            throttled += now.throttled - base.throttled
        b = self.builder
        return RunStats(
            samples=b.total,
            failed=b.failed,
            skipped=b.skipped,
            usage=b.usage,
            cache=cache,
            retries=retries,
            throttled=throttled,
            wall_time_s=time.perf_counter() - self.started,
            repeats=self.repeats,
            max_cost_usd=self.max_cost_usd,
            budget_exhausted=self.budget_exhausted,
            judges=[j.info.spec for j in self.judges],
        )

    def calibrated(self, estimate: float) -> float:
        """The estimate scaled by how actual costs compared with estimates so far."""
        if self.estimated > 0 and self.actual > 0:
            return estimate * (self.actual / self.estimated)
        return estimate


class PipelineRun:
    """A streaming run: ``async for record in run`` yields records as they finish.

    Use ``async with pipeline.stream(data) as run:`` to close it early cleanly; ``stats`` and
    ``summary()`` give the counters and aggregates of what has finished (records are not kept).
    """

    def __init__(self, records: AsyncIterator[EvaluationResult], state_box: list[_RunState]) -> None:
        self._records = records
        self._state_box = state_box

    def __aiter__(self) -> PipelineRun:
        return self

    async def __anext__(self) -> EvaluationResult:
        return await self._records.__anext__()

    async def aclose(self) -> None:
        """Stop the run: cancel samples in flight and close the judges."""
        await self._records.aclose()  # type: ignore[attr-defined]

    async def __aenter__(self) -> PipelineRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def stats(self) -> RunStats:
        """Counters of the run so far (empty before it starts)."""
        return self._state_box[0].stats() if self._state_box else RunStats()

    def summary(self) -> Report:
        """Aggregates of the records finished so far (the records themselves are not kept)."""
        if not self._state_box:
            return Report(aggregates={})
        state = self._state_box[0]
        return state.builder.build(state.stats())


_DONE = object()


@dataclass(frozen=True, slots=True)
class _Abort:
    exc: BaseException


# -- the pipeline -------------------------------------------------------------------------------------


class EvaluationPipeline:
    """Run metrics over a dataset, concurrently, with a cache, retries, budgets and failure records.

    Example:
        >>> pipeline = EvaluationPipeline(metrics=[FaithfulnessMetric(llm=j), RelevancyMetric(llm=j)])
        >>> results = await pipeline.evaluate(questions=[...], answers=[...], contexts=[[...], ...])
        >>> results[0]
        EvaluationResult(faithfulness=0.95, relevancy=0.90, mean_score=0.93)
        >>> print(results.summary())

    Args:
        metrics: Metrics (objects with ``name`` and ``async evaluate_sample(sample[, repeat=])``) or
            plain functions of a :class:`~ragmetrics.sample.Sample` returning a float, a bool, a dict
            with ``score`` or a ``MetricResult`` (sync or async; named by ``name`` or ``__name__``).
        concurrency: Samples in flight at once. LLM requests in flight are bounded separately, per
            judge, by its ``max_concurrency`` (a metric option).
        timeout_per_sample_s: Wall-time limit per sample (all metrics and repeats); a sample that
            runs over gets status ``timeout`` for the metrics not finished. None: no limit (the
            judges' per-call ``timeout_s`` still bounds every request).
        max_cost_usd: Budget: a sample is launched only if its estimated cost fits what is left;
            the others come back with a ``skipped`` error record.
        repeats: Runs of every metric per sample (the repeat index enters the judge cache key);
            scores are the mean, and ``spread`` holds each repeat's score with std, min and max.
        raise_on_error: Raise the first failure (bad row, judge failure, timeout) instead of
            recording it.
        strict: Validate every row before the first call; raise ``InvalidInputError`` on a bad one.
        progress: True to draw a progress bar on stderr, False not to, None to draw on a terminal.
        callbacks: Functions (sync or async) called with a :class:`PipelineEvent` at the start, for
            each finished record and at the end.
        columns: Sample field -> column name, e.g. ``{"answer": "response"}``.

    Raises:
        ConfigError: No metrics, duplicate metric names, or an invalid setting.
    """

    def __init__(
        self,
        metrics: Sequence[Any],
        *,
        concurrency: int = 32,
        timeout_per_sample_s: float | None = None,
        max_cost_usd: float | None = None,
        repeats: int = 1,
        raise_on_error: bool = False,
        strict: bool = False,
        progress: bool | None = None,
        callbacks: Sequence[Callable[[PipelineEvent], Any]] = (),
        columns: Mapping[str, str] | None = None,
    ) -> None:
        if isinstance(metrics, (str, bytes)) or not isinstance(metrics, Sequence) or not metrics:
            raise ConfigError("EvaluationPipeline needs a non-empty list of metrics")
        self.metrics = list(metrics)
        self._calls = [_MetricCall(m) for m in self.metrics]
        names = [c.name for c in self._calls]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(
                f"EvaluationPipeline: metric names must be unique, got {dupes} twice; "
                "results are keyed by name"
            )
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"EvaluationPipeline: concurrency must be an int >= 1, got {concurrency!r}")
        if timeout_per_sample_s is not None and not (
            isinstance(timeout_per_sample_s, (int, float)) and timeout_per_sample_s > 0
        ):
            raise ConfigError(
                f"EvaluationPipeline: timeout_per_sample_s must be > 0 or None, got {timeout_per_sample_s!r}"
            )
        if max_cost_usd is not None and not (
            isinstance(max_cost_usd, (int, float)) and max_cost_usd >= 0 and math.isfinite(max_cost_usd)
        ):
            raise ConfigError(
                f"EvaluationPipeline: max_cost_usd must be a number >= 0 or None, got {max_cost_usd!r}"
            )
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ConfigError(f"EvaluationPipeline: repeats must be an int >= 1, got {repeats!r}")
        for cb in callbacks:
            if not callable(cb):
                raise ConfigError(f"EvaluationPipeline: callbacks must be callables, got {type(cb).__name__}")
        self.concurrency = concurrency
        self.timeout_per_sample_s = timeout_per_sample_s
        self.max_cost_usd = max_cost_usd
        self.repeats = repeats
        self.raise_on_error = raise_on_error
        self.strict = strict
        self.progress = progress
        self.callbacks = list(callbacks)
        self.columns = dict(columns or {})
        Dataset([], columns=self.columns)  # checks the mapping's field names now
        self._needs_contexts = any(c.needs_contexts for c in self._calls)
        self._required = (
            ("answer",)
            + (("question",) if any(c.needs_question for c in self._calls) else ())
            + (("contexts",) if self._needs_contexts else ())
        )

    def __repr__(self) -> str:
        return (
            f"EvaluationPipeline(metrics={[c.name for c in self._calls]}, concurrency={self.concurrency}, "
            f"repeats={self.repeats})"
        )

    @property
    def metric_names(self) -> list[str]:
        """The metric names, in order."""
        return [c.name for c in self._calls]

    # -- entry points --------------------------------------------------------------------------------
    async def evaluate(
        self,
        dataset: Any = None,
        *,
        questions: Sequence[Any] | None = None,
        answers: Sequence[Any] | None = None,
        contexts: Sequence[Any] | None = None,
        references: Sequence[Any] | None = None,
        ids: Sequence[Any] | None = None,
        columns: Mapping[str, str] | None = None,
    ) -> EvaluationResults:
        """Score every row and return the records in dataset order.

        Pass a dataset (list of dicts or samples, a JSONL/JSON/CSV path, a pandas DataFrame or a
        Hugging Face dataset) or the column lists ``questions``, ``answers``, ``contexts``.

        Raises:
            ConfigError: Bad dataset or columns, or a judge that cannot be built (missing API key).
            InvalidInputError: ``strict=True`` and a row is invalid.
            RagMetricsError: ``raise_on_error=True`` and a sample failed.
        """
        ds = self._dataset(dataset, questions, answers, contexts, references, ids, columns)
        box: list[_RunState] = []
        records: list[EvaluationResult] = []
        async for record in self._records(ds, box):
            records.append(record)
        records.sort(key=lambda r: r.index)
        state = box[0]
        return EvaluationResults(records, state.builder, state.stats())

    def stream(
        self,
        dataset: Any = None,
        *,
        questions: Sequence[Any] | None = None,
        answers: Sequence[Any] | None = None,
        contexts: Sequence[Any] | None = None,
        references: Sequence[Any] | None = None,
        ids: Sequence[Any] | None = None,
        columns: Mapping[str, str] | None = None,
    ) -> PipelineRun:
        """Yield records as they finish (not in dataset order; each carries its ``index`` and ``id``).

        Memory stays bounded whatever the dataset's length: rows are read lazily and only
        ``concurrency`` samples are in flight.
        """
        ds = self._dataset(dataset, questions, answers, contexts, references, ids, columns)
        box: list[_RunState] = []
        return PipelineRun(self._records(ds, box), box)

    def run(self, dataset: Any = None, **kwargs: Any) -> EvaluationResults:
        """Blocking twin of :meth:`evaluate`; works inside a running event loop (Jupyter) too."""
        return run_sync(self.evaluate(dataset, **kwargs))

    evaluate_sync = run

    def estimate(self, dataset: Any = None, *, check_cache: bool = True, **kwargs: Any) -> Any:
        """Predict calls, tokens and cost of :meth:`evaluate` on the same data, calling nothing."""
        from ragmetrics.pipeline.estimate import estimate

        columns = kwargs.pop("columns", None) or self.columns
        if dataset is None:
            dataset = _columns_dataset(
                kwargs.pop("questions", None),
                kwargs.pop("answers", None),
                kwargs.pop("contexts", None),
                kwargs.pop("references", None),
                kwargs.pop("ids", None),
            )
        if kwargs:
            raise TypeError(f"estimate() got unexpected arguments {sorted(kwargs)}")
        return estimate(self.metrics, dataset, columns=columns, repeats=self.repeats, check_cache=check_cache)

    # -- internals -----------------------------------------------------------------------------------
    def _dataset(
        self,
        dataset: Any,
        questions: Any,
        answers: Any,
        contexts: Any,
        references: Any,
        ids: Any,
        columns: Mapping[str, str] | None,
    ) -> Dataset:
        if dataset is None:
            if answers is None:
                raise ConfigError("evaluate(): pass a dataset, or answers= (with questions= and contexts=)")
            dataset = _columns_dataset(questions, answers, contexts, references, ids)
        elif any(v is not None for v in (questions, answers, contexts, references, ids)):
            raise ConfigError(
                "evaluate(): pass either a dataset or column lists (questions=, answers=, ...), not both"
            )
        if isinstance(dataset, Dataset):
            return dataset
        return Dataset(dataset, columns={**self.columns, **(columns or {})}, required=self._required)

    async def _records(self, ds: Dataset, box: list[_RunState]) -> AsyncIterator[EvaluationResult]:
        """The run itself: workers, a bounded queue of finished records, budget, progress, cleanup."""
        if self.strict:
            ds = ds.materialize()
            self._validate_all(ds)
        judges = share_judges(self.metrics)
        total = ds.total()
        builder = ReportBuilder(
            self.metric_names, thresholds={c.name: c.threshold for c in self._calls}, repeats=self.repeats
        )
        state = _RunState(
            judges=judges,
            builder=builder,
            total=total,
            progress=ProgressBar(total, enabled=self.progress),
            max_cost_usd=self.max_cost_usd,
            repeats=self.repeats,
        )
        box.append(state)
        estimator = None
        if self.max_cost_usd is not None:
            from ragmetrics.pipeline.estimate import SampleEstimator

            estimator = SampleEstimator(self.metrics, repeats=self.repeats)
            state.budget_cond = asyncio.Condition()
        rows = ds.rows()
        out: asyncio.Queue[Any] = asyncio.Queue(maxsize=self.concurrency * 2)
        workers = [
            asyncio.create_task(self._worker(rows, out, state, estimator)) for _ in range(self.concurrency)
        ]
        closer = asyncio.create_task(self._close_when_done(workers, out))
        await self._emit(PipelineEvent(kind="start", done=0, total=total, stats=state.stats()))
        finished = False
        try:
            while True:
                item = await out.get()
                if item is _DONE:
                    break
                if isinstance(item, _Abort):
                    raise item.exc
                record, exc = item
                builder.add(record)
                state.done += 1
                self._tick(state)
                if exc is not None and self.raise_on_error:
                    raise exc
                await self._emit(PipelineEvent(kind="record", done=state.done, total=total, record=record))
                yield record
            finished = True
        finally:
            for task in (*workers, closer):
                task.cancel()
            await asyncio.gather(*workers, closer, return_exceptions=True)
            state.progress.close()
            await asyncio.shield(self._close_judges(judges))
        if finished:
            await self._emit(PipelineEvent(kind="end", done=state.done, total=total, stats=state.stats()))

    @staticmethod
    async def _close_judges(judges: Sequence[CachingJudge]) -> None:
        for judge in judges:
            await judge.aclose()

    @staticmethod
    async def _close_when_done(workers: Sequence[asyncio.Task[None]], out: asyncio.Queue[Any]) -> None:
        try:
            await asyncio.gather(*workers)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a bug or a dataset read error: end the run with it
            await out.put(_Abort(exc))
            return
        await out.put(_DONE)

    def _tick(self, state: _RunState) -> None:
        progress = state.progress
        if not progress.enabled:
            return
        hits = requests = 0
        for judge, base in zip(state.judges, state.baselines, strict=True):
            s = judge.stats
            got = (s.hits - base.hits) + (s.shared - base.shared)
            hits += got
            requests += got + s.misses - base.misses
        progress.update(
            state.done,
            failed=state.builder.failed,
            cache_hits=hits,
            cache_requests=requests,
            cost_usd=state.builder.usage.cost_usd,
        )

    async def _emit(self, event: PipelineEvent) -> None:
        for cb in self.callbacks:
            out = cb(event)
            if inspect.isawaitable(out):
                await out

    def _validate_all(self, ds: Dataset) -> None:
        bad: list[InvalidInputError] = []
        for row in ds.rows():
            try:
                to_sample(row, require_contexts=self._needs_contexts)
            except InvalidInputError as exc:
                bad.append(exc)
        if bad:
            first = bad[0]
            if len(bad) > 1:
                more = ", ".join(str(e.row) for e in bad[1:11]) + (", ..." if len(bad) > 11 else "")
                first.args = (
                    f"{first.args[0]} (strict=True: {len(bad)} bad rows; also rows {more}); nothing was run",
                )
            raise first

    async def _worker(
        self, rows: Iterator[Row], out: asyncio.Queue[Any], state: _RunState, estimator: Any
    ) -> None:
        while True:
            row = next(rows, None)
            if row is None:
                return
            if estimator is not None:
                item = await self._within_budget(row, state, estimator)
            else:
                item = await self._evaluate_row(row)
            await out.put(item)

    async def _within_budget(
        self, row: Row, state: _RunState, estimator: Any
    ) -> tuple[EvaluationResult, Any]:
        try:
            sample = to_sample(row, require_contexts=self._needs_contexts)
        except InvalidInputError:
            return await self._evaluate_row(row)
        raw = estimator.cost(sample)
        guess = state.calibrated(raw)
        budget = float(state.max_cost_usd or 0.0)
        cond = state.budget_cond
        assert cond is not None
        async with cond:
            # wait for samples in flight to settle their real cost while the estimate does not fit
            await cond.wait_for(
                lambda: state.spent + state.reserved + guess <= budget or state.reservations == 0
            )
            fits = state.spent + state.reserved + guess <= budget
            if fits:
                state.reserved += guess
                state.reservations += 1
        if not fits:
            state.budget_exhausted = True
            exc = BudgetExceededError(
                f"skipped: the estimated cost ${guess:.6f} of this sample would exceed the budget "
                f"max_cost_usd=${budget:g} (spent ${state.spent:.6f} so far); nothing was called"
            )
            record = self._failed_record(row, sample, [failure_record(exc, row=row.index)], 0.0)
            return record, None
        outcome: tuple[EvaluationResult, Any] | None = None
        try:
            outcome = await self._evaluate_row(row, sample)
        finally:
            async with cond:  # settle: the reservation goes, the real cost comes, in one step
                state.reserved = max(0.0, state.reserved - guess) if state.reservations > 1 else 0.0
                state.reservations -= 1
                if outcome is not None:
                    cost = outcome[0].usage.cost_usd
                    state.spent += cost
                    if cost > 0 and raw > 0:
                        state.estimated += raw
                        state.actual += cost
                cond.notify_all()
        return outcome

    def _failed_record(
        self, row: Row, sample: Sample | None, errors: list[ErrorRecord], latency_ms: float
    ) -> EvaluationResult:
        rid = sample.id if sample is not None else None
        if rid is None and isinstance(row.values, Mapping):
            raw = row.values.get("id")
            rid = str(raw) if isinstance(raw, (str, int)) and not isinstance(raw, bool) else None
        return EvaluationResult(
            index=row.index,
            id=rid if rid is not None else str(row.index),
            sample=sample,
            scores={c.name: None for c in self._calls},
            errors=errors,
            latency_ms=latency_ms,
        )

    async def _evaluate_row(self, row: Row, sample: Sample | None = None) -> tuple[EvaluationResult, Any]:
        """One row: validate, run every metric and repeat, and build its record (never raises)."""
        started = time.perf_counter()
        if sample is None:
            try:
                sample = to_sample(row, require_contexts=self._needs_contexts)
            except InvalidInputError as exc:
                errors = [failure_record(exc, row=row.index)]
                return self._failed_record(row, None, errors, (time.perf_counter() - started) * 1000.0), exc
        jobs = [(call, r) for call in self._calls for r in range(self.repeats)]
        outcomes: list[MetricResult | BaseException] = await self._run_jobs(sample, jobs)
        record, exc = self._build(row, sample, jobs, outcomes, started)
        return record, exc

    async def _run_jobs(self, sample: Sample, jobs: list[tuple[_MetricCall, int]]) -> list[Any]:
        timeout = self.timeout_per_sample_s
        if len(jobs) == 1 and timeout is None:
            call, repeat = jobs[0]
            try:
                return [await call(sample, repeat)]
            except Exception as exc:
                return [exc]
        tasks = [asyncio.ensure_future(call(sample, repeat)) for call, repeat in jobs]
        try:
            done, pending = await asyncio.wait(tasks, timeout=timeout)
        except BaseException:
            for task in tasks:
                task.cancel()
            raise
        if pending:
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=5.0)
        outcomes: list[Any] = []
        for task in tasks:
            if task in pending or task.cancelled():
                outcomes.append(
                    SampleTimeoutError(
                        f"did not finish within timeout_per_sample_s={timeout:g} s"
                        if timeout
                        else "cancelled"
                    )
                )
            elif task.exception() is not None:
                outcomes.append(task.exception())
            else:
                outcomes.append(task.result())
        return outcomes

    def _build(
        self,
        row: Row,
        sample: Sample,
        jobs: list[tuple[_MetricCall, int]],
        outcomes: list[Any],
        started: float,
    ) -> tuple[EvaluationResult, Any]:
        scores: dict[str, float | None] = {}
        results: dict[str, MetricResult] = {}
        spread: dict[str, ScoreSpread] = {}
        errors: list[ErrorRecord] = []
        usage = Usage()
        first_exc: BaseException | None = None
        by_metric: dict[str, list[tuple[int, Any]]] = {}
        for (call, repeat), outcome in zip(jobs, outcomes, strict=True):
            by_metric.setdefault(call.name, []).append((repeat, outcome))
        for call in self._calls:
            repeat_scores: list[float | None] = []
            for repeat, outcome in by_metric[call.name]:
                where = f" (repeat {repeat})" if self.repeats > 1 else ""
                if isinstance(outcome, MetricResult):
                    usage = usage + outcome.usage
                    repeat_scores.append(outcome.score)
                    if call.name not in results or (
                        results[call.name].score is None and outcome.score is not None
                    ):
                        results[call.name] = outcome
                    if outcome.score is None:
                        exc: BaseException = NoScoreError(
                            call.name, outcome.status, (outcome.message or "") + where
                        )
                        errors.append(failure_record(exc, metric=call.name, row=row.index))
                        first_exc = first_exc or exc
                else:
                    repeat_scores.append(None)
                    record = failure_record(outcome, metric=call.name, row=row.index)
                    if where:
                        record.message += where
                    errors.append(record)
                    if first_exc is None:
                        first_exc = (
                            NoScoreError(call.name, "timeout", str(outcome))
                            if isinstance(outcome, SampleTimeoutError)
                            else outcome
                        )
            got = [s for s in repeat_scores if s is not None]
            scores[call.name] = math.fsum(got) / len(got) if got else None
            if self.repeats > 1:
                spread[call.name] = ScoreSpread.of(repeat_scores)
        record = EvaluationResult(
            index=row.index,
            id=sample.id if sample.id is not None else str(row.index),
            sample=sample,
            scores=scores,
            results=results,
            errors=errors,
            spread=spread,
            usage=usage,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )
        return record, first_exc


def _columns_dataset(
    questions: Any, answers: Any, contexts: Any, references: Any, ids: Any
) -> list[dict[str, Any]]:
    """Zip column lists into rows, checking they have the same length."""
    given = {
        name: values
        for name, values in (
            ("questions", questions),
            ("answers", answers),
            ("contexts", contexts),
            ("references", references),
            ("ids", ids),
        )
        if values is not None
    }
    if "answers" not in given:
        raise ConfigError("pass answers= (a list with one answer per row)")
    for name, values in given.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise ConfigError(f"{name}= must be a list with one entry per row, got {type(values).__name__}")
    lengths = {name: len(values) for name, values in given.items()}
    if len(set(lengths.values())) > 1:
        raise ConfigError(f"column lists differ in length: {lengths}; give one entry per row in each")
    fields = {
        "questions": "question",
        "answers": "answer",
        "contexts": "contexts",
        "references": "reference",
        "ids": "id",
    }
    n = lengths["answers"]
    return [{fields[name]: values[i] for name, values in given.items()} for i in range(n)]
