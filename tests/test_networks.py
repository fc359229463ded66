"""Network builders: shapes, variable names and values against numpy."""
import numpy as np
import pytest

from btgym_aac.algorithms.nn.layer_norm import LayerNormBasicLSTMCell
from btgym_aac.algorithms.nn.layers import deconv2d, linear
from btgym_aac.algorithms.nn.networks import (
    conv_1d_network, conv_2d_network, dense_aac_network, dense_rp_network, duelling_pc_network, lstm_network,
    pixel_change_2d_estimator,
)
from btgym_aac.algorithms.common.placeholders import LSTMStateTuple
from btgym_aac.compat import tf


def _variable_shapes():
    return {v.op.name: v.get_shape().as_list() for v in tf.global_variables()}


def _randomise_variables(sess, rng):
    values = {v.op.name: rng.normal(size=v.get_shape().as_list()).astype(np.float32) for v in tf.global_variables()}
    sess.run([v.assign(values[v.op.name]) for v in tf.global_variables()])
    return values


def _np_layer_norm(x, beta=0.0, gamma=1.0):
    axes = tuple(range(1, x.ndim))
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def test_conv_2d_network_shapes_and_variable_names():
    with tf.Graph().as_default():
        out = conv_2d_network(tf.placeholder(tf.float32, [None, 30, 1, 5]), None, None,
                              conv_2d_num_filters=(4, 4, 6, 6), conv_2d_filter_size=(3, 1), conv_2d_stride=(2, 1),
                              name='encoded_external', unused_option=1)
        shapes = _variable_shapes()
    assert out.get_shape().as_list() == [None, 2, 1, 6]
    assert len(shapes) == 16
    assert shapes['encoded_external/_layer_1/W'] == [3, 1, 5, 4]
    assert shapes['encoded_external/_layer_4/b'] == [1, 1, 1, 6]
    assert shapes['encoded_external/encoded_external_norm_layer_2/beta'] == [4]
    assert shapes['encoded_external/encoded_external_norm_layer_4/gamma'] == [6]


def test_conv_2d_network_values_and_dropout():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4, 2, 3)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        keep_prob = tf.placeholder_with_default(1.0, [])
        out = conv_2d_network(tf.constant(x), None, None, conv_2d_num_filters=(5,), conv_2d_filter_size=(1, 1),
                              conv_2d_stride=(1, 1), keep_prob=keep_prob)
        sess.run(tf.global_variables_initializer())
        params = _randomise_variables(sess, rng)
        kept = sess.run(out)
        dropped = sess.run(out, {keep_prob: 0.5})
    conv = x @ params['conv2d/_layer_1/W'][0, 0] + params['conv2d/_layer_1/b']
    expected = _elu(_np_layer_norm(conv, params['conv2d/conv2d_norm_layer_1/beta'],
                                   params['conv2d/conv2d_norm_layer_1/gamma']))
    np.testing.assert_allclose(kept, expected, rtol=1e-4, atol=1e-5)
    assert np.all(np.isclose(dropped, 0.0) | np.isclose(dropped, 2 * expected, rtol=1e-4, atol=1e-5))
    assert np.isclose(dropped, 0.0).any()


def test_conv_1d_network_shapes_and_variable_names():
    with tf.Graph().as_default():
        out = conv_1d_network(tf.placeholder(tf.float32, [None, 20, 3]), None, None, conv_1d_num_layers=3,
                              conv_1d_num_filters=7)
        shapes = _variable_shapes()
    assert out.get_shape().as_list() == [None, 3, 7]
    assert shapes == {'conv1d_1/W': [3, 3, 7], 'conv1d_1/b': [1, 1, 7], 'conv1d_2/W': [3, 7, 7],
                      'conv1d_2/b': [1, 1, 7], 'conv1d_3/W': [3, 7, 7], 'conv1d_3/b': [1, 1, 7]}


def test_lstm_network_static_one_step_equals_dynamic_and_respects_lengths():
    rng = np.random.default_rng(1)
    units = (3, 4)
    x = rng.normal(size=(3, 3, 2)).astype(np.float32)
    lengths = np.array([3, 1, 2], np.int32)
    with tf.Graph().as_default(), tf.Session() as sess:
        x_pl = tf.placeholder(tf.float32, [None, None, 2])
        len_pl = tf.placeholder(tf.int32, [None])
        dynamic = lstm_network(x_pl, len_pl, lstm_layers=units)
        num_variables = len(tf.global_variables())
        static = lstm_network(x_pl, len_pl, lstm_layers=units, static=True, reuse=True)
        assert len(tf.global_variables()) == num_variables == 4
        assert [v.op.name for v in tf.global_variables()][0] == 'lstm/rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel'
        sess.run(tf.global_variables_initializer())
        _randomise_variables(sess, rng)

        out, init_state, final_state, state_pl_flat = dynamic
        assert [pl.get_shape().as_list() for pl in state_pl_flat] == [[None, 3], [None, 3], [None, 4], [None, 4]]
        context = [rng.normal(size=(3, pl.get_shape().as_list()[1])).astype(np.float32) for pl in state_pl_flat]
        init_value = sess.run(init_state)
        dynamic_out, dynamic_state = sess.run(
            [out, final_state], {x_pl: x, len_pl: lengths, **dict(zip(state_pl_flat, context))})
        static_feed = {x_pl: x[:, :1], len_pl: np.ones(3, np.int32), **dict(zip(static[3], context))}
        static_out, static_state = sess.run([static[0], static[2]], static_feed)

    assert len(init_value) == 2 and isinstance(init_value[0], LSTMStateTuple)
    np.testing.assert_array_equal(init_value[1].h, np.zeros((1, 4)))
    assert dynamic_out.shape == (3, 3, 4) and static_out.shape == (3, 1, 4)
    np.testing.assert_allclose(static_out[:, 0], dynamic_out[:, 0], rtol=1e-5, atol=1e-6)
    assert np.all(dynamic_out[1, 1:] == 0) and np.all(dynamic_out[2, 2:] == 0)
    assert np.all(dynamic_out[0, 2] != 0)
    for layer in range(2):
        np.testing.assert_allclose(dynamic_state[layer].c[1], static_state[layer].c[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(dynamic_state[layer].h[1], static_state[layer].h[1], rtol=1e-5, atol=1e-6)
        assert not np.allclose(dynamic_state[layer].h[0], static_state[layer].h[0])


def test_lstm_network_static_rejects_longer_sequences_and_lengths_other_than_one():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(ValueError, match='length 1'):
            lstm_network(tf.zeros([2, 2, 3]), tf.ones([2], tf.int32), lstm_layers=(2,), static=True)
        x_pl = tf.placeholder(tf.float32, [None, None, 3])
        len_pl = tf.placeholder(tf.int32, [None])
        out, _, _, state_pl_flat = lstm_network(x_pl, len_pl, lstm_layers=(2,), static=True, name='other')
        sess.run(tf.global_variables_initializer())
        state_feed = {pl: np.zeros((2, 2)) for pl in state_pl_flat}
        assert sess.run(out, {x_pl: np.ones((2, 1, 3)), len_pl: [1, 1], **state_feed}).shape == (2, 1, 2)
        for x, lengths in ((np.zeros((2, 2, 3)), [1, 1]), (np.ones((2, 1, 3)), [1, 0]), (np.ones((2, 1, 3)), [2, 1])):
            with pytest.raises(tf.errors.InvalidArgumentError, match='length 1'):
                sess.run(out, {x_pl: x, len_pl: lengths, **state_feed})


def test_lstm_network_with_layer_norm_cell_and_dropout():
    with tf.Graph().as_default(), tf.Session() as sess:
        keep_prob = tf.placeholder_with_default(1.0, [])
        x_pl = tf.placeholder(tf.float32, [None, None, 3])
        out, _, final_state, state_pl_flat = lstm_network(
            x_pl, tf.fill([tf.shape(x_pl)[0]], tf.shape(x_pl)[1]), lstm_class=LayerNormBasicLSTMCell,
            lstm_layers=(5,), keep_prob=keep_prob, name='lstm_1')
        assert 'lstm_1/rnn/multi_rnn_cell/cell_0/layer_norm_basic_lstm_cell/state/gamma' in _variable_shapes()
        sess.run(tf.global_variables_initializer())
        feed = {x_pl: np.ones((2, 4, 3)), **{pl: np.zeros((2, 5)) for pl in state_pl_flat}}
        out_value, state_value = sess.run([out, final_state], feed)
    assert out_value.shape == (2, 4, 5)
    np.testing.assert_allclose(out_value[:, -1], state_value[0].h, rtol=1e-6)


def test_dense_aac_network_values_names_and_reuse():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        logits, vf, sample = dense_aac_network(tf.constant(x), 3, name='aac_dense_pi', linear_layer_ref=linear)
        shapes = _variable_shapes()
        dense_aac_network(tf.constant(x), 3, name='aac_dense_pi', linear_layer_ref=linear, reuse=True)
        assert _variable_shapes() == shapes
        sess.run(tf.global_variables_initializer())
        params = _randomise_variables(sess, rng)
        logits_value, vf_value, sample_value = sess.run([logits, vf, sample])
    assert shapes == {'aac_dense_pi/action/w': [6, 3], 'aac_dense_pi/action/b': [3],
                      'aac_dense_pi/LayerNorm/beta': [3], 'aac_dense_pi/value/w': [6, 1],
                      'aac_dense_pi/value/b': [1]}
    action = x @ params['aac_dense_pi/action/w'] + params['aac_dense_pi/action/b']
    np.testing.assert_allclose(logits_value, _np_layer_norm(action, params['aac_dense_pi/LayerNorm/beta']),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(vf_value, (x @ params['aac_dense_pi/value/w'])[:, 0] + params['aac_dense_pi/value/b'],
                               rtol=1e-5, atol=1e-5)
    assert sample_value.shape == (3,) and sorted(sample_value) == [0, 0, 1]


def test_dense_aac_network_without_logits_layer_norm_gives_the_linear_logits():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        logits, _, _ = dense_aac_network(tf.constant(x), 3, name='plain', linear_layer_ref=linear,
                                         logits_layer_norm=False)
        assert 'plain/LayerNorm/beta' not in _variable_shapes()
        sess.run(tf.global_variables_initializer())
        params = _randomise_variables(sess, rng)
        logits_value = sess.run(logits)
    np.testing.assert_allclose(logits_value, x @ params['plain/action/w'] + params['plain/action/b'], rtol=1e-5,
                               atol=1e-5)


def test_dense_aac_network_with_noisy_layers():
    with tf.Graph().as_default(), tf.Session() as sess:
        logits, vf, _ = dense_aac_network(tf.ones([2, 5]), 4)
        names = set(_variable_shapes())
        sess.run(tf.global_variables_initializer())
        logits_value, vf_value = sess.run([logits, vf])
    assert {'dense_aac/action/w_mu', 'dense_aac/value/b_sigma', 'dense_aac/LayerNorm/beta'} <= names
    assert logits_value.shape == (2, 4) and vf_value.shape == (2,)
    np.testing.assert_allclose(logits_value.mean(axis=1), [0, 0], atol=1e-5)
    np.testing.assert_allclose(logits_value.std(axis=1), [1, 1], atol=1e-3)


def test_dense_rp_network_matches_numpy():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        logits = dense_rp_network(tf.constant(x), linear_layer_ref=linear)
        shapes = _variable_shapes()
        sess.run(tf.global_variables_initializer())
        params = _randomise_variables(sess, rng)
        value = sess.run(logits)
    assert shapes == {'rp_dense/w': [5, 128], 'rp_dense/b': [128], 'rp_classifier/w': [128, 3],
                      'rp_classifier/b': [3]}
    hidden = _elu(x @ params['rp_dense/w'] + params['rp_dense/b'])
    np.testing.assert_allclose(value, hidden @ params['rp_classifier/w'] + params['rp_classifier/b'],
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('shape, stride', [((8, 7, 3), (2, 2)), ((9, 1, 5), (2, 1))])
def test_pixel_change_2d_estimator_matches_numpy(shape, stride):
    rng = np.random.default_rng(4)
    state, last_state = rng.normal(size=(2,) + shape).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        state_pl, last_state_pl, target = pixel_change_2d_estimator(shape, pc_estimator_stride=stride)
        value = sess.run(target, {state_pl: state, last_state_pl: last_state})
    change = np.abs(state - last_state)
    change = change[1:-1, 1:-1] if shape[1] > 3 else change[1:-1]
    change = change.mean(axis=-1)
    rows, cols = -(-change.shape[0] // stride[0]), -(-change.shape[1] // stride[1])
    expected = np.array([[change[i * stride[0]:(i + 1) * stride[0], j * stride[1]:(j + 1) * stride[1]].max()
                          for j in range(cols)] for i in range(rows)])
    assert value.shape == (1, rows, cols, 1)
    np.testing.assert_allclose(value[0, :, :, 0], expected, rtol=1e-6)


def test_pixel_change_2d_estimator_rejects_bad_shape():
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r'\[H, W, C\]'):
        pixel_change_2d_estimator((10, 3))


@pytest.mark.parametrize('inner, filter_size, stride, out_hw', [
    ((9, 9, 32), (4, 4), (2, 2), (20, 20)),
    ((6, 1, 32), (4, 1), (2, 1), (14, 1)),
])
def test_duelling_pc_network_combines_value_and_advantage(inner, filter_size, stride, out_hw):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 8)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        q = duelling_pc_network(tf.constant(x), 4, inner, filter_size, stride, linear_layer_ref=linear)
        num_variables = len(tf.global_variables())
        feature_map = tf.reshape(tf.nn.elu(linear(tf.constant(x), int(np.prod(inner)), 'pc_dense', reuse=True)),
                                 [-1] + list(inner))
        advantage = deconv2d(feature_map, 4, 'pc_advantage', filter_size, stride, reuse=True)
        value = deconv2d(feature_map, 1, 'pc_value_fn', filter_size, stride, reuse=True)
        assert len(tf.global_variables()) == num_variables == 6
        sess.run(tf.global_variables_initializer())
        _randomise_variables(sess, rng)
        q_value, advantage_value, value_value = sess.run([q, advantage, value])
    assert q.get_shape().as_list() == [2, out_hw[0], out_hw[1], 4]
    expected = value_value + advantage_value - advantage_value.mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(q_value, expected, rtol=1e-4, atol=1e-4)
    assert not np.allclose(q_value, advantage_value)


def test_duelling_pc_network_rejects_non_integer_action_space():
    with tf.Graph().as_default(), pytest.raises(ValueError, match='ac_space'):
        duelling_pc_network(tf.ones([1, 4]), (4,))
