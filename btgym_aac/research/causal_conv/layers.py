"""WaveNet-style dilated 1-D convolution built from time-to-batch folding (not used by the encoders of
`networks`, kept for experiments)."""
from btgym_aac.algorithms.nn.layers import conv1d
from btgym_aac.compat import tf


def _static_channels(value):
    """The statically known channel count of a [B, T, C] tensor; raises ValueError when it is unknown."""
    channels = value.get_shape().as_list()[-1]
    if channels is None:
        raise ValueError('needs a statically known channel axis, got shape {}'.format(value.get_shape()))
    return channels


def time_to_batch(value, dilation, name=None):
    """Folds time into the batch: [B, T, C] -> [B * d, ceil(T / d), C].

    Time is right-padded with zeros to a multiple of d; row p * B + b then holds x[b, p], x[b, p + d],
    x[b, p + 2d], ... (phase p of sample b), so a plain convolution over the rows is a convolution dilated by d.

    Args:
        value: tensor [B, T, C] with static C.
        dilation: d (int >= 1).
        name: name scope (default 'time_to_batch').

    Returns:
        tensor [B * d, ceil(T / d), C].
    """
    with tf.name_scope(name or 'time_to_batch'):
        channels = _static_channels(value)
        shape = tf.shape(value)
        padded = tf.pad(value, [[0, 0], [0, tf.math.floormod(-shape[1], dilation)], [0, 0]])
        phases = tf.transpose(tf.reshape(padded, [-1, dilation, channels]), perm=[1, 0, 2])
        return tf.reshape(phases, [shape[0] * dilation, -1, channels])


def batch_to_time(value, dilation, name=None):
    """Inverse of `time_to_batch`: [B * d, L, C] -> [B, L * d, C] (the padding steps stay at the end).

    Args:
        value: tensor [B * d, L, C] with static C.
        dilation: d (int >= 1).
        name: name scope (default 'batch_to_time').

    Returns:
        tensor [B, L * d, C].
    """
    with tf.name_scope(name or 'batch_to_time'):
        channels = _static_channels(value)
        shape = tf.shape(value)
        steps = tf.transpose(tf.reshape(value, [dilation, -1, channels]), perm=[1, 0, 2])
        return tf.reshape(steps, [shape[0] // dilation, -1, channels])


def dilated_conv1d(inputs, filters, filter_width=2, dilation_rate=1, pad='VALID', activation=None,
                   name='dilated_conv_1d', reuse=False):
    """Dilated 1-D convolution: out[t] = sum_j x[t + j * d] W[j] + b, j = 0 .. w - 1, t = 0 .. T - 1 - (w - 1) d.

    Output step t ends at input step t + (w - 1) d: the last output covers the newest inputs and no output reads
    past its own end. `pad='SAME'` zero-pads each folded phase on both sides before the same cut (then the
    outputs are not aligned that way).

    Variables: `<name>/W` [w, C, filters] (Glorot-uniform), `<name>/b` [1, 1, filters] in the current variable
    scope.

    Args:
        inputs: tensor [B, T, C] with static C.
        filters: number of output channels.
        filter_width: w.
        dilation_rate: d (int >= 1).
        pad: 'VALID' or 'SAME'.
        activation: output activation, or None.
        name: variable and name scope.
        reuse: reuse the variables of an existing scope.

    Returns:
        tensor [B, T - (w - 1) d, filters].
    """
    with tf.name_scope(name):
        folded = time_to_batch(inputs, dilation_rate) if dilation_rate > 1 else inputs
        convolved = conv1d(folded, filters, name, filter_size=filter_width, stride=1, pad=pad, reuse=reuse)
        restored = batch_to_time(convolved, dilation_rate) if dilation_rate > 1 else convolved
        out_width = tf.shape(inputs)[1] - (filter_width - 1) * dilation_rate
        result = restored[:, :out_width, :]
        return activation(result) if activation is not None else result
