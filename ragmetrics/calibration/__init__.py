"""Calibrate judges against human labels: how well does each judge's score agree with people?

``ragmetrics calibrate LABELS --metrics faithfulness --judge A --judge B`` (or :func:`calibrate`) scores
labelled rows with each judge and reports AUROC, balanced accuracy and Cohen's kappa at the metric's pass
mark, the pass mark that agrees best, bootstrap intervals, the confusion matrix, and calls and dollars
per label: the figures a team needs to pick a judge model and a threshold before trusting a gate.
"""

from ragmetrics.calibration.labels import LABEL_FIELDS, LabelledRows, example_path, load_labels
from ragmetrics.calibration.run import (
    CalibrationReport,
    JudgeCalibration,
    MetricAgreement,
    calibrate,
    calibrate_sync,
)

__all__ = [
    "LABEL_FIELDS",
    "CalibrationReport",
    "JudgeCalibration",
    "LabelledRows",
    "MetricAgreement",
    "calibrate",
    "calibrate_sync",
    "example_path",
    "load_labels",
]
