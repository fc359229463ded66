"""Observation and action spaces: gymnasium ``Dict`` spaces with the attributes BTGym's algorithms read, and the
choice of an action of an action space from policy logits.

``DictSpace`` keeps keys sorted and exposes a nested ``shape`` dict. ``ActionDictSpace`` is a dict of per-asset
action spaces with binary and one-hot encodings over the joint (Cartesian product) action set.

Actions are chosen from logits in numpy only (`action_packs`, `decision`): the training policies and the deployed
artifact's runtime (`btgym_aac.deploy`, which must not import TensorFlow) take their decisions through these
functions.
"""
import itertools
import math
from collections import OrderedDict

import numpy as np
from gymnasium import spaces


class DictSpace(spaces.Dict):
    """Dictionary of gymnasium spaces with sorted keys and a nested ``shape`` dict.

    Args:
        spaces_dict: possibly nested dict of gymnasium spaces; nested plain dicts become ``DictSpace``.
        seed: optional seed for sampling.
    """

    def __init__(self, spaces_dict, seed=None):
        if not isinstance(spaces_dict, dict):
            raise TypeError('DictSpace expects a dict of spaces, got {!r}'.format(type(spaces_dict)))
        items = OrderedDict()
        for key in sorted(spaces_dict):
            space = spaces_dict[key]
            if isinstance(space, dict) and not isinstance(space, spaces.Space):
                space = DictSpace(space)
            if not isinstance(space, spaces.Space):
                raise TypeError('DictSpace value for key {!r} is not a gymnasium space: {!r}'.format(key, space))
            items[key] = space
        super().__init__(items, seed=seed)

    @property
    def shape(self):
        """OrderedDict key -> sub-space shape (nested for nested dict spaces)."""
        return OrderedDict((key, space.shape) for key, space in self.spaces.items())


ENCODINGS = ('joint', 'per_asset')


class ActionDictSpace(DictSpace):
    """Per-asset action space with encodings over the joint action set, or per asset.

    Discrete case (``base_actions`` given): every asset takes one of the N base actions. With the 'joint' encoding
    (the original's) an action is one of the N**K categories of the Cartesian product of base-action indices over
    the K sorted assets (last asset varies fastest): one-hot of width N**K, binary code of ceil(log2(N**K)) bits.
    With 'per_asset' an action is K one-hots of width N side by side (`one_hot_depth = encoded_depth = K * N`,
    `action_groups = K`), and a policy has one categorical head per asset.
    Continuous case (``base_actions=None``): every asset takes a value in [0, 1].

    Args:
        assets: iterable of asset names (a bare string is rejected).
        base_actions: tuple of base action names, e.g. ('hold', 'buy', 'sell', 'close'), or None.
        seed: optional seed for sampling.
        encoding: 'joint' (default) or 'per_asset' (discrete actions only).
    """

    def __init__(self, assets, base_actions=None, seed=None, encoding='joint'):
        if isinstance(assets, str) or not hasattr(assets, '__iter__'):
            raise TypeError('ActionDictSpace: `assets` must be an iterable of names, got {!r}'.format(assets))
        self.assets = tuple(sorted(assets))
        if not self.assets:
            raise ValueError('ActionDictSpace: `assets` is empty')
        if encoding not in ENCODINGS:
            raise ValueError("ActionDictSpace: encoding must be 'joint' or 'per_asset', got {!r}".format(encoding))
        if encoding == 'per_asset' and base_actions is None:
            raise ValueError("ActionDictSpace: the 'per_asset' encoding needs discrete base_actions")
        self.encoding = encoding
        self.action_groups = 1
        if base_actions is not None:
            self.base_actions = tuple(base_actions)
            if not self.base_actions:
                raise ValueError('ActionDictSpace: `base_actions` is empty')
            self.base_actions_lookup_table = dict(enumerate(self.base_actions))
            self.base_space = spaces.Discrete
            self.is_discrete = True
            self.tensor_shape = (len(self.assets), len(self.base_actions))
            self.cardinality = len(self.base_actions) ** len(self.assets)
            if encoding == 'joint':
                categories = itertools.product(range(len(self.base_actions)), repeat=len(self.assets))
                self.lookup_table = dict(enumerate(categories))
                self._category_of = {vec: cat for cat, vec in self.lookup_table.items()}
                self.one_hot_depth = self.cardinality
                self.encoded_depth = max(1, int(math.ceil(math.log2(self.cardinality))))
            else:
                self.lookup_table = self._category_of = None
                self.action_groups = len(self.assets)
                self.one_hot_depth = self.encoded_depth = len(self.assets) * len(self.base_actions)
            sub_spaces = {asset: spaces.Discrete(len(self.base_actions)) for asset in self.assets}
        else:
            self.base_actions = None
            self.base_actions_lookup_table = None
            self.base_space = spaces.Box
            self.is_discrete = False
            self.tensor_shape = (len(self.assets), 1)
            self.lookup_table = None
            self._category_of = None
            self.cardinality = None
            self.one_hot_depth = self.encoded_depth = len(self.assets)
            sub_spaces = {asset: spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32) for asset in self.assets}
        super().__init__(sub_spaces, seed=seed)

    def _action_to_vec(self, action):
        if action not in self:
            raise ValueError('action {!r} is not in the action space {}'.format(action, self))
        if self.is_discrete:
            return np.array([int(action[asset]) for asset in self.assets])
        return np.array([np.asarray(action[asset]).reshape(-1)[0] for asset in self.assets], dtype=np.float32)

    def _vec_to_action(self, vec):
        if self.is_discrete:
            action = OrderedDict((asset, int(value)) for asset, value in zip(self.assets, vec))
        else:
            action = OrderedDict(
                (asset, np.array([value], dtype=np.float32)) for asset, value in zip(self.assets, vec)
            )
        if action not in self:
            raise ValueError('vector {!r} does not map to an action of {}'.format(vec, self))
        return action

    def _vec_to_cat(self, vec):
        self._require_joint('_vec_to_cat')
        key = tuple(int(v) for v in vec)
        if key not in self._category_of:
            raise ValueError('vector {!r} is not in the lookup table'.format(vec))
        return self._category_of[key]

    def _cat_to_vec(self, cat):
        self._require_joint('_cat_to_vec')
        return np.array(self.lookup_table[int(cat)])

    def _require_joint(self, name):
        if self.lookup_table is None:
            raise ValueError('{}: joint categories exist only with the joint encoding of discrete actions; this '
                             'space is {}'.format(name, 'per_asset' if self.is_discrete else 'continuous'))

    def _vec_to_one_hot(self, vec):
        if not self.is_discrete:
            return vec
        if self.encoding == 'per_asset':
            return np.eye(len(self.base_actions), dtype=np.float32)[np.asarray(vec, dtype=int)].reshape(-1)
        one_hot = np.zeros(self.one_hot_depth, dtype=np.float32)
        one_hot[self._vec_to_cat(vec)] = 1.0
        return one_hot

    def probabilities(self, logits):
        """The action probabilities of policy logits: softmax over the joint categories (or the continuous
        weights), per asset with the per-asset encoding.

        Args:
            logits: array [one_hot_depth].

        Returns:
            float64 array [one_hot_depth] (each asset's N values sum to 1 with the per-asset encoding).
        """
        logits = np.asarray(logits, dtype=np.float64).reshape(self.action_groups, -1)
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return (shifted / shifted.sum(axis=-1, keepdims=True)).reshape(-1)

    def encode(self, action):
        """Binary code of a joint action.

        Args:
            action: dict asset -> base action index (discrete) or value (continuous).

        Returns:
            float32 array [encoded_depth], most significant bit first (continuous: per-asset values; per-asset
            encoding: the one-hots of the assets' actions).
        """
        vec = self._action_to_vec(action)
        if not self.is_discrete:
            return vec
        if self.encoding == 'per_asset':
            return self._vec_to_one_hot(vec)
        bits = format(self._vec_to_cat(vec), '0{}b'.format(self.encoded_depth))
        return np.array([float(b) for b in bits], dtype=np.float32)

    def decode(self, code):
        """Inverse of `encode`.

        Args:
            code: 1-D array of 0./1. of width `encoded_depth` (continuous: per-asset values).

        Returns:
            OrderedDict asset -> action.
        """
        code = np.asarray(code)
        if code.ndim != 1:
            raise ValueError('decode expects a 1-D code, got shape {}'.format(code.shape))
        if not self.is_discrete:
            return self._vec_to_action(code)
        if self.encoding == 'per_asset':
            rows = code.reshape(len(self.assets), len(self.base_actions))
            if not np.all(np.isin(rows, (0, 1))) or not np.all(rows.sum(axis=1) == 1):
                raise ValueError('code {!r} is not one one-hot per asset'.format(code))
            return self._vec_to_action(rows.argmax(axis=1))
        cat = int(''.join(str(int(round(b))) for b in code), 2)
        if cat not in self.lookup_table:
            raise ValueError('code {!r} does not name a category'.format(code))
        return self._vec_to_action(self._cat_to_vec(cat))

    def one_hot_encode(self, action):
        """One-hot of a joint action.

        Args:
            action: dict asset -> action.

        Returns:
            float32 array [one_hot_depth] (continuous: per-asset values).
        """
        return self._vec_to_one_hot(self._action_to_vec(action))

    def get_initial_action(self):
        """Returns the "do nothing" action: index 0 for every asset (continuous: zeros)."""
        if self.is_discrete:
            return OrderedDict((asset, 0) for asset in self.assets)
        return self._vec_to_action(np.zeros(len(self.assets)))


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
