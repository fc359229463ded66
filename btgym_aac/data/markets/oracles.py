"""Oracles: trading rules that know a market's generating process and parameters, and the P&L of their positions.

An oracle is a yardstick a learner can be measured against: it sees only the past bars, as a learner does, but it
knows the process exactly. It is not a provably optimal policy: it acts on the expected return over one horizon
and ignores what a position costs to undo later, and how a position is sized is the agent's (in the env, one
order per decision, `evaluation.oracle_agent`), so a learner sizing differently can earn more (docs/learning.md).
On a no-edge twin the same rule runs with the twin's (edge) parameters: a placebo whose true expected return is
zero, so whatever it earns there is noise minus commission.
"""
import math

import numpy as np
import pandas as pd

from btgym_aac.data.markets import intraday, mean_reversion, regime
from btgym_aac.data.markets.frames import held_sides, minute_of_day, oracle_settings


class Oracle:
    """The rule of one market: expected log return over the next `horizon` bars, and the position it implies.

    Args:
        spec: the market's `MarketSpec`.
        commission: cost per side per unit of position, as a log return.
        horizon: bars between decisions (the env's skip_frame).
    """

    def __init__(self, spec, commission=1e-4, horizon=10):
        self.spec = spec
        self.params = spec.params
        self.commission, self.horizon = oracle_settings(commission, horizon)

    def expected_returns(self, log_closes, times):
        """The expected log return over the next `horizon` bars after every bar, each from the bars up to it.

        Args:
            log_closes: 1d array of log close prices.
            times: matching DatetimeIndex.

        Returns:
            1d float array, one value per bar.
        """
        raise NotImplementedError

    def expected_return(self, closes, times):
        """The conditional expected log return over the next `horizon` bars given the bars up to the last one.

        Args:
            closes: 1d array of close prices up to now.
            times: matching pandas DatetimeIndex or datetime64 array.

        Returns:
            float.
        """
        log_closes = np.log(np.asarray(closes, dtype=np.float64))
        return float(self.expected_returns(log_closes, pd.DatetimeIndex(times))[-1])

    def target_position(self, closes, times, current_position):
        """-1, 0 or +1: the sign of `expected_return` when it beats the round trip cost 2 * commission, else
        `current_position` (holding costs nothing).

        What it knows: the generating process and its true parameters; what it sees: the bars so far. It trades
        on the expected move over one horizon only (it does not plan over several decisions), so it is a
        sensible ceiling for a learner, not a provably optimal policy.

        Args:
            closes: 1d array of close prices up to now.
            times: matching pandas DatetimeIndex or datetime64 array.
            current_position: the position held now (-1, 0 or +1).

        Returns:
            int.
        """
        expected = self.expected_return(closes, times)
        return int(np.sign(expected)) if abs(expected) > 2.0 * self.commission else int(current_position)

    def positions(self, df):
        """The position held after every bar of a whole frame, starting flat, deciding at bars 0, h, 2h, ... and
        holding in between; equal to calling `target_position` on the growing prefix.

        Args:
            df: OHLCV frame of this market.

        Returns:
            int array, one position per bar.
        """
        expected = self.expected_returns(np.log(df['close'].to_numpy(dtype=np.float64)), df.index)
        return held_sides(expected, self.horizon, 2.0 * self.commission)


class MeanReversionOracle(Oracle):
    """Knows mu = log(base) and theta = ln 2 / half_life: E[x[t + h] - x[t]] = (mu - x[t]) * (1 - exp(-theta h)),
    taken on the observed log close (it does not filter the observation noise out)."""

    @property
    def pull(self):
        """1 - exp(-theta h): the share of a deviation from the mean expected back within the horizon."""
        return 1.0 - mean_reversion.reversion_per_bar(self.params['half_life']) ** self.horizon

    def expected_returns(self, log_closes, times):
        return (math.log(self.params['base']) - np.asarray(log_closes, dtype=np.float64)) * self.pull


class RegimeSwitchingOracle(Oracle):
    """Knows the transition matrix A, the drifts and the volatility: a forward (Hamilton) filter of
    pi_t = P(regime_t | log returns up to t), started from the stationary distribution, and
    E[next h log returns] = sum_{s = 1..h} pi_t A^s drifts."""

    def __init__(self, spec, commission=1e-4, horizon=10):
        super().__init__(spec, commission, horizon)
        self.matrix = regime.transition_matrix(len(self.params['drifts']), self.params['mean_duration'],
                                               self.params['transition'])
        self.drifts = np.asarray(self.params['drifts'], dtype=np.float64)
        step, self.drift_ahead = np.eye(len(self.matrix)), np.zeros(len(self.matrix))
        for _ in range(self.horizon):
            step = step @ self.matrix
            self.drift_ahead += step @ self.drifts

    def regime_probabilities(self, log_closes):
        """pi_t for every bar (the first bar, without a return, keeps the stationary distribution).

        Args:
            log_closes: 1d array of log close prices.

        Returns:
            (bars, regimes) float array.
        """
        log_returns = np.diff(np.asarray(log_closes, dtype=np.float64))
        log_likelihoods = -0.5 * ((log_returns[:, None] - self.drifts) / self.params['volatility']) ** 2
        likelihoods = np.exp(log_likelihoods - log_likelihoods.max(axis=1, keepdims=True))
        probabilities = np.empty((len(log_returns) + 1, len(self.matrix)))
        probabilities[0] = regime.stationary_distribution(self.matrix)
        for t, likelihood in enumerate(likelihoods, start=1):
            posterior = (probabilities[t - 1] @ self.matrix) * likelihood
            probabilities[t] = posterior / posterior.sum()
        return probabilities

    def expected_returns(self, log_closes, times):
        return self.regime_probabilities(log_closes) @ self.drift_ahead


class IntradayPatternOracle(Oracle):
    """Knows the drift profile: the sum of intraday_drift over the times of the next h bars (the bar times step
    by the market's `freq`)."""

    def expected_returns(self, log_closes, times):
        step_minutes = pd.Timedelta(pd.tseries.frequencies.to_offset(self.params['freq'])) / pd.Timedelta(minutes=1)
        ahead = minute_of_day(times)[:, None] + step_minutes * np.arange(1, self.horizon + 1)
        return intraday.intraday_drift(ahead, self.params['amplitude'], self.params['phase']).sum(axis=1)


ORACLES = {
    mean_reversion.KIND: MeanReversionOracle,
    regime.KIND: RegimeSwitchingOracle,
    intraday.KIND: IntradayPatternOracle,
}
"""Market kind -> its oracle class."""


def oracle_for(spec, commission=1e-4, horizon=10):
    """The oracle of the market `spec` describes (see `Oracle`; on a no-edge twin it is a placebo).

    Args:
        spec: `MarketSpec`.
        commission: cost per side per unit of position, as a log return.
        horizon: bars between decisions.

    Returns:
        `Oracle`.
    """
    return ORACLES[spec.kind](spec, commission=commission, horizon=horizon)


def oracle_log_returns(df, positions, commission=1e-4):
    """Per-bar log returns of holding `positions`, net of commission.

    The position after bar t earns the log return of bar t + 1; every change of position costs `commission` per
    unit of change at the bar it is made (starting flat before bar 0).

    Args:
        df: OHLCV frame.
        positions: position held after every bar (array as long as `df`).
        commission: cost per side per unit of position, as a log return.

    Returns:
        1d float array, one value per bar.
    """
    positions = np.asarray(positions, dtype=np.float64)
    bar_returns = np.diff(np.log(df['close'].to_numpy(dtype=np.float64)), prepend=np.nan)
    earned = np.concatenate([[0.0], positions[:-1] * bar_returns[1:]])
    return earned - commission * np.abs(np.diff(positions, prepend=0.0))


def net_return_summary(df, positions, commission=1e-4, block_bars=100):
    """Mean net log return per bar of `positions`, its t-statistic and the number of trades.

    The t-statistic is taken over sums of non-overlapping blocks of `block_bars` bars, which tolerates the serial
    correlation of a held position's returns.

    Args:
        df: OHLCV frame.
        positions: position held after every bar.
        commission: cost per side per unit of position.
        block_bars: bars per block of the t-statistic.

    Returns:
        dict: mean, t_stat, trades (position changes), bars.
    """
    log_returns = oracle_log_returns(df, positions, commission)
    blocks = log_returns[:len(log_returns) // block_bars * block_bars].reshape(-1, block_bars).sum(axis=1)
    spread = blocks.std(ddof=1)
    t_stat = blocks.mean() / (spread / math.sqrt(len(blocks))) if spread > 0 else 0.0
    trades = int(np.count_nonzero(np.diff(np.asarray(positions), prepend=0)))
    return dict(mean=float(log_returns.mean()), t_stat=float(t_stat), trades=trades, bars=len(log_returns))
