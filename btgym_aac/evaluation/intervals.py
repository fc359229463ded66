"""Percentile bootstrap intervals of per-episode results (the walk-forward's verdict and the tearsheets use them)."""
import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 10000


def bootstrap_mean_interval(values, confidence=CONFIDENCE, resamples=RESAMPLES, seed=0):
    """Percentile bootstrap interval of the mean of `values`.

    Args:
        values: 1-D sequence of numbers (at least one).
        confidence: coverage of the interval, in (0, 1).
        resamples: bootstrap resamples (each draws len(values) values with replacement).
        seed: seed of the resampling.

    Returns:
        (mean, low, high).
    """
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(values.mean()), float(low), float(high)
