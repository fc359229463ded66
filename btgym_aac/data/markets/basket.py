"""A basket with relative momentum: N assets whose drifts are persistent and sum to zero across the basket (an edge
for a cross-sectional trade: hold what has been gaining on the others), its no-edge twin of plain random walks of
the same per-bar variance, and the oracle that filters the drifts from the returns.
"""
import math

import numpy as np

from btgym_aac.data.markets.frames import (DEFAULT_FREQ, DEFAULT_START, bar_index, check_non_negative,
                                           check_positive, held_sides, market_frame, oracle_settings,
                                           resolve_seed)

KIND = 'relative_momentum'
NAMES = ('A', 'B', 'C', 'D')


def drift_persistence(half_life):
    """phi, the share of a drift left after one bar: phi ** half_life = 1 / 2."""
    return 2.0 ** (-1.0 / half_life)


def relative_drift_variance(num_assets, half_life, drift_volatility):
    """The stationary variance of an asset's drift less the basket's mean drift: (1 - 1 / N) eta^2 / (1 - phi^2)."""
    phi = drift_persistence(half_life)
    return (1.0 - 1.0 / num_assets) * drift_volatility ** 2 / (1.0 - phi ** 2)


def make_basket_market(num_bars=100000, half_life=480.0, drift_volatility=1e-6, volatility=1e-4, base=1.1,
                       names=NAMES, edge=True, seed=None, start=DEFAULT_START, freq=DEFAULT_FREQ):
    """N assets whose log returns are r_i[t] = d_i[t] - mean_j d_j[t] + volatility * N(0, 1): every asset's drift
    d_i is an AR(1) (d_i[t] = phi d_i[t - 1] + drift_volatility * N(0, 1), phi = 2 ** (-1 / half_life), started
    from its stationary law), less the basket's mean drift, so the basket drifts nowhere and the edge is relative.

    No-edge twin (`edge=False`): random walks whose per-bar log return std equals the edge assets',
    sqrt(relative_drift_variance + volatility ** 2). Each frame carries the recipe in `df.attrs['market']`, with
    `asset` naming it.

    Args:
        num_bars: number of bars of every asset.
        half_life: bars for a drift to halve (> 0).
        drift_volatility: std of a drift's innovation per bar (log units).
        volatility: std of the noise of every bar's log return.
        base: the price every asset starts from (> 0).
        names: the assets' names (at least 2), the frames' keys.
        edge: False for the no-edge twin.
        seed: seed of the generator; None draws one (recorded in the recipe).
        start: first bar time.
        freq: bar frequency.

    Returns:
        dict name -> DataFrame (the same DatetimeIndex; float64 columns open, high, low, close, volume).
    """
    index = bar_index(num_bars, start, freq)
    check_positive(half_life=half_life, base=base)
    check_non_negative(drift_volatility=drift_volatility, volatility=volatility)
    names = list(names)
    if len(names) < 2 or len(set(names)) != len(names):
        raise ValueError('a basket needs at least 2 distinct asset names, got {!r}'.format(names))
    seed = resolve_seed(seed)
    rng = np.random.default_rng(seed)
    bars, count = len(index), len(names)
    return_std = math.sqrt(relative_drift_variance(count, half_life, drift_volatility) + volatility ** 2)
    if edge:
        phi = drift_persistence(half_life)
        shocks = drift_volatility * rng.standard_normal((bars, count))
        drifts = np.empty((bars, count))
        drifts[0] = shocks[0] / math.sqrt(1.0 - phi ** 2)
        for t in range(1, bars):
            drifts[t] = phi * drifts[t - 1] + shocks[t]
        returns = drifts - drifts.mean(axis=1, keepdims=True) + volatility * rng.standard_normal((bars, count))
    else:
        returns = return_std * rng.standard_normal((bars, count))
    log_closes = math.log(base) + np.cumsum(returns, axis=0)
    params = dict(num_bars=bars, half_life=float(half_life), drift_volatility=float(drift_volatility),
                  volatility=float(volatility), base=float(base), names=names, start=str(start), freq=str(freq))
    return {name: market_frame(log_closes[:, column], index,
                               dict(kind=KIND, edge=bool(edge), seed=seed, params=params, asset=name), rng, return_std)
            for column, name in enumerate(names)}


class BasketOracle:
    """Knows the drifts' persistence and both volatilities: a Kalman filter of every asset's relative drift from its
    own log returns (the drift an AR(1) of the relative drift's variance, seen through the return noise), and
    E[log return over the next h bars] = d_hat phi (1 - phi^h) / (1 - phi), less the basket's mean.

    Args:
        spec: the basket's `MarketSpec` (any asset's).
        commission: cost per side per unit of position, as a log return.
        horizon: bars the expected return is taken over.
    """

    def __init__(self, spec, commission=1e-4, horizon=10):
        self.spec, self.params = spec, spec.params
        self.commission, self.horizon = oracle_settings(commission, horizon)
        self.phi = drift_persistence(self.params['half_life'])
        self.ahead = self.phi * (1.0 - self.phi ** self.horizon) / (1.0 - self.phi)

    @property
    def round_trip(self):
        """What opening and closing one unit of an asset costs."""
        return 2.0 * self.commission

    def expected_returns(self, closes):
        """The expected log return of every asset over the next `horizon` bars after every bar, each from the
        closes up to it (causal).

        Args:
            closes: (bars, assets) array of close prices, the assets in the basket's `names` order or any other.

        Returns:
            (bars, assets) float array.
        """
        returns = np.diff(np.log(np.asarray(closes, dtype=np.float64)), axis=0, prepend=np.nan)
        state_variance = relative_drift_variance(len(self.params['names']), self.params['half_life'],
                                                 self.params['drift_volatility'])
        innovation = state_variance * (1.0 - self.phi ** 2)
        noise = self.params['volatility'] ** 2
        drift = np.zeros(returns.shape[1])
        variance = np.full(returns.shape[1], state_variance)
        filtered = np.zeros_like(returns)
        for t in range(1, len(returns)):
            drift, variance = self.phi * drift, self.phi ** 2 * variance + innovation
            gain = variance / (variance + noise)
            drift = drift + gain * (returns[t] - drift)
            variance = (1.0 - gain) * variance
            filtered[t] = drift
        expected = filtered * self.ahead
        return expected - expected.mean(axis=1, keepdims=True)

    def sides(self, closes):
        """The side (-1, 0, +1) every asset is held on after every bar, deciding at bars 0, h, 2h, ...: the sign of
        its expected return where it beats the round trip, else the side held (holding costs nothing)."""
        return held_sides(self.expected_returns(closes), self.horizon, self.round_trip)

    def log_returns(self, closes, sides):
        """Per-bar log returns of holding `sides` (one unit per asset, each position after bar t earning bar
        t + 1's log return), net of the commission on every change, summed over the assets."""
        sides = np.asarray(sides, dtype=np.float64)
        returns = np.diff(np.log(np.asarray(closes, dtype=np.float64)), axis=0)
        earned = np.concatenate([np.zeros((1, sides.shape[1])), sides[:-1] * returns])
        changes = np.abs(np.diff(sides, axis=0, prepend=np.zeros((1, sides.shape[1]))))
        return (earned - self.commission * changes).sum(axis=1)
