"""Synthetic OHLCV price series: a default dataset that needs no download, and fixtures for tests.

Every generator returns a pandas DataFrame with a DatetimeIndex (one row per bar) and float64 columns exactly
``open, high, low, close, volume`` (the multi-asset ones an OrderedDict name -> such a DataFrame, all on the same
index); all randomness comes from a ``numpy.random.Generator`` seeded by ``seed``.
"""
import collections

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


def _bars_from_close(close, base, wicks, index):
    """OHLCV bars around a close path: open = previous close (the first open is `base`), high / low extend the bar
    body by the (non-negative) log offsets `wicks`.

    Args:
        close: 1d float array of close prices.
        base: first open price.
        wicks: (2, len(close)) array of non-negative log offsets: upper wicks, lower wicks.
        index: DatetimeIndex of the bars.

    Returns:
        OHLCV DataFrame with zero volume.
    """
    open_price = np.concatenate([[base], close[:-1]])
    wick_up, wick_down = wicks
    return pd.DataFrame(
        {
            'open': open_price,
            'high': np.maximum(open_price, close) * np.exp(wick_up),
            'low': np.minimum(open_price, close) * np.exp(-wick_down),
            'close': close,
            'volume': np.zeros(len(close)),
        },
        index=index,
        dtype=np.float64,
    )


def _check_walk_params(base, volatility):
    if base <= 0 or volatility < 0:
        raise ValueError('need base > 0 and volatility >= 0, got base={}, volatility={}'.format(base, volatility))


def _half_normal_wicks(rng, num_bars, volatility):
    """Upper and lower log wicks: half-normal of scale `volatility / 2`, shape (2, num_bars)."""
    return np.abs(rng.standard_normal((2, num_bars))) * volatility / 2.0


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
    _check_walk_params(base, volatility)
    rng = np.random.default_rng(seed)
    log_close = np.log(base) + np.cumsum(drift + volatility * rng.standard_normal(num_bars))
    index = pd.date_range(start=start, periods=num_bars, freq=freq)
    return _bars_from_close(np.exp(log_close), base, _half_normal_wicks(rng, num_bars, volatility), index)


def _correlation_matrix(correlation, num_names):
    """The correlation matrix of `num_names` series: a full matrix as given, or one scalar for every pair.

    Raises:
        ValueError: a matrix of the wrong shape, not symmetric, without a unit diagonal, or not positive
            semi-definite (a scalar below -1 / (num_names - 1) is not a valid common correlation).
    """
    if np.ndim(correlation) == 0:
        matrix = np.full((num_names, num_names), float(correlation))
        np.fill_diagonal(matrix, 1.0)
    else:
        matrix = np.array(correlation, dtype=np.float64)
    if matrix.shape != (num_names, num_names):
        raise ValueError('correlation matrix must be {0}x{0} (one row per name), got shape {1}'.format(
            num_names, matrix.shape))
    if not np.allclose(matrix, matrix.T) or not np.allclose(np.diag(matrix), 1.0):
        raise ValueError('correlation matrix must be symmetric with a unit diagonal, got {}'.format(matrix.tolist()))
    if np.linalg.eigvalsh(matrix).min() < -1e-10:
        raise ValueError('correlation {} is not a valid correlation of {} series (not positive semi-definite)'
                         .format(correlation, num_names))
    return matrix


def _matrix_root(matrix):
    """A factor F with F @ F.T = matrix, for positive semi-definite (also singular) matrices."""
    eigenvalues, eigenvectors = np.linalg.eigh(matrix)
    return eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))


def _check_names(names, count=None):
    """`names` as a tuple; ValueError unless they are distinct and `count` many (None: at least one)."""
    names = tuple(names)
    wrong_count = not names if count is None else len(names) != count
    if wrong_count or len(set(names)) != len(names):
        raise ValueError('names must be {} distinct names, got {!r}'.format(
            'one or more' if count is None else count, names))
    return names


def make_correlated_walks(num_bars=10000, names=('A', 'B', 'C'), correlation=0.5, volatility=2e-4, base=1.1,
                          start='2017-01-01 00:00', freq='1min', seed=None):
    """Geometric random walks whose per-bar log returns are jointly normal with a given correlation.

    log close_i[t] = log close_i[t-1] + volatility * z_i[t] (log close_i[-1] = log base), with z[t] ~ N(0, R)
    independent over t and R the correlation matrix. Bars are shaped as in `make_random_walk_data`: open =
    previous close (the first open is `base`), half-normal wicks of scale `volatility / 2` above
    max(open, close) and below min(open, close), volume 0.

    Args:
        num_bars: number of bars of every series.
        names: distinct series names, in the order of the result.
        correlation: one correlation for every pair, or the full correlation matrix (rows in `names` order).
        volatility: standard deviation of one bar's log return (same for all series).
        base: first open price of every series (> 0).
        start: first bar time.
        freq: bar frequency.
        seed: seed of the generator.

    Returns:
        OrderedDict name -> DataFrame (the same DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    num_bars = _check_num_bars(num_bars)
    names = _check_names(names)
    _check_walk_params(base, volatility)
    factor = _matrix_root(_correlation_matrix(correlation, len(names)))
    rng = np.random.default_rng(seed)
    log_returns = volatility * rng.standard_normal((num_bars, len(names))) @ factor.T
    log_close = np.log(base) + np.cumsum(log_returns, axis=0)
    index = pd.date_range(start=start, periods=num_bars, freq=freq)
    return collections.OrderedDict(
        (name, _bars_from_close(np.exp(log_close[:, column]), base, _half_normal_wicks(rng, num_bars, volatility),
                                index))
        for column, name in enumerate(names))


def make_cointegrated_pair(num_bars=10000, names=('X', 'Y'), beta=1.0, theta=0.05, spread_mean=0.0,
                           spread_sigma=5e-4, volatility=2e-4, base=1.1, start='2017-01-01 00:00', freq='1min',
                           seed=None):
    """Two price series whose log closes are cointegrated with a known mean-reverting spread.

    Construction, with x[t] = log close_X[t], y[t] = log close_Y[t], t = 0 .. num_bars - 1 and e, u independent
    standard normal draws::

        x[t] = log(base) + volatility * (e[0] + ... + e[t])          (a random walk)
        s[0] = spread_mean
        s[t + 1] = s[t] + theta * (spread_mean - s[t]) + spread_sigma * u[t]
        y[t] = log(base) + beta * (x[t] - log(base)) + s[t]

    The spread s is a discrete Ornstein-Uhlenbeck (AR(1)) process: s[t + 1] - spread_mean =
    (1 - theta) * (s[t] - spread_mean) + noise, stationary for 0 < theta < 2 with variance
    spread_sigma ** 2 / (theta * (2 - theta)); theta = 0 makes it a random walk. `cointegration_spread` recovers
    s from the closes. Bars are shaped as in `make_random_walk_data` (open = previous close, the first open is
    `base` for both series; half-normal wicks of scale `volatility / 2`; volume 0). Draw order of the generator:
    e, u (num_bars - 1 values), the wicks of X, the wicks of Y.

    Args:
        num_bars: number of bars of both series.
        names: the two series names (X, Y).
        beta: cointegration coefficient of y on x.
        theta: mean-reversion speed of the spread per bar, in [0, 2).
        spread_mean: long-run mean of the spread (and its start value).
        spread_sigma: standard deviation of the spread's innovation per bar.
        volatility: standard deviation of X's log return per bar.
        base: price level both series start from (> 0).
        start: first bar time.
        freq: bar frequency.
        seed: seed of the generator.

    Returns:
        OrderedDict name -> DataFrame (the same DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    num_bars = _check_num_bars(num_bars)
    names = _check_names(names, 2)
    _check_walk_params(base, volatility)
    if not 0 <= theta < 2 or spread_sigma < 0:
        raise ValueError('need 0 <= theta < 2 and spread_sigma >= 0, got theta={}, spread_sigma={}'.format(
            theta, spread_sigma))
    rng = np.random.default_rng(seed)
    log_base = np.log(base)
    log_x = log_base + np.cumsum(volatility * rng.standard_normal(num_bars))
    innovations = spread_sigma * rng.standard_normal(num_bars - 1)
    spread = np.empty(num_bars)
    spread[0] = spread_mean
    for t in range(num_bars - 1):
        spread[t + 1] = spread[t] + theta * (spread_mean - spread[t]) + innovations[t]
    log_y = log_base + beta * (log_x - log_base) + spread
    index = pd.date_range(start=start, periods=num_bars, freq=freq)
    return collections.OrderedDict(
        (name, _bars_from_close(np.exp(log_close), base, _half_normal_wicks(rng, num_bars, volatility), index))
        for name, log_close in zip(names, (log_x, log_y)))


def cointegration_spread(frames, names=('X', 'Y'), beta=1.0, base=1.1):
    """The spread of a cointegrated pair from its closes: log Y - log(base) - beta * (log X - log(base)).

    Args:
        frames: mapping name -> OHLCV DataFrame (e.g. from `make_cointegrated_pair`).
        names: the two series names (X, Y).
        beta: cointegration coefficient of y on x.
        base: the price level of the construction.

    Returns:
        pandas Series 'spread' on the index of X.
    """
    x_name, y_name = _check_names(names, 2)
    log_x, log_y = np.log(frames[x_name]['close']), np.log(frames[y_name]['close'])
    log_base = np.log(base)
    return (log_y - log_base - beta * (log_x - log_base)).rename('spread')


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
