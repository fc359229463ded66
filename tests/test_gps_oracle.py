"""Guided-policy-search experts: resampling, extrema, filtering, signal stretching and advised distributions against
hand-computed values; the loop versions against plain recursive ones; long episodes."""
import numpy as np
import pytest

from btgym_aac.research.gps import Oracle, Oracle2
from btgym_aac.research.gps import price_signal

HOLD, BUY, SELL = 0, 1, 2
# Zigzag: maxima at 3 (value 3) and 10 (value 4), minimum at 6 (value 0) for order 2.
ZIGZAG = np.array([0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 4, 3], dtype=np.float64)


def _bars(high, low):
    """Raw bars [L, 5] with the given high and low, open = close = their middle, volume 0."""
    high, low = np.asarray(high, dtype=np.float64), np.asarray(low, dtype=np.float64)
    middle = (high + low) / 2
    return np.stack([middle, high, low, middle, np.zeros_like(high)], axis=-1)


def _recursive_filter(points, threshold):
    """The margin filter written as the plain recursion: drop the second point when it is within `threshold` of
    the first, else keep the first and filter the rest."""
    if len(points) <= 1:
        return list(points)
    if abs(points[1][0] - points[0][0]) < threshold:
        return _recursive_filter([points[0]] + points[2:], threshold)
    return [points[0]] + _recursive_filter(points[1:], threshold)


def _recursive_potential(x, gamma, pick):
    """Discounted potential written as the plain recursion on the tail of `x`."""
    if len(x) == 1:
        return [0.0]
    tail = _recursive_potential(x[1:], gamma, pick)
    return [pick(x[1] - x[0] + pick(gamma * tail[0], 0.0), 0.0)] + tail


# ----------------------------------------------------------------------------------------------- helpers


def test_resample_pads_with_the_last_bar_and_takes_the_high_low_middle():
    data = _bars(high=[1, 5, 2, 3, 4, 9, 6], low=[0, 1, 1, 2, 0, 3, 5])
    # blocks of 3: max high 5, min low 0 -> 2.5; 9, 0 -> 4.5; the last bar repeated: 6, 5 -> 5.5
    np.testing.assert_allclose(Oracle.resample_data(data, 3), [2.5, 4.5, 5.5])
    np.testing.assert_allclose(Oracle2.resample_data(data, 7), [4.5])
    np.testing.assert_allclose(price_signal.resample_data(data, 1), [0.5, 3, 1.5, 2.5, 2, 6, 5.5])


@pytest.mark.parametrize('data, factor', [(np.zeros((0, 5)), 1), (np.zeros(5), 1), (np.zeros((4, 2)), 1),
                                          (np.zeros((4, 5)), 0), (np.zeros((4, 5)), 1.5)])
def test_resample_rejects_bad_input(data, factor):
    with pytest.raises(ValueError):
        price_signal.resample_data(data, factor)


def test_relative_extrema_of_a_zigzag():
    np.testing.assert_array_equal(price_signal.relative_extrema(ZIGZAG, 2, np.greater), [3, 10])
    np.testing.assert_array_equal(price_signal.relative_extrema(ZIGZAG, 2, np.less), [6])
    # order 7: index 3 meets the 4 at index 10; index 6 meets the end value 0 (indices past the end are the end)
    np.testing.assert_array_equal(price_signal.relative_extrema(ZIGZAG, 7, np.greater), [10])
    np.testing.assert_array_equal(price_signal.relative_extrema(ZIGZAG, 7, np.less), [])
    # a plateau is not a strict extremum
    np.testing.assert_array_equal(price_signal.relative_extrema([0, 2, 2, 0], 1, np.greater), [])


def test_gaussian_window_and_centred_smoothing():
    np.testing.assert_allclose(price_signal.gaussian_window(5, 1), np.exp(-0.5 * np.array([2, 1, 0, 1, 2]) ** 2))
    np.testing.assert_allclose(price_signal.gaussian_window(4, 2),
                               np.exp(-0.5 * (np.array([-1.5, -0.5, 0.5, 1.5]) / 2) ** 2))
    rng = np.random.default_rng(0)
    for kernel_size in (1, 2, 5, 10):
        x, kernel = rng.normal(size=17), rng.normal(size=kernel_size)
        np.testing.assert_allclose(price_signal.smooth(x, kernel), np.convolve(x, kernel, mode='same'))
    # a kernel longer than the signal keeps the signal's length: [1, 0] * [1, 2, 3] centred -> [2, 3]
    np.testing.assert_allclose(price_signal.smooth(np.array([1.0, 0.0]), np.array([1.0, 2.0, 3.0])), [2, 3])


# ------------------------------------------------------------------------------------------------- Oracle


def test_filter_by_margine_keeps_points_far_from_the_last_kept_one():
    points = [(0.0, 0), (0.3, 1), (1.0, 2), (1.2, 3), (2.5, 4)]
    assert Oracle.filter_by_margine(points, 1.0) == [(0.0, 0), (1.0, 2), (2.5, 4)]
    assert Oracle.filter_by_margine(points, 0.0) == points
    assert Oracle.filter_by_margine(points[:1], 5.0) == points[:1]
    assert Oracle.filter_by_margine([], 1.0) == []


def test_filter_by_margine_equals_the_recursion_on_random_points():
    rng = np.random.default_rng(1)
    for _ in range(50):
        values = np.cumsum(rng.normal(size=rng.integers(1, 300)))
        points = [(value, index) for index, value in enumerate(values)]
        threshold = rng.uniform(0, 2)
        assert Oracle.filter_by_margine(points, threshold) == _recursive_filter(points, threshold)


def test_estimate_actions_buys_before_rises_and_sells_before_falls():
    oracle = Oracle(time_threshold=2, pips_threshold=0.5, pips_scale=1.0)
    # kept points 0 (0), 3 (3), 6 (0), 10 (4), 11 (3): buy, sell, buy, sell; the last one holds
    expected = np.zeros(12, dtype=int)
    expected[[0, 6]] = BUY
    expected[[3, 10]] = SELL
    np.testing.assert_array_equal(oracle.estimate_actions(ZIGZAG), expected)
    # threshold 1.5 drops the last point (|3 - 4| < 1.5): 10 becomes the last kept point and holds
    expected[10] = HOLD
    np.testing.assert_array_equal(Oracle(time_threshold=2, pips_threshold=15, pips_scale=0.1)
                                  .estimate_actions(ZIGZAG), expected)


def test_adjust_signals_stretches_each_signal_over_kernel_size_minus_one_steps():
    oracle = Oracle(kernel_size=4)
    signal = np.array([0, 1, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0])
    np.testing.assert_array_equal(oracle.adjust_signals(signal), [0, 1, 1, 1, 0, 2, 2, 2, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(oracle.adjust_signals(np.array([1, 2, 0, 0])), [1, 1, 1, 0])  # overwrites
    np.testing.assert_array_equal(signal, [0, 1, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0])  # input left as it was
    np.testing.assert_array_equal(Oracle(kernel_size=2).adjust_signals(signal), signal)


def test_fit_smooths_the_signals_adds_a_tenth_and_normalises_rows():
    oracle = Oracle(time_threshold=2, pips_threshold=1.5, pips_scale=1.0, kernel_size=3, kernel_stddev=1)
    advice = oracle.fit(_bars(ZIGZAG, ZIGZAG))
    # signals [B . . S . . B . . . . .] stretched over 2 steps: buy at 0, 1, 6, 7; sell at 3, 4
    a = np.exp(-0.5)  # kernel [a, 1, a]
    hold = np.array([0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1, 1], dtype=np.float64)
    buy = np.array([1 + a, 1 + a, a, 0, 0, a, 1 + a, 1 + a, a, 0, 0, 0]) + 0.1
    sell = np.array([0, 0, a, 1 + a, 1 + a, a, 0, 0, 0, 0, 0, 0]) + 0.1
    close = np.full(12, 0.1)
    rows = np.stack([hold, buy, sell, close], axis=-1)
    np.testing.assert_allclose(advice, rows / rows.sum(axis=-1, keepdims=True))


def test_fit_shape_and_rows_on_resampled_random_walk():
    rng = np.random.default_rng(2)
    price = 1.1 + np.cumsum(rng.normal(scale=2e-4, size=1003))
    advice = Oracle(pips_threshold=5).fit(_bars(price + 1e-4, price - 1e-4), resampling_factor=10)
    assert advice.shape == (101, 4)
    np.testing.assert_allclose(advice.sum(axis=-1), 1.0)
    assert np.all(advice[:, 1:] > 0) and set(np.unique(advice[:, 0] > 0)) == {False, True}
    labels = advice.argmax(axis=-1)
    assert {BUY, SELL} <= set(labels) and 3 not in labels


def test_fit_of_an_episode_shorter_than_the_kernel():
    advice = Oracle(kernel_size=10).fit(_bars([1, 2, 3], [0, 1, 2]))
    assert advice.shape == (3, 4)
    np.testing.assert_allclose(advice.sum(axis=-1), 1.0)


def test_fit_of_a_long_episode_has_no_recursion_limit():
    rng = np.random.default_rng(3)
    price = 1.0 + np.cumsum(rng.normal(scale=1e-3, size=100_000))
    advice = Oracle(time_threshold=1, pips_threshold=1).fit(_bars(price, price))
    assert advice.shape == (100_000, 4)
    assert (advice.argmax(axis=-1) != HOLD).sum() > 10_000


@pytest.mark.parametrize('kwargs', [dict(action_space=(0, 1)), dict(action_space=(1, 2, 3, 4)),
                                    dict(time_threshold=0), dict(pips_threshold=-1), dict(pips_scale=0),
                                    dict(kernel_size=0), dict(kernel_stddev=0)])
def test_oracle_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        Oracle(**kwargs)


# ------------------------------------------------------------------------------------------------ Oracle2


def test_oracle2_potentials_by_hand():
    y = [0.0, 1.0, 3.0, 2.0, 2.0, 5.0]
    oracle = Oracle2()
    np.testing.assert_allclose(oracle.p_up(y), [5, 4, 2, 3, 3, 0])
    np.testing.assert_allclose(oracle.p_down(y), [0, 0, -1, 0, 0, 0])
    np.testing.assert_allclose(oracle.p_up(y, gamma=0.5), [2, 2, 0, 1.5, 3, 0])


def test_oracle2_potentials_equal_the_recursion_on_random_series():
    rng = np.random.default_rng(4)
    oracle = Oracle2()
    for _ in range(20):
        x = list(rng.normal(size=rng.integers(1, 200)))
        gamma = rng.uniform(0.1, 1.0)
        np.testing.assert_allclose(oracle.p_up(x, gamma), _recursive_potential(x, gamma, max))
        np.testing.assert_allclose(oracle.p_down(x, gamma), _recursive_potential(x, gamma, min))


def test_oracle2_fit_by_hand_and_on_a_flat_episode():
    y = np.array([0.0, 1.0, 3.0, 2.0, 2.0, 5.0])
    advice = Oracle2(gamma=1.0, time_threshold=5).fit(_bars(y, y))
    # up = [5, 4, 2, 3, 3, 0] / 3, down = [0, 0, 1, 0, 0, 0] / 3; close = 0 except the last row
    expected = np.array([[0, 1, 0, 0], [0, 1, 0, 0], [0, 2 / 3, 1 / 3, 0], [0, 1, 0, 0], [0, 1, 0, 0],
                         [0.2 / 1.2, 0, 0, 1 / 1.2]])
    np.testing.assert_allclose(advice, expected, atol=1e-12)
    flat = Oracle2().fit(_bars(np.ones(30), np.ones(30)), resampling_factor=4)
    np.testing.assert_allclose(flat, np.tile([0.2 / 1.2, 0, 0, 1 / 1.2], (8, 1)))


def test_oracle2_long_episode_and_bad_settings():
    price = np.cumsum(np.random.default_rng(5).normal(size=100_000))
    advice = Oracle2(gamma=0.99).fit(_bars(price, price))
    assert advice.shape == (100_000, 4) and np.all(np.isfinite(advice))
    np.testing.assert_allclose(advice.sum(axis=-1), 1.0)
    for kwargs in (dict(gamma=0), dict(gamma=1.5), dict(action_space=(0, 1, 2))):
        with pytest.raises(ValueError):
            Oracle2(**kwargs)
