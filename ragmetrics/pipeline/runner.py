"""The batch runner: ``EvaluationPipeline`` fans metrics out over a dataset and returns ``EvaluationResult``s.

Metrics whose ``judge_key()`` is equal share one caching judge, so a sample's claims are extracted
once for all of them. ``concurrency`` workers pull rows lazily (a stream holds only that many samples
in flight) while the judge bounds the LLM requests in flight. Failure is data: a bad row, a metric
that raises or a judge that fails gives a record with a status (:func:`failure_record`), unless
``raise_on_error=True``. ``max_cost_usd`` reserves each sample's estimated cost before launching it.
This module holds the pipeline and its run loop; the parts live beside it (``_metric_call``,
``_execute``, ``_failure``, ``_budget``, ``_run_state``, ``_inputs``, ``run_loop``, ``_results``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from typing import Any

from ragmetrics._aio import release_collector, run_sync
from ragmetrics._check import check_callable, check_int, check_number
from ragmetrics.errors import ConfigError, InvalidInputError
from ragmetrics.judge import metering
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.metrics import metric_from_name
from ragmetrics.metrics.conversation.turns import DEFAULT_HISTORY_BUDGET_TOKENS
from ragmetrics.pipeline._budget import capped, check_priced, within_budget
from ragmetrics.pipeline._execute import SampleExecutor
from ragmetrics.pipeline._failure import BudgetExceededError, SampleTimeoutError, failure_record
from ragmetrics.pipeline._inputs import DuplicateIds, to_dataset, validate_all
from ragmetrics.pipeline._inputs import columns_dataset as _columns_dataset
from ragmetrics.pipeline._metric_call import MetricCall, share_judges
from ragmetrics.pipeline._record_store import RECORDS_IN_MEMORY, RecordStore
from ragmetrics.pipeline._results import EvaluationResults, PipelineEvent, PipelineRun
from ragmetrics.pipeline._run_state import RunState
from ragmetrics.pipeline._turn_rows import TurnOptions
from ragmetrics.pipeline.canary_draw import CanaryDraw, draw_canary, first_valid
from ragmetrics.pipeline.dataset import Dataset, Row
from ragmetrics.pipeline.estimate import SampleEstimator
from ragmetrics.pipeline.estimate import estimate as estimate_run
from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN
from ragmetrics.pipeline.progress import ProgressBar
from ragmetrics.pipeline.report import EvaluationResult, ReportBuilder
from ragmetrics.pipeline.run_loop import run_bounded
from ragmetrics.pipeline.trust import mark_untrusted, untrusted_judges
from ragmetrics.sample import Sample

__all__ = [
    "BudgetExceededError",
    "EvaluationPipeline",
    "EvaluationResult",
    "EvaluationResults",
    "PipelineEvent",
    "PipelineRun",
    "SampleTimeoutError",
    "failure_record",
    "share_judges",
]

# defined in private modules, documented here
for _public in (EvaluationResults, PipelineEvent, PipelineRun, BudgetExceededError):
    _public.__module__ = __name__


def _canary_samples(ds: Dataset, first: Row, executor: SampleExecutor) -> list[Sample]:
    """The rows a canary is drawn from: the dataset's first valid rows, or the first row of a one-shot one."""
    if not ds.rereadable:
        return first_valid([first], executor.sample)
    rows = ds.sample_rows()
    try:
        return first_valid(rows, executor.sample)
    finally:  # a file's reader is a generator: close it now, not when it is collected
        close = getattr(rows, "close", None)
        if close is not None:
            close()


def _by_name(name: str) -> Any:
    return metric_from_name(name)


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
        metrics: Metrics (objects with ``name`` and ``async evaluate_sample(sample[, repeat=])``), the
            names of built-in metrics (``"faithfulness"``, ``"rouge"``..., as the CLI's ``--metrics``;
            judged with the judge from the environment: use :func:`ragmetrics.evaluate` or a metric
            object for another ``llm``), or plain functions of a :class:`~ragmetrics.sample.Sample`
            returning a float, a bool, a dict with ``score`` or a ``MetricResult`` (sync or async;
            named by ``name`` or ``__name__``).
        concurrency: Samples in flight at once. LLM requests in flight are bounded separately, per
            judge, by its ``max_concurrency`` (a metric option).
        timeout_per_sample_s: Wall-time limit per sample (all metrics and repeats); a sample that
            runs over gets status ``timeout`` for the metrics not finished. None: no limit (the
            judges' per-call ``timeout_s`` still bounds every request).
        max_cost_usd: Budget: a sample is launched only if its estimated cost fits what is left;
            the others come back with a ``skipped`` error record.
        max_calls: Call cap for the whole run: at most this many HTTP attempts (re-asks and retries
            included) are sent; a sample is launched only while calls are left (the others come back
            ``skipped``), and an attempt past the cap is not sent. It is also the consent a budget
            needs for a judge the price table does not name.
        repeats: Runs of every metric per sample (the repeat index enters the judge cache key);
            scores are the mean, and ``spread`` holds each repeat's score with std, min and max.
        raise_on_error: Raise the first failure (bad row, judge failure, timeout) instead of
            recording it.
        strict: Validate every row before the first call; raise ``InvalidInputError`` on a bad one.
        progress: False for no progress on stderr; True or None (the default) for a bar redrawn in
            place on a terminal or in a notebook, and a line every 10 s in a log (a pipe, CI).
        callbacks: Functions (sync or async) called with a :class:`PipelineEvent` at the start, for
            each finished record and at the end.
        columns: Sample field -> column name, e.g. ``{"answer": "response"}``.
        judge_health_min: The judge gate: a judge whose reading rate (the lower of its shares of
            spans and quotes found in the texts it was given) is below this is plainly not reading;
            ``results.summary().judge_gate`` lists such judges (empty: passed) and ``str()`` of the
            summary says so first. Default 0.5 (as ``ragmetrics eval``); None turns the gate off.
        canaries: Put the known-answer probes (:mod:`ragmetrics.pipeline.canaries`) to every judge
            before the first valid row is scored (a dataset with no valid row gets none): at most 4
            cached calls per run and judge, in ``summary().canaries`` and the run's usage, never in a
            record. On by default; False (``ragmetrics eval --no-canaries``) leaves
            them out, so the run's calls are the dataset's own.
        retrieval_tools: For conversations (rows with ``messages``, scored one row per assistant turn):
            the tool names whose results are a turn's evidence; None (the default): every tool's.
        history_budget_tokens: For conversations: estimated tokens of history sent with each turn
            (the oldest messages are cut first, and each result says what was cut).
        records_in_memory: The records :meth:`evaluate` keeps as objects. A longer run keeps its records
            in an unnamed temporary file (deleted with the results) and reads them back at each access,
            so its memory does not grow with the dataset; None keeps every record in memory.

    Raises:
        ConfigError: No metrics, an unknown metric name, duplicate metric names, or an invalid setting.
    """

    def __init__(
        self,
        metrics: Sequence[Any],
        *,
        concurrency: int = 32,
        timeout_per_sample_s: float | None = None,
        max_cost_usd: float | None = None,
        max_calls: int | None = None,
        repeats: int = 1,
        raise_on_error: bool = False,
        strict: bool = False,
        progress: bool | None = None,
        callbacks: Sequence[Callable[[PipelineEvent], Any]] = (),
        columns: Mapping[str, str] | None = None,
        batch: Any = False,
        judge_health_min: float | None = JUDGE_HEALTH_MIN,
        canaries: bool = True,
        retrieval_tools: Collection[str] | None = None,
        history_budget_tokens: int = DEFAULT_HISTORY_BUDGET_TOKENS,
        records_in_memory: int | None = RECORDS_IN_MEMORY,
    ) -> None:
        if isinstance(metrics, (str, bytes)) or not isinstance(metrics, Sequence) or not metrics:
            raise ConfigError("EvaluationPipeline needs a non-empty list of metrics")
        self.metrics = [_by_name(m) if isinstance(m, str) else m for m in metrics]
        self._calls = [MetricCall(m) for m in self.metrics]
        names = [c.name for c in self._calls]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(
                f"EvaluationPipeline: metric names must be unique, got {dupes} twice; "
                "results are keyed by name"
            )
        owner = "EvaluationPipeline"
        check_int(concurrency, "concurrency", owner, minimum=1)
        check_number(timeout_per_sample_s, "timeout_per_sample_s", owner, low=0, low_open=True, optional=True)
        check_number(max_cost_usd, "max_cost_usd", owner, low=0, optional=True)
        check_int(max_calls, "max_calls", owner, minimum=0, optional=True)
        check_int(repeats, "repeats", owner, minimum=1)
        check_int(records_in_memory, "records_in_memory", owner, minimum=0, optional=True)
        check_number(judge_health_min, "judge_health_min", owner, low=0, high=1, optional=True)
        for cb in callbacks:
            check_callable(cb, "callbacks", owner, expected="callables")
        self.concurrency = concurrency
        self.timeout_per_sample_s = timeout_per_sample_s
        self.max_cost_usd = max_cost_usd
        self.max_calls = max_calls
        self.repeats = repeats
        self.records_in_memory = records_in_memory
        self.judge_health_min = judge_health_min
        self.raise_on_error = raise_on_error
        self.strict = strict
        self.progress = progress
        self.callbacks = list(callbacks)
        self.columns = dict(columns or {})
        self.canaries = bool(canaries)
        self.turns = TurnOptions.of(
            retrieval_tools,
            history_budget_tokens,
            owner,
            conversation_rows=any(c.needs.conversation for c in self._calls),
        )
        Dataset([], columns=self.columns)  # checks the mapping's field names now
        self.batch = None
        if batch is not False and batch is not None:
            from ragmetrics.pipeline.batch import batch_options

            self.batch = batch_options(batch)
            if max_cost_usd is not None:
                raise ConfigError(
                    "EvaluationPipeline: max_cost_usd does not apply in batch mode (a batch is paid when it "
                    "is submitted); check the price first with estimate(), which shows the batch price"
                )
        self._needs_contexts = any(c.needs.contexts for c in self._calls)
        self._required = (
            ("answer",)
            + (("question",) if any(c.needs.question for c in self._calls) else ())
            + (("contexts",) if self._needs_contexts else ())
        )
        self._executor = SampleExecutor(
            calls=self._calls,
            repeats=repeats,
            timeout_s=timeout_per_sample_s,
            needs_contexts=self._needs_contexts,
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

    def round_twin(self, *, quiet: bool) -> EvaluationPipeline:
        """A real-time twin of this pipeline for one batch round: quiet, or with the user's events."""
        return EvaluationPipeline(
            self.metrics,
            concurrency=self.concurrency,
            timeout_per_sample_s=self.timeout_per_sample_s,
            repeats=self.repeats,
            raise_on_error=False if quiet else self.raise_on_error,
            strict=self.strict,
            progress=False if quiet else self.progress,
            callbacks=() if quiet else self.callbacks,
            columns=self.columns,
            judge_health_min=self.judge_health_min,
            canaries=self.canaries,
            retrieval_tools=self.turns.retrieval_tools,
            history_budget_tokens=self.turns.history_budget_tokens,
            records_in_memory=self.records_in_memory,
        )

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
        if self.batch is not None:
            from ragmetrics.pipeline.batch import evaluate_in_batches

            return await evaluate_in_batches(self, ds, self.batch)
        box: list[RunState] = []
        records = RecordStore(self.records_in_memory)
        async for record in self._records(ds, box):
            records.add(record)
        state = box[0]
        builder = state.builder
        why = untrusted_judges(builder.health.result(), builder.judge_health_min, builder.canaries)
        if records.seal(why):  # the reading-rate gate is known only now: recount what changed
            builder = state.builder = builder.recounted(records)
        return EvaluationResults(records, builder, state.stats())

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
        if self.batch is not None:
            raise ConfigError(
                "EvaluationPipeline: stream() does not run in batch mode; use evaluate() or run()"
            )
        ds = self._dataset(dataset, questions, answers, contexts, references, ids, columns)
        box: list[RunState] = []
        return PipelineRun(self._records(ds, box), box)

    def run(self, dataset: Any = None, **kwargs: Any) -> EvaluationResults:
        """Blocking twin of :meth:`evaluate`; works inside a running event loop (Jupyter) too."""
        return run_sync(self.evaluate(dataset, **kwargs))

    evaluate_sync = run

    def estimate(self, dataset: Any = None, *, check_cache: bool = True, **kwargs: Any) -> Any:
        """Predict calls, tokens and cost of :meth:`evaluate` on the same data, calling nothing."""
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
        if not isinstance(dataset, Dataset):
            dataset = Dataset(dataset, columns=columns)
        return estimate_run(
            self.metrics,
            dataset.with_turns(self.turns),
            columns=columns,
            repeats=self.repeats,
            check_cache=check_cache,
            canaries=self.canaries,
        )

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
        return to_dataset(
            dataset,
            questions,
            answers,
            contexts,
            references,
            ids,
            columns={**self.columns, **(columns or {})},
            required=self._required,
        ).with_turns(self.turns)

    async def _records(self, ds: Dataset, box: list[RunState]) -> AsyncIterator[EvaluationResult]:
        """The run itself: workers, a bounded queue of finished records, budget, progress, cleanup."""
        if self.strict:
            ds = ds.materialize()
            validate_all(ds, needs_contexts=self._needs_contexts)
        judges = share_judges(self.metrics)
        total = ds.sample_total()
        builder = ReportBuilder(
            self.metric_names,
            thresholds={c.name: c.threshold for c in self._calls},
            repeats=self.repeats,
            judge_health_min=self.judge_health_min,
        )
        state = RunState(
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
            check_priced(judges, self.max_cost_usd, self.max_calls)
            estimator = SampleEstimator(self.metrics, repeats=self.repeats)
            state.budget_cond = asyncio.Condition()
        executor = self._executor

        cap = metering.CallCap(self.max_calls) if self.max_calls is not None else None

        probe: asyncio.Future[None] | None = None
        local: asyncio.Future[bool] | None = None
        halted: list[Any] = []  # local judges that did not pass their canaries, halted for this run

        async def canaries(row: Row) -> None:
            """The known-answer probes, once, started by the first row that can call a judge.

            They run beside the first rows (their verdict marks every record before it is handed
            out), except on a local judge, where they run first: a model that cannot follow the
            schema is named before the dataset is paid for in time. A dataset of invalid rows costs
            nothing, canaries included.
            """
            nonlocal probe, local
            try:
                executor.sample(row)
            except InvalidInputError:
                return
            if probe is None:  # created in this worker's context: the probes count on the cap too
                from ragmetrics.pipeline.canaries import any_local

                draw = draw_canary(_canary_samples(ds, row, executor))
                probe = asyncio.ensure_future(self._canaries(judges, builder, state, draw, halted))
                local = asyncio.ensure_future(any_local(judges))
            if local is not None and await asyncio.shield(local):
                await asyncio.shield(probe)

        async def one_row(row: Row) -> tuple[EvaluationResult, Any]:
            with metering.call_cap(cap):  # set in this worker's task: its judge calls count on the cap
                if self.canaries and judges:
                    await canaries(row)
                if cap is not None and cap.full:
                    state.budget_exhausted = True
                    return await capped(executor, row, cap)
                if estimator is not None:
                    return await within_budget(executor, row, state, estimator)
                return await executor.evaluate_row(row)

        beat = asyncio.create_task(self._heartbeat(state))
        ids = DuplicateIds()
        await self._emit(PipelineEvent(kind="start", done=0, total=total, stats=state.stats()))
        finished = False
        try:
            async with contextlib.aclosing(
                run_bounded(ds.sample_rows(), one_row, concurrency=self.concurrency)
            ) as finished_rows:
                async for record, exc in finished_rows:
                    release_collector()  # the eval command's start-up ends here at the latest
                    if probe is not None and not probe.done():  # no record goes out before their verdict
                        await asyncio.wait([probe])
                    mark_untrusted(record, untrusted_judges({}, self.judge_health_min, builder.canaries))
                    builder.add(record)
                    ids.add(record.id)
                    state.done += 1
                    state.tick()
                    if exc is not None and self.raise_on_error:
                        raise exc
                    await self._emit(
                        PipelineEvent(kind="record", done=state.done, total=total, record=record)
                    )
                    yield record
            finished = True
        finally:
            beat.cancel()
            pending = [f for f in (probe, local) if f is not None]
            for future in pending:
                future.cancel()
            await asyncio.gather(beat, *pending, return_exceptions=True)
            state.progress.close()
            for judge in halted:  # a judge may serve later runs: its halt was this run's
                judge.halt(None)
            await asyncio.shield(self._close_judges(judges))
        if finished:
            ids.warn()
            await self._emit(PipelineEvent(kind="end", done=state.done, total=total, stats=state.stats()))

    async def _canaries(
        self,
        judges: Sequence[CachingJudge],
        builder: ReportBuilder,
        state: RunState,
        draw: CanaryDraw,
        halted: list[Any],
    ) -> None:
        """The known-answer probes: results and usage to the summary and the budget's spend, not a record.

        With the judge gate on, a local judge that does not pass them is halted for the run.
        """
        from ragmetrics.pipeline.canaries import halt_local_judges, run_canaries

        builder.canaries = await run_canaries(judges, draw)
        for result in builder.canaries:
            builder.usage = builder.usage + result.usage
        state.spent += sum(c.usage.cost_usd for c in builder.canaries)
        if self.judge_health_min is not None:
            halted.extend(halt_local_judges(judges, builder.canaries))

    @staticmethod
    async def _heartbeat(state: RunState) -> None:
        """Offer the progress bar a redraw every second, so a log gets its steady line during a stall too.

        The bar decides whether to draw (every ``log_interval_s`` in a log), so this costs nothing
        between its lines; records finishing redraw it as before.
        """
        if not state.progress.enabled:
            return
        while True:
            await asyncio.sleep(1.0)
            state.tick()

    @staticmethod
    async def _close_judges(judges: Sequence[CachingJudge]) -> None:
        for judge in judges:
            await judge.aclose()

    async def _emit(self, event: PipelineEvent) -> None:
        for cb in self.callbacks:
            out = cb(event)
            if inspect.isawaitable(out):
                await out
