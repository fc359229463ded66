"""Choosing actions from policy logits, in numpy only: the training policies and the deployed artifact's runtime
(`btgym_aac.deploy`, which must not import TensorFlow) take their decisions through these functions."""
import numpy as np


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


def sample_categories(logits, deterministic=False):
    """Draws one category per row of `logits` from its softmax, or takes each row's argmax.

    Probabilities are computed in float64 and sampled by inverse CDF (one uniform draw per row against the row's
    cumulative sum), so very peaked logits never raise. Uses the global numpy random state (seeded by the
    trainer): the rows draw in order, exactly as one call per row would.

    Args:
        logits: array-like of finite logits [K, A].
        deterministic: return the argmaxes instead of random draws.

    Returns:
        int64 array [K].
    """
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.size == 0 or not np.all(np.isfinite(logits)):
        raise ValueError('sample_categories: logits must be a non-empty [K, A] array of finite values, got shape {}: '
                         '{}'.format(logits.shape, logits))
    if deterministic:
        return np.argmax(logits, axis=1)
    cdf = np.cumsum(softmax(logits, axis=1), axis=1)
    draws = np.random.random(len(logits)) * cdf[:, -1]
    index = np.sum(cdf <= draws[:, None], axis=1)
    return np.minimum(index, logits.shape[1] - 1)


def action_packs(space, logits, deterministic, dp_alpha, cache=None):
    """Chooses one action per row of logits [K, A]; returns K dicts {'environment', 'encoded', 'one_hot'}.

    Discrete spaces: a draw from `softmax(logits)` (float64, never raises for peaked logits), or the argmax when
    `deterministic`; with the per-asset encoding one such choice per asset from its own logits, rows drawing in
    row order. Continuous spaces: `sample_dp(logits, dp_alpha)`, or `softmax(logits)` when `deterministic`.

    Args:
        space: the `ActionDictSpace`.
        logits: array [K, one_hot_depth].
        deterministic: act greedily.
        dp_alpha: `sample_dp`'s concentration (continuous spaces).
        cache: optional dict joint category -> pack, filled on first use (the packs returned are copies).

    Returns:
        list of K action packs: 'environment' (OrderedDict asset -> action), 'encoded' [encoded_depth],
        'one_hot' [one_hot_depth].
    """
    logits = np.asarray(logits)
    if not space.is_discrete:
        vectors = softmax(logits, axis=-1) if deterministic else sample_dp(logits, alpha=dp_alpha)
        return [vector_pack(space, vector) for vector in vectors]
    groups = space.action_groups
    draws = sample_categories(logits.reshape(-1, logits.shape[-1] // groups), deterministic)
    if groups > 1:
        return [vector_pack(space, vector) for vector in draws.reshape(len(logits), groups)]
    cache = {} if cache is None else cache
    packs = []
    for category in draws:
        category = int(category)
        if category not in cache:
            cache[category] = vector_pack(space, space._cat_to_vec(category))
        packs.append({key: value.copy() for key, value in cache[category].items()})
    return packs


def vector_pack(space, vector):
    """The action pack of an action vector (base action per asset, or continuous weights) of `space`."""
    action = space._vec_to_action(vector)
    return {'environment': action, 'encoded': space.encode(action), 'one_hot': space._vec_to_one_hot(vector)}


def probability_names(space):
    """Names of the entries of `decision`'s probabilities: the base actions for one asset; for several, the joint
    actions indexed as the space's `lookup_table` ('asset=action asset=action ...', assets in `space.assets`
    order), or with the per-asset encoding every asset's actions ('asset=action', asset by asset); the assets for
    a continuous space.

    Returns:
        tuple of strings.
    """
    if not space.is_discrete:
        return tuple(space.assets)
    if len(space.assets) == 1:
        return tuple(space.base_actions)
    if space.action_groups > 1:
        return tuple('{}={}'.format(asset, action) for asset in space.assets for action in space.base_actions)
    return tuple(' '.join('{}={}'.format(asset, space.base_actions[index])
                          for asset, index in zip(space.assets, space.lookup_table[category]))
                 for category in range(space.cardinality))


def decision(space, pack, logits):
    """A chosen action as an env takes it, with the probabilities behind it.

    Args:
        space: the `ActionDictSpace`.
        pack: the action pack chosen (`action_packs`).
        logits: the policy's logits [one_hot_depth] it was chosen from.

    Returns:
        (action, probabilities): the action is an int index for a single asset, a dict asset -> index for several,
        a dict asset -> float32 [1] weight for a continuous space; the probabilities (float64, named by
        `probability_names`) are the action probabilities (discrete) or the weights sent (continuous).
    """
    action = pack['environment']
    if not space.is_discrete:
        return dict(action), np.array([action[asset][0] for asset in space.assets], dtype=np.float64)
    probabilities = space.probabilities(logits)
    if len(space.assets) == 1:
        return int(action[space.assets[0]]), probabilities
    return dict(action), probabilities
