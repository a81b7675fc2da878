"""Agreement between a judge's scores and binary human labels: AUROC, balanced accuracy, Cohen's kappa.

Scores are a metric's scores in [0, 1]; labels are True (the human says good: faithful, relevant) or
False. A score at or above the threshold predicts True. Every function returns None where the figure is
undefined (one class missing), never NaN; ``tests/calibration`` checks each against scikit-learn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "Confusion",
    "auroc",
    "balanced_accuracy",
    "best_threshold",
    "bootstrap_interval",
    "cohen_kappa",
    "confusion",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Confusion:
    """Counts at one threshold (positive = the human label True / a score >= threshold)."""

    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def n(self) -> int:
        """Rows counted."""
        return self.tp + self.fp + self.tn + self.fn


def _arrays(
    scores: Sequence[float] | ArrayLike, labels: Sequence[bool] | ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be two lists of one length, got {s.shape} and {y.shape}")
    return s, y


def auroc(scores: Sequence[float] | ArrayLike, labels: Sequence[bool] | ArrayLike) -> float | None:
    """Area under the ROC curve: the chance a random True row outscores a random False one (ties: half)."""
    s, y = _arrays(scores, labels)
    positives, negatives = int(y.sum()), int((~y).sum())
    if positives == 0 or negatives == 0:
        return None
    # Mann-Whitney U from average ranks (ties share their mean rank)
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=float)
    sorted_scores = s[order]
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    u = float(ranks[y].sum()) - positives * (positives + 1) / 2.0
    return u / (positives * negatives)


def confusion(
    scores: Sequence[float] | ArrayLike, labels: Sequence[bool] | ArrayLike, threshold: float
) -> Confusion:
    """The confusion matrix when a score >= ``threshold`` predicts True."""
    s, y = _arrays(scores, labels)
    predicted = s >= threshold
    return Confusion(
        tp=int((predicted & y).sum()),
        fp=int((predicted & ~y).sum()),
        tn=int((~predicted & ~y).sum()),
        fn=int((~predicted & y).sum()),
    )


def _balanced(c: Confusion) -> float | None:
    if c.tp + c.fn == 0 or c.tn + c.fp == 0:
        return None
    return (c.tp / (c.tp + c.fn) + c.tn / (c.tn + c.fp)) / 2.0


def balanced_accuracy(
    scores: Sequence[float] | ArrayLike, labels: Sequence[bool] | ArrayLike, threshold: float
) -> float | None:
    """Mean of the true-positive and true-negative rates at ``threshold`` (0.5 is chance)."""
    return _balanced(confusion(scores, labels, threshold))


def _kappa(c: Confusion) -> float | None:
    n = c.n
    if n == 0:
        return None
    observed = (c.tp + c.tn) / n
    expected = ((c.tp + c.fp) * (c.tp + c.fn) + (c.tn + c.fn) * (c.tn + c.fp)) / (n * n)
    if expected == 1.0:
        return None  # every row in one class on both sides: agreement beyond chance is undefined
    return (observed - expected) / (1.0 - expected)


def cohen_kappa(
    scores: Sequence[float] | ArrayLike, labels: Sequence[bool] | ArrayLike, threshold: float
) -> float | None:
    """Cohen's kappa between the judge's pass/fail at ``threshold`` and the labels (0 is chance)."""
    return _kappa(confusion(scores, labels, threshold))


def best_threshold(
    scores: Sequence[float] | ArrayLike, labels: Sequence[bool] | ArrayLike
) -> tuple[float, float] | None:
    """The threshold that maximises balanced accuracy, and that accuracy.

    Candidates are the scores seen (a threshold between two seen scores predicts the same as the upper
    one); on a tie the lowest threshold wins, so the answer does not depend on row order.
    """
    s, y = _arrays(scores, labels)
    if not y.any() or y.all():
        return None
    best: tuple[float, float] | None = None
    for candidate in sorted(set(s.tolist())):
        value = _balanced(confusion(s, y, candidate))
        if value is not None and (best is None or value > best[1] + 1e-12):
            best = (candidate, value)
    return best


def bootstrap_interval(
    scores: Sequence[float] | ArrayLike,
    labels: Sequence[bool] | ArrayLike,
    statistic: str,
    *,
    threshold: float = 0.5,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """A percentile bootstrap 95% interval of ``statistic`` (``"auroc"`` or ``"balanced_accuracy"``).

    Rows are resampled with replacement (seeded, so a run is repeatable); resamples where the statistic
    is undefined (one class drawn) are left out. None with fewer than 2 rows or no defined resample.
    """
    s, y = _arrays(scores, labels)
    if len(s) < 2 or resamples < 1:
        return None
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(resamples):
        pick = rng.integers(0, len(s), len(s))
        ss, yy = s[pick], y[pick]
        value = auroc(ss, yy) if statistic == "auroc" else balanced_accuracy(ss, yy, threshold)
        if value is not None:
            values.append(value)
    if not values:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)
