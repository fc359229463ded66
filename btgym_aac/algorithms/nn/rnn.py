"""LSTM cells, their stacking and their unrolling on `tf.compat.v1` core ops, without the legacy Keras RNN classes.

The variables get the names and shapes the legacy classes gave them (`rnn/multi_rnn_cell/cell_<k>/<cell scope>/
kernel`, `.../bias`), so checkpoints written with those classes restore, and the computations are theirs:

* `BasicLSTMCell`: `[x, h] · kernel + bias` split into i, j, f, o;
  `c' = c · sigmoid(f + forget_bias) + sigmoid(i) · tanh(j)`, `h' = tanh(c') · sigmoid(o)`; `LSTMCell`: the same
  under the legacy `LSTMCell`'s scope (`lstm_cell`), without its peepholes, clipping and projection.
* `StackedCells`: each cell's output feeds the next (scopes `multi_rnn_cell/cell_<k>`), after an output dropout of
  keep probability `keep_prob` when it is a tensor or a float below 1.
* `unroll`: over `[B, T, D]` inputs under scope `rnn` in a `tf.while_loop`; past each sequence's length the
  outputs are zero and the state is carried unchanged (as `dynamic_rnn`); `step` runs one time step (as
  `static_rnn` on a sequence of length 1).
"""
from btgym_aac.algorithms.common.placeholders import LSTMStateTuple
from btgym_aac.compat import tf


class BaseLSTMCell:
    """Base of the package's LSTM cells: `cell(inputs, state)` runs one step under the cell's variable scope.

    Subclasses set `scope_name` and implement `call(inputs, state) -> (output, LSTMStateTuple)`.

    Args:
        num_units: number of units (a positive int).
    """

    scope_name = 'lstm_cell'

    def __init__(self, num_units):
        if isinstance(num_units, bool) or not isinstance(num_units, int) or num_units <= 0:
            raise ValueError('{}: num_units must be a positive int, got {!r}'.format(type(self).__name__, num_units))
        self._num_units = num_units

    @property
    def state_size(self):
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self):
        return self._num_units

    def zero_state(self, batch_size, dtype=tf.float32):
        """LSTMStateTuple of zeros [batch_size, units]."""
        return LSTMStateTuple(tf.zeros([batch_size, self._num_units], dtype), tf.zeros([batch_size, self._num_units],
                                                                                       dtype))

    def __call__(self, inputs, state):
        with tf.variable_scope(self.scope_name):
            return self.call(inputs, state)

    def call(self, inputs, state):
        raise NotImplementedError


class BasicLSTMCell(BaseLSTMCell):
    """The plain LSTM cell (legacy `tf.nn.rnn_cell.BasicLSTMCell`): a Glorot-uniform kernel [in + units,
    4 units] and a zero-initialised bias, variables `basic_lstm_cell/kernel` and `basic_lstm_cell/bias`.

    Args:
        num_units: number of units.
        forget_bias: added to the forget gate's pre-activation.
        activation: of the candidate and of the output (default tanh).
        **ignored: the legacy class's `state_is_tuple`, `reuse`, `name`, `dtype` (the state is always a tuple;
            reuse follows the enclosing variable scope).
    """

    scope_name = 'basic_lstm_cell'
    _kernel_initializer = None  # (None: the variable scope's, Glorot-uniform by default)

    def __init__(self, num_units, forget_bias=1.0, activation=None, **ignored):
        super().__init__(num_units)
        self._forget_bias = forget_bias
        self._activation = activation or tf.tanh

    def call(self, inputs, state):
        c, h = state
        args = tf.concat([inputs, h], 1)
        width = 4 * self._num_units
        kernel = tf.get_variable('kernel', [args.get_shape()[-1], width], args.dtype,
                                 initializer=self._kernel_initializer)
        bias = tf.get_variable('bias', [width], args.dtype, initializer=tf.zeros_initializer())
        i, j, f, o = tf.split(tf.nn.bias_add(tf.matmul(args, kernel), bias), 4, axis=1)
        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class LSTMCell(BasicLSTMCell):
    """The legacy `tf.nn.rnn_cell.LSTMCell` as configs use it: `BasicLSTMCell`'s computation, variables
    `lstm_cell/kernel` and `lstm_cell/bias`, the kernel drawn by `initializer` (default Glorot-uniform).

    Args:
        num_units, forget_bias, activation: as `BasicLSTMCell`'s.
        initializer: of the kernel, or None.
        use_peepholes, cell_clip, num_proj, proj_clip: the legacy options this cell lacks; only their defaults
            (off) are accepted.
        **ignored: `state_is_tuple`, `reuse`, `name`, `dtype`, the shard counts.

    Raises:
        ValueError: one of the options this cell lacks is set.
    """

    scope_name = 'lstm_cell'

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None, num_proj=None,
                 proj_clip=None, forget_bias=1.0, activation=None, **ignored):
        unsupported = {name: value for name, value in (('use_peepholes', use_peepholes), ('cell_clip', cell_clip),
                                                       ('num_proj', num_proj), ('proj_clip', proj_clip)) if value}
        if unsupported:
            raise ValueError('LSTMCell: {} not supported (btgym_aac.algorithms.nn.rnn.LSTMCell has no peepholes, '
                             'clipping or projection)'.format(', '.join('{}={!r}'.format(*item)
                                                                       for item in unsupported.items())))
        super().__init__(num_units, forget_bias=forget_bias, activation=activation)
        self._kernel_initializer = initializer


def _drops(keep_prob):
    """True when an output dropout applies: a tensor keep probability, or a number below 1."""
    return keep_prob is not None and (tf.is_tensor(keep_prob) or keep_prob < 1)


class StackedCells:
    """Cells stacked in layers (legacy `MultiRNNCell`, optionally each in an output `DropoutWrapper`).

    Args:
        cells: the layers' cells, first layer first.
        keep_prob: output keep probability of every layer (float or tensor), or None.
    """

    def __init__(self, cells, keep_prob=None):
        self.cells = list(cells)
        self.keep_prob = keep_prob

    @property
    def output_size(self):
        return self.cells[-1].output_size

    def zero_state(self, batch_size, dtype=tf.float32):
        """Tuple of every layer's zero state."""
        return tuple(cell.zero_state(batch_size, dtype) for cell in self.cells)

    def __call__(self, inputs, state):
        new_states = []
        output = inputs
        with tf.variable_scope('multi_rnn_cell'):
            for index, (cell, layer_state) in enumerate(zip(self.cells, state)):
                with tf.variable_scope('cell_{}'.format(index)):
                    output, layer_state = cell(output, layer_state)
                    if _drops(self.keep_prob):
                        output = tf.nn.dropout(output, rate=1 - self.keep_prob)
                new_states.append(layer_state)
        return output, tuple(new_states)


def step(cell, inputs, initial_state):
    """One time step of `cell` on inputs [B, D] under scope `rnn`; returns (output [B, units], state)."""
    with tf.variable_scope('rnn'):
        return cell(inputs, initial_state)


def unroll(cell, inputs, initial_state, sequence_length):
    """Runs `cell` over inputs [B, T, D] (static D) under scope `rnn`.

    Args:
        cell: a cell or `StackedCells`.
        inputs: float tensor [B, T, D].
        initial_state: the state at step 0, structured as `cell.zero_state`.
        sequence_length: int tensor [B]: past it, outputs are zero and the state is carried unchanged.

    Returns:
        (outputs [B, T, units], final state: each sequence's state at its length).
    """
    with tf.variable_scope('rnn'):
        steps = tf.shape(inputs)[1]
        depth = inputs.get_shape()[-1]
        per_step = tf.TensorArray(inputs.dtype, size=steps).unstack(tf.transpose(inputs, [1, 0, 2]))
        flat_state = tuple(tf.nest.flatten(initial_state))

        def body(time, outputs, *flat):
            state = tf.nest.pack_sequence_as(initial_state, list(flat))
            x = per_step.read(time)
            x.set_shape([None, depth])
            output, new_state = cell(x, state)
            valid = time < sequence_length  # [B]: `tf.where` (v1) picks whole rows
            output = tf.where(valid, output, tf.zeros_like(output))
            carried = tuple(tf.where(valid, new, old) for new, old in zip(tf.nest.flatten(new_state), flat))
            return (time + 1, outputs.write(time, output)) + carried

        loop = tf.while_loop(lambda time, *_: time < steps, body,
                             (tf.constant(0), tf.TensorArray(inputs.dtype, size=steps)) + flat_state)
        outputs = tf.transpose(loop[1].stack(), [1, 0, 2])
        outputs.set_shape(inputs.get_shape()[:2].concatenate([cell.output_size]))
        final_state = tf.nest.pack_sequence_as(initial_state, list(loop[2:]))
    return outputs, final_state
