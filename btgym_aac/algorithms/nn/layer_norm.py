"""Replacements for two TF1 `tf.contrib` symbols: `layers.layer_norm` and `rnn.LayerNormBasicLSTMCell`."""
from btgym_aac.algorithms.nn.rnn import BaseLSTMCell, LSTMStateTuple
from btgym_aac.compat import tf
from btgym_aac.logs import get_logger

_LOG = get_logger('LayerNormBasicLSTMCell')


def _positive_axis(axis, rank, arg_name):
    """Maps a possibly negative `axis` into [0, rank); raises ValueError when out of range."""
    resolved = axis + rank if axis < 0 else axis
    if not 0 <= resolved < rank:
        raise ValueError('layer_norm: {}={} is out of range for inputs of rank {}'.format(arg_name, axis, rank))
    return resolved


def layer_norm(x, center=True, scale=True, scope=None, reuse=None, begin_norm_axis=1, begin_params_axis=-1,
               epsilon=1e-12):
    """Layer normalisation with the semantics of TF1 `tf.contrib.layers.layer_norm`.

    Mean and variance are taken over axes `begin_norm_axis .. rank-1` of each sample; the learnable offset
    `<scope>/beta` (zeros) and scale `<scope>/gamma` (ones) have shape `x.shape[begin_params_axis:]`.

    Args:
        x: float tensor of known rank >= 2 with static parameter dims.
        center: add the offset `beta`.
        scale: multiply by `gamma`.
        scope: variable scope; None opens a fresh `LayerNorm` (`LayerNorm_1`, ... on repeated use).
        reuse: reuse the variables of an existing scope.
        begin_norm_axis: first normalised axis (negative counts from the end).
        begin_params_axis: first axis of the parameter shape (negative counts from the end).
        epsilon: variance epsilon.

    Returns:
        tensor of the shape of `x`.
    """
    x = tf.convert_to_tensor(x)
    rank = x.get_shape().ndims
    if rank is None:
        raise ValueError('layer_norm: inputs {} have unknown rank'.format(x.name))
    norm_axis = _positive_axis(begin_norm_axis, rank, 'begin_norm_axis')
    params_axis = _positive_axis(begin_params_axis, rank, 'begin_params_axis')
    params_shape = x.get_shape()[params_axis:]
    if not params_shape.is_fully_defined():
        raise ValueError('layer_norm: inputs {} need static dims from axis {}, got shape {}'.format(
            x.name, params_axis, x.get_shape()))

    with tf.variable_scope(scope, default_name='LayerNorm', values=[x], reuse=reuse):
        beta = tf.get_variable('beta', params_shape, x.dtype.base_dtype,
                               initializer=tf.zeros_initializer()) if center else None
        gamma = tf.get_variable('gamma', params_shape, x.dtype.base_dtype,
                                initializer=tf.ones_initializer()) if scale else None
        mean, variance = tf.nn.moments(x, list(range(norm_axis, rank)), keep_dims=True)
        out = tf.nn.batch_normalization(x, mean, variance, offset=beta, scale=gamma, variance_epsilon=epsilon)
        out.set_shape(x.get_shape())
        return out


class LayerNormBasicLSTMCell(BaseLSTMCell):
    """LSTM cell with layer normalisation of the gates and the cell state (TF1 contrib `LayerNormBasicLSTMCell`).

    Math, with `[x, h]` projected by the bias-free kernel `kernel` [in + units, 4·units] (Glorot-uniform) and
    split into `i, j, f, o`; `LN_s` is `layer_norm` under scope `s` with gamma initialised to `norm_gain` and
    beta to `norm_shift`::

        i, j, f, o = LN_input(i), LN_transform(j), LN_forget(f), LN_output(o)
        g = dropout(activation(j), dropout_keep_prob)            # only when dropout_keep_prob < 1 or a tensor
        c' = LN_state(c · sigmoid(f + forget_bias) + sigmoid(i) · g)
        h' = activation(c') · sigmoid(o)

    With `layer_norm=False` the `LN_*` steps are skipped and the kernel gets a bias `bias` [4·units] (zeros;
    the contrib cell used the scope's default initializer for it).
    Variables live under the cell's scope `layer_norm_basic_lstm_cell`. The state is `LSTMStateTuple(c, h)`;
    the output is `h'`.
    """

    scope_name = 'layer_norm_basic_lstm_cell'

    def __init__(self, num_units, forget_bias=1.0, input_size=None, activation=tf.tanh, layer_norm=True,
                 norm_gain=1.0, norm_shift=0.0, dropout_keep_prob=1.0, dropout_prob_seed=None, reuse=None):
        """
        Args:
            num_units: number of LSTM units (positive int).
            forget_bias: added to the forget gate pre-activation.
            input_size: deprecated in TF1 and ignored (a warning is logged when given).
            activation: activation of the candidate and of the output state.
            layer_norm: apply layer normalisation.
            norm_gain: initial gamma of the layer normalisations.
            norm_shift: initial beta of the layer normalisations.
            dropout_keep_prob: keep probability (float or scalar tensor) of the recurrent dropout on the candidate.
            dropout_prob_seed: dropout seed.
            reuse: accepted for the original's signature; reuse follows the enclosing variable scope.
        """
        super().__init__(num_units)
        if input_size is not None:
            _LOG.warning('LayerNormBasicLSTMCell: input_size is deprecated and ignored')
        self._forget_bias = forget_bias
        self._activation = activation
        self._layer_norm = layer_norm
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift
        self._keep_prob = dropout_keep_prob
        self._seed = dropout_prob_seed

    def _norm(self, x, scope):
        """Layer-normalises `x` with gamma/beta initialised to `norm_gain`/`norm_shift` under `scope`."""
        with tf.variable_scope(scope):
            tf.get_variable('gamma', x.get_shape()[-1:], x.dtype, initializer=tf.constant_initializer(self._norm_gain))
            tf.get_variable('beta', x.get_shape()[-1:], x.dtype, initializer=tf.constant_initializer(self._norm_shift))
        return layer_norm(x, scope=scope, reuse=True)

    def _project(self, args):
        """Returns `args · kernel` (+ `bias` without layer normalisation), [B, 4·units]."""
        width = 4 * self._num_units
        kernel = tf.get_variable('kernel', [args.get_shape()[-1], width], args.dtype)
        out = tf.matmul(args, kernel)
        if not self._layer_norm:
            out = out + tf.get_variable('bias', [width], args.dtype, initializer=tf.zeros_initializer())
        return out

    def _has_dropout(self):
        """True when recurrent dropout is active: a tensor keep probability or a float below 1."""
        return tf.is_tensor(self._keep_prob) or self._keep_prob < 1

    def call(self, inputs, state):
        """One step: returns `(h', LSTMStateTuple(c', h'))`."""
        c, h = state
        args = tf.concat([inputs, h], 1)
        if args.get_shape()[-1] is None:
            raise ValueError('LayerNormBasicLSTMCell needs a statically known input width, got {}'.format(
                inputs.get_shape()))
        i, j, f, o = tf.split(self._project(args), 4, axis=1)
        if self._layer_norm:
            i = self._norm(i, 'input')
            j = self._norm(j, 'transform')
            f = self._norm(f, 'forget')
            o = self._norm(o, 'output')

        candidate = self._activation(j)
        if self._has_dropout():
            candidate = tf.nn.dropout(candidate, rate=1 - self._keep_prob, seed=self._seed)

        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * candidate
        if self._layer_norm:
            new_c = self._norm(new_c, 'state')
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)
