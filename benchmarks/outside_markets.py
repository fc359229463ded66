"""Known-edge markets made apart from the package, for checking settings tuned on its own markets (docs/learning.md,
"Markets made apart from the package").

Two processes, written here from their textbook definitions with no code of `btgym_aac.data.markets`, each with its
causal rule: a Kalman filter that knows the process and its parameters, sees the closes up to now and gives the
expected log return over the next `horizon` bars. `known_edge.py --markets wandering_mean drifting_trend` trains and
evaluates on them as on the package's markets; their files carry no recipe, so the evaluation gets its oracle from
`oracle_maker` (an `OracleAgent` over the rule, sized and costed as the package's oracles are).

- `wandering_mean`: the log price is a random-walk fundamental plus a stationary AR(1) deviation from it,
  x = f + s; the rule filters s out of x and expects it to decay: s (phi^h - 1). Mean reversion around a mean that
  moves, where the package's mean reversion reverts to a fixed one.
- `drifting_trend`: every bar's log return is a persistent drift plus noise, the drift a Gaussian AR(1); the rule
  filters the drift from the returns and expects it to persist: d phi (1 - phi^h) / (1 - phi). A trend that changes
  smoothly, where the package's regime switching jumps between two drifts.

The no-edge twin of each (`edge=False`) is a random walk with the same per-bar return variance; on it the rule is a
placebo.
"""
import functools
import math

import numpy as np
import pandas as pd

BASE = 1.1
"""Price level of both markets (EURUSD-like, as the package's markets)."""
DEFAULT_START = '2017-01-02 00:00'
WICK_SCALE = 5e-5
"""Scale of the half-normal wicks beyond a bar's open and close, as a log return."""


def _bars(log_close, start, rng):
    """OHLCV minute bars around a log close path: each bar opens at the previous close, with half-normal wicks."""
    close = BASE * np.exp(log_close)
    open_ = np.concatenate([[close[0]], close[:-1]])
    high = np.maximum(open_, close) * np.exp(np.abs(rng.normal(0.0, WICK_SCALE, len(close))))
    low = np.minimum(open_, close) * np.exp(-np.abs(rng.normal(0.0, WICK_SCALE, len(close))))
    index = pd.date_range(start=start or DEFAULT_START, periods=len(close), freq='1min')
    return pd.DataFrame({'open': open_, 'high': high, 'low': low, 'close': close, 'volume': np.ones(len(close))},
                        index=index)


def _persistence(half_life):
    """The AR(1) coefficient of a process whose deviations halve in `half_life` bars."""
    if not half_life > 0:
        raise ValueError('half_life must be > 0, got {!r}'.format(half_life))
    return 0.5 ** (1.0 / half_life)


def _ar1(phi, first, shocks):
    """The AR(1) path x[0] = first, x[t] = phi x[t - 1] + shocks[t]."""
    path = np.empty(len(shocks))
    path[0] = first
    for t in range(1, len(shocks)):
        path[t] = phi * path[t - 1] + shocks[t]
    return path


def make_wandering_mean(num_bars, seed, edge=True, start=None, half_life=40.0, deviation_volatility=2e-4,
                        mean_volatility=5e-5):
    """Bars of x = f + s: f a random walk (steps of sd `mean_volatility`), s an AR(1) with the given half-life and
    innovations of sd `deviation_volatility` (the twin: a random walk with the same per-bar return variance)."""
    rng = np.random.default_rng(seed)
    phi = _persistence(half_life)
    if not edge:
        step_sd = math.sqrt(mean_volatility ** 2 + 2.0 * deviation_volatility ** 2 / (1.0 + phi))
        return _bars(np.cumsum(rng.normal(0.0, step_sd, num_bars)), start, rng)
    mean = np.cumsum(rng.normal(0.0, mean_volatility, num_bars))
    shocks = rng.normal(0.0, deviation_volatility, num_bars)
    deviation = _ar1(phi, shocks[0] / math.sqrt(1.0 - phi ** 2), shocks)
    return _bars(mean + deviation, start, rng)


def make_drifting_trend(num_bars, seed, edge=True, start=None, half_life=720.0, drift_sd=2e-5, volatility=1e-4):
    """Bars whose log returns are d + noise (sd `volatility`), the drift d an AR(1) with the given half-life and
    stationary sd `drift_sd` (the twin: a random walk with the same per-bar return variance)."""
    rng = np.random.default_rng(seed)
    if not edge:
        return _bars(np.cumsum(rng.normal(0.0, math.sqrt(volatility ** 2 + drift_sd ** 2), num_bars)), start, rng)
    phi = _persistence(half_life)
    shocks = rng.normal(0.0, drift_sd * math.sqrt(1.0 - phi ** 2), num_bars)
    drift = _ar1(phi, rng.normal(0.0, drift_sd), shocks)
    return _bars(np.cumsum(drift + rng.normal(0.0, volatility, num_bars)), start, rng)


class _Rule:
    """What `OracleAgent` reads of a rule: `commission` and `expected_returns(log_closes, times)`.

    Args:
        commission: cost per side, as a log return (the oracle agent holds while the expected move does not beat
            twice this).
        horizon: bars the expected return looks ahead.
        half_life: the half-life of the market's AR(1) part, in bars.
    """

    def __init__(self, commission, horizon, half_life):
        self.commission, self.horizon = commission, horizon
        self.phi = _persistence(half_life)

    def expected_returns(self, log_closes, times):
        """The expected log return over the next `horizon` bars after every bar, from the bars up to it."""
        raise NotImplementedError


class WanderingMeanRule(_Rule):
    """The causal rule of `make_wandering_mean`: a Kalman filter of (f, s) from the log closes.

    Args:
        commission, horizon: as `_Rule`'s.
        half_life, deviation_volatility, mean_volatility: the market's parameters.
    """

    def __init__(self, commission, horizon, half_life=40.0, deviation_volatility=2e-4, mean_volatility=5e-5):
        super().__init__(commission, horizon, half_life)
        self.deviation_variance, self.mean_variance = deviation_volatility ** 2, mean_volatility ** 2

    def filtered_deviations(self, log_closes):
        """The filtered deviation s at every bar, from the closes up to it."""
        phi, q_f, q_s = self.phi, self.mean_variance, self.deviation_variance
        stationary = q_s / (1.0 - phi ** 2)
        f, s = float(log_closes[0]), 0.0  # the first close alone: s from its stationary law, f = x - s
        p_ff, p_fs, p_ss = stationary, -stationary, stationary
        out = np.zeros(len(log_closes))
        for t in range(1, len(log_closes)):
            s = phi * s  # predict: f a random walk, s an AR(1)
            p_ff, p_fs, p_ss = p_ff + q_f, phi * p_fs, phi * phi * p_ss + q_s
            innovation_variance = p_ff + 2.0 * p_fs + p_ss  # x = f + s, observed exactly
            gain_f, gain_s = (p_ff + p_fs) / innovation_variance, (p_fs + p_ss) / innovation_variance
            residual = float(log_closes[t]) - f - s
            f, s = f + gain_f * residual, s + gain_s * residual
            p_ff, p_fs, p_ss = (p_ff - gain_f * (p_ff + p_fs), p_fs - gain_f * (p_fs + p_ss),
                                p_ss - gain_s * (p_fs + p_ss))
            out[t] = s
        return out

    def expected_returns(self, log_closes, times):
        """The expected log return over the next `horizon` bars after every bar: s (phi^h - 1)."""
        return self.filtered_deviations(np.asarray(log_closes, dtype=np.float64)) * (self.phi ** self.horizon - 1.0)


class DriftingTrendRule(_Rule):
    """The causal rule of `make_drifting_trend`: a Kalman filter of the drift from the log returns.

    Args:
        commission, horizon: as `_Rule`'s.
        half_life, drift_sd, volatility: the market's parameters.
    """

    def __init__(self, commission, horizon, half_life=720.0, drift_sd=2e-5, volatility=1e-4):
        super().__init__(commission, horizon, half_life)
        self.drift_variance, self.noise_variance = drift_sd ** 2, volatility ** 2

    def filtered_drifts(self, log_closes):
        """The filtered drift at every bar, from the returns up to it (0 at the first bar)."""
        phi, innovation = self.phi, self.drift_variance * (1.0 - self.phi ** 2)
        drift, variance = 0.0, self.drift_variance
        out = np.zeros(len(log_closes))
        for t, r in enumerate(np.diff(log_closes), start=1):
            drift, variance = phi * drift, phi * phi * variance + innovation
            gain = variance / (variance + self.noise_variance)
            drift, variance = drift + gain * (float(r) - drift), (1.0 - gain) * variance
            out[t] = drift
        return out

    def expected_returns(self, log_closes, times):
        """The expected log return over the next `horizon` bars after every bar: d phi (1 - phi^h) / (1 - phi)."""
        phi = self.phi
        drifts = self.filtered_drifts(np.asarray(log_closes, dtype=np.float64))
        return drifts * phi * (1.0 - phi ** self.horizon) / (1.0 - phi)


OUTSIDE_MARKETS = {'wandering_mean': (make_wandering_mean, WanderingMeanRule),
                   'drifting_trend': (make_drifting_trend, DriftingTrendRule)}
"""Market name -> (generator, rule class)."""


def oracle_maker(market, params=None):
    """The `evaluate(oracle=...)` of an outside market: a callable env -> `OracleAgent` over the market's rule,
    played as the package's oracles are (`oracle_agent.rule_oracle_agent`).

    Args:
        market: a name of `OUTSIDE_MARKETS`.
        params: the generator's keyword arguments the market was made with (None: its defaults).
    """
    from btgym_aac.evaluation.oracle_agent import rule_oracle_agent

    make_rule = functools.partial(OUTSIDE_MARKETS[market][1], **(params or {}))
    return lambda env: rule_oracle_agent(env, make_rule)
