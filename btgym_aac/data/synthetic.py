"""Synthetic OHLCV price series: a default dataset that needs no download, and fixtures for tests.

Every generator returns a pandas DataFrame with a DatetimeIndex (one row per bar) and float64 columns exactly
``open, high, low, close, volume``; all randomness comes from a ``numpy.random.Generator`` seeded by ``seed``.
"""
import numpy as np
import pandas as pd

from btgym_aac.data.columns import OHLCV_COLUMNS
from btgym_aac.data.datetimes import HISTDATA_DATETIME_FORMAT

HISTDATA_HEADER = '1_O;2_H;3_L;4_C;5_V'

# Bar shape of the bundled sine file, relative to the peak-to-peak swing 0.002: high = open + 1e-5,
# low = open - 1e-5, close = open + 5e-6.
_HIGH_LOW_OFFSET_PER_SWING = 0.005
_CLOSE_OFFSET_PER_SWING = 0.0025


def _bars_from_open(open_price, amplitude, start, freq):
    """Builds flat OHLC bars around an open-price path, as in the bundled sine file.

    Args:
        open_price: 1d float array of open prices.
        amplitude: peak-to-peak swing the offsets scale with.
        start: first bar time (anything `pandas.date_range` accepts).
        freq: bar frequency string, e.g. '1min', '5min', '1h', '1D'.

    Returns:
        OHLCV DataFrame with zero volume.
    """
    high_low_offset = abs(amplitude) * _HIGH_LOW_OFFSET_PER_SWING
    close_offset = abs(amplitude) * _CLOSE_OFFSET_PER_SWING
    index = pd.date_range(start=start, periods=len(open_price), freq=freq)
    return pd.DataFrame(
        {
            'open': open_price,
            'high': open_price + high_low_offset,
            'low': open_price - high_low_offset,
            'close': open_price + close_offset,
            'volume': np.zeros(len(open_price)),
        },
        index=index,
        dtype=np.float64,
    )


def _add_noise(path, noise, seed):
    """Adds gaussian noise of standard deviation `noise` (price units) to `path` when `noise` > 0."""
    if noise < 0:
        raise ValueError('noise must be >= 0, got {}'.format(noise))
    if noise == 0:
        return path
    return path + np.random.default_rng(seed).normal(0.0, noise, size=len(path))


def _check_num_bars(num_bars):
    if int(num_bars) != num_bars or num_bars < 1:
        raise ValueError('num_bars must be a positive integer, got {}'.format(num_bars))
    return int(num_bars)


def make_sine_data(num_bars=10000, period=256, amplitude=0.002, base=1.1, start='2017-01-01 00:00',
                   freq='1min', seed=None, noise=0.0):
    """Sine-wave price series; the defaults reproduce `test_sine_1min_period256_delta0002.csv`.

    open[t] = base + amplitude / 2 * sin(2 * pi * t / period) (+ gaussian noise), high = open + amplitude / 200,
    low = open - amplitude / 200, close = open + amplitude / 400, volume = 0. With the defaults that is
    open = 1.1 + 0.001 * sin(2 pi t / 256), high/low = open -/+ 1e-5, close = open + 5e-6: the bundled file
    (which also rounds open to 6 decimals; this generator does not round).

    Args:
        num_bars: number of bars (rows).
        period: sine period in bars.
        amplitude: PEAK-TO-PEAK swing of the open price (the file's 'delta0002' = 0.002 = 2 * 0.001).
        base: mean price level.
        start: first bar time.
        freq: bar frequency ('1min', '5min', '1h', '1D', ...).
        seed: seed of the noise generator; matters only when `noise` > 0.
        noise: standard deviation of gaussian noise added to the open price, in price units.

    Returns:
        DataFrame (DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    num_bars = _check_num_bars(num_bars)
    if period <= 0:
        raise ValueError('period must be positive, got {}'.format(period))
    steps = np.arange(num_bars, dtype=np.float64)
    open_price = base + amplitude / 2.0 * np.sin(2.0 * np.pi * steps / period)
    return _bars_from_open(_add_noise(open_price, noise, seed), amplitude, start, freq)


def make_bent_sine_data(num_bars=10000, period_start=1500, period_end=300, amplitude=0.002, base=1.1,
                        level_drift=0.0, start='2017-01-01 00:00', freq='1min', seed=None, noise=0.0):
    """Sine wave whose period changes linearly over the series (a chirp) on a linearly drifting level.

    The instantaneous period goes from `period_start` (first bar) to `period_end` (last bar); the phase is the
    running sum of 2 * pi / period, so the wave stays smooth. The level moves linearly from `base` to
    `base + level_drift`. Bars are shaped as in `make_sine_data`.

    Args:
        num_bars: number of bars.
        period_start: period in bars at the first bar.
        period_end: period in bars at the last bar.
        amplitude: peak-to-peak swing of the open price.
        base: price level at the first bar.
        level_drift: total level change over the series.
        start: first bar time.
        freq: bar frequency.
        seed: seed of the noise generator; matters only when `noise` > 0.
        noise: standard deviation of gaussian noise added to the open price.

    Returns:
        DataFrame (DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    num_bars = _check_num_bars(num_bars)
    if period_start <= 0 or period_end <= 0:
        raise ValueError('periods must be positive, got {} and {}'.format(period_start, period_end))
    periods = np.linspace(period_start, period_end, num_bars)
    phase = np.concatenate([[0.0], np.cumsum(2.0 * np.pi / periods[:-1])])
    level = base + np.linspace(0.0, level_drift, num_bars)
    open_price = level + amplitude / 2.0 * np.sin(phase)
    return _bars_from_open(_add_noise(open_price, noise, seed), amplitude, start, freq)


def make_random_walk_data(num_bars=10000, base=1.1, volatility=1e-4, drift=0.0, start='2017-01-01 00:00',
                          freq='1min', seed=None):
    """Geometric random walk: log close[t] = log close[t-1] + drift + volatility * N(0, 1).

    open[t] = close[t-1] (open[0] = base); high and low extend the bar body by a half-normal amount of scale
    `volatility / 2` (in log terms), so high >= max(open, close) and low <= min(open, close). Volume is 0.

    Args:
        num_bars: number of bars.
        base: first open price (> 0).
        volatility: standard deviation of one bar's log return.
        drift: mean log return per bar.
        start: first bar time.
        freq: bar frequency.
        seed: seed of the generator.

    Returns:
        DataFrame (DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    num_bars = _check_num_bars(num_bars)
    if base <= 0 or volatility < 0:
        raise ValueError('need base > 0 and volatility >= 0, got base={}, volatility={}'.format(base, volatility))
    rng = np.random.default_rng(seed)
    log_close = np.log(base) + np.cumsum(drift + volatility * rng.standard_normal(num_bars))
    close = np.exp(log_close)
    open_price = np.concatenate([[base], close[:-1]])
    wick_up, wick_down = np.abs(rng.standard_normal((2, num_bars))) * volatility / 2.0
    index = pd.date_range(start=start, periods=num_bars, freq=freq)
    return pd.DataFrame(
        {
            'open': open_price,
            'high': np.maximum(open_price, close) * np.exp(wick_up),
            'low': np.minimum(open_price, close) * np.exp(-wick_down),
            'close': close,
            'volume': np.zeros(num_bars),
        },
        index=index,
        dtype=np.float64,
    )


def write_histdata_csv(df, path, header=False):
    """Writes OHLCV bars in HistData.com ASCII format: ``YYYYMMDD HHMMSS;open;high;low;close;volume``.

    Args:
        df: DataFrame with a DatetimeIndex and columns open, high, low, close, volume.
        path: file path to write.
        header: if True, write the header line ``1_O;2_H;3_L;4_C;5_V`` first (as the bundled sine file does);
            HistData's own files have no header.

    Returns:
        `path`.
    """
    missing = [name for name in OHLCV_COLUMNS if name not in df.columns]
    if missing or not isinstance(df.index, pd.DatetimeIndex):
        raise ValueError('need a DatetimeIndex and columns {}; missing columns: {}'.format(OHLCV_COLUMNS, missing))
    table = df.loc[:, list(OHLCV_COLUMNS)].copy()
    table.index = df.index.strftime(HISTDATA_DATETIME_FORMAT)
    with open(path, 'w', newline='') as handle:
        if header:
            handle.write(HISTDATA_HEADER + '\n')
        table.to_csv(handle, sep=';', header=False, lineterminator='\n')
    return path
