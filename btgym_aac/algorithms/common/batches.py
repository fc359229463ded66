"""Numpy helpers for processed rollouts: walking nested structures, converting, stacking and padding batches.

Processed-rollout batches are nested dicts whose leaves are np.ndarrays with the batch/time axis first, scalars,
or tuples (RNN contexts). Tuples keep their type: a namedtuple such as ``LSTMStateTuple`` stays one.
"""
import numpy as np

MASK_KEY = 'mask'
"""Key of the float32 row mask [rows] in processed batches: 1.0 for real rows, 0.0 for padding rows."""

ONE_HOT_KEYS = ('action', 'last_action_reward')
"""Keys whose padding rows get a 1 in column 0 (one-hot "hold") in `batch_pad`."""


def same_tuple_type(template, items):
    """Builds a tuple of the type of ``template`` (plain tuple or namedtuple such as LSTMStateTuple).

    Args:
        template: tuple instance whose type is reproduced.
        items: iterable of elements.

    Returns:
        tuple of type(template).
    """
    if hasattr(template, '_fields'):
        return type(template)(*items)
    return tuple(items)


def _to_array(values):
    """np.asarray; ragged sequences (which numpy 2 rejects) become a 1-D object array of their elements."""
    try:
        return np.asarray(values)
    except ValueError:
        ragged = np.empty(len(values), dtype=object)
        for index, value in enumerate(values):
            ragged[index] = value
        return ragged


def map_nested(leaf_fn, *structs):
    """Walks identically nested dicts/tuples in parallel and applies ``leaf_fn`` to their leaves.

    Args:
        leaf_fn: callable taking one leaf of each struct.
        *structs: one or more structures of the same nesting (dict keys are taken from the first).

    Returns:
        the nesting of the first struct (plain dicts, tuple types kept) holding ``leaf_fn`` results.
    """
    master = structs[0]
    if isinstance(master, dict):
        return {key: map_nested(leaf_fn, *[struct[key] for struct in structs]) for key in master}
    if isinstance(master, tuple):
        return same_tuple_type(
            master, [map_nested(leaf_fn, *[struct[i] for struct in structs]) for i in range(len(master))]
        )
    return leaf_fn(*structs)


def as_array(struct, squeeze_axis=None):
    """Converts the leaves (lists, values) of nested dicts/tuples to np.ndarrays.

    Args:
        struct: nested dicts and tuples of lists.
        squeeze_axis: if given, this axis (of size 1) is squeezed out of every leaf array.

    Returns:
        same nesting (tuple types kept) with np.ndarray leaves.
    """
    def convert(leaf):
        array = _to_array(leaf)
        return array if squeeze_axis is None else np.squeeze(array, axis=squeeze_axis)

    return map_nested(convert, struct)


def _concatenate_or_stack(*leaves):
    """Concatenates arrays along axis 0; stacks them into a new axis 0 when any is a scalar."""
    arrays = [np.asarray(leaf) for leaf in leaves]
    if all(array.ndim > 0 for array in arrays):
        return np.concatenate(arrays, axis=0)
    return np.stack(arrays, axis=0)


def batch_stack(batches):
    """Stacks processed rollouts along the batch axis.

    Arrays are concatenated along axis 0 (``[20, ...]`` twice -> ``[40, ...]``), scalars stacked into a vector
    (e.g. per-rollout ``time_steps`` -> vector of lengths), tuples element-wise (tuple types kept).

    Args:
        batches: non-empty list of identically structured processed rollouts, each with a ``batch_size`` key.

    Returns:
        dict; ``batch_size`` is the sum of the per-rollout batch sizes.
    """
    if not batches:
        raise ValueError('batch_stack: got no batches')
    if any('batch_size' not in batch for batch in batches):
        raise KeyError('batch_stack: every batch needs a "batch_size" key (use Rollout.process output)')
    stacked = map_nested(_concatenate_or_stack, *batches)
    stacked['batch_size'] = int(sum(batch['batch_size'] for batch in batches))
    return stacked


def batch_rows(batch, rows):
    """The rows `rows` of a batch whose every array leaf has one row per frame (a `time_flat` batch: contexts,
    `time_steps` and all), in their order.

    Args:
        batch: processed, stacked time_flat batch with a ``batch_size`` key.
        rows: int array of row indices.

    Returns:
        dict of the same nesting; ``batch_size`` = len(rows).
    """
    rows = np.asarray(rows)
    sliced = map_nested(lambda leaf: leaf[rows] if isinstance(leaf, np.ndarray) and leaf.ndim > 0 else leaf, batch)
    sliced['batch_size'] = int(rows.size)
    return sliced


def _leading_sizes(struct, sizes):
    """Collects axis-0 lengths of the array leaves that `batch_pad` pads (not inside tuples)."""
    if isinstance(struct, dict):
        for value in struct.values():
            _leading_sizes(value, sizes)
    elif isinstance(struct, np.ndarray) and struct.ndim > 0:
        sizes.add(struct.shape[0])
    return sizes


def _pad_rows(array, to_size, one_hot):
    """Appends ``to_size - len(array)`` zero rows of the array's own dtype (strings pad with '')."""
    padding = np.zeros((to_size - array.shape[0],) + array.shape[1:], dtype=array.dtype)
    if one_hot and array.ndim > 1:
        padding[:, 0, ...] = 1
    return np.concatenate([array, padding], axis=0)


def _pad_struct(struct, to_size, one_hot=False):
    if isinstance(struct, dict):
        return {key: _pad_struct(value, to_size, key in ONE_HOT_KEYS) for key, value in struct.items()}
    if isinstance(struct, np.ndarray) and struct.ndim > 0:
        return _pad_rows(struct, to_size, one_hot)
    return struct


def batch_pad(batch, to_size):
    """Pads every array of a processed rollout with rows up to ``to_size`` along axis 0.

    Padding rows are zeros of the array's dtype; for keys in `ONE_HOT_KEYS` they hold a 1 in column 0 (one-hot
    "hold"). Tuples (RNN contexts) and scalars (``time_steps``, ``batch_size``) are left unchanged.
    The float32 ``'mask'`` entry [to_size] marks real rows with 1 and padding rows with 0 (an existing mask is
    padded with zeros), so that losses and step counts can ignore padding.

    Args:
        batch: processed rollout dict; all padded arrays must share their axis-0 length, at most ``to_size``.
        to_size: target number of rows.

    Returns:
        new padded dict (the input is not modified).
    """
    sizes = _leading_sizes(batch, set())
    if len(sizes) != 1:
        raise ValueError('batch_pad: arrays must share one axis-0 length, found {}'.format(sorted(sizes) or 'none'))
    real_size = sizes.pop()
    if real_size > to_size:
        raise ValueError('batch_pad: batch has {} rows, more than to_size={}'.format(real_size, to_size))
    padded = _pad_struct(batch, to_size)
    if MASK_KEY not in batch:
        padded[MASK_KEY] = _pad_rows(np.ones(real_size, dtype=np.float32), to_size, one_hot=False)
    return padded


def is_subdict(sub_dict, big_dict):
    """Whether every leaf of ``sub_dict`` is present in ``big_dict`` at the same path with equal value.

    Leaves are compared with numpy broadcasting (``1`` matches ``array([1])``); unbroadcastable shapes or a missing
    key give False.

    Returns:
        np.bool_
    """
    if isinstance(sub_dict, dict):
        if not isinstance(big_dict, dict):
            return np.bool_(False)
        return np.bool_(all(
            key in big_dict and is_subdict(value, big_dict[key]) for key, value in sub_dict.items()
        ))
    sub_value, big_value = np.asarray(sub_dict), np.asarray(big_dict)
    try:
        np.broadcast_shapes(sub_value.shape, big_value.shape)
    except ValueError:
        return np.bool_(False)
    return np.bool_(np.all(sub_value == big_value))
