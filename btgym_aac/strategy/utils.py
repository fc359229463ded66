"""Pure numpy helpers used by the strategies: squashing, normalisation and reward shaping functions."""
import numpy as np


def tanh(x):
    """Hyperbolic tangent written as 2 / (1 + exp(-2x)) - 1 (computed in one buffer)."""
    y = np.multiply(-2.0, x)
    if not isinstance(y, np.ndarray):
        return 2.0 / (1.0 + np.exp(y)) - 1.0
    np.exp(y, out=y)
    np.add(1.0, y, out=y)
    np.divide(2.0, y, out=y)
    np.subtract(y, 1.0, out=y)
    return y


def gradient(x, axis=-1):
    """`np.gradient(x, axis=axis)` at unit spacing, the same numbers without its general set-up (it costs several
    times the arithmetic on the small windows of an observation): central differences (x[i + 1] - x[i - 1]) / 2
    inside, one-sided differences at the two ends.

    Args:
        x: array with at least two entries along `axis` (integers are taken as float64, as numpy does).
        axis: the axis along which to differentiate.

    Returns:
        array of x's shape.

    Raises:
        ValueError: fewer than two entries along `axis`.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.inexact):
        x = x.astype(np.float64)
    axis = axis % x.ndim
    if x.shape[axis] < 2:
        raise ValueError('gradient needs at least 2 entries along axis {}, got shape {}'.format(axis, x.shape))
    head = (slice(None),) * axis
    out = np.empty_like(x)
    out[head + (slice(1, -1),)] = (x[head + (slice(2, None),)] - x[head + (slice(None, -2),)]) / 2.0
    out[head + (0,)] = x[head + (1,)] - x[head + (0,)]
    out[head + (-1,)] = x[head + (-1,)] - x[head + (-2,)]
    return out


def sigmoid(x):
    """Logistic function 1 / (1 + exp(-x))."""
    return 1.0 / (1.0 + np.exp(-np.asarray(x)))


def log_transform(x):
    """Signed log scaling: sign(x) * log(|x| + 1)."""
    x = np.asarray(x)
    return np.sign(x) * np.log(np.abs(x) + 1.0)


def abs_norm_ratio(x, a, b):
    """Absolute distance of x from the middle of [a, b], in half-widths: |(2x - a - b) / (|a| + |b|)|."""
    return np.abs((2.0 * x - a - b) / (abs(a) + abs(b)))


def norm_value(current_value, init_value, lower_bound, upper_bound, epsilon=1e-8):
    """Maps a value to (-1, 1) by its percent change relative to an initial value.

    Args:
        current_value: value to normalise.
        init_value: reference value (percent change is 0 here).
        lower_bound: percent loss mapped to -1.
        upper_bound: percent gain mapped to +1.
        epsilon: keeps the result strictly inside (-1, 1).

    Returns:
        2 * clip(z, eps, 1 - eps) - 1, where z = (y - upper) / (lower + upper) + 1 and y the percent change.
    """
    y = (current_value / init_value - 1.0) * 100.0
    z = (y - upper_bound) / (lower_bound + upper_bound) + 1.0
    if isinstance(z, float):
        return 2.0 * min(max(z, epsilon), 1.0 - epsilon) - 1.0
    return 2.0 * np.clip(z, epsilon, 1.0 - epsilon) - 1.0


def decayed_result(trade_result, current_value, init_value, lower_bound, upper_bound, gamma=1.0):
    """Normalised trade result, decayed by the distance of the portfolio value from its target.

    Args:
        trade_result: realised profit/loss of the closed trade.
        current_value: portfolio value.
        init_value: starting portfolio value.
        lower_bound: drawdown bound, percent.
        upper_bound: target bound, percent.
        gamma: decay; 1 means no decay.

    Returns:
        trade_result * decay / range, with range = init_value * (lower + upper) / 100.
    """
    target = init_value * (1.0 + upper_bound / 100.0)
    value_range = init_value * (lower_bound + upper_bound) / 100.0
    decay = (gamma - 1.0) * (current_value - target) / value_range + gamma
    return trade_result * decay / value_range


def exp_scale(x, gamma=4, epsilon=1e-10):
    """Exponential scaling of x in [-1, 1] to (0, 1]: clip(exp((x + 1)^gamma - 2^gamma), eps, 1)."""
    return np.clip(np.exp((np.asarray(x) + 1.0) ** gamma - 2.0 ** gamma), epsilon, 1.0)


def discounted_average(x, gamma=1.0):
    """Weighted average along axis 0 with weights gamma^(n - 1 - i) (latest rows weigh most).

    Args:
        x: array [n, ...].
        gamma: discount.

    Returns:
        array [...].
    """
    x = np.asarray(x)
    weights = gamma ** np.arange(x.shape[0] - 1, -1, -1, dtype=np.float64)
    return np.average(x, axis=0, weights=weights)
