"""Basic graph layers: initializers, sampling, dense, NoisyNet dense, 1-D/2-D convolutions and 2-D deconvolution.

Variable naming: every layer opens ``tf.variable_scope(name)`` and creates its variables there with a plain
name, e.g. ``action/w``, ``action/b``, ``action/w_mu``. Checkpoints written by the original BTGym name them with a
double slash (``action//w``): restoring one here needs the name map ``'//' -> '/'``.
"""
import numpy as np

from btgym_aac.compat import tf


def _static_width(x, layer_name):
    """Returns the statically known size of the last axis of `x` as int; raises ValueError if it is unknown."""
    width = x.get_shape().as_list()[-1]
    if width is None:
        raise ValueError(
            'layer `{}` needs a statically known input width, got input shape {}'.format(layer_name, x.get_shape())
        )
    return int(width)


def normalized_columns_initializer(std=1.0):
    """Initializer drawing a Gaussian matrix whose columns (axis 0) are rescaled to L2 norm `std`.

    Randomness is numpy-side: the returned value is a constant tensor.

    Args:
        std: target L2 norm of every column.

    Returns:
        callable `(shape, dtype=None, partition_info=None) -> constant tensor`.
    """
    def _initializer(shape, dtype=None, partition_info=None):
        out = np.random.randn(*shape)
        out *= std / np.sqrt(np.square(out).sum(axis=0, keepdims=True))
        return tf.constant(out, dtype=dtype or tf.float32)

    return _initializer


def categorical_sample(logits, depth):
    """Draws one category per row of `logits` and returns it one-hot encoded.

    Args:
        logits: float tensor [B, depth] of unnormalised log-probabilities.
        depth: number of categories.

    Returns:
        float32 tensor [B, depth].
    """
    value = tf.squeeze(tf.random.categorical(logits, 1), [1])
    return tf.one_hot(value, depth, name='sample_one_hot')


def linear(x, size, name, initializer=None, bias_init=0, reuse=False):
    """Dense layer `x·w + b` with variables `<name>/w` [in, size] and `<name>/b` [size].

    Args:
        x: float tensor [B, in] with static `in`.
        size: number of output units.
        name: variable scope name.
        initializer: initializer of `w` (None: the enclosing scope's default, Glorot-uniform).
        bias_init: constant initial value of `b`.
        reuse: reuse the variables of an existing scope.

    Returns:
        tensor [B, size].
    """
    with tf.variable_scope(name, reuse=reuse):
        width = _static_width(x, name)
        w = tf.get_variable('w', [width, size], initializer=initializer)
        b = tf.get_variable('b', [size], initializer=tf.constant_initializer(bias_init))
        return tf.matmul(x, w) + b


def _signed_sqrt(x):
    """Returns sign(x)·sqrt(|x|), the noise transform of factorised NoisyNet."""
    return tf.sign(x) * tf.sqrt(tf.abs(x))


def noisy_linear(x, size, name, bias=True, activation_fn=tf.identity, reuse=False, **kwargs):
    """NoisyNet dense layer with factorised Gaussian noise (https://arxiv.org/abs/1706.10295).

    With `p` the input width: `w_mu`, `b_mu` ~ U(-1/sqrt(p), 1/sqrt(p)); `w_sigma`, `b_sigma` = 0.4/sqrt(p).
    Noise `eps_p` [p, 1], `eps_q` [1, size] ~ N(0, 1) is drawn anew on every session run and shared by all rows
    of the batch: `W = w_mu + w_sigma * f(eps_p) f(eps_q)`, `b = b_mu + b_sigma * f(eps_q)`, `f = sign·sqrt|·|`.

    Args:
        x: float tensor [B, p] with static `p`.
        size: number of output units.
        name: variable scope name; variables `<name>/w_mu`, `<name>/w_sigma`, `<name>/b_mu`, `<name>/b_sigma`.
        bias: add the noisy bias.
        activation_fn: output activation.
        reuse: reuse the variables of an existing scope.
        **kwargs: accepted for call compatibility with `linear` (e.g. `initializer`) and ignored.

    Returns:
        tensor [B, size].
    """
    with tf.variable_scope(name, reuse=reuse):
        width = _static_width(x, name)
        bound = 1.0 / np.sqrt(width)
        mu_init = tf.random_uniform_initializer(minval=-bound, maxval=bound)
        sigma_init = tf.constant_initializer(0.4 * bound)

        noise_in = _signed_sqrt(tf.random.normal([width, 1]))
        noise_out = _signed_sqrt(tf.random.normal([1, size]))

        w_mu = tf.get_variable('w_mu', [width, size], initializer=mu_init)
        w_sigma = tf.get_variable('w_sigma', [width, size], initializer=sigma_init)
        out = tf.matmul(x, w_mu + w_sigma * (noise_in * noise_out))
        if bias:
            b_mu = tf.get_variable('b_mu', [size], initializer=mu_init)
            b_sigma = tf.get_variable('b_sigma', [size], initializer=sigma_init)
            out = out + b_mu + b_sigma * tf.reshape(noise_out, [size])
        return activation_fn(out)


def _kernel_and_bias(kernel_shape, bias_shape, dtype, collections, prefix=''):
    """Creates `<prefix>W` (Glorot-uniform) and `<prefix>b` (zeros) in the current variable scope."""
    w = tf.get_variable(prefix + 'W', kernel_shape, dtype, initializer=tf.glorot_uniform_initializer(),
                        collections=collections)
    b = tf.get_variable(prefix + 'b', bias_shape, dtype, initializer=tf.zeros_initializer(), collections=collections)
    return w, b


def conv2d(x, num_filters, name, filter_size=(3, 3), stride=(1, 1), pad='SAME', dtype=tf.float32,
           collections=None, reuse=False):
    """2-D convolution `conv(x, W) + b`; `<name>/W` [fh, fw, Cin, F] Glorot-uniform, `<name>/b` [1, 1, 1, F] zeros.

    Args:
        x: tensor [B, H, W, Cin] with static `Cin`.
        num_filters: F.
        name: variable scope name.
        filter_size: (fh, fw).
        stride: (sh, sw).
        pad: 'SAME' or 'VALID'.
        dtype: variable dtype.
        collections: variable collections (None: global + trainable).
        reuse: reuse the variables of an existing scope.

    Returns:
        tensor [B, H', W', F].
    """
    with tf.variable_scope(name, reuse=reuse):
        in_channels = _static_width(x, name)
        w, b = _kernel_and_bias([filter_size[0], filter_size[1], in_channels, num_filters], [1, 1, 1, num_filters],
                                dtype, collections)
        return tf.nn.conv2d(x, w, [1, stride[0], stride[1], 1], pad) + b


def deconv2d(x, output_channels, name, filter_size=(4, 4), stride=(2, 2), dtype=tf.float32, collections=None,
             reuse=False):
    """Transposed 2-D convolution, VALID padding: `H_out = (H - 1)·sh + fh`, `W_out = (W - 1)·sw + fw`.

    Variables `<name>/d_W` [fh, fw, out, in] Glorot-uniform and `<name>/d_b` [1, 1, 1, out] zeros.

    Args:
        x: tensor [B, H, W, Cin] with static H, W, Cin.
        output_channels: number of output channels.
        name: variable scope name.
        filter_size: (fh, fw).
        stride: (sh, sw).
        dtype: variable dtype.
        collections: variable collections (None: global + trainable).
        reuse: reuse the variables of an existing scope.

    Returns:
        tensor [B, H_out, W_out, output_channels].
    """
    with tf.variable_scope(name, reuse=reuse):
        _, height, width, in_channels = x.get_shape().as_list()
        if None in (height, width, in_channels):
            raise ValueError('deconv2d `{}` needs static H, W, C, got input shape {}'.format(name, x.get_shape()))
        out_height = (height - 1) * stride[0] + filter_size[0]
        out_width = (width - 1) * stride[1] + filter_size[1]

        w, b = _kernel_and_bias([filter_size[0], filter_size[1], output_channels, in_channels],
                                [1, 1, 1, output_channels], dtype, collections, prefix='d_')
        output_shape = tf.stack([tf.shape(x)[0], out_height, out_width, output_channels])
        out = tf.nn.conv2d_transpose(x, w, output_shape, strides=[1, stride[0], stride[1], 1], padding='VALID')
        out.set_shape([None, out_height, out_width, output_channels])
        return out + b


def conv1d(x, num_filters, name, filter_size=3, stride=2, pad='SAME', dtype=tf.float32, collections=None,
           reuse=False):
    """1-D convolution `conv1d(x, W) + b`; `<name>/W` [k, Cin, F] Glorot-uniform, `<name>/b` [1, 1, F] zeros.

    Args:
        x: tensor [B, L, Cin] with static `Cin`.
        num_filters: F.
        name: variable scope name.
        filter_size: kernel length k.
        stride: stride.
        pad: 'SAME' or 'VALID'.
        dtype: variable dtype.
        collections: variable collections (None: global + trainable).
        reuse: reuse the variables of an existing scope.

    Returns:
        tensor [B, L', F].
    """
    with tf.variable_scope(name, reuse=reuse):
        in_channels = _static_width(x, name)
        w, b = _kernel_and_bias([filter_size, in_channels, num_filters], [1, 1, num_filters], dtype, collections)
        return tf.nn.conv1d(x, w, stride, pad) + b
