"""Synthetic OHLCV generators and the HistData writer, checked against plain numpy / Python references."""
import math

import numpy as np
import pandas as pd
import pytest

from btgym_aac.data import make_bent_sine_data, make_random_walk_data, make_sine_data, write_histdata_csv

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
