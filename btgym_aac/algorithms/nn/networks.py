"""Network builders: convolutional encoders, stacked LSTM, actor-critic / reward-prediction heads and the
pixel-control estimator and duelling Q head. Every builder creates all its ops when called."""
import numpy as np

from btgym_aac.algorithms.nn.layer_norm import layer_norm
from btgym_aac.algorithms.nn.layers import (
    categorical_sample, conv1d, conv2d, deconv2d, noisy_linear, normalized_columns_initializer,
)
from btgym_aac.algorithms.common.placeholders import rnn_placeholders
from btgym_aac.algorithms.nn.rnn import BasicLSTMCell, StackedCells, step, unroll
from btgym_aac.compat import tf


def conv_2d_network(x, ob_space, ac_space, conv_2d_layer_ref=conv2d, conv_2d_num_filters=(32, 32, 64, 64),
                    conv_2d_filter_size=(3, 3), conv_2d_stride=(2, 2), pad='SAME', dtype=tf.float32, name='conv2d',
                    collections=None, reuse=False, keep_prob=None, **kwargs):
    """2-D encoder: per filter count `F_i`, `elu(layer_norm(conv(x, F_i)))`, then dropout when `keep_prob` given.

    Variables: `<name>/_layer_<i>/{W,b}` and `<name>/<name>_norm_layer_<i>/{beta,gamma}`, i = 1, 2, ...

    Args:
        x: tensor [B, H, W, C].
        ob_space: unused (kept for the common encoder signature).
        ac_space: unused (kept for the common encoder signature).
        conv_2d_layer_ref: convolution layer builder with the signature of `layers.conv2d`.
        conv_2d_num_filters: filters per layer.
        conv_2d_filter_size: kernel size of every layer.
        conv_2d_stride: stride of every layer.
        pad: padding of every layer.
        dtype: variable dtype.
        name: variable scope.
        collections: variable collections.
        reuse: reuse the variables of an existing scope.
        keep_prob: dropout keep probability after every layer (float or scalar tensor), None for no dropout.
        **kwargs: other encoder options, ignored.

    Returns:
        feature map [B, H', W', F_last].
    """
    with tf.variable_scope(name, reuse=reuse):
        for i, num_filters in enumerate(conv_2d_num_filters, start=1):
            conv = conv_2d_layer_ref(x, num_filters, '_layer_{}'.format(i), conv_2d_filter_size, conv_2d_stride,
                                     pad, dtype, collections, reuse)
            x = tf.nn.elu(layer_norm(conv, scope='{}_norm_layer_{}'.format(name, i)))
            if keep_prob is not None:
                x = tf.nn.dropout(x, rate=1 - keep_prob, name='_layer_{}_with_dropout'.format(i))
        return x


def conv_1d_network(x, ob_space, ac_space, conv_1d_num_layers=4, conv_1d_num_filters=32, conv_1d_filter_size=3,
                    conv_1d_stride=2, pad='SAME', dtype=tf.float32, collections=None, reuse=False, **kwargs):
    """1-D encoder: `conv_1d_num_layers` times `elu(conv1d(x))`, variables `conv1d_<i>/{W,b}` in the current scope.

    Args:
        x: tensor [B, L, C].
        ob_space: unused (kept for the common encoder signature).
        ac_space: unused (kept for the common encoder signature).
        conv_1d_num_layers: number of layers.
        conv_1d_num_filters: filters per layer.
        conv_1d_filter_size: kernel length.
        conv_1d_stride: stride.
        pad: padding.
        dtype: variable dtype.
        collections: variable collections.
        reuse: reuse the variables of an existing scope.
        **kwargs: other encoder options, ignored.

    Returns:
        tensor [B, L', conv_1d_num_filters].
    """
    for i in range(1, conv_1d_num_layers + 1):
        x = tf.nn.elu(conv1d(x, conv_1d_num_filters, 'conv1d_{}'.format(i), conv_1d_filter_size, conv_1d_stride,
                             pad, dtype, collections, reuse))
    return x


def _first_time_step(x, lengths):
    """Returns `x[:, 0, :]`, guarded by a run-time check that the time axis and every sequence length are 1."""
    time_steps = x.get_shape()[1]
    if time_steps is not None and time_steps != 1:
        raise ValueError('lstm_network(static=True) needs sequences of length 1, got input shape {}'.format(
            x.get_shape()))
    length_check = tf.debugging.Assert(
        tf.logical_and(tf.equal(tf.shape(x)[1], 1), tf.reduce_all(tf.equal(lengths, 1))),
        ['lstm_network(static=True) needs sequences of length 1; time steps and lengths:', tf.shape(x)[1], lengths])
    with tf.control_dependencies([length_check]):
        return tf.identity(x[:, 0, :])


def lstm_network(x, lstm_sequence_length, lstm_class=BasicLSTMCell, lstm_layers=(256,),
                 static=False, keep_prob=None, name='lstm', reuse=False, **kwargs):
    """Stacked LSTM over `[B_rnn, T_max, D]` inputs, fed its initial state through placeholders.

    Both modes place the cell variables under `<name>/rnn/multi_rnn_cell/cell_<k>/`, so a static and a dynamic
    network built under the same `name` (the second with `reuse=True`) share weights.

    Args:
        x: tensor [B_rnn, T_max, D] with static D.
        lstm_sequence_length: int tensor [B_rnn] of sequence lengths.
        lstm_class: cell class, called as `lstm_class(units)`.
        lstm_layers: units per layer.
        static: False: `rnn.unroll` (outputs are zero past each length, final state frozen at the length);
            True: `rnn.step` on the single time step (T_max and every length must be 1, checked at run time;
            no length masking, which costs a select per state tensor and changes nothing then).
        keep_prob: output keep probability of every layer (float or tensor), or None (see `rnn.StackedCells`).
        name: variable scope.
        reuse: reuse the variables of an existing scope.
        **kwargs: other options, ignored.

    Returns:
        outputs [B_rnn, T_max, units_last];
        init_state: nested zero state for batch 1, `(LSTMStateTuple(c, h), ...)` per layer;
        final_state: nested final state of the same structure;
        state_pl_flat: flat list of the initial-state placeholders `[c_1, h_1, c_2, h_2, ...]` ([None, units]).
    """
    with tf.variable_scope(name, reuse=reuse):
        cell = StackedCells([lstm_class(size) for size in lstm_layers], keep_prob)
        init_state = cell.zero_state(1, dtype=tf.float32)
        state_pl = rnn_placeholders(init_state)
        state_pl_flat = tf.nest.flatten(state_pl)
        if static:
            output, final_state = step(cell, _first_time_step(x, lstm_sequence_length), state_pl)
            outputs = output[:, None, :]
        else:
            outputs, final_state = unroll(cell, x, state_pl, lstm_sequence_length)
    return outputs, init_state, final_state, state_pl_flat


def dense_aac_network(x, ac_space_depth, name='dense_aac', linear_layer_ref=noisy_linear, reuse=False,
                      logits_layer_norm=True):
    """Actor-critic head.

    With `logits_layer_norm` (the default), logits are `layer_norm(linear(x, A, 'action'), center=True,
    scale=False)`: standardised across actions plus a learnable per-action offset. This bounds how peaked the
    policy can get, and with two actions the standardised logits are always +-1, so almost no gradient reaches
    the state-dependent part: turn it off for two-action environments such as CartPole.

    Args:
        x: tensor [B, D].
        ac_space_depth: number of actions A (one-hot depth).
        name: variable scope.
        linear_layer_ref: dense layer builder (`layers.linear` or `layers.noisy_linear`).
        reuse: reuse the variables of an existing scope.
        logits_layer_norm: layer-normalise the logits (see above).

    Returns:
        logits [B, A]; value [B]; sample: one-hot draw for the first row, [A].
    """
    with tf.variable_scope(name, reuse=reuse):
        action = linear_layer_ref(x=x, size=ac_space_depth, name='action',
                                  initializer=normalized_columns_initializer(0.01), reuse=reuse)
        logits = layer_norm(action, center=True, scale=False) if logits_layer_norm else action
        value = linear_layer_ref(x=x, size=1, name='value', initializer=normalized_columns_initializer(1.0),
                                 reuse=reuse)
        vf = tf.reshape(value, [-1])
        sample = categorical_sample(logits, ac_space_depth)[0, :]
    return logits, vf, sample


def dense_rp_network(x, linear_layer_ref=noisy_linear):
    """Reward-prediction head in the current scope: `linear(elu(linear(x, 128, 'rp_dense')), 3, 'rp_classifier')`.

    Args:
        x: tensor [B, D].
        linear_layer_ref: dense layer builder.

    Returns:
        class logits [B, 3] (the softmax lives in the loss).
    """
    hidden = tf.nn.elu(linear_layer_ref(x=x, size=128, name='rp_dense',
                                        initializer=normalized_columns_initializer(0.01)))
    return linear_layer_ref(x=hidden, size=3, name='rp_classifier', initializer=normalized_columns_initializer(0.01))


def pixel_change_2d_estimator(ob_space_shape, pc_estimator_stride=(2, 2), **kwargs):
    """Pixel-change target: channel mean of `|s - s_prev|`, cropped by one pixel, max-pooled by the stride.

    An observation with width (second-to-last dim) <= 3 is treated as a 1-D signal: only H is cropped.

    Args:
        ob_space_shape: observation shape [H, W, C] (no batch dim).
        pc_estimator_stride: pooling window and stride (sh, sw), SAME padding.
        **kwargs: other options, ignored.

    Returns:
        state_pl [H, W, C]; last_state_pl [H, W, C]; target [1, H', W', 1].
    """
    shape = list(ob_space_shape)
    if len(shape) != 3:
        raise ValueError('pixel_change_2d_estimator needs an [H, W, C] observation shape, got {}'.format(shape))
    state_pl = tf.placeholder(tf.float32, shape, name='pc_change_est_state_in')
    last_state_pl = tf.placeholder(tf.float32, shape, name='pc_change_est_last_state_in')

    change = tf.expand_dims(tf.abs(state_pl - last_state_pl), 0)
    if shape[1] <= 3:
        change = change[:, 1:-1, :, :]
    else:
        change = change[:, 1:-1, 1:-1, :]
    change = tf.reduce_mean(change, axis=-1, keepdims=True)

    window = [1, pc_estimator_stride[0], pc_estimator_stride[1], 1]
    target = tf.nn.max_pool(change, window, window, 'SAME')
    return state_pl, last_state_pl, target


def duelling_pc_network(x, ac_space, duell_pc_x_inner_shape=(9, 9, 32), duell_pc_filter_size=(4, 4),
                        duell_pc_stride=(2, 2), linear_layer_ref=noisy_linear, reuse=False, **kwargs):
    """Duelling pixel-control Q head: `Q = V + A - mean_a(A)` from two deconvolutions of a dense feature map.

    Variables: `pc_dense/*`, `pc_advantage/{d_W,d_b}`, `pc_value_fn/{d_W,d_b}` in the current scope.

    Args:
        x: tensor [B, D].
        ac_space: number of actions A (int, the one-hot depth).
        duell_pc_x_inner_shape: (h, w, c) of the dense feature map.
        duell_pc_filter_size: deconvolution kernel (fh, fw).
        duell_pc_stride: deconvolution stride (sh, sw).
        linear_layer_ref: dense layer builder.
        reuse: reuse the variables of an existing scope.
        **kwargs: other options, ignored.

    Returns:
        Q [B, (h-1)·sh + fh, (w-1)·sw + fw, A].
    """
    if isinstance(ac_space, bool) or not isinstance(ac_space, (int, np.integer)) or ac_space <= 0:
        raise ValueError('duelling_pc_network: ac_space must be the number of actions (int), got {!r}'.format(
            ac_space))
    hidden = tf.nn.elu(linear_layer_ref(x=x, size=int(np.prod(duell_pc_x_inner_shape)), name='pc_dense',
                                        initializer=tf.glorot_uniform_initializer(), reuse=reuse))
    feature_map = tf.reshape(hidden, [-1] + list(duell_pc_x_inner_shape))
    advantage = deconv2d(feature_map, int(ac_space), 'pc_advantage', duell_pc_filter_size, duell_pc_stride,
                         reuse=reuse)
    value = deconv2d(feature_map, 1, 'pc_value_fn', duell_pc_filter_size, duell_pc_stride, reuse=reuse)
    return value + advantage - tf.reduce_mean(advantage, axis=-1, keepdims=True)
