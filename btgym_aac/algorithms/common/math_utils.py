"""Numeric helpers: discounted sums, log-uniform draws, softmax (numpy) and categorical entropy / KL (TF graph)."""
import numpy as np

from btgym_aac.compat import tf

_LOG_EPSILON = 1e-12


def discount(x, gamma):
    """Reverse discounted cumulative sum along axis 0: ``y_t = sum_{k>=0} gamma^k x_{t+k}``.

    Args:
        x: array-like, at least 1-D; time runs along axis 0.
        gamma: discount factor.

    Returns:
        float64 np.ndarray shaped like ``x``.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        raise ValueError('discount: x must have a time axis (ndim >= 1), got a scalar')
    discounted = np.empty_like(x)
    running_sum = np.zeros(x.shape[1:])
    for t in range(x.shape[0] - 1, -1, -1):
        running_sum = x[t] + gamma * running_sum
        discounted[t] = running_sum
    return discounted


def log_uniform(lo_hi, size=1, rng=None):
    """Draws from the log-uniform distribution on ``[lo, hi]``.

    Args:
        lo_hi: scalar (degenerate range) or sequence whose first and last elements are ``lo`` and ``hi``; both >= 0.
        size: number of draws, >= 1.
        rng: optional np.random.Generator; the global numpy random state is used when None.

    Returns:
        np.float64 scalar when ``size == 1``, else float64 np.ndarray of shape [size].
    """
    bounds = np.asarray(lo_hi, dtype=np.float64).reshape(-1)
    if bounds.size == 0:
        raise ValueError('log_uniform: lo_hi is empty')
    if np.any(bounds < 0):
        raise ValueError('log_uniform: lo_hi must be non-negative, got {}'.format(lo_hi))
    if int(size) != size or size < 1:
        raise ValueError('log_uniform: size must be a positive integer, got {}'.format(size))
    u = (rng or np.random).random(int(size))
    log_lo = np.log(bounds[0] + _LOG_EPSILON)
    log_hi = np.log(bounds[-1] + _LOG_EPSILON)
    draws = np.exp(log_lo * (1 - u) + log_hi * u)
    return draws[0] if size == 1 else draws


def cat_entropy(logits):
    """Entropy of the categorical distribution ``softmax(logits)`` along axis 1 (TF graph op).

    Args:
        logits: float tensor [B, A].

    Returns:
        tensor [B].
    """
    shifted = logits - tf.reduce_max(logits, axis=1, keepdims=True)
    exp_shifted = tf.exp(shifted)
    normaliser = tf.reduce_sum(exp_shifted, axis=1, keepdims=True)
    probs = exp_shifted / normaliser
    return tf.reduce_sum(probs * (tf.log(normaliser) - shifted), axis=1)


def kl_divergence(logits_1, logits_2):
    """``KL(softmax(logits_1) || softmax(logits_2))`` along the last axis (TF graph op).

    Args:
        logits_1: float tensor [..., A].
        logits_2: float tensor of the same shape.

    Returns:
        tensor of shape [...].
    """
    shifted_1 = logits_1 - tf.reduce_max(logits_1, axis=-1, keepdims=True)
    shifted_2 = logits_2 - tf.reduce_max(logits_2, axis=-1, keepdims=True)
    exp_1 = tf.exp(shifted_1)
    normaliser_1 = tf.reduce_sum(exp_1, axis=-1, keepdims=True)
    normaliser_2 = tf.reduce_sum(tf.exp(shifted_2), axis=-1, keepdims=True)
    probs_1 = exp_1 / normaliser_1
    return tf.reduce_sum(
        probs_1 * (shifted_1 - tf.log(normaliser_1) - shifted_2 + tf.log(normaliser_2)), axis=-1
    )


def _logsumexp(a, axis):
    """Stable ``log(sum(exp(a)))`` over ``axis`` (None: all elements), keeping the reduced axes."""
    peak = np.max(a, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    return peak + np.log(np.sum(np.exp(a - peak), axis=axis, keepdims=True))


def softmax(a, axis=None):
    """``exp(a) / sum(exp(a))`` computed through a stable log-sum-exp.

    Computed in float64 so that the probabilities sum to 1 tightly enough for ``np.random.multinomial``: in
    float32, rounding can push the sum of all but the last probability of a very peaked policy above 1, which
    it rejects.

    Args:
        a: array-like of logits.
        axis: axis to normalise over; None normalises over all elements.

    Returns:
        float64 np.ndarray shaped like ``a``.
    """
    a = np.asarray(a, dtype=np.float64)
    return np.exp(a - _logsumexp(a, axis))


def sample_dp(logits, alpha=200.0, rng=None):
    """Draws a probability vector ``softmax(N(logits, I / alpha))`` (Dirichlet-process-like sample).

    Args:
        logits: array-like [..., A] of unnormalised log-probabilities (the mean).
        alpha: concentration (inverse variance), > 0.
        rng: optional np.random.Generator; the global numpy random state is used when None.

    Returns:
        float64 np.ndarray shaped like ``logits``, normalised over the last axis.
    """
    if alpha <= 0:
        raise ValueError('sample_dp: alpha must be positive, got {}'.format(alpha))
    logits = np.asarray(logits, dtype=np.float64)
    noise = (rng or np.random).standard_normal(logits.shape) / np.sqrt(alpha)
    return softmax(logits + noise, axis=-1)
