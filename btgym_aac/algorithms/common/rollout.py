"""Trajectory storage (`Rollout`) and the training targets made from it: feedable batches with n-step returns and
GAE advantages (`Rollout.process`), reward-prediction classes (`Rollout.process_rp`) and the n-step Q targets of
the UNREAL pixel-control task (https://arxiv.org/abs/1611.05397) over stacked batches (`pixel_control_targets`).

Pixel control: for a replayed sequence of T frames with pixel changes `pc_t` [H, W] (the change the frame's action
caused), the target of frame t is `sum_{k=t}^{L-1} gamma_pc^(k-t) pc_k + gamma_pc^(L-t) max_a Q(s_L, a)`: when the
last frame ends its episode, L = T and the bootstrap term is dropped; otherwise L = T - 1, the last frame only
bootstraps (its own target would need the state after it) and is left out of the loss. The targets are numpy
parts that the trainer's graph completes with the Q head's own bootstrap.
"""
import numpy as np

from btgym_aac.algorithms.common.math_utils import discount
from btgym_aac.algorithms.common.batches import MASK_KEY, as_array, batch_pad, map_nested, same_tuple_type

_NOT_CONVERTED_KEYS = frozenset({'context', 'reward', 'r', 'value', 'position'})
_RP_CLASSES = 3


def make_data_getter(queue, timeout=600):
    """Makes a getter that blocks on ``queue`` for the next runner item.

    Args:
        queue: queue.Queue filled by a runner thread.
        timeout: seconds to wait before ``queue.Empty`` is raised.

    Returns:
        callable ``get(**kwargs)`` returning the next item (kwargs are ignored).
    """
    def get(**kwargs):
        return queue.get(timeout=timeout)

    return get


def _appended(stored, value):
    """Returns ``stored`` with ``value`` appended leaf-wise (dicts per key, tuples per element, others to lists)."""
    if isinstance(value, dict):
        stored = {} if stored is None else stored
        for key, item in value.items():
            stored[key] = _appended(stored.get(key), item)
        return stored
    if isinstance(value, tuple):
        stored = [None] * len(value) if stored is None else stored
        return same_tuple_type(value, [_appended(part, item) for part, item in zip(stored, value)])
    stored = [] if stored is None else stored
    stored.append(value)
    return stored


def _check_structure(stored, value, path):
    """Raises ValueError when ``value`` does not have the keys/tuple layout already stored at ``path``."""
    if isinstance(value, dict):
        if not isinstance(stored, dict) or set(stored) != set(value):
            raise ValueError('Rollout.add: frame entry {} has keys {} but stored frames have {}'.format(
                path, sorted(value), sorted(stored) if isinstance(stored, dict) else type(stored).__name__))
        for key, item in value.items():
            _check_structure(stored[key], item, '{}[{!r}]'.format(path, key))
    elif isinstance(value, tuple):
        if not isinstance(stored, tuple) or len(stored) != len(value):
            raise ValueError('Rollout.add: frame entry {} is a tuple of {} but stored frames differ'.format(
                path, len(value)))
        for index, (part, item) in enumerate(zip(stored, value)):
            _check_structure(part, item, '{}[{}]'.format(path, index))
    elif not isinstance(stored, list):
        raise ValueError('Rollout.add: frame entry {} is a value but stored frames hold a {}'.format(
            path, type(stored).__name__))


def _as_scalars(values, key):
    """Float64 vector from per-frame values that each hold exactly one number (float, [1]-array, ...)."""
    scalars = np.empty(len(values))
    for index, value in enumerate(values):
        try:
            flat = np.asarray(value, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as error:
            raise ValueError('Rollout: {!r} of frame {} is not numeric: {!r}'.format(key, index, value)) from error
        if value is None or flat.size != 1:
            raise ValueError('Rollout: {!r} of frame {} must hold one number, got {!r}'.format(key, index, value))
        scalars[index] = flat[0]
    return scalars


def _reward_class_one_hot(reward, threshold):
    """One-hot [1, 3] over {zero, positive, negative} for reward prediction."""
    target = np.zeros((1, _RP_CLASSES))
    if reward > threshold:
        target[0, 1] = 1.0
    elif reward < -threshold:
        target[0, 2] = 1.0
    else:
        target[0, 0] = 1.0
    return target


class Rollout(dict):
    """A trajectory: nested dict of per-key Python lists, one entry per frame; ``size`` = number of frames.

    Runner frames hold ``position, state, action, reward, value, terminal, r, context, last_action, last_reward``
    (plus callback keys such as ``pixel_change``); `process` needs ``reward``, ``value`` and ``r``.

    Nested dicts are stored as nested dicts of lists; a tuple value is stored as a tuple of per-element lists of the
    same tuple type (a plain tuple stays a plain tuple, an ``LSTMStateTuple`` context stays an ``LSTMStateTuple``),
    so `get_frame` returns frames structured as they were added and `process` returns contexts of that type.
    """

    def __init__(self):
        super().__init__()
        self.size = 0

    def add(self, frame):
        """Appends one experience frame.

        Args:
            frame: [nested] dict; after the first frame, every frame must have the same keys and tuple layout.
        """
        if not isinstance(frame, dict):
            raise TypeError('Rollout.add: frame must be a dict, got {}'.format(type(frame)))
        if self.size > 0:
            _check_structure(self, frame, 'frame')
        _appended(self, frame)
        self.size += 1

    def add_memory_sample(self, frames):
        """Appends every frame of a replay-memory sample (list of frame dicts)."""
        for frame in frames:
            self.add(frame)

    def _check_index(self, index):
        if not -self.size <= index < self.size:
            raise IndexError('Rollout: frame index {} out of range for {} frames'.format(index, self.size))

    def get_frame(self, index):
        """Rebuilds frame ``index`` (negative indices count from the end) as a nested dict."""
        self._check_index(index)
        return map_nested(lambda values: values[index], self)

    def pop_frame(self, index):
        """Removes frame ``index`` from the rollout and returns it as a nested dict."""
        self._check_index(index)
        frame = map_nested(lambda values: values.pop(index), self)
        self.size -= 1
        return frame

    def _head(self, length):
        """New rollout holding the first ``length`` frames (this rollout is not changed)."""
        head = Rollout()
        head.update(map_nested(lambda values: values[:length], self))
        head.size = length
        return head

    def process(self, gamma, gae_lambda=1.0, size=None, time_flat=False):
        """Converts the trajectory to a batch of arrays with n-step returns and GAE advantages.

        With rewards ``r_t``, values ``V_t`` (t < T) and the bootstrap ``V_T`` = the last frame's ``'r'`` (the value
        of the next state, 0 after a terminal): ``batch['r'][t] = sum_{k=t}^{T-1} gamma^(k-t) r_k + gamma^(T-t) V_T``
        and ``batch['advantage'] = discount(r_t + gamma V_{t+1} - V_t, gamma * gae_lambda)``.

        Args:
            gamma: discount factor.
            gae_lambda: GAE lambda.
            size: if given and not ``time_flat``, rows are padded up to ``size`` (see `batches.batch_pad`).
            time_flat: True: every frame is a batch row with its own context; False: one trajectory.

        Returns:
            dict: every frame key except ``context, reward, r, value, position`` as arrays with time first
            (``state`` nested, ``action [T, A]``, ``terminal [T]``, ...); ``r`` and ``advantage`` float64 [T];
            ``mask`` float32 [T] of ones (zeros on padding rows); ``context`` (if frames hold one): the stored
            context structure (same tuple types) with leaves ``[T, units]`` (per-frame, axis 1 of the stored
            ``[1, units]`` squeezed out) when ``time_flat``, else the first frame's context, leaves ``[1, units]``;
            ``batch_size`` = T and ``time_steps`` = int32 ones [T] when ``time_flat``, else ``batch_size`` = 1 and
            ``time_steps`` = T (the real, unpadded length).
        """
        if self.size == 0:
            raise ValueError('Rollout.process: the rollout is empty')
        missing = [key for key in ('reward', 'value', 'r') if key not in self]
        if missing:
            raise KeyError('Rollout.process: frames lack keys {}'.format(missing))
        if size is not None and int(size) < 1:
            raise ValueError('Rollout.process: size must be a positive integer, got {}'.format(size))

        batch = {key: as_array(value) for key, value in self.items() if key not in _NOT_CONVERTED_KEYS}
        if 'context' in self:
            if time_flat:
                batch['context'] = as_array(self['context'], squeeze_axis=1)
            else:
                batch['context'] = as_array(self.get_frame(0)['context'])

        rewards = _as_scalars(self['reward'], 'reward')
        values = _as_scalars(self['value'], 'value')
        bootstrap = _as_scalars(self['r'][-1:], 'r')
        batch['r'] = discount(np.concatenate([rewards, bootstrap]), gamma)[:-1]
        deltas = rewards + gamma * np.concatenate([values[1:], bootstrap]) - values
        batch['advantage'] = discount(deltas, gamma * gae_lambda)
        batch[MASK_KEY] = np.ones(self.size, dtype=np.float32)

        if time_flat:
            batch['batch_size'] = self.size
            batch['time_steps'] = np.ones(self.size, dtype=np.int32)
        else:
            batch['batch_size'] = 1
            batch['time_steps'] = self.size

        if size is not None and not time_flat and self.size != size:
            batch = batch_pad(batch, to_size=int(size))
        return batch

    def process_rp(self, reward_threshold=0.1):
        """Batch for reward prediction: all frames but the last, processed with ``gamma=1`` and no padding.

        The rollout itself is not changed (its last frame stays).

        Args:
            reward_threshold: rewards above it are 'positive', below its negative 'negative', else 'zero'.

        Returns:
            `process` output of the first T-1 frames plus ``rp_target`` [1, 3], the one-hot class
            {zero, positive, negative} of the last frame's reward; ``time_steps`` = T-1.
        """
        if self.size < 2:
            raise ValueError('Rollout.process_rp: needs at least 2 frames, got {}'.format(self.size))
        last_reward = _as_scalars(self['reward'][-1:], 'reward')[0]
        batch = self._head(self.size - 1).process(gamma=1.0)
        batch['rp_target'] = _reward_class_one_hot(last_reward, reward_threshold)
        return batch


def pixel_control_targets(batches, gamma_pc):
    """Target parts of the batch that stacks `batches` (see `batches.batch_stack`).

    Args:
        batches: processed rollouts (`Rollout.process`) with `pixel_change` [n, H, W], `terminal` [n] and `mask`
            [n] (1 on the real frames, which come first; 0 on padding).
        gamma_pc: discount of pixel-change rewards.

    Returns:
        dict with `pc_return` float32 [N, H, W] (the discounted pixel changes up to the bootstrap frame),
        `pc_bootstrap_weight` float32 [N] (`gamma_pc^(L-t)`, 0 without bootstrap), `pc_bootstrap_row` int32 [N]
        (row of the bootstrap frame in the stacked batch) and `pc_mask` float32 [N] (1 on the frames trained),
        N the stacked number of rows.
    """
    parts = {'pc_return': [], 'pc_bootstrap_weight': [], 'pc_bootstrap_row': [], 'pc_mask': []}
    offset = 0
    for batch in batches:
        pixel_change = np.asarray(batch['pixel_change'], dtype=np.float32)
        rows = len(pixel_change)
        length = int(np.sum(batch['mask']))
        bootstrapped = not bool(np.asarray(batch['terminal'])[length - 1])
        trained = length - 1 if bootstrapped else length
        returns = np.zeros_like(pixel_change)
        discounted = np.zeros(pixel_change.shape[1:], dtype=np.float32)
        for t in reversed(range(trained)):
            discounted = pixel_change[t] + gamma_pc * discounted
            returns[t] = discounted
        weight = np.zeros(rows, dtype=np.float32)
        if bootstrapped:
            weight[:trained] = gamma_pc ** np.arange(trained, 0, -1, dtype=np.float64)
        mask = np.zeros(rows, dtype=np.float32)
        mask[:trained] = 1.0
        parts['pc_return'].append(returns)
        parts['pc_bootstrap_weight'].append(weight)
        parts['pc_bootstrap_row'].append(np.full(rows, offset + length - 1, dtype=np.int32))
        parts['pc_mask'].append(mask)
        offset += rows
    return {key: np.concatenate(values) for key, values in parts.items()}
