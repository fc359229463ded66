"""Per-episode trading metrics from broker values, rewards and the trade log, and the bootstrap interval of their
mean (plain numpy, no TensorFlow)."""
import numpy as np

METRIC_NAMES = ('total_reward', 'start_value', 'final_value', 'return_pct', 'orders', 'trades', 'win_rate',
                'max_drawdown_pct', 'sharpe', 'steps', 'commission', 'spread_cost', 'slippage_cost')
"""Numeric per-episode metrics, in report order."""
ASSET_METRIC_NAMES = ('fills', 'trades', 'realized_pnl', 'time_in_market', 'mean_abs_position')
"""Numeric per-episode metrics of one asset of a multi-asset env, in report order."""


def return_pct(start_value, final_value):
    """Percent change from `start_value` to `final_value`."""
    return 100.0 * (final_value - start_value) / start_value


def max_drawdown_pct(values):
    """Largest fall from a running peak, in percent of that peak.

    Args:
        values: broker values in time order (non-empty, positive).

    Returns:
        float >= 0.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        raise ValueError('max_drawdown_pct needs at least one value')
    peaks = np.maximum.accumulate(values)
    return float(np.max((peaks - values) / peaks) * 100.0)


def sharpe_ratio(values):
    """Sharpe ratio of the step returns `v[k] / v[k-1] - 1`: mean / standard deviation (ddof 1).

    Per step and not annualised (an agent step is `skip_frame` bars; multiply by sqrt(steps per year) to
    annualise). Returns 0.0 with fewer than two returns or when all returns are equal (e.g. no position held).

    Args:
        values: broker values at every agent step, in time order.
    """
    values = np.asarray(values, dtype=np.float64)
    returns = values[1:] / values[:-1] - 1.0
    if returns.size < 2:
        return 0.0
    spread = returns.std(ddof=1)
    if spread <= 1e-12 * max(1.0, float(np.abs(returns).max())):
        return 0.0
    return float(returns.mean() / spread)


def win_rate(trades):
    """Fraction of closed trades with a positive net result (`pnlcomm` > 0); 0.0 when no trade closed."""
    if not trades:
        return 0.0
    return sum(trade['pnlcomm'] > 0 for trade in trades) / len(trades)


def episode_metrics(rewards, bar_values, step_values, trade_log):
    """All per-episode metrics.

    Args:
        rewards: reward of every agent step.
        bar_values: broker value of every bar played (the first one before any order).
        step_values: broker value at the reset and after every agent step.
        trade_log: `TradeLog` analysis ({'fills', 'trades', ...}).

    Returns:
        dict with the `METRIC_NAMES` keys: total_reward, start_value, final_value, return_pct, orders (filled
        orders), trades (closed trades), win_rate, max_drawdown_pct (over bars), sharpe (per step, see
        `sharpe_ratio`), steps, and the costs paid over the episode (money): commission, spread_cost,
        slippage_cost.
    """
    start_value, final_value = float(bar_values[0]), float(bar_values[-1])
    return {
        'total_reward': float(np.sum(rewards)),
        'start_value': start_value,
        'final_value': final_value,
        'return_pct': return_pct(start_value, final_value),
        'orders': len(trade_log['fills']),
        'trades': len(trade_log['trades']),
        'win_rate': win_rate(trade_log['trades']),
        'max_drawdown_pct': max_drawdown_pct(bar_values),
        'sharpe': sharpe_ratio(step_values),
        'steps': len(rewards),
        'commission': float(sum(fill['commission'] for fill in trade_log['fills'])),
        'spread_cost': float(sum(fill['spread_cost'] for fill in trade_log['fills'])),
        'slippage_cost': float(sum(fill['slippage_cost'] for fill in trade_log['fills'])),
    }


def asset_metrics(asset, trade_log, positions):
    """Per-episode metrics of one asset of a multi-asset env.

    Args:
        asset: the asset (data line) name.
        trade_log: `TradeLog` analysis ({'fills', 'trades', ...}, every entry with its 'asset').
        positions: the asset's position size at every bar played.

    Returns:
        dict with the `ASSET_METRIC_NAMES` keys: fills (the asset's filled orders), trades (its closed trades),
        realized_pnl (sum of its closed trades' `pnlcomm`), time_in_market (fraction of the bars with a non-zero
        position), mean_abs_position (mean |position| over the bars, in units).
    """
    trades = [trade for trade in trade_log['trades'] if trade['asset'] == asset]
    positions = np.asarray(positions, dtype=np.float64)
    return {
        'fills': sum(fill['asset'] == asset for fill in trade_log['fills']),
        'trades': len(trades),
        'realized_pnl': float(sum(trade['pnlcomm'] for trade in trades)),
        'time_in_market': float(np.mean(positions != 0)),
        'mean_abs_position': float(np.mean(np.abs(positions))),
    }


CONFIDENCE = 0.95
RESAMPLES = 10000


def bootstrap_mean_interval(values, confidence=CONFIDENCE, resamples=RESAMPLES, seed=0):
    """Percentile bootstrap interval of the mean of `values`.

    Args:
        values: 1-D sequence of numbers (at least one).
        confidence: coverage of the interval, in (0, 1).
        resamples: bootstrap resamples (each draws len(values) values with replacement).
        seed: seed of the resampling.

    Returns:
        (mean, low, high).
    """
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(values.mean()), float(low), float(high)
