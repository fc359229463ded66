"""Checks of trainer settings: a bad value raises ValueError naming the setting at trainer construction, rather than
failing in a runner thread or mid-training."""
import numpy as np

from btgym_aac.validation import check_whole_number


def log_uniform_range(name, value):
    """Returns `value` if it is a number >= 0 or a [low, high] sequence of them (for `math_utils.log_uniform`).

    Args:
        name: setting named in the message.
        value: the setting's value.

    Returns:
        value.

    Raises:
        ValueError: naming the setting and the value.
    """
    try:
        bounds = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        bounds = np.empty(0)
    if isinstance(value, (bool, str)) or bounds.size == 0 or not np.all(np.isfinite(bounds)) or np.any(bounds < 0):
        raise ValueError('{} must be a finite number >= 0 or a [low, high] pair of them for a log-uniform draw, '
                         'got {!r}'.format(name, value))
    return value


def check_replay(memory_size, rollout_length, rp_sequence_size, reward_prediction):
    """Raises ValueError naming the replay setting that the runners' memories could not be built or sampled with.

    Args:
        memory_size: `replay_memory_size`, frames per memory.
        rollout_length: `replay_rollout_length` (`rollout_length` when not given), longest replayed sequence.
        rp_sequence_size: reward-prediction sample length in frames.
        reward_prediction: whether reward prediction samples the memory.
    """
    check_whole_number('replay_memory_size', memory_size)
    check_whole_number('replay_rollout_length', rollout_length)
    if rollout_length > memory_size:
        raise ValueError('replay_rollout_length {} (rollout_length when not given) is longer than replay_memory_size '
                         '{}: the memory cannot hold a sequence that long'.format(rollout_length, memory_size))
    if reward_prediction:
        check_whole_number('rp_sequence_size', rp_sequence_size)
        if rollout_length < rp_sequence_size:
            raise ValueError('replay_rollout_length {} is shorter than rp_sequence_size {}: the memory cannot '
                             'return reward-prediction samples that long'.format(rollout_length, rp_sequence_size))
