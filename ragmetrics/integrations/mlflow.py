"""The old import path of the MLflow export: it lives in :mod:`ragmetrics.observe.mlflow`."""

from ragmetrics.observe.mlflow import (
    DEFAULT_EXPERIMENT,
    EXPORT_TIMEOUT_S,
    export_mlflow,
    run_metrics,
    run_params,
)

__all__ = ["DEFAULT_EXPERIMENT", "EXPORT_TIMEOUT_S", "export_mlflow", "run_metrics", "run_params"]
