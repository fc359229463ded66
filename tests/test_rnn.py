"""The package's LSTM cells, stacking and unrolling (`algorithms.nn.rnn`) against the legacy Keras classes they
replace (tf-keras, a test-only dependency, imported directly: the package never selects legacy Keras): the same
variable names and shapes, and the same outputs, final states and gradients from the same weights."""
import numpy as np
import pytest

from tf_keras.src.layers.rnn import legacy_cell_wrappers, legacy_cells

from btgym_aac.algorithms.nn import rnn
from btgym_aac.compat import tf

LAYERS = (4, 3)
TOLERANCE = 1e-6


def built(own, static, keep_prob, cell_name='BasicLSTMCell'):
    """(graph, session, input and length placeholders, outputs, final state, gradients of a loss of both w.r.t. the
    variables and the inputs, variables) of a two-layer LSTM over [B, T, 5] inputs."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, None, 5])
        lengths = tf.placeholder(tf.int32, [None])
        with tf.variable_scope('lstm'):
            if own:
                cell = rnn.StackedCells([getattr(rnn, cell_name)(units) for units in LAYERS], keep_prob)
                state = cell.zero_state(tf.shape(x)[0])
                if static:
                    outputs, final = rnn.step(cell, x[:, 0], state)
                else:
                    outputs, final = rnn.unroll(cell, x, state, lengths)
            else:
                cells = [getattr(legacy_cells, cell_name)(units) for units in LAYERS]
                if keep_prob is not None:
                    cells = [legacy_cell_wrappers.DropoutWrapper(cell, output_keep_prob=keep_prob) for cell in cells]
                cell = legacy_cells.MultiRNNCell(cells)
                state = cell.zero_state(tf.shape(x)[0], tf.float32)
                if static:
                    outputs, final = tf.nn.static_rnn(cell, [x[:, 0]], initial_state=state)
                    outputs = outputs[0]
                else:
                    outputs, final = tf.nn.dynamic_rnn(cell, x, initial_state=state, sequence_length=lengths)
        loss = tf.reduce_sum(outputs ** 2) + tf.add_n([tf.reduce_sum(t) for t in tf.nest.flatten(final)])
        variables = tf.global_variables()
        gradients = tf.gradients(loss, variables + [x])
        initialize = tf.global_variables_initializer()
    session = tf.Session(graph=graph)
    session.run(initialize)
    return graph, session, x, lengths, outputs, final, gradients, variables


@pytest.mark.parametrize('static', [False, True], ids=['unrolled', 'one-step'])
@pytest.mark.parametrize('keep_prob', [None, 1.0], ids=['no-dropout', 'keep-1'])
@pytest.mark.parametrize('cell_name', ['BasicLSTMCell', 'LSTMCell'])
def test_the_package_lstm_equals_the_legacy_cells(static, keep_prob, cell_name):
    own, legacy = built(True, static, keep_prob, cell_name), built(False, static, keep_prob, cell_name)
    assert [(v.op.name, v.shape.as_list()) for v in own[7]] == [(v.op.name, v.shape.as_list()) for v in legacy[7]]
    weights = legacy[1].run(legacy[7])
    with own[0].as_default():
        own[1].run([variable.assign(value) for variable, value in zip(own[7], weights)])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 1 if static else 6, 5)).astype(np.float32)
    lengths = np.array([1, 1, 1] if static else [6, 3, 0], dtype=np.int32)
    results = [model[1].run(list(model[4:7]), {model[2]: x, model[3]: lengths}) for model in (own, legacy)]
    for mine, theirs in zip(tf.nest.flatten(results[0]), tf.nest.flatten(results[1])):
        np.testing.assert_allclose(mine, theirs, atol=TOLERANCE)
    if not static:
        outputs, final = results[0][0], results[0][1]
        assert np.all(outputs[1, 3:] == 0) and np.all(outputs[2] == 0)  # zero past each length
        assert np.all(final[0].c[2] == 0) and np.all(final[1].h[2] == 0)  # a length-0 sequence keeps its state


def test_cells_refuse_a_bad_size_and_start_from_zeros():
    with pytest.raises(ValueError, match='num_units must be a positive int'):
        rnn.BasicLSTMCell(0)
    with tf.Graph().as_default(), tf.Session() as session:
        state = rnn.StackedCells([rnn.BasicLSTMCell(units) for units in LAYERS]).zero_state(2)
        values = session.run(state)
    assert [value.c.shape for value in values] == [(2, 4), (2, 3)]
    assert all(not np.any(part) for value in values for part in value)
