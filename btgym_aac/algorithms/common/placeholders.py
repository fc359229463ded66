"""Graph-side helpers of policies and trainers: placeholders mirroring nested observations and RNN states, the feed
dicts that fill them, the check that two policy copies pair variable by variable, and the variable getter of copies
whose values are always copied in."""
import collections
from collections.abc import Mapping

from btgym_aac.compat import tf

LSTMStateTuple = collections.namedtuple('LSTMStateTuple', ('c', 'h'))
"""The state of one LSTM layer: cell state `c` and output `h`, each [B, units] (`algorithms.nn.rnn`)."""


def check_variable_pairing(variables, counterparts, description):
    """Checks that two variable lists pair one to one with equal shapes (copies built by the same policy class).

    Args:
        variables, counterparts: lists of variables.
        description: start of the error message, naming the two lists.

    Raises:
        RuntimeError: `description`, the two counts and the first mismatched pairs.
    """
    shapes = [var.get_shape().as_list() for var in variables]
    other_shapes = [var.get_shape().as_list() for var in counterparts]
    if shapes == other_shapes:
        return
    mismatched = [(var.name, shape, other.name, other_shape) for var, shape, other, other_shape
                  in zip(variables, shapes, counterparts, other_shapes) if shape != other_shape]
    raise RuntimeError('{}: {} variables against {}; mismatched pairs (name, shape, name, shape): {}'.format(
        description, len(shapes), len(other_shapes), mismatched[:5]))


def copied_in_getter(getter, *args, **kwargs):
    """Custom getter (`tf.variable_scope(..., custom_getter=...)`) of a policy copy whose trainable variables get
    their values copied in before any use (a local policy synced from the global one, an acting replica refreshed
    from the local one): they start at zeros, one op each, instead of their initializers' random draws, which are
    never read and cost a few ops each to build and to run."""
    if kwargs.get('trainable') is not False:
        kwargs['initializer'] = tf.zeros_initializer()
    return getter(*args, **kwargs)


def _placeholder_like(tensor, suffix):
    """Float32 placeholder shaped ``[None] + tensor.shape[1:]`` named ``<tensor op name><suffix>``."""
    shape = tf.TensorShape([None]).concatenate(tensor.get_shape()[1:])
    return tf.placeholder(tf.float32, shape, name=tensor.op.name + suffix)


def rnn_placeholders(state):
    """Mirrors a (nested) RNN state with float32 placeholders of free batch size.

    Args:
        state: LSTMStateTuple(c, h), a tensor, or a (nested) tuple/list of those (e.g. a zero-state).

    Returns:
        same structure of placeholders (lists become tuples); names ``<op name>_c_pl`` / ``<op name>_h_pl``.
    """
    if getattr(state, '_fields', None) == ('c', 'h'):  # the package's LSTMStateTuple, or the legacy Keras one
        return type(state)(_placeholder_like(state.c, '_c_pl'), _placeholder_like(state.h, '_h_pl'))
    if isinstance(state, tf.Tensor):
        return _placeholder_like(state, '_h_pl')
    if isinstance(state, (tuple, list)):
        return tuple(rnn_placeholders(element) for element in state)
    raise TypeError('rnn_placeholders: expected LSTMStateTuple, Tensor or tuple, got {}'.format(type(state)))


def nested_placeholders(ob_space_shape, batch_dim=None, name='nested'):
    """Float32 placeholders for a (nested) dict of shapes.

    Args:
        ob_space_shape: mapping key -> shape tuple or nested mapping (e.g. ``DictSpace.shape``).
        batch_dim: leading dimension (None: free).
        name: name prefix; leaves are named ``<name>_<key>[_<subkey>...]_pl``.

    Returns:
        dict of the same nesting holding placeholders shaped ``[batch_dim] + shape``.
    """
    if isinstance(ob_space_shape, Mapping):
        return {
            key: nested_placeholders(value, batch_dim, '{}_{}'.format(name, key))
            for key, value in ob_space_shape.items()
        }
    return tf.placeholder(tf.float32, [batch_dim] + list(ob_space_shape), name=name + '_pl')


def feed_dict_from_nested(placeholders, values, expand_batch=False):
    """Maps nested placeholders to the values of an identically nested structure.

    Args:
        placeholders: nested dict of placeholders.
        values: nested dict of values, same keys and nesting.
        expand_batch: wrap each value in a one-element list (fake batch dimension).

    Returns:
        flat feed dict {placeholder: value}.
    """
    try:
        tf.nest.assert_same_structure(placeholders, values, check_types=True)
    except (ValueError, TypeError):
        differences = structure_differences(placeholders, values) or ['it is not nested like them']
        raise ValueError('observation does not match the policy inputs: {}'.format('; '.join(differences))) from None
    flat_values = tf.nest.flatten(values)
    if expand_batch:
        flat_values = [[value] for value in flat_values]
    return dict(zip(tf.nest.flatten(placeholders), flat_values))


def structure_differences(expected, given, path=''):
    """Where nested dict `given` departs from nested dict `expected`: its missing and unexpected keys, and values
    that should or should not be dicts.

    Returns:
        list of str such as ``"missing key 'metadata/type'"``.
    """
    if not isinstance(expected, Mapping) or not isinstance(given, Mapping):
        if isinstance(expected, Mapping) != isinstance(given, Mapping):
            wanted = 'a dict' if isinstance(expected, Mapping) else 'an array'
            return ['{} should be {}, got {}'.format(repr(path) if path else 'the observation', wanted,
                                                    type(given).__name__)]
        return []
    differences = []
    for key in expected:
        key_path = '{}/{}'.format(path, key) if path else str(key)
        if key not in given:
            differences.append('missing key {!r}'.format(key_path))
        else:
            differences.extend(structure_differences(expected[key], given[key], key_path))
    for key in given:
        if key not in expected:
            differences.append('unexpected key {!r}'.format('{}/{}'.format(path, key) if path else str(key)))
    return differences


def feed_dict_rnn_context(placeholders, values):
    """Maps a flat list of context placeholders to ``tf.nest.flatten(values)`` (e.g. ``[c1, h1, c2, h2]``).

    Args:
        placeholders: flat list of placeholders in nest flattening order.
        values: nested context values (tuples / LSTMStateTuples of arrays).

    Returns:
        feed dict {placeholder: array}.
    """
    flat_values = tf.nest.flatten(values)
    if len(flat_values) != len(placeholders):
        raise ValueError('feed_dict_rnn_context: {} placeholders but {} context values'.format(
            len(placeholders), len(flat_values)))
    return dict(zip(placeholders, flat_values))
