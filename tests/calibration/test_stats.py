"""calibrate's agreement figures against scikit-learn's, on random and tied data."""

from __future__ import annotations

import numpy as np
import pytest

from ragmetrics.calibration import stats

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def _data(seed: int, n: int, levels: int | None) -> tuple[list[float], list[bool]]:
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.5
    labels[0], labels[1] = True, False  # both classes
    noise = rng.random(n)
    scores = np.clip(0.3 * labels + 0.7 * noise, 0, 1)
    if levels:  # many ties, as a claim metric's k/n scores have
        scores = np.round(scores * levels) / levels
    return scores.tolist(), labels.tolist()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("levels", [None, 4])
def test_auroc_matches_sklearn(seed: int, levels: int | None) -> None:
    scores, labels = _data(seed, 57, levels)
    assert stats.auroc(scores, labels) == pytest.approx(sklearn_metrics.roc_auc_score(labels, scores))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("threshold", [0.25, 0.5, 0.75])
def test_balanced_accuracy_kappa_and_confusion_match_sklearn(seed: int, threshold: float) -> None:
    scores, labels = _data(seed, 41, 5)
    predicted = [s >= threshold for s in scores]
    assert stats.balanced_accuracy(scores, labels, threshold) == pytest.approx(
        sklearn_metrics.balanced_accuracy_score(labels, predicted)
    )
    assert stats.cohen_kappa(scores, labels, threshold) == pytest.approx(
        sklearn_metrics.cohen_kappa_score(labels, predicted)
    )
    tn, fp, fn, tp = sklearn_metrics.confusion_matrix(labels, predicted, labels=[False, True]).ravel()
    assert stats.confusion(scores, labels, threshold) == stats.Confusion(tp=tp, fp=fp, tn=tn, fn=fn)


def test_undefined_figures_are_none_never_nan() -> None:
    assert stats.auroc([0.2, 0.9], [True, True]) is None
    assert stats.balanced_accuracy([0.2, 0.9], [False, False], 0.5) is None
    assert stats.best_threshold([0.2, 0.9], [True, True]) is None
    # every prediction and every label in one class: kappa is undefined, not NaN
    assert stats.cohen_kappa([0.9, 0.8], [True, True], 0.5) is None
    assert stats.bootstrap_interval([0.5], [True], "auroc") is None


def test_a_constant_judge_is_exactly_chance() -> None:
    labels = [True, False] * 10
    scores = [1.0] * 20
    assert stats.auroc(scores, labels) == 0.5
    assert stats.balanced_accuracy(scores, labels, 0.5) == 0.5
    assert stats.cohen_kappa(scores, labels, 0.5) == 0.0
    assert stats.bootstrap_interval(scores, labels, "auroc", resamples=200) == (0.5, 0.5)


def test_best_threshold_maximises_balanced_accuracy_and_prefers_the_lowest() -> None:
    scores, labels = _data(3, 60, 10)
    best, value = stats.best_threshold(scores, labels)
    grid = sorted(set(scores))
    values = [stats.balanced_accuracy(scores, labels, t) for t in grid]
    assert value == pytest.approx(max(v for v in values if v is not None))
    assert best == min(t for t, v in zip(grid, values, strict=True) if v is not None and v >= value - 1e-12)
    # a perfect separation is found exactly
    assert stats.best_threshold([0.1, 0.2, 0.7, 0.9], [False, False, True, True]) == (0.7, 1.0)


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    scores, labels = _data(5, 80, None)
    first = stats.bootstrap_interval(scores, labels, "auroc", resamples=300, seed=7)
    again = stats.bootstrap_interval(scores, labels, "auroc", resamples=300, seed=7)
    other = stats.bootstrap_interval(scores, labels, "auroc", resamples=300, seed=8)
    assert first == again and first != other
    low, high = first
    assert low < stats.auroc(scores, labels) < high
