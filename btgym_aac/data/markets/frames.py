"""What the market generators share: argument checks, the seed, and the bars with their recipe attached."""
import numpy as np
import pandas as pd

from btgym_aac.data.synthetic import _bars_from_close, _check_num_bars, _half_normal_wicks

DEFAULT_START = '2017-01-02 00:00'
DEFAULT_FREQ = '1min'


def resolve_seed(seed):
    """The seed a frame is generated from: `seed` as given, or a fresh one drawn from the OS when it is None.

    Recording the drawn seed keeps every frame reproducible from its recipe.

    Args:
        seed: non-negative int or None.

    Returns:
        int.
    """
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    if int(seed) != seed or seed < 0:
        raise ValueError('seed must be a non-negative integer or None, got {!r}'.format(seed))
    return int(seed)


def check_positive(**values):
    """ValueError naming the first of `values` (name -> number) that is not > 0."""
    for name, value in values.items():
        if not value > 0:
            raise ValueError('{} must be > 0, got {!r}'.format(name, value))


def check_non_negative(**values):
    """ValueError naming the first of `values` (name -> number) that is < 0."""
    for name, value in values.items():
        if not value >= 0:
            raise ValueError('{} must be >= 0, got {!r}'.format(name, value))


def oracle_settings(commission, horizon):
    """(commission, horizon) of an oracle as float and int.

    Raises:
        ValueError: a horizon that is not a whole number >= 1, or a negative commission.
    """
    if int(horizon) != horizon or horizon < 1 or commission < 0:
        raise ValueError('need an integer horizon >= 1 and commission >= 0, got {!r}, {!r}'.format(
            horizon, commission))
    return float(commission), int(horizon)


def held_sides(expected, horizon, threshold):
    """The side (-1, 0, +1) an oracle holds after every bar: deciding at bars 0, h, 2h, ... on the sign of the
    expected return where its size exceeds `threshold`, else keeping the side held (flat before the first such
    signal), and holding in between.

    Args:
        expected: the expected return after every bar: 1-d, or (bars, assets) for one side per asset.
        horizon: bars between decisions.
        threshold: what the expected return must exceed in size (the round trip cost).

    Returns:
        int array shaped as `expected`.
    """
    expected = np.asarray(expected, dtype=np.float64)
    decided = expected[::horizon]
    signals = np.where(np.abs(decided) > threshold, np.sign(decided), np.nan)
    held = pd.DataFrame(signals.reshape(len(signals), -1)).ffill().fillna(0.0).to_numpy().reshape(signals.shape)
    return np.repeat(held, horizon, axis=0)[:len(expected)].astype(int)


def bar_index(num_bars, start, freq):
    """DatetimeIndex of `num_bars` consecutive bars (`num_bars` checked to be a positive integer)."""
    return pd.date_range(start=start, periods=_check_num_bars(num_bars), freq=freq)


def market_frame(log_close, index, recipe, rng, wick_scale):
    """OHLCV bars around a log close path, as `make_random_walk_data` shapes them, carrying their recipe.

    Args:
        log_close: 1d float array of log close prices.
        index: DatetimeIndex of the bars.
        recipe: dict with keys kind, edge, seed, params (JSON-able); stored as `df.attrs['market']`.
        rng: the generator's `numpy.random.Generator` (draws the wicks).
        wick_scale: per-bar log return scale of the half-normal wicks.

    Returns:
        DataFrame (DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    base = recipe['params']['base']
    frame = _bars_from_close(np.exp(log_close), base, _half_normal_wicks(rng, len(index), wick_scale), index)
    frame.attrs['market'] = recipe
    return frame


def minute_of_day(times):
    """Minutes since midnight of each time, as floats.

    Args:
        times: pandas DatetimeIndex or datetime64 array.

    Returns:
        1d float array.
    """
    times = pd.DatetimeIndex(times)
    return ((times - times.normalize()) / pd.Timedelta(minutes=1)).to_numpy(dtype=np.float64)
