"""Tree-shaped causal convolution encoders (a cheaper alternative to a dilated WaveNet stack) and a temporal
attention layer.

Both encoders have the state-encoder signature of `conv_2d_network` (`x, ob_space, ac_space, ..., name, reuse,
keep_prob, collections, **kwargs`), so they plug into `StackedLstmPolicy(state_encoder_class_ref=...)`; the
2-D convolution and pixel-control kwargs that policy passes are ignored. Every variable lives under the
encoder's `name` scope, so a second build with `reuse=True` shares all of them.

The tree: with k = `conv_1d_filter_size`, each layer left-pads its input with zeros to a multiple of k (the
newest step stays last), turns every block of k consecutive steps into one step with a [k, C_in, F]
convolution, layer-normalises the result (over time and filters jointly, as TF1's contrib `layer_norm`) and
applies the activation (and dropout with `keep_prob`). A window of T steps gives n = floor(log_k T) layers of
lengths ceil(T / k), ceil(ceil(T / k) / k), ...; e.g. T = 128, k = 2: 64, 32, ..., 1; T = 30: 15, 8, 4, 2.
"""
from btgym_aac.algorithms.nn.layer_norm import layer_norm
from btgym_aac.algorithms.nn.layers import conv1d
from btgym_aac.compat import tf


def _time_major_input(x):
    """[B, T, 1, C] -> [B, T, C] (the first column of the fake width axis); rank-3 inputs pass unchanged."""
    return x[:, :, 0, :] if x.get_shape().ndims > 3 else x


def num_tree_layers(length, filter_size):
    """Number of tree layers of a window: the largest n with filter_size ** n <= length (integer arithmetic).

    Args:
        length: number of time steps T.
        filter_size: k, an int >= 2.

    Returns:
        int n.

    Raises:
        ValueError: k is not an int >= 2, or T < k (no layer fits).
    """
    if isinstance(filter_size, bool) or not isinstance(filter_size, int) or filter_size < 2:
        raise ValueError('conv_1d_filter_size must be an int >= 2, got {!r}'.format(filter_size))
    if length is None or length < filter_size:
        raise ValueError('a causal encoder with conv_1d_filter_size {} needs at least {} time steps, got {}'.format(
            filter_size, filter_size, length))
    layers = 0
    while filter_size ** (layers + 1) <= length:
        layers += 1
    return layers


def _layer_norm_scope(index):
    """Scope of layer `index`'s layer norm: the names TF1's unnamed contrib `layer_norm` gave (LayerNorm,
    LayerNorm_1, ...)."""
    return 'LayerNorm' if index == 0 else 'LayerNorm_{}'.format(index)


def _tree_layer(y, index, filter_size, num_filters, activation, keep_prob, collections):
    """One tree layer: [B, L, C] -> [B, ceil(L / k), F] (see the module docstring)."""
    _, length, channels = y.get_shape().as_list()
    pad = -length % filter_size
    if pad:
        y = tf.pad(y, [[0, 0], [pad, 0], [0, 0]])
    blocks = (length + pad) // filter_size
    y = tf.reshape(y, [-1, filter_size, channels], name='layer_{}_t2b'.format(index))
    y = conv1d(y, num_filters, 'conv1d_layer_{}'.format(index), filter_size=filter_size, stride=1, pad='VALID',
               collections=collections)
    y = tf.reshape(y, [-1, blocks, num_filters], name='layer_{}_output'.format(index))
    y = layer_norm(y, scope=_layer_norm_scope(index))
    if activation is not None:
        y = activation(y)
    if keep_prob is not None:
        y = tf.nn.dropout(y, rate=1 - keep_prob, name='_layer_{}_with_dropout'.format(index))
    return y


def _gated(y, name):
    """Gated activation on the two halves of the last axis: y1 * sigmoid(y2), [..., F] -> [..., F / 2]."""
    half = y.get_shape().as_list()[-1] // 2
    return tf.multiply(y[..., :half], tf.nn.sigmoid(y[..., half:]), name=name)


def _check_gated_filters(conv_1d_gated, num_filters):
    """Raises ValueError when gating is asked for an odd number of filters (the halves must match)."""
    if conv_1d_gated and num_filters % 2:
        raise ValueError('conv_1d_gated needs an even conv_1d_num_filters, got {}'.format(num_filters))


def conv_1d_causal_encoder(x, ob_space, ac_space, conv_1d_num_filters=32, conv_1d_filter_size=2,
                           conv_1d_activation=tf.nn.elu, conv_1d_overlap=1, name='causal_encoder', keep_prob=None,
                           conv_1d_gated=False, reuse=False, collections=None, **kwargs):
    """Tree-shaped causal convolution encoder: the newest steps of every tree layer.

    Layer i contributes its last d_i = min(L_i, max(1, conv_1d_overlap // k ** i)) steps (1 by default), so the
    output is [B, sum d_i, F]: for T = 128, k = 2: [B, 7, F]; T = 30: [B, 4, F]. With `conv_1d_gated` each
    kept slice becomes y1 * sigmoid(y2) of its two filter halves (the layers themselves stay ungated): F / 2.

    Variables (under `name`): `conv1d_layer_<i>/{W [k, C_in, F], b [1, 1, F]}`, `LayerNorm[_<i>]/{beta, gamma}`.

    Args:
        x: tensor [B, T, 1, C] or [B, T, C] with static T and C.
        ob_space: unused (encoder signature).
        ac_space: unused (encoder signature).
        conv_1d_num_filters: F.
        conv_1d_filter_size: k (int >= 2).
        conv_1d_activation: activation after the layer norm, or None.
        conv_1d_overlap: sets the slice depths above; must be < k (the original's stride k - overlap, which
            changes nothing since every block is exactly one kernel long).
        name: variable scope.
        keep_prob: dropout keep probability after every layer (float or scalar tensor), None for no dropout.
        conv_1d_gated: gate the kept slices.
        reuse: reuse the variables of an existing scope.
        collections: variable collections of the convolutions (None: global + trainable).
        **kwargs: other encoder options (e.g. StackedLstmPolicy's 2-D conv settings), ignored.

    Returns:
        tensor [B, sum d_i, F] (F / 2 when gated).

    Raises:
        ValueError: bad filter size, a window shorter than k, conv_1d_overlap >= k, or gating with odd F.
    """
    if not 0 <= conv_1d_overlap < conv_1d_filter_size:
        raise ValueError('conv_1d_overlap must be in [0, conv_1d_filter_size), got {} (filter size {})'.format(
            conv_1d_overlap, conv_1d_filter_size))
    _check_gated_filters(conv_1d_gated, conv_1d_num_filters)
    with tf.variable_scope(name, reuse=reuse):
        y = _time_major_input(x)
        slices = []
        for i in range(num_tree_layers(y.get_shape().as_list()[1], conv_1d_filter_size)):
            y = _tree_layer(y, i, conv_1d_filter_size, conv_1d_num_filters, conv_1d_activation, keep_prob,
                            collections)
            length = y.get_shape().as_list()[1]
            depth = min(length, max(1, conv_1d_overlap // conv_1d_filter_size ** i))
            kept = y[:, length - depth:, :]
            slices.append(_gated(kept, 'gated_conv_output_{}'.format(i)) if conv_1d_gated else kept)
        return tf.concat(slices, axis=1, name='encoded_state')


def attention_layer(inputs, name='attention_layer', reuse=None, collections=None, **kwargs):
    """Temporal attention of the newest step over the older ones (Luong "general" score, unscaled).

    With memory M = inputs[:, :-1] [B, L-1, F] and query q = inputs[:, -1] [B, F]:
    keys = M W (W [F, F], no bias), scores = q keys^T [B, L-1], alignments = softmax(scores) over the L-1 steps,
    context = alignments M [B, 1, F]. No masking.

    Variables: `<name>/W` [F, F] (Glorot-uniform), made with `tf.get_variable`, so a reused enclosing scope
    shares it.

    Args:
        inputs: tensor [B, L, F], L >= 2, static F.
        name: variable scope.
        reuse: reuse the variables of an existing scope (None: inherit the enclosing scope's).
        collections: variable collections of W (None: global + trainable).
        **kwargs: ignored.

    Returns:
        context tensor [B, 1, F].
    """
    width = inputs.get_shape().as_list()[-1]
    with tf.variable_scope(name, reuse=reuse):
        memory = inputs[:, :-1, :]
        query = inputs[:, -1, :]
        weights = tf.get_variable('W', [width, width], inputs.dtype, initializer=tf.glorot_uniform_initializer(),
                                  collections=collections)
        keys = tf.einsum('blf,fg->blg', memory, weights)
        scores = tf.einsum('bg,blg->bl', query, keys)
        alignments = tf.nn.softmax(scores, axis=-1, name='alignments')
        return tf.matmul(alignments[:, None, :], memory, name='context')


def conv_1d_causal_attention_encoder(x, ob_space, ac_space, conv_1d_num_filters=32, conv_1d_filter_size=2,
                                     conv_1d_activation=tf.nn.elu, conv_1d_attention_ref=attention_layer,
                                     name='causal_encoder', keep_prob=None, conv_1d_gated=False,
                                     conv_1d_full_hidden=False, reuse=False, collections=None, **kwargs):
    """Tree-shaped causal convolution encoder with temporal attention on every layer.

    Every tree layer (gated to y1 * sigmoid(y2), F / 2 filters, when `conv_1d_gated`; the next layer reads the
    gated output) longer than one step also gets an attention context of its newest step over its older ones
    (`conv_1d_attention_ref(y, name='attention_layer_<i>')`). Output: concat([convolved, attended], time axis),
    convolved = the newest step of every layer [B, n, F] (with `conv_1d_full_hidden`: all steps of all layers),
    attended = the contexts [B, n_att, F]. For k = 2: T = 128 -> [B, 13, F]; T = 30 or 20 -> [B, 8, F].

    Variables (under `name`): as `conv_1d_causal_encoder`, plus `attention_layer_<i>/W`.

    Args:
        x: tensor [B, T, 1, C] or [B, T, C] with static T and C.
        ob_space: unused (encoder signature).
        ac_space: unused (encoder signature).
        conv_1d_num_filters: F.
        conv_1d_filter_size: k (int >= 2).
        conv_1d_activation: activation after the layer norm, or None.
        conv_1d_attention_ref: attention layer builder `(inputs [B, L, F], name=..., collections=...) -> [B, 1, F]`
            (default `attention_layer`).
        name: variable scope.
        keep_prob: dropout keep probability after every layer (float or scalar tensor), None for no dropout.
        conv_1d_gated: gate every layer.
        conv_1d_full_hidden: keep all steps of every layer instead of the newest.
        reuse: reuse the variables of an existing scope.
        collections: variable collections of the convolutions and attention weights.
        **kwargs: other encoder options (e.g. StackedLstmPolicy's 2-D conv settings), ignored.

    Returns:
        tensor [B, n + n_att, F] (or [B, sum L_i + n_att, F] with `conv_1d_full_hidden`; F / 2 when gated).

    Raises:
        ValueError: bad filter size, a window shorter than k, or gating with odd F.
    """
    _check_gated_filters(conv_1d_gated, conv_1d_num_filters)
    with tf.variable_scope(name, reuse=reuse):
        y = _time_major_input(x)
        layers, contexts = [], []
        for i in range(num_tree_layers(y.get_shape().as_list()[1], conv_1d_filter_size)):
            y = _tree_layer(y, i, conv_1d_filter_size, conv_1d_num_filters, conv_1d_activation, keep_prob,
                            collections)
            if conv_1d_gated:
                y = _gated(y, '_layer_{}_gated'.format(i))
            layers.append(y)
            if y.get_shape().as_list()[1] > 1:
                contexts.append(conv_1d_attention_ref(y, name='attention_layer_{}'.format(i),
                                                      collections=collections))
        if conv_1d_full_hidden:
            convolved = tf.concat(layers, axis=-2, name='convolved_stack_full')
        else:
            convolved = tf.stack([layer[:, -1, :] for layer in layers], axis=1, name='convolved_stack')
        if not contexts:
            return tf.identity(convolved, name='encoded_state')
        attended = tf.concat(contexts, axis=-2, name='attention_stack')
        return tf.concat([convolved, attended], axis=-2, name='encoded_state')
