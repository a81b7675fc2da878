"""``ragmetrics.calibrate``: score human-labelled rows with each judge and measure the agreement.

For each judge and metric: AUROC (does the score rank the good rows above the bad?), balanced accuracy
and Cohen's kappa at the metric's pass mark (does the gate agree with people?), the pass mark that
would agree best, seeded bootstrap 95% intervals, the confusion matrix, and calls and dollars per
labelled row. A row whose judge output failed verification (``judge_output_invalid``: spans or quotes not
in the text) counts as a fail (score 0), as a gate would treat it; rows the judge could not score for
other reasons (provider errors) are counted (``unscored``) and left out of its figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics._aio import run_sync
from ragmetrics._check import check_int
from ragmetrics.calibration import stats
from ragmetrics.calibration.labels import LabelledRows, load_labels
from ragmetrics.errors import ConfigError
from ragmetrics.metrics import metric_from_name

__all__ = ["CalibrationReport", "JudgeCalibration", "MetricAgreement", "calibrate", "calibrate_sync"]

_DEFAULT_THRESHOLD = 0.5


class MetricAgreement(BaseModel):
    """How one judge's scores for one metric agree with the human labels."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    """The metric's name."""
    threshold: float
    """The pass mark the gate figures use: the metric's threshold (0.5 when it has none)."""
    labelled: int
    """Rows with a human label for this metric."""
    positives: int
    """Of ``labelled``: rows the humans marked good (faithful, relevant)."""
    negatives: int
    """Of ``labelled``: rows the humans marked bad."""
    scored: int
    """Of ``labelled``: rows in the figures below (scored, or judge_output_invalid counted as a fail)."""
    unscored: int
    """Of ``labelled``: rows the judge gave no score (see ``statuses``); left out of the figures."""
    statuses: dict[str, int] = Field(default_factory=dict)
    """Result status -> rows, over the labelled rows (``ok``, ``provider_error``, ``invalid_input``...)."""
    auroc: float | None = None
    """Area under the ROC curve (0.5 is chance, 1.0 ranks every good row above every bad one)."""
    auroc_ci: tuple[float, float] | None = None
    """Bootstrap 95% interval of ``auroc``."""
    balanced_accuracy: float | None = None
    """Balanced accuracy of pass/fail at ``threshold`` (0.5 is chance)."""
    balanced_accuracy_ci: tuple[float, float] | None = None
    """Bootstrap 95% interval of ``balanced_accuracy``."""
    kappa: float | None = None
    """Cohen's kappa of pass/fail at ``threshold`` against the labels (0 is chance agreement)."""
    confusion: dict[str, int] = Field(default_factory=dict)
    """At ``threshold``: ``tp`` (good, passed), ``fp`` (bad, passed), ``tn`` (bad, failed), ``fn`` (good,
    failed)."""
    best_threshold: float | None = None
    """The pass mark that maximises balanced accuracy on these labels (lowest on a tie)."""
    best_balanced_accuracy: float | None = None
    """Balanced accuracy at ``best_threshold``."""


class JudgeCalibration(BaseModel):
    """One judge's agreement with the labels, per metric, and what it cost."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    """The judge: its spec string, or its name."""
    metrics: dict[str, MetricAgreement] = Field(default_factory=dict)
    """Metric name -> agreement."""
    rows: int = 0
    """Labelled rows scored (each with the metrics it is labelled for)."""
    calls: int = 0
    """LLM calls made (every attempt; cache hits are free)."""
    cost_usd: float = 0.0
    """Dollars spent."""
    calls_per_label: float = 0.0
    """``calls`` / ``rows``."""
    cost_per_label_usd: float = 0.0
    """``cost_usd`` / ``rows``."""
    wall_time_s: float = 0.0
    """Scoring time."""


class CalibrationReport(BaseModel):
    """Every judge side by side: :func:`calibrate`'s answer."""

    model_config = ConfigDict(extra="forbid")

    source: str
    """Where the labels came from."""
    metrics: list[str]
    """The metrics calibrated, in order."""
    judges: list[JudgeCalibration]
    """One per judge, in the order given."""
    bootstrap: int
    """Bootstrap resamples behind each interval."""
    seed: int
    """The bootstrap's seed."""

    def to_text(self) -> str:
        """The judges side by side, one table per metric (plain text)."""
        from ragmetrics.calibration.render import report_text

        return report_text(self)

    def to_html(self) -> str:
        """A self-contained HTML page of the same tables."""
        from ragmetrics.calibration.render import report_html

        return report_html(self)

    def write_html(self, path: str | Path) -> Path:
        """Write :meth:`to_html` to ``path``."""
        target = Path(path)
        target.write_text(self.to_html(), encoding="utf-8")
        return target


def judge_label(judge: Any) -> str:
    """How a judge is named in the report: its spec, else its ``name``, else its type."""
    if isinstance(judge, str):
        return judge
    name = getattr(judge, "name", None) or getattr(judge, "spec", None)
    return str(name) if name else type(judge).__name__


def _agreement(
    metric: str,
    threshold: float,
    labels: Mapping[int, bool],
    records: Mapping[int, Any],
    *,
    bootstrap: int,
    seed: int,
) -> MetricAgreement:
    scores: list[float] = []
    truths: list[bool] = []
    statuses: Counter[str] = Counter()
    for position, truth in labels.items():
        record = records[position]
        status = record.status_of(metric)
        statuses[status] += 1
        score = record.scores.get(metric)
        if score is None and status == "judge_output_invalid":
            score = 0.0  # the judge's output failed verification: a gate would not pass the row
        if score is not None:
            scores.append(score)
            truths.append(truth)
    positives = sum(labels.values())
    found = MetricAgreement(
        metric=metric,
        threshold=threshold,
        labelled=len(labels),
        positives=positives,
        negatives=len(labels) - positives,
        scored=len(scores),
        unscored=len(labels) - len(scores),
        statuses=dict(sorted(statuses.items())),
    )
    if not scores:
        return found
    c = stats.confusion(scores, truths, threshold)
    best = stats.best_threshold(scores, truths)
    found.auroc = stats.auroc(scores, truths)
    found.balanced_accuracy = stats.balanced_accuracy(scores, truths, threshold)
    found.kappa = stats.cohen_kappa(scores, truths, threshold)
    found.confusion = {"tp": c.tp, "fp": c.fp, "tn": c.tn, "fn": c.fn}
    if best is not None:
        found.best_threshold, found.best_balanced_accuracy = best
    found.auroc_ci = stats.bootstrap_interval(scores, truths, "auroc", resamples=bootstrap, seed=seed)
    found.balanced_accuracy_ci = stats.bootstrap_interval(
        scores, truths, "balanced_accuracy", threshold=threshold, resamples=bootstrap, seed=seed
    )
    return found


async def calibrate(
    labels: str | Path | Sequence[Mapping[str, Any]],
    metrics: Sequence[str] | str = ("faithfulness",),
    judges: Sequence[Any] | str | None = None,
    *,
    threshold: float | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    cache: bool = True,
    encoding: str | None = None,
    **pipeline_options: Any,
) -> CalibrationReport:
    """Score ``labels`` with each judge and measure how well each agrees with the people who labelled them.

    Example:
        >>> report = ragmetrics.calibrate_sync("labels.jsonl", metrics=["faithfulness"],
        ...     judges=["offline", "openai:gpt-4o-mini"])
        >>> print(report.to_text())

    Args:
        labels: A ``.jsonl`` file or a list of dicts (see :mod:`ragmetrics.calibration.labels`).
        metrics: Metric names (``faithfulness``, ``relevancy``, ``groundedness``...).
        judges: Judge specs (``"offline"``, ``"openai:gpt-4o-mini"``, ``"openai:MODEL@URL"``...) or
            ``Judge`` objects; None: the environment's judge, as ``evaluate()`` picks it.
        threshold: The pass mark for the gate figures (None: each metric's own threshold).
        bootstrap: Resamples per interval (0: no intervals).
        seed: The bootstrap's seed.
        cache: Read and write the judge disk cache (a re-run costs nothing).
        encoding: The labels file's text encoding (``"cp1252"``...); default UTF-8.
        pipeline_options: :class:`~ragmetrics.pipeline.runner.EvaluationPipeline` options
            (``concurrency``, ``max_cost_usd``...), applied to each judge's run.

    Raises:
        ConfigError: Bad labels (a line that cannot be read, a bad field, a label that is not a boolean:
            before any row is scored), no labelled row for a metric, an unknown metric or judge spec.
    """
    from ragmetrics.pipeline.runner import EvaluationPipeline
    from ragmetrics.settings import default_judge_spec

    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise ConfigError("calibrate(): metrics= must name at least one metric")
    if isinstance(judges, str):
        judges = [judges]
    chosen = list(judges) if judges else [default_judge_spec()]
    check_int(bootstrap, "bootstrap", "calibrate()", minimum=0)
    data: LabelledRows = load_labels(labels, names, encoding=encoding)
    pipeline_options.setdefault("progress", False)
    # calibration measures the judge against labels itself; its calls per label are the labels' own
    pipeline_options.setdefault("canaries", False)
    # rows labelled for the same metrics are scored in one run, with only those metrics (a row labelled
    # for relevancy alone costs no faithfulness call; metrics in one run share the claim calls)
    groups: dict[tuple[str, ...], list[int]] = {}
    for position in range(len(data.rows)):
        wanted = tuple(n for n in names if position in data.labels[n])
        groups.setdefault(wanted, []).append(position)
    found: list[JudgeCalibration] = []
    for judge in chosen:
        records: dict[int, Any] = {}
        calls, cost, seconds = 0, 0.0, 0.0
        built: dict[str, Any] = {}
        for wanted, positions in groups.items():
            metric_objects = [
                metric_from_name(n, llm=judge, threshold=threshold, cache=cache) for n in wanted
            ]
            built.update(zip(wanted, metric_objects, strict=True))
            pipeline = EvaluationPipeline(metrics=metric_objects, **pipeline_options)
            results = await pipeline.evaluate([data.rows[i] for i in positions])
            records.update(zip(positions, results, strict=True))
            calls += results.stats.usage.calls
            cost += results.stats.usage.cost_usd
            seconds += results.stats.wall_time_s
        rows = len(data.rows)
        item = JudgeCalibration(
            judge=judge_label(judge),
            rows=rows,
            calls=calls,
            cost_usd=cost,
            calls_per_label=calls / rows if rows else 0.0,
            cost_per_label_usd=cost / rows if rows else 0.0,
            wall_time_s=seconds,
        )
        for name in names:
            metric = built[name]
            mark = metric.threshold if metric.threshold is not None else _DEFAULT_THRESHOLD
            item.metrics[metric.name] = _agreement(
                metric.name, mark, data.labels[name], records, bootstrap=bootstrap, seed=seed
            )
        found.append(item)
    return CalibrationReport(source=data.source, metrics=names, judges=found, bootstrap=bootstrap, seed=seed)


def calibrate_sync(*args: Any, **kwargs: Any) -> CalibrationReport:
    """The blocking form of :func:`calibrate` (also inside a running event loop, e.g. Jupyter)."""
    return run_sync(calibrate(*args, **kwargs))
