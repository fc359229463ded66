"""A mean-reverting market: an Ornstein-Uhlenbeck log price seen through observation noise, and its no-edge twin."""
import math

import numpy as np

from btgym_aac.data.markets.frames import (DEFAULT_FREQ, DEFAULT_START, bar_index, check_non_negative,
                                           check_positive, market_frame, resolve_seed)

KIND = 'mean_reversion'


def reversion_per_bar(half_life):
    """phi = exp(-theta) with theta = ln 2 / half_life: the share of a deviation from the mean left after a bar."""
    return math.exp(-math.log(2.0) / half_life)


def mean_reversion_return_std(half_life, volatility, noise):
    """Standard deviation of one bar's log return of the stationary edge market.

    With phi = exp(-ln 2 / half_life), the OU increment has variance 2 * volatility**2 / (1 + phi) and the
    observation noise adds 2 * noise**2 (noise at both ends of the bar), so the std is
    sqrt(2 * volatility**2 / (1 + phi) + 2 * noise**2).
    """
    return math.sqrt(2.0 * volatility ** 2 / (1.0 + reversion_per_bar(half_life)) + 2.0 * noise ** 2)


def _ornstein_uhlenbeck(rng, num_bars, mean, phi, volatility):
    """Exact discretisation x[t + 1] = mean + phi * (x[t] - mean) + volatility * N(0, 1), x[0] stationary."""
    shocks = volatility * rng.standard_normal(num_bars)
    deviation = np.empty(num_bars)
    deviation[0] = shocks[0] / math.sqrt(1.0 - phi ** 2)
    for t in range(1, num_bars):
        deviation[t] = phi * deviation[t - 1] + shocks[t]
    return mean + deviation


def make_mean_reversion_data(num_bars=100000, half_life=60.0, volatility=2e-4, noise=5e-5, base=1.1, edge=True,
                             seed=None, start=DEFAULT_START, freq=DEFAULT_FREQ):
    """Bars whose log close reverts to log(base): an Ornstein-Uhlenbeck path plus gaussian observation noise.

    Edge market: x[t + 1] = mu + (x[t] - mu) * exp(-theta) + volatility * N(0, 1) with mu = log(base),
    theta = ln 2 / half_life (x[0] drawn from the stationary law, std volatility / sqrt(1 - exp(-2 theta))), and
    log close[t] = x[t] + noise * N(0, 1). No-edge twin (`edge=False`): a random walk from log(base) whose per-bar
    log return std equals the edge market's, sqrt(2 * volatility**2 / (1 + exp(-theta)) + 2 * noise**2).
    Bars are shaped as in `make_random_walk_data` (wicks of that same per-bar scale). The recipe is in
    `df.attrs['market']`.

    Args:
        num_bars: number of bars.
        half_life: bars for a deviation from the mean to halve (> 0).
        volatility: std of the OU innovation per bar (log units).
        noise: std of the gaussian observation noise on the log close.
        base: the mean price and the first open (> 0).
        edge: False for the no-edge twin.
        seed: seed of the generator; None draws one (recorded in the recipe).
        start: first bar time.
        freq: bar frequency.

    Returns:
        DataFrame (DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    index = bar_index(num_bars, start, freq)
    check_positive(half_life=half_life, base=base)
    check_non_negative(volatility=volatility, noise=noise)
    seed = resolve_seed(seed)
    params = dict(num_bars=len(index), half_life=float(half_life), volatility=float(volatility), noise=float(noise),
                  base=float(base), start=str(start), freq=str(freq))
    rng = np.random.default_rng(seed)
    return_std = mean_reversion_return_std(half_life, volatility, noise)
    if edge:
        path = _ornstein_uhlenbeck(rng, len(index), math.log(base), reversion_per_bar(half_life), volatility)
        log_close = path + noise * rng.standard_normal(len(index))
    else:
        log_close = math.log(base) + np.cumsum(return_std * rng.standard_normal(len(index)))
    recipe = dict(kind=KIND, edge=bool(edge), seed=seed, params=params)
    return market_frame(log_close, index, recipe, rng, return_std)
