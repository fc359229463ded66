import numpy as np
import pytest

from btgym_aac.spaces import sample_dp, softmax
from btgym_aac.algorithms.common.math_utils import cat_entropy, discount, kl_divergence, log_uniform
from btgym_aac.compat import tf


def plain_discount(values, gamma):
    out = [0.0] * len(values)
    running = 0.0
    for t in reversed(range(len(values))):
        running = values[t] + gamma * running
        out[t] = running
    return out


def numpy_probs(logits):
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def run_in_graph(build, *arrays):
    with tf.Graph().as_default():
        inputs = [tf.constant(array, dtype=tf.float32) for array in arrays]
        with tf.Session() as sess:
            return sess.run(build(*inputs))


def test_discount_matches_plain_loop():
    values = np.random.default_rng(0).normal(size=50)
    np.testing.assert_allclose(discount(values, 0.95), plain_discount(list(values), 0.95), rtol=1e-12)


def test_discount_hand_computed_and_multi_column():
    np.testing.assert_allclose(discount([1.0, 2.0, 3.0], 0.5), [1 + 0.5 * 2 + 0.25 * 3, 2 + 0.5 * 3, 3])
    columns = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    result = discount(columns, 0.5)
    np.testing.assert_allclose(result[:, 0], [2.75, 3.5, 3.0])
    np.testing.assert_allclose(result[:, 1], [27.5, 35.0, 30.0])


def test_discount_rejects_scalar():
    with pytest.raises(ValueError, match='time axis'):
        discount(3.0, 0.9)


def test_log_uniform_range_and_log_distribution():
    lo, hi = 1e-4, 1e-2
    draws = log_uniform([lo, hi], 20000, rng=np.random.default_rng(1))
    assert draws.shape == (20000,)
    assert draws.min() >= lo * (1 - 1e-9) and draws.max() <= hi * (1 + 1e-9)
    logs = np.log(draws)
    width = np.log(hi) - np.log(lo)
    assert abs(logs.mean() - (np.log(lo) + np.log(hi)) / 2) < 0.02 * width
    quarter_counts = np.histogram(logs, bins=4, range=(np.log(lo), np.log(hi)))[0] / len(logs)
    np.testing.assert_allclose(quarter_counts, 0.25, atol=0.02)


def test_log_uniform_scalar_forms():
    single = log_uniform([1e-3, 1e-1], 1)
    assert isinstance(single, np.float64) and 1e-3 <= single <= 1e-1
    assert log_uniform(0.05, 1) == pytest.approx(0.05)
    with pytest.raises(ValueError, match='non-negative'):
        log_uniform([-1.0, 1.0], 3)


def test_cat_entropy_matches_numpy():
    logits = np.random.default_rng(2).normal(scale=3.0, size=(8, 5)).astype(np.float32)
    probs = numpy_probs(logits.astype(np.float64))
    expected = -(probs * np.log(probs)).sum(axis=1)
    np.testing.assert_allclose(run_in_graph(cat_entropy, logits), expected, atol=1e-5)


def test_kl_divergence_matches_numpy():
    rng = np.random.default_rng(3)
    logits_1 = rng.normal(scale=2.0, size=(6, 4)).astype(np.float32)
    logits_2 = rng.normal(scale=2.0, size=(6, 4)).astype(np.float32)
    p1, p2 = numpy_probs(logits_1.astype(np.float64)), numpy_probs(logits_2.astype(np.float64))
    expected = (p1 * (np.log(p1) - np.log(p2))).sum(axis=-1)
    result = run_in_graph(kl_divergence, logits_1, logits_2)
    np.testing.assert_allclose(result, expected, atol=1e-5)
    np.testing.assert_allclose(run_in_graph(kl_divergence, logits_1, logits_1), 0.0, atol=1e-6)


def test_softmax_all_elements_and_axis():
    a = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(softmax(a), np.exp(a) / np.exp(a).sum())
    np.testing.assert_allclose(softmax(a, axis=1), np.exp(a) / np.exp(a).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(softmax(np.array([1000.0, 1001.0])), [1 / (1 + np.e), np.e / (1 + np.e)])


def test_sample_dp_is_noisy_softmax():
    logits = np.array([0.5, -1.0, 2.0])
    tight = sample_dp(logits, alpha=1e12, rng=np.random.default_rng(4))
    np.testing.assert_allclose(tight, numpy_probs(logits), atol=1e-5)
    loose = sample_dp(logits, alpha=1.0, rng=np.random.default_rng(5))
    assert loose.sum() == pytest.approx(1.0) and np.all(loose > 0)
    assert not np.allclose(loose, numpy_probs(logits), atol=1e-3)
    with pytest.raises(ValueError, match='alpha'):
        sample_dp(logits, alpha=0.0)
