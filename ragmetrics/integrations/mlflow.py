"""Scores out to MLflow: one tracking run per evaluation, with its aggregates, params and files.

``ragmetrics eval ... --export mlflow:TRACKING_URI`` (or :func:`export_mlflow`) creates a run in the
experiment ``MLFLOW_EXPERIMENT_NAME`` (default ``ragmetrics``) on that tracking server and logs

* metrics: per metric ``<name>/mean``, ``<name>/pass_rate`` (with a threshold), ``<name>/scored``,
  ``<name>/unscored``, ``<name>/ci_low`` and ``<name>/ci_high``; for the run ``samples``, ``failed``,
  ``calls``, ``prompt_tokens``, ``completion_tokens``, ``cost_usd``, ``cache_hits`` and ``wall_time_s``;
* params: ``judge``, ``metrics``, ``threshold/<name>`` per metric with one, ``data`` and
  ``ragmetrics_version``;
* artifacts: the records as JSON lines (``records.jsonl``, lossless: ``read_jsonl`` reads it back) and
  the HTML report (``report.html``).

It talks to the server through ``mlflow.MlflowClient`` (no global active run is started or changed).
Needs the ``mlflow`` extra: ``pip install 'ragmetrics[mlflow]'``; ``import ragmetrics`` never imports it.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import ExportError, MissingDependencyError

__all__ = ["DEFAULT_EXPERIMENT", "export_mlflow", "run_metrics", "run_params"]

DEFAULT_EXPERIMENT = "ragmetrics"
_PARAM_MAX = 6000  # MLflow's limit on a param value's length
_BATCH_METRICS, _BATCH_PARAMS = 1000, 100  # MLflow's log_batch limits


def run_metrics(report: Any) -> dict[str, float]:
    """The numbers logged as MLflow metrics: per-metric aggregates and the run's counters."""
    out: dict[str, float] = {}
    for name, agg in report.aggregates.items():
        values = {
            "mean": agg.mean,
            "pass_rate": agg.pass_rate,
            "scored": agg.count,
            "unscored": agg.failed,
            "ci_low": agg.ci_low,
            "ci_high": agg.ci_high,
        }
        out.update({f"{name}/{key}": float(v) for key, v in values.items() if v is not None})
    run = report.run
    usage = run.usage
    out.update(
        samples=float(run.samples),
        failed=float(run.failed),
        calls=float(usage.calls),
        prompt_tokens=float(usage.prompt_tokens),
        completion_tokens=float(usage.completion_tokens),
        cost_usd=float(usage.cost_usd),
        cache_hits=float(run.cache.hits),
        wall_time_s=float(run.wall_time_s),
    )
    return out


def run_params(report: Any, records: Sequence[Any], *, data: str | None = None) -> dict[str, str]:
    """The run's settings logged as MLflow params: judge, metrics, thresholds, data, version."""
    params = {
        "judge": ",".join(report.run.judges) or "none",
        "metrics": ",".join(report.aggregates),
        "ragmetrics_version": report.ragmetrics_version,
    }
    if data:
        params["data"] = data
    for name in report.aggregates:
        threshold = next(
            (
                r.results[name].threshold
                for r in records
                if name in r.results and r.results[name].threshold is not None
            ),
            None,
        )
        if threshold is not None:
            params[f"threshold/{name}"] = repr(float(threshold))
    return {k: v[:_PARAM_MAX] for k, v in params.items()}


def export_mlflow(
    records: Any,
    tracking_uri: str,
    *,
    experiment: str | None = None,
    run_name: str | None = None,
    data: str | None = None,
    records_path: str | Path | None = None,
    report_path: str | Path | None = None,
) -> str:
    """Log one run of results to an MLflow tracking server; returns the MLflow run id.

    Args:
        records: The run's :class:`~ragmetrics.pipeline.EvaluationResults` (its ``summary()`` gives the
            aggregates).
        tracking_uri: Where MLflow tracks: ``http://HOST:PORT``, ``sqlite:///mlflow.db``, ``databricks``...
        experiment: The experiment (created when missing); default ``MLFLOW_EXPERIMENT_NAME`` or
            ``ragmetrics``.
        run_name: The run's name (MLflow makes one up without it).
        data: What was scored (a file name), logged as the ``data`` param.
        records_path: A JSONL records file already written, logged as is; without it one is written.
        report_path: An HTML report already written, logged as is; without it one is written.

    Raises:
        MissingDependencyError: The ``mlflow`` extra is not installed.
        ExportError: The tracking server refused the run or could not be reached.
    """
    try:
        from mlflow.entities import Metric, Param
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        raise MissingDependencyError("mlflow", "mlflow", "exporting scores to MLflow") from exc

    report = records.summary()
    items = list(records)
    name = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in run_metrics(report).items()]
    params = [Param(k, v) for k, v in run_params(report, items, data=data).items()]
    client = MlflowClient(tracking_uri=tracking_uri)
    run_id = None
    try:
        found = client.get_experiment_by_name(name)
        experiment_id = found.experiment_id if found is not None else client.create_experiment(name)
        run = client.create_run(
            experiment_id, run_name=run_name, tags={"ragmetrics.version": report.ragmetrics_version}
        )
        run_id = run.info.run_id
        for start in range(0, len(metrics), _BATCH_METRICS):
            client.log_batch(run_id, metrics=metrics[start : start + _BATCH_METRICS])
        for start in range(0, len(params), _BATCH_PARAMS):
            client.log_batch(run_id, params=params[start : start + _BATCH_PARAMS])
        with tempfile.TemporaryDirectory(prefix="ragmetrics-mlflow-") as tmp:
            jsonl = _records_file(records, records_path, Path(tmp))
            html = Path(report_path) if report_path else _report_file(report, Path(tmp), data)
            client.log_artifact(run_id, str(jsonl))
            client.log_artifact(run_id, str(html))
        client.set_terminated(run_id, "FINISHED")
    except (MlflowException, OSError) as exc:
        if run_id is not None:
            try:
                client.set_terminated(run_id, "FAILED")
            except (MlflowException, OSError):
                pass
        raise ExportError(f"--export mlflow:{tracking_uri}: {type(exc).__name__}: {exc}") from exc
    return str(run_id)


def _records_file(records: Any, given: str | Path | None, tmp: Path) -> Path:
    """The records as JSON lines: the ``--out`` file when it is one, else a fresh ``records.jsonl``."""
    if given is not None and Path(given).suffix.lower() != ".csv":
        return Path(given)
    path = tmp / "records.jsonl"
    records.to_jsonl(path)
    return path


def _report_file(report: Any, tmp: Path, title: str | None) -> Path:
    from ragmetrics.report import write_html_report

    return write_html_report(report, tmp / "report.html", title=title)
