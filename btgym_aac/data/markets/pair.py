"""A cointegrated pair: two assets whose log prices share a random walk and whose spread reverts to zero (an edge
for a relative-value trade), its no-edge twin whose spread wanders as a random walk of the same per-bar variance, and
the oracle that trades the spread.
"""
import math

import numpy as np

from btgym_aac.data.markets.frames import (DEFAULT_FREQ, DEFAULT_START, check_non_negative, check_positive,
                                           held_sides, oracle_settings, resolve_seed)
from btgym_aac.data.synthetic import make_cointegrated_pair

KIND = 'cointegrated_pair'
ROLES = ('X', 'Y')
"""The generated series: X, a random walk; Y = beta X plus the spread (in log prices)."""


def spread_reversion(half_life):
    """theta, the share of the spread's deviation removed per bar, so that a deviation halves in `half_life` bars:
    (1 - theta) ** half_life = 1 / 2."""
    return 1.0 - 2.0 ** (-1.0 / half_life)


def make_pair_market(num_bars=100000, half_life=30.0, spread_volatility=3e-4, volatility=2e-4, beta=1.0, base=1.1,
                     names=ROLES, edge=True, seed=None, start=DEFAULT_START, freq=DEFAULT_FREQ):
    """Two assets whose log closes x, y follow y - log(base) = beta (x - log(base)) + s, x a random walk of per-bar
    std `volatility` and s the spread (`synthetic.make_cointegrated_pair`).

    Edge market: s is an AR(1) around 0 whose deviations halve in `half_life` bars, innovation std
    `spread_volatility`. No-edge twin (`edge=False`): s is a random walk whose per-bar change has the edge spread's
    std, spread_volatility * sqrt(2 / (2 - theta)): the same per-bar variance, no reversion. Each frame carries the
    recipe in `df.attrs['market']`, with `asset` naming it (the first of `names` is X, the second Y).

    Args:
        num_bars: number of bars of both assets.
        half_life: bars for the spread's deviation to halve (> 0).
        spread_volatility: std of the spread's innovation per bar (log units).
        volatility: std of X's log return per bar.
        beta: Y's loading on X's log price.
        base: the price both start from (> 0).
        names: the names of X and Y, in that order (the frames' keys).
        edge: False for the no-edge twin.
        seed: seed of the generator; None draws one (recorded in the recipe).
        start: first bar time.
        freq: bar frequency.

    Returns:
        dict name -> DataFrame (the same DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    check_positive(half_life=half_life, base=base)
    check_non_negative(spread_volatility=spread_volatility, volatility=volatility)
    seed = resolve_seed(seed)
    theta = spread_reversion(half_life)
    sigma = spread_volatility if edge else spread_volatility * math.sqrt(2.0 / (2.0 - theta))
    frames = make_cointegrated_pair(num_bars=num_bars, names=tuple(names), beta=beta, theta=theta if edge else 0.0,
                                    spread_sigma=sigma, volatility=volatility, base=base, start=start, freq=freq,
                                    seed=seed)
    params = dict(num_bars=int(num_bars), half_life=float(half_life), spread_volatility=float(spread_volatility),
                  volatility=float(volatility), beta=float(beta), base=float(base), names=list(names),
                  start=str(start), freq=str(freq))
    for name, frame in frames.items():
        frame.attrs['market'] = dict(kind=KIND, edge=bool(edge), seed=seed, params=params, asset=name)
    return dict(frames)


class PairOracle:
    """Knows the spread's reversion: with s = y - log(base) - beta (x - log(base)) from the closes up to now,
    E[s(t + h) - s(t)] = -s(t) (1 - (1 - theta) ** h). A long spread (+1: long Y, short beta X) earns that change.

    Args:
        spec: the pair's `MarketSpec`.
        commission: cost per side per unit of each leg, as a log return.
        horizon: bars the expected change is taken over.
    """

    def __init__(self, spec, commission=1e-4, horizon=10):
        self.spec, self.params = spec, spec.params
        self.commission, self.horizon = oracle_settings(commission, horizon)
        self.pull = 1.0 - (1.0 - spread_reversion(self.params['half_life'])) ** self.horizon

    @property
    def round_trip(self):
        """What opening and closing one unit of the spread costs: both legs (Y and beta X), twice."""
        return 2.0 * self.commission * (1.0 + abs(self.params['beta']))

    @property
    def leg_round_trip(self):
        """What opening and closing one unit of Y alone costs (Y's expected change is the spread's: X is a random
        walk)."""
        return 2.0 * self.commission

    def spreads(self, closes_x, closes_y):
        """s at every bar from the closes of X and Y."""
        offset = math.log(self.params['base'])
        return np.log(np.asarray(closes_y, dtype=np.float64)) - offset - self.params['beta'] * (
            np.log(np.asarray(closes_x, dtype=np.float64)) - offset)

    def expected_changes(self, closes_x, closes_y):
        """The expected change of the spread over the next `horizon` bars after every bar, each from its bar's
        closes (causal)."""
        return -self.spreads(closes_x, closes_y) * self.pull

    def positions(self, closes_x, closes_y):
        """The spread position (-1, 0, +1) held after every bar, starting flat, deciding at bars 0, h, 2h, ... on
        the sign of the expected change where it beats the round trip, else keeping the position."""
        return held_sides(self.expected_changes(closes_x, closes_y), self.horizon, self.round_trip)

    def log_returns(self, closes_x, closes_y, positions):
        """Per-bar log returns of holding `positions` of the spread (the position after bar t earns bar t + 1's
        change of y - beta x), net of the commission of both legs on every change."""
        positions = np.asarray(positions, dtype=np.float64)
        spread_returns = np.diff(np.log(np.asarray(closes_y, dtype=np.float64))) - self.params['beta'] * np.diff(
            np.log(np.asarray(closes_x, dtype=np.float64)))
        earned = np.concatenate([[0.0], positions[:-1] * spread_returns])
        return earned - self.commission * (1.0 + abs(self.params['beta'])) * np.abs(np.diff(positions, prepend=0.0))

