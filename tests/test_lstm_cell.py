"""LayerNormBasicLSTMCell against a numpy implementation of the TF1 contrib cell math."""
import numpy as np
import pytest

from btgym_aac.algorithms.common.placeholders import LSTMStateTuple
from btgym_aac.algorithms.nn import rnn
from btgym_aac.algorithms.nn.layer_norm import LayerNormBasicLSTMCell
from btgym_aac.compat import tf

GATE_SCOPES = ('input', 'transform', 'forget', 'output', 'state')


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_norm(x, gamma, beta):
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-12) * gamma + beta


def _np_step(x, c, h, params, prefix, layer_norm=True, candidate_scale=1.0):
    """One cell step; `params` maps variable names to values, `prefix` is the cell's variable scope."""
    gates = np.concatenate([x, h], axis=1) @ params[prefix + 'kernel']
    if not layer_norm:
        gates = gates + params[prefix + 'bias']
    i, j, f, o = np.split(gates, 4, axis=1)

    def norm(value, scope):
        if not layer_norm:
            return value
        return _np_norm(value, params[prefix + scope + '/gamma'], params[prefix + scope + '/beta'])

    i, j, f, o = norm(i, 'input'), norm(j, 'transform'), norm(f, 'forget'), norm(o, 'output')
    new_c = norm(c * _sigmoid(f + 1.0) + _sigmoid(i) * np.tanh(j) * candidate_scale, 'state')
    return np.tanh(new_c) * _sigmoid(o), new_c


def _randomise_variables(sess, rng):
    """Assigns random values to every global variable; returns {name: value}."""
    values = {v.op.name: rng.normal(size=v.get_shape().as_list()).astype(np.float32) for v in tf.global_variables()}
    sess.run([v.assign(values[v.op.name]) for v in tf.global_variables()])
    return values


def _state_placeholders(units):
    return LSTMStateTuple(tf.placeholder(tf.float32, [None, units]), tf.placeholder(tf.float32, [None, units]))


def test_cell_properties_variables_and_initial_norm_params():
    with tf.Graph().as_default(), tf.Session() as sess:
        cell = LayerNormBasicLSTMCell(3, norm_gain=2.0, norm_shift=0.5)
        assert cell.output_size == 3 and tuple(cell.state_size) == (3, 3)
        cell(tf.zeros([2, 4]), cell.zero_state(2, tf.float32))
        shapes = {v.op.name: v.get_shape().as_list() for v in tf.global_variables()}
        sess.run(tf.global_variables_initializer())
        gains = sess.run('layer_norm_basic_lstm_cell/forget/gamma:0')
        shifts = sess.run('layer_norm_basic_lstm_cell/state/beta:0')
    expected = {'layer_norm_basic_lstm_cell/kernel': [7, 12]}
    for scope in GATE_SCOPES:
        expected['layer_norm_basic_lstm_cell/{}/gamma'.format(scope)] = [3]
        expected['layer_norm_basic_lstm_cell/{}/beta'.format(scope)] = [3]
    assert shapes == expected
    np.testing.assert_allclose(gains, [2.0] * 3)
    np.testing.assert_allclose(shifts, [0.5] * 3)


def test_one_step_matches_numpy():
    rng = np.random.default_rng(0)
    x, c, h = (rng.normal(size=(3, n)).astype(np.float32) for n in (2, 4, 4))
    with tf.Graph().as_default(), tf.Session() as sess:
        x_pl = tf.placeholder(tf.float32, [None, 2])
        state_pl = _state_placeholders(4)
        out, new_state = LayerNormBasicLSTMCell(4)(x_pl, state_pl)
        sess.run(tf.global_variables_initializer())
        params = _randomise_variables(sess, rng)
        result = sess.run([out, new_state], {x_pl: x, state_pl.c: c, state_pl.h: h})
    expected_h, expected_c = _np_step(x, c, h, params, 'layer_norm_basic_lstm_cell/')
    assert isinstance(result[1], LSTMStateTuple)
    np.testing.assert_allclose(result[0], expected_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(result[1].c, expected_c, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(result[1].h, expected_h, rtol=1e-4, atol=1e-5)


def test_stacked_dynamic_and_static_rnn_match_numpy():
    rng = np.random.default_rng(1)
    steps, batch = 3, 2
    x = rng.normal(size=(batch, steps, 2)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        keep_prob = tf.placeholder_with_default(1.0, [])
        cell = rnn.StackedCells([LayerNormBasicLSTMCell(3), LayerNormBasicLSTMCell(4)], keep_prob)
        x_pl = tf.placeholder(tf.float32, [None, steps, 2])
        zero_state = cell.zero_state(tf.shape(x_pl)[0], tf.float32)
        with tf.variable_scope('net', reuse=tf.AUTO_REUSE):
            dynamic_out, _ = rnn.unroll(cell, x_pl, zero_state, tf.fill([tf.shape(x_pl)[0]], steps))
            state, static_out = zero_state, []
            for t in range(steps):
                output, state = rnn.step(cell, x_pl[:, t], state)
                static_out.append(output)
        assert len(tf.global_variables()) == 2 * 11
        sess.run(tf.global_variables_initializer())
        params = _randomise_variables(sess, rng)
        dynamic_value, static_value = sess.run([dynamic_out, static_out], {x_pl: x})

    states = [(np.zeros((batch, 3)), np.zeros((batch, 3))), (np.zeros((batch, 4)), np.zeros((batch, 4)))]
    expected = []
    for t in range(steps):
        layer_in = x[:, t]
        for k, units in enumerate((3, 4)):
            prefix = 'net/rnn/multi_rnn_cell/cell_{}/layer_norm_basic_lstm_cell/'.format(k)
            h, c = _np_step(layer_in, states[k][1], states[k][0], params, prefix)
            states[k] = (h, c)
            layer_in = h
        expected.append(layer_in)
    expected = np.stack(expected, axis=1)
    np.testing.assert_allclose(dynamic_value, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.stack(static_value, axis=1), expected, rtol=1e-4, atol=1e-5)


def test_recurrent_dropout_without_layer_norm():
    rng = np.random.default_rng(2)
    x, c, h = (rng.normal(size=(4, n)).astype(np.float32) for n in (3, 32, 32))
    with tf.Graph().as_default(), tf.Session() as sess:
        keep_prob = tf.placeholder_with_default(1.0, [])
        x_pl = tf.placeholder(tf.float32, [None, 3])
        state_pl = _state_placeholders(32)
        cell = LayerNormBasicLSTMCell(32, layer_norm=False, dropout_keep_prob=keep_prob, dropout_prob_seed=5)
        _, new_state = cell(x_pl, state_pl)
        assert sorted(v.op.name for v in tf.global_variables()) == [
            'layer_norm_basic_lstm_cell/bias', 'layer_norm_basic_lstm_cell/kernel']
        sess.run(tf.global_variables_initializer())
        params = _randomise_variables(sess, rng)
        feed = {x_pl: x, state_pl.c: c, state_pl.h: h}
        kept_c = sess.run(new_state.c, feed)
        feed[keep_prob] = 0.5
        dropped_c = sess.run(new_state.c, feed)

    prefix = 'layer_norm_basic_lstm_cell/'
    _, expected_c = _np_step(x, c, h, params, prefix, layer_norm=False)
    np.testing.assert_allclose(kept_c, expected_c, rtol=1e-4, atol=1e-5)
    _, zeroed = _np_step(x, c, h, params, prefix, layer_norm=False, candidate_scale=0.0)
    _, doubled = _np_step(x, c, h, params, prefix, layer_norm=False, candidate_scale=2.0)
    is_zeroed = np.isclose(dropped_c, zeroed, rtol=1e-4, atol=1e-5)
    is_doubled = np.isclose(dropped_c, doubled, rtol=1e-4, atol=1e-5)
    assert np.all(is_zeroed | is_doubled)
    assert is_zeroed.mean() > 0.2 and is_doubled.mean() > 0.2


@pytest.mark.parametrize('num_units', [0, -3, 2.5, True])
def test_rejects_bad_num_units(num_units):
    with pytest.raises(ValueError, match='num_units'):
        LayerNormBasicLSTMCell(num_units)


@pytest.mark.parametrize('forget_bias, layer_norm', [(-1.5, True), (3.0, False)])
def test_one_step_with_a_non_default_forget_bias_matches_numpy(forget_bias, layer_norm):
    """`forget_bias` is added to the (normalised) forget-gate pre-activation: c' = LN(c·σ(f + b) + σ(i)·tanh(j)),
    against numpy with random weights and state; the default bias of 1 would give another c'."""
    rng = np.random.default_rng(3)
    x, c, h = (rng.normal(size=(3, n)).astype(np.float32) for n in (2, 4, 4))
    with tf.Graph().as_default(), tf.Session() as sess:
        x_pl = tf.placeholder(tf.float32, [None, 2])
        state_pl = _state_placeholders(4)
        out, new_state = LayerNormBasicLSTMCell(4, forget_bias=forget_bias, layer_norm=layer_norm)(x_pl, state_pl)
        sess.run(tf.global_variables_initializer())
        params = _randomise_variables(sess, rng)
        result = sess.run([out, new_state], {x_pl: x, state_pl.c: c, state_pl.h: h})

    prefix = 'layer_norm_basic_lstm_cell/'

    def np_step(bias):
        gates = np.concatenate([x, h], axis=1) @ params[prefix + 'kernel']
        if not layer_norm:
            gates = gates + params[prefix + 'bias']

        def norm(value, scope):
            return _np_norm(value, params[prefix + scope + '/gamma'], params[prefix + scope + '/beta']) \
                if layer_norm else value

        i, j, f, o = (norm(gate, scope) for gate, scope in zip(np.split(gates, 4, axis=1), GATE_SCOPES))
        new_c = norm(c * _sigmoid(f + bias) + _sigmoid(i) * np.tanh(j), 'state')
        return np.tanh(new_c) * _sigmoid(o), new_c

    expected_h, expected_c = np_step(forget_bias)
    np.testing.assert_allclose(result[1].c, expected_c, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(result[1].h, expected_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(result[0], expected_h, rtol=1e-4, atol=1e-5)
    assert np.max(np.abs(np_step(1.0)[1] - expected_c)) > 1e-2
