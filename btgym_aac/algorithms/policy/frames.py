"""Reshaping policy inputs: frames [N, ...] flattened to [N, D], or sequence-major frames to [B_rnn, T, D]."""
import numpy as np

from btgym_aac.compat import tf


def static_width(x):
    """Product of the static non-batch dims of `x` (1 for a [N] tensor).

    Raises:
        ValueError: a non-batch dim is unknown.
    """
    dims = x.get_shape().as_list()[1:]
    if None in dims:
        raise ValueError('policy: tensor {} needs static non-batch dims, got shape {}'.format(x.name, x.get_shape()))
    return int(np.prod(dims))


def flatten_frames(x):
    """Reshapes [N, ...] to [N, D]."""
    return tf.reshape(x, [-1, static_width(x)])


def to_sequences(x, batch_size, max_seq_len):
    """Reshapes sequence-major frames [N, ...] to [batch_size, max_seq_len, D]."""
    return tf.reshape(x, [batch_size, max_seq_len, static_width(x)])
