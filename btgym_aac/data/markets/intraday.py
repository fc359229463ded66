"""An intraday-pattern market: a drift fixed by the minute of the day under gaussian noise, and its no-edge twin."""
import math

import numpy as np

from btgym_aac.data.markets.frames import (DEFAULT_FREQ, DEFAULT_START, bar_index, check_non_negative,
                                           check_positive, market_frame, minute_of_day, resolve_seed)

KIND = 'intraday_pattern'
MINUTES_PER_DAY = 1440.0


def intraday_drift(minutes, amplitude, phase):
    """The drift profile: amplitude * sin(2 pi * minute / 1440 + phase), the mean log return of a bar ending at that
    minute of the day.

    Args:
        minutes: minutes since midnight (float array).
        amplitude: peak drift per bar.
        phase: phase of the daily cycle in radians.

    Returns:
        float array shaped like `minutes`.
    """
    return amplitude * np.sin(2.0 * np.pi * np.asarray(minutes) / MINUTES_PER_DAY + phase)


def intraday_return_std(amplitude, volatility):
    """Std of one bar's log return of the edge market over whole days: sqrt(volatility**2 + amplitude**2 / 2)
    (a sine's mean square over its period is amplitude**2 / 2)."""
    return math.sqrt(volatility ** 2 + amplitude ** 2 / 2.0)


def make_intraday_pattern_data(num_bars=100000, amplitude=2.5e-5, volatility=1e-4, phase=0.0, base=1.1, edge=True,
                               seed=None, start=DEFAULT_START, freq=DEFAULT_FREQ):
    """Bars whose log return is intraday_drift(minute of the bar's time) + volatility * N(0, 1).

    The profile amplitude * sin(2 pi * minute / 1440 + phase) rises in one half of the day and falls in the
    other, with zero mean over a day (holding through whole days earns nothing). No-edge twin (`edge=False`):
    zero profile and a per-bar log return std equal to the edge market's, sqrt(volatility**2 + amplitude**2 / 2).
    Bars are shaped as in `make_random_walk_data` (wicks of that per-bar scale). The recipe is in
    `df.attrs['market']`.

    Args:
        num_bars: number of bars.
        amplitude: peak drift per bar (log units).
        volatility: std of the gaussian part of one bar's log return.
        phase: phase of the daily cycle in radians.
        base: first open price (> 0); the log close starts from log(base).
        edge: False for the no-edge twin.
        seed: seed of the generator; None draws one (recorded in the recipe).
        start: first bar time.
        freq: bar frequency.

    Returns:
        DataFrame (DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    index = bar_index(num_bars, start, freq)
    check_positive(base=base)
    check_non_negative(amplitude=amplitude, volatility=volatility)
    seed = resolve_seed(seed)
    params = dict(num_bars=len(index), amplitude=float(amplitude), volatility=float(volatility), phase=float(phase),
                  base=float(base), start=str(start), freq=str(freq))
    rng = np.random.default_rng(seed)
    return_std = intraday_return_std(amplitude, volatility)
    if edge:
        log_returns = intraday_drift(minute_of_day(index), amplitude, phase) + volatility * rng.standard_normal(
            len(index))
    else:
        log_returns = return_std * rng.standard_normal(len(index))
    recipe = dict(kind=KIND, edge=bool(edge), seed=seed, params=params)
    return market_frame(math.log(base) + np.cumsum(log_returns), index, recipe, rng, return_std)
