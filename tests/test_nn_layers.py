"""Layers and layer_norm against numpy references."""
import numpy as np
import pytest

from btgym_aac.algorithms.nn.layer_norm import layer_norm
from btgym_aac.algorithms.nn.layers import (
    categorical_sample, conv1d, conv2d, deconv2d, linear, noisy_linear, normalized_columns_initializer,
)
from btgym_aac.compat import tf


def _np_conv2d_same(x, w, stride):
    """Naive SAME-padded 2-D convolution, x [B,H,W,C], w [kh,kw,C,F]."""
    _, height, width, _ = x.shape
    kh, kw, _, _ = w.shape
    sh, sw = stride
    out_h, out_w = -(-height // sh), -(-width // sw)
    pad_h = max((out_h - 1) * sh + kh - height, 0)
    pad_w = max((out_w - 1) * sw + kw - width, 0)
    x = np.pad(x, ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2), (0, 0)))
    out = np.zeros((x.shape[0], out_h, out_w, w.shape[-1]))
    for i in range(out_h):
        for j in range(out_w):
            patch = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


def _variables_by_name():
    return {v.op.name: v for v in tf.global_variables()}


def test_normalized_columns_initializer_sets_column_norms():
    with tf.Graph().as_default(), tf.Session() as sess:
        value = sess.run(normalized_columns_initializer(0.5)([7, 3]))
    assert value.shape == (7, 3) and value.dtype == np.float32
    np.testing.assert_allclose(np.sqrt((value ** 2).sum(axis=0)), [0.5, 0.5, 0.5], rtol=1e-5)


def test_categorical_sample_is_one_hot_of_the_certain_category():
    logits = np.array([[-1e4, 0.0, -1e4], [0.0, -1e4, -1e4]], np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        sample = sess.run(categorical_sample(tf.constant(logits), 3))
    np.testing.assert_array_equal(sample, [[0, 1, 0], [1, 0, 0]])


def test_linear_matches_numpy_and_names_variables():
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        with tf.variable_scope('head'):
            out = linear(tf.constant(x), 3, 'action', bias_init=0.25)
        variables = _variables_by_name()
        assert sorted(variables) == ['head/action/b', 'head/action/w']
        sess.run(tf.global_variables_initializer())
        result, w, b = sess.run([out, variables['head/action/w'], variables['head/action/b']])
    assert w.shape == (5, 3)
    np.testing.assert_allclose(b, [0.25] * 3)
    np.testing.assert_allclose(result, x @ w + b, rtol=1e-5, atol=1e-6)


def test_linear_rejects_unknown_input_width():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='statically known input width'):
            linear(tf.placeholder(tf.float32, [None, None]), 3, 'action')


def test_noisy_linear_variables_and_initial_values():
    width, size = 16, 3
    with tf.Graph().as_default(), tf.Session() as sess:
        noisy_linear(tf.zeros([2, width]), size, 'value', initializer=tf.ones_initializer())
        variables = _variables_by_name()
        assert sorted(variables) == ['value/b_mu', 'value/b_sigma', 'value/w_mu', 'value/w_sigma']
        sess.run(tf.global_variables_initializer())
        values = sess.run(variables)
    assert values['value/w_mu'].shape == (width, size) and values['value/b_sigma'].shape == (size,)
    bound = 1 / np.sqrt(width)
    assert np.all(np.abs(values['value/w_mu']) <= bound) and np.all(np.abs(values['value/b_mu']) <= bound)
    np.testing.assert_allclose(values['value/w_sigma'], np.full((width, size), 0.4 * bound), rtol=1e-6)
    np.testing.assert_allclose(values['value/b_sigma'], np.full(size, 0.4 * bound), rtol=1e-6)


def test_noisy_linear_noise_is_fresh_per_run_and_shared_by_batch_rows():
    row = np.random.default_rng(1).normal(size=(1, 6)).astype(np.float32)
    batch = np.concatenate([row, row, 2 * row])
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(3)
        out = noisy_linear(tf.constant(batch), 4, 'noisy')
        no_bias = noisy_linear(tf.constant(batch), 4, 'noisy_no_bias', bias=False)
        sess.run(tf.global_variables_initializer())
        first, first_no_bias = sess.run([out, no_bias])
        second = sess.run(out)
    assert not np.allclose(first, second)
    np.testing.assert_allclose(first[0], first[1], rtol=1e-6)
    # Same noisy weights for every row: a linear map without bias doubles with its input.
    np.testing.assert_allclose(first_no_bias[2], 2 * first_no_bias[0], rtol=1e-5, atol=1e-6)


def test_noisy_linear_without_sigma_is_the_mean_linear_map():
    x = np.random.default_rng(2).normal(size=(3, 5)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        out = noisy_linear(tf.constant(x), 2, 'noisy', activation_fn=tf.nn.relu)
        variables = _variables_by_name()
        sess.run(tf.global_variables_initializer())
        sess.run([variables['noisy/w_sigma'].assign(tf.zeros([5, 2])),
                  variables['noisy/b_sigma'].assign(tf.zeros([2]))])
        result, w_mu, b_mu = sess.run([out, variables['noisy/w_mu'], variables['noisy/b_mu']])
    np.testing.assert_allclose(result, np.maximum(x @ w_mu + b_mu, 0), rtol=1e-5, atol=1e-6)


def test_conv2d_matches_numpy_same_padding():
    x = np.random.default_rng(3).normal(size=(2, 7, 5, 3)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        out = conv2d(tf.constant(x), 4, 'conv', filter_size=(3, 2), stride=(2, 1))
        variables = _variables_by_name()
        assert sorted(variables) == ['conv/W', 'conv/b']
        sess.run(tf.global_variables_initializer())
        sess.run(variables['conv/b'].assign(tf.reshape(tf.range(4, dtype=tf.float32), [1, 1, 1, 4])))
        result, w, b = sess.run([out, variables['conv/W'], variables['conv/b']])
    assert w.shape == (3, 2, 3, 4) and b.shape == (1, 1, 1, 4)
    assert out.get_shape().as_list() == [2, 4, 5, 4]
    np.testing.assert_allclose(result, _np_conv2d_same(x, w, (2, 1)) + b, rtol=1e-4, atol=1e-5)


def test_conv1d_matches_numpy_same_padding():
    x = np.random.default_rng(4).normal(size=(2, 9, 3)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        out = conv1d(tf.constant(x), 5, 'conv1')
        variables = _variables_by_name()
        sess.run(tf.global_variables_initializer())
        result, w, b = sess.run([out, variables['conv1/W'], variables['conv1/b']])
    assert w.shape == (3, 3, 5) and b.shape == (1, 1, 5)
    assert result.shape == (2, 5, 5)
    expected = _np_conv2d_same(x[:, None], w[None], (1, 2))[:, 0] + b
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)


def test_deconv2d_output_size_and_values():
    x = np.random.default_rng(5).normal(size=(2, 3, 4, 2)).astype(np.float32)
    filter_size, stride = (4, 3), (2, 1)
    with tf.Graph().as_default(), tf.Session() as sess:
        x_pl = tf.placeholder(tf.float32, [None, 3, 4, 2])
        out = deconv2d(x_pl, 5, 'deconv', filter_size, stride)
        variables = _variables_by_name()
        assert sorted(variables) == ['deconv/d_W', 'deconv/d_b']
        sess.run(tf.global_variables_initializer())
        result, w, b = sess.run([out, variables['deconv/d_W'], variables['deconv/d_b']], {x_pl: x})
    out_h, out_w = (3 - 1) * 2 + 4, (4 - 1) * 1 + 3
    assert out.get_shape().as_list() == [None, out_h, out_w, 5]
    assert w.shape == (4, 3, 5, 2) and b.shape == (1, 1, 1, 5)
    expected = np.zeros((2, out_h, out_w, 5))
    for i in range(3):
        for j in range(4):
            expected[:, i * 2:i * 2 + 4, j:j + 3, :] += np.einsum('bc,hwoc->bhwo', x[:, i, j, :], w)
    np.testing.assert_allclose(result, expected + b, rtol=1e-4, atol=1e-5)


def _np_layer_norm(x, gamma, beta, axes):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def test_layer_norm_matches_numpy_over_all_but_batch_axis():
    rng = np.random.default_rng(6)
    x = rng.normal(2.0, 3.0, size=(3, 4, 2, 5)).astype(np.float32)
    gamma, beta = rng.normal(size=5).astype(np.float32), rng.normal(size=5).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        out = layer_norm(tf.constant(x), scope='norm')
        variables = _variables_by_name()
        assert sorted(variables) == ['norm/beta', 'norm/gamma']
        sess.run(tf.global_variables_initializer())
        sess.run([variables['norm/gamma'].assign(gamma), variables['norm/beta'].assign(beta)])
        result = sess.run(out)
    np.testing.assert_allclose(result, _np_layer_norm(x, gamma, beta, (1, 2, 3)), rtol=1e-4, atol=1e-4)


def test_layer_norm_flags_axes_and_default_scopes():
    x = np.random.default_rng(7).normal(size=(2, 3, 4)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        centred = layer_norm(tf.constant(x), scale=False)
        last_axis = layer_norm(tf.constant(x), center=False, begin_norm_axis=-1, begin_params_axis=1)
        shapes = {v.op.name: v.get_shape().as_list() for v in tf.global_variables()}
        sess.run(tf.global_variables_initializer())
        centred_value, last_axis_value = sess.run([centred, last_axis])
    assert shapes == {'LayerNorm/beta': [4], 'LayerNorm_1/gamma': [3, 4]}
    np.testing.assert_allclose(centred_value, _np_layer_norm(x, 1.0, 0.0, (1, 2)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(last_axis_value, _np_layer_norm(x, 1.0, 0.0, (2,)), rtol=1e-4, atol=1e-4)


def test_layer_norm_reuses_scope_and_rejects_bad_axes():
    with tf.Graph().as_default():
        x = tf.zeros([2, 3])
        layer_norm(x, scope='shared')
        layer_norm(x, scope='shared', reuse=True)
        assert len(tf.global_variables()) == 2
        with pytest.raises(ValueError, match='begin_norm_axis'):
            layer_norm(x, begin_norm_axis=2)
        with pytest.raises(ValueError, match='static dims'):
            layer_norm(tf.placeholder(tf.float32, [None, None]))
