"""Synthetic OHLCV generators and the HistData writer, checked against plain numpy / Python references."""
import math

import numpy as np
import pandas as pd
import pytest

from btgym_aac.data import (cointegration_spread, make_bent_sine_data, make_cointegrated_pair, make_correlated_walks,
                            make_random_walk_data, make_sine_data, write_histdata_csv)

OHLCV = ['open', 'high', 'low', 'close', 'volume']


def _zero_crossings(values):
    """Rows where `values` moves between >= 0 and < 0 (upward or downward)."""
    non_negative = values >= 0
    return np.flatnonzero(non_negative[1:] != non_negative[:-1]) + 1


def _check_frame_layout(frame, num_bars, start, step):
    assert list(frame.columns) == OHLCV
    assert all(dtype == np.float64 for dtype in frame.dtypes)
    assert isinstance(frame.index, pd.DatetimeIndex)
    assert len(frame) == num_bars
    assert frame.index[0] == pd.Timestamp(start)
    assert (np.diff(frame.index.values) == np.timedelta64(step)).all()


def test_sine_default_matches_reference_formula():
    frame = make_sine_data()
    t = np.arange(10000)
    reference_open = 1.1 + 0.001 * np.sin(2 * np.pi * t / 256)
    _check_frame_layout(frame, 10000, '2017-01-01 00:00', pd.Timedelta(minutes=1))
    np.testing.assert_allclose(frame['open'], reference_open, rtol=0, atol=1e-12)
    np.testing.assert_allclose(frame['high'], reference_open + 1e-5, rtol=0, atol=1e-12)
    np.testing.assert_allclose(frame['low'], reference_open - 1e-5, rtol=0, atol=1e-12)
    np.testing.assert_allclose(frame['close'], reference_open + 5e-6, rtol=0, atol=1e-12)
    assert (frame['volume'] == 0).all()


def test_sine_default_shape_period_swing_mean():
    open_price = make_sine_data()['open'].to_numpy()
    spectrum = np.abs(np.fft.rfft(open_price - open_price.mean()))
    peak_bin = int(np.argmax(spectrum[1:])) + 1
    assert abs(len(open_price) / peak_bin - 256) < 256 * 0.01
    crossings = _zero_crossings(open_price - 1.1)
    assert np.median(np.diff(crossings)) == pytest.approx(128, abs=1)
    assert open_price.max() - open_price.min() == pytest.approx(0.002, abs=1e-7)
    assert open_price.mean() == pytest.approx(1.1, abs=1e-5)


def test_sine_amplitude_is_peak_to_peak_and_params_apply():
    frame = make_sine_data(num_bars=400, period=40, amplitude=0.01, base=2.0, start='2020-05-04 10:00', freq='5min')
    _check_frame_layout(frame, 400, '2020-05-04 10:00', pd.Timedelta(minutes=5))
    expected = 2.0 + 0.005 * np.sin(2 * np.pi * np.arange(400) / 40)
    np.testing.assert_allclose(frame['open'], expected, rtol=0, atol=1e-12)
    assert frame['open'].max() - frame['open'].min() == pytest.approx(0.01, abs=1e-9)


def test_sine_noise_is_seeded_gaussian_and_seed_ignored_without_noise():
    clean = make_sine_data(num_bars=20000)
    assert make_sine_data(num_bars=20000, seed=1).equals(clean)
    noisy_a = make_sine_data(num_bars=20000, noise=1e-4, seed=3)
    noisy_b = make_sine_data(num_bars=20000, noise=1e-4, seed=3)
    noisy_c = make_sine_data(num_bars=20000, noise=1e-4, seed=4)
    assert noisy_a.equals(noisy_b)
    assert not noisy_a.equals(noisy_c)
    residual = (noisy_a['open'] - clean['open']).to_numpy()
    assert residual.std() == pytest.approx(1e-4, rel=0.05)
    assert abs(residual.mean()) < 5e-6


def test_bent_sine_period_drifts_from_start_to_end():
    frame = make_bent_sine_data(num_bars=12000, period_start=1000, period_end=200, base=1.2, level_drift=0.0)
    _check_frame_layout(frame, 12000, '2017-01-01 00:00', pd.Timedelta(minutes=1))
    crossings = _zero_crossings(frame['open'].to_numpy() - 1.2)
    half_periods = np.diff(crossings)
    assert half_periods[0] == pytest.approx(500, rel=0.1)
    assert half_periods[-1] == pytest.approx(100, rel=0.1)
    assert (np.diff(half_periods) <= 1).all()
    assert make_bent_sine_data(num_bars=12000, period_start=1000, period_end=200, base=1.2).equals(frame)


def test_bent_sine_level_drift_and_seeded_noise():
    frame = make_bent_sine_data(num_bars=6000, period_start=300, period_end=300, amplitude=0.002, base=1.0,
                                level_drift=0.05)
    t = np.arange(6000)
    expected = 1.0 + 0.05 * t / 5999 + 0.001 * np.sin(2 * np.pi * t / 300)
    np.testing.assert_allclose(frame['open'], expected, rtol=0, atol=1e-9)
    noisy = make_bent_sine_data(num_bars=6000, noise=1e-4, seed=7)
    assert noisy.equals(make_bent_sine_data(num_bars=6000, noise=1e-4, seed=7))
    assert not noisy.equals(make_bent_sine_data(num_bars=6000, noise=1e-4, seed=8))


def test_random_walk_bar_invariants_and_return_statistics():
    frame = make_random_walk_data(num_bars=50000, base=1.3, volatility=2e-4, drift=1e-5, seed=11)
    _check_frame_layout(frame, 50000, '2017-01-01 00:00', pd.Timedelta(minutes=1))
    open_price, close = frame['open'].to_numpy(), frame['close'].to_numpy()
    assert open_price[0] == 1.3
    np.testing.assert_array_equal(open_price[1:], close[:-1])
    assert (frame['high'].to_numpy() >= np.maximum(open_price, close)).all()
    assert (frame['low'].to_numpy() <= np.minimum(open_price, close)).all()
    log_returns = np.diff(np.log(np.concatenate([[1.3], close])))
    assert log_returns.std() == pytest.approx(2e-4, rel=0.03)
    assert log_returns.mean() == pytest.approx(1e-5, abs=3 * 2e-4 / math.sqrt(50000))


def test_random_walk_seeding():
    first = make_random_walk_data(num_bars=500, seed=5)
    assert first.equals(make_random_walk_data(num_bars=500, seed=5))
    assert not first.equals(make_random_walk_data(num_bars=500, seed=6))
    assert not make_random_walk_data(num_bars=500).equals(make_random_walk_data(num_bars=500))


@pytest.mark.parametrize('header', [False, True])
def test_write_histdata_csv_format(tmp_path, header):
    frame = make_random_walk_data(num_bars=30, start='2018-03-04 23:58', seed=2)
    path = write_histdata_csv(frame, tmp_path / 'bars.csv', header=header)
    lines = open(path).read().splitlines()
    if header:
        assert lines.pop(0) == '1_O;2_H;3_L;4_C;5_V'
    assert len(lines) == 30
    assert lines[0].split(';')[0] == '20180304 235800'
    assert lines[2].split(';')[0] == '20180305 000000'
    for line, (_, row) in zip(lines, frame.iterrows()):
        fields = line.split(';')
        assert len(fields) == 6
        assert [float(value) for value in fields[1:]] == [row[name] for name in OHLCV]


def test_generators_reject_bad_arguments():
    with pytest.raises(ValueError, match='num_bars'):
        make_sine_data(num_bars=0)
    with pytest.raises(ValueError, match='period'):
        make_sine_data(period=0)
    with pytest.raises(ValueError, match='noise'):
        make_sine_data(noise=-1.0)
    with pytest.raises(ValueError, match='volatility'):
        make_random_walk_data(volatility=-1.0)


# ---------------------------------------------------------------------------------------------- multi-asset series

def _ar1_coefficient(values):
    """Least-squares slope of values[t + 1] on values[t] (with an intercept)."""
    return np.polyfit(values[:-1], values[1:], 1)[0]


def _check_bars(frame, base):
    open_price, close = frame['open'].to_numpy(), frame['close'].to_numpy()
    assert open_price[0] == base
    np.testing.assert_array_equal(open_price[1:], close[:-1])
    assert (frame['high'].to_numpy() >= np.maximum(open_price, close)).all()
    assert (frame['low'].to_numpy() <= np.minimum(open_price, close)).all()
    assert (frame['volume'] == 0).all()


def _log_returns(frames):
    return np.array([np.log(frame['close'] / frame['open']).to_numpy() for frame in frames.values()])


def test_correlated_walks_share_an_index_and_have_the_requested_correlation_and_volatility():
    frames = make_correlated_walks(num_bars=20000, names=('A', 'B', 'C'), correlation=0.6, volatility=3e-4,
                                   base=1.2, start='2018-02-01 00:00', freq='5min', seed=1)
    assert list(frames) == ['A', 'B', 'C']
    for frame in frames.values():
        _check_frame_layout(frame, 20000, '2018-02-01 00:00', pd.Timedelta(minutes=5))
        assert frame.index.equals(frames['A'].index)
        _check_bars(frame, 1.2)
    returns = _log_returns(frames)
    correlation = np.corrcoef(returns)
    np.testing.assert_allclose(correlation[np.triu_indices(3, 1)], 0.6, atol=0.03)
    np.testing.assert_allclose(returns.std(axis=1), 3e-4, rtol=0.03)
    assert not np.array_equal(frames['A']['close'], frames['B']['close'])


def test_correlated_walks_take_a_full_correlation_matrix_and_are_seeded():
    matrix = [[1.0, 0.8, -0.3], [0.8, 1.0, 0.0], [-0.3, 0.0, 1.0]]
    frames = make_correlated_walks(num_bars=20000, names=('x', 'y', 'z'), correlation=matrix, seed=2)
    np.testing.assert_allclose(np.corrcoef(_log_returns(frames)), matrix, atol=0.03)
    again = make_correlated_walks(num_bars=20000, names=('x', 'y', 'z'), correlation=matrix, seed=2)
    assert all(frames[name].equals(again[name]) for name in frames)
    other = make_correlated_walks(num_bars=20000, names=('x', 'y', 'z'), correlation=matrix, seed=3)
    assert not frames['x'].equals(other['x'])
    identical = make_correlated_walks(num_bars=100, names=('p', 'q'), correlation=1.0, seed=0)
    np.testing.assert_allclose(identical['p']['close'], identical['q']['close'], rtol=1e-12)


def test_correlated_walks_reject_invalid_correlations_and_names():
    with pytest.raises(ValueError, match='not positive semi-definite'):
        make_correlated_walks(num_bars=10, names=('A', 'B', 'C'), correlation=-0.6)
    with pytest.raises(ValueError, match='must be 2x2'):
        make_correlated_walks(num_bars=10, names=('A', 'B'), correlation=np.eye(3))
    with pytest.raises(ValueError, match='symmetric'):
        make_correlated_walks(num_bars=10, names=('A', 'B'), correlation=[[1.0, 0.2], [0.3, 1.0]])
    with pytest.raises(ValueError, match='distinct'):
        make_correlated_walks(num_bars=10, names=('A', 'A'))


def test_cointegrated_pair_spread_is_the_documented_ou_recursion_exactly():
    num_bars, theta, sigma, mean, volatility, base, beta = 3000, 0.1, 4e-4, 0.002, 2e-4, 1.3, 1.5
    frames = make_cointegrated_pair(num_bars=num_bars, beta=beta, theta=theta, spread_mean=mean, spread_sigma=sigma,
                                    volatility=volatility, base=base, seed=9)
    rng = np.random.default_rng(9)  # the documented draw order: e, then u
    log_x = math.log(base) + np.cumsum(volatility * rng.standard_normal(num_bars))
    innovations = rng.standard_normal(num_bars - 1)
    spread = [mean]
    for t in range(num_bars - 1):
        spread.append(spread[-1] + theta * (mean - spread[-1]) + sigma * innovations[t])
    recovered = cointegration_spread(frames, beta=beta, base=base)
    np.testing.assert_allclose(recovered.to_numpy(), spread, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.log(frames['X']['close']), log_x, rtol=0, atol=1e-12)
    assert recovered.index.equals(frames['X'].index) and frames['Y'].index.equals(frames['X'].index)
    for frame in frames.values():
        _check_bars(frame, base)


def test_cointegrated_pair_spread_is_stationary_and_x_is_a_random_walk():
    theta, sigma = 0.05, 5e-4
    frames = make_cointegrated_pair(num_bars=20000, theta=theta, spread_sigma=sigma, seed=4)
    spread = cointegration_spread(frames).to_numpy()
    assert _ar1_coefficient(spread) == pytest.approx(1 - theta, abs=0.01)
    assert spread.var() == pytest.approx(sigma ** 2 / (theta * (2 - theta)), rel=0.2)
    assert _ar1_coefficient(np.log(frames['X']['close'].to_numpy())) > 0.998
    drifting = cointegration_spread(make_cointegrated_pair(num_bars=20000, theta=0.0, seed=4)).to_numpy()
    assert _ar1_coefficient(drifting) > 0.998
    assert make_cointegrated_pair(num_bars=500, seed=4)['Y'].equals(make_cointegrated_pair(num_bars=500, seed=4)['Y'])
    with pytest.raises(ValueError, match='theta'):
        make_cointegrated_pair(num_bars=10, theta=2.0)
    with pytest.raises(ValueError, match='2 distinct names'):
        make_cointegrated_pair(num_bars=10, names=('X', 'Y', 'Z'))
