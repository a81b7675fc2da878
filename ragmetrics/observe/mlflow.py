"""Scores out to MLflow: one tracking run per evaluation, with its aggregates, params and files.

``ragmetrics eval ... --export mlflow:TRACKING_URI`` (or :func:`export_mlflow`) creates a run in the
experiment ``MLFLOW_EXPERIMENT_NAME`` (default ``ragmetrics``) and logs metrics (per metric aggregates and
the run's counters: :func:`run_metrics`), params (:func:`run_params`) and artifacts (the records as JSON
lines, ``records.jsonl``, and the HTML report, ``report.html``). It talks to the server through
``mlflow.MlflowClient`` (no global active run is started or changed), on a worker thread, the whole
export bounded by ``timeout_s`` (``RAGMETRICS_EXPORT_TIMEOUT_S``, else ``EXPORT_TIMEOUT_S``): MLflow's
own retries and timeouts held a run minutes on a dead port. Past it, :class:`ExportError` says so.
Needs the ``mlflow`` extra: ``pip install 'ragmetrics[mlflow]'``; ``import ragmetrics`` never imports it.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmetrics._check import check_number
from ragmetrics.errors import ExportError, MissingDependencyError
from ragmetrics.settings import EXPORT_TIMEOUT_S, export_timeout_s

__all__ = ["DEFAULT_EXPERIMENT", "EXPORT_TIMEOUT_S", "export_mlflow", "run_metrics", "run_params"]

DEFAULT_EXPERIMENT = "ragmetrics"
_PARAM_MAX = 6000  # MLflow's limit on a param value's length
_BATCH_METRICS, _BATCH_PARAMS = 1000, 100  # MLflow's log_batch limits


def run_metrics(report: Any) -> dict[str, float]:
    """The numbers logged as MLflow metrics: per-metric aggregates and the run's counters.

    Per metric ``<name>/mean``, ``<name>/pass_rate`` (with a threshold), ``<name>/scored``,
    ``<name>/unscored``, ``<name>/ci_low`` and ``<name>/ci_high``; for the run ``samples``, ``failed``,
    ``calls``, ``prompt_tokens``, ``completion_tokens``, ``cost_usd``, ``cache_hits`` and ``wall_time_s``.
    """
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
    """The run's settings logged as MLflow params: judge, metrics, thresholds, data, version.

    ``judge``, ``metrics``, ``threshold/<name>`` per metric with one, ``data`` and ``ragmetrics_version``.
    """
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
    timeout_s: float | None = None,
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
        timeout_s: Seconds the whole export may take; None: ``RAGMETRICS_EXPORT_TIMEOUT_S``, else 30.

    Raises:
        MissingDependencyError: The ``mlflow`` extra is not installed.
        ExportError: The tracking server refused the run, could not be reached, or did not finish
            within ``timeout_s``.
        ConfigError: ``timeout_s`` (or ``RAGMETRICS_EXPORT_TIMEOUT_S``) is not a number of seconds > 0.
    """
    try:
        from mlflow.entities import Metric, Param
    except ImportError as exc:
        raise MissingDependencyError("mlflow", "mlflow", "exporting scores to MLflow") from exc

    limit = export_timeout_s() if timeout_s is None else timeout_s
    limit = check_number(limit, "timeout_s", "export_mlflow", low=0, low_open=True)
    report = records.summary()
    items = list(records)
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in run_metrics(report).items()]
    params = [Param(k, v) for k, v in run_params(report, items, data=data).items()]
    export = _Export(tracking_uri, experiment, run_name, report.ragmetrics_version)
    with tempfile.TemporaryDirectory(prefix="ragmetrics-mlflow-") as tmp:
        try:
            files = [
                _records_file(records, records_path, Path(tmp)),
                Path(report_path) if report_path else _report_file(report, Path(tmp), data),
            ]
        except OSError as exc:
            raise ExportError(f"--export mlflow:{tracking_uri}: {type(exc).__name__}: {exc}") from exc
        worker = threading.Thread(
            target=export.run, args=(metrics, params, files), name="ragmetrics-mlflow", daemon=True
        )
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            export.stopped.set()
            raise ExportError(
                f"--export mlflow:{tracking_uri}: the tracking server did not take the run within "
                f"{limit:g} s (RAGMETRICS_EXPORT_TIMEOUT_S, default {EXPORT_TIMEOUT_S:g}); it was "
                f"{export.step}; check that the server is up and answering, or allow it longer"
            )
    if export.error is not None:
        raise export.error
    return str(export.run_id)


class _Stopped(Exception):
    """The caller stopped waiting: no further request is sent."""


class _Export:
    """One export's requests, made on a worker thread; its outcome is read once the thread ends."""

    def __init__(self, uri: str, experiment: str | None, run_name: str | None, version: str) -> None:
        self.uri, self.run_name, self.version = uri, run_name, version
        self.experiment = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
        self.stopped = threading.Event()
        self.step = "connecting"
        self.run_id: str | None = None
        self.error: Exception | None = None

    def _next(self, step: str) -> None:
        if self.stopped.is_set():
            raise _Stopped
        self.step = step

    def run(self, metrics: list[Any], params: list[Any], files: list[Path]) -> None:
        """Create the run, log its metrics, params and files, and mark it finished (or failed)."""
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient

        client = None
        try:
            client = MlflowClient(tracking_uri=self.uri)
            self._next(f"looking up the experiment {self.experiment!r}")
            found = client.get_experiment_by_name(self.experiment)
            if found is None:
                self._next(f"creating the experiment {self.experiment!r}")
            experiment_id = (
                found.experiment_id if found is not None else client.create_experiment(self.experiment)
            )
            self._next("creating the run")
            run = client.create_run(
                experiment_id, run_name=self.run_name, tags={"ragmetrics.version": self.version}
            )
            self.run_id = run.info.run_id
            for start in range(0, len(metrics), _BATCH_METRICS):
                self._next(f"logging metrics to run {self.run_id}")
                client.log_batch(self.run_id, metrics=metrics[start : start + _BATCH_METRICS])
            for start in range(0, len(params), _BATCH_PARAMS):
                self._next(f"logging params to run {self.run_id}")
                client.log_batch(self.run_id, params=params[start : start + _BATCH_PARAMS])
            for path in files:
                self._next(f"uploading {path.name} to run {self.run_id}")
                client.log_artifact(self.run_id, str(path))
            self._next(f"marking run {self.run_id} finished")
            client.set_terminated(self.run_id, "FINISHED")
        except (MlflowException, OSError, _Stopped) as exc:
            if client is not None and self.run_id is not None:
                try:
                    client.set_terminated(self.run_id, "FAILED")
                except (MlflowException, OSError):
                    pass
            if not isinstance(exc, _Stopped):
                self.error = ExportError(f"--export mlflow:{self.uri}: {type(exc).__name__}: {exc}")
                self.error.__cause__ = exc
        except Exception as exc:  # raised again on the caller's thread, as before the worker
            self.error = exc


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
