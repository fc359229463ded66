"""Numeric helpers: discounted sums, log-uniform draws (numpy) and categorical entropy / KL (TF graph); softmax and
action draws live in `btgym_aac.spaces`."""
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
