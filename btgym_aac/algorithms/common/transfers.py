"""Cross-device tensor moves that pack small tensors together.

In a distributed session every tensor that crosses from one task to another travels as its own RPC, with a fixed
CPU cost on both sides. A policy has a few large variables (LSTM kernels) and many small ones (biases, norms,
heads), so the sync before a train step and the gradient push after it pay mostly for the small ones. Packing
them into one flat tensor per (source device, destination device, dtype) costs a concat and a split of a few
hundred kB at most and saves one RPC per tensor (A3C reference policy: 26 of 27 tensors each way).
"""
import numpy as np

from btgym_aac.compat import tf

PACK_MAX_ELEMENTS = 65536


def _device_key(device):
    return tf.DeviceSpec.from_string(device).to_string() if device else ''


def _pack_key(tensor, destination, max_elements):
    """(source device, destination, dtype) of a tensor worth packing, else None."""
    if not isinstance(tensor, (tf.Tensor, tf.Variable)) or not tensor.get_shape().is_fully_defined():
        return None
    source = _device_key(tensor.device)
    if not source or not destination or source == destination or \
            int(np.prod(tensor.get_shape().as_list())) > max_elements:
        return None
    return source, destination, tensor.dtype.base_dtype


def moved_to(tensors, destinations, max_elements=PACK_MAX_ELEMENTS):
    """Tensors equal to `tensors`, for use on `destinations`, the small ones moved in packed groups.

    A tensor is packed when it has a fully defined shape of at most `max_elements` elements and a known device
    other than its destination; the others are returned as given (their consumer reads them as usual). Values
    are exact copies.

    Args:
        tensors: list of tensors or variables (None entries are passed through).
        destinations: list of device strings, one per tensor: where the returned tensor will be used.
        max_elements: largest tensor that is packed.

    Returns:
        list of tensors in the order of `tensors`; packed ones are placed on their destination device.

    Raises:
        ValueError: `tensors` and `destinations` differ in length.
    """
    if len(tensors) != len(destinations):
        raise ValueError('moved_to: {} tensors but {} destinations'.format(len(tensors), len(destinations)))
    result = list(tensors)
    groups = {}
    for index, (tensor, destination) in enumerate(zip(tensors, destinations)):
        key = _pack_key(tensor, _device_key(destination), max_elements)
        if key is not None:
            groups.setdefault(key, []).append(index)
    for (source, destination, _), indices in groups.items():
        if len(indices) < 2:
            continue
        shapes = [tensors[index].get_shape().as_list() for index in indices]
        with tf.name_scope('packed_move'):
            with tf.device(source):
                packed = tf.concat([tf.reshape(tensors[index], [-1]) for index in indices], 0)
            with tf.device(destination):
                pieces = tf.split(packed, [int(np.prod(shape)) for shape in shapes])
                for index, piece, shape in zip(indices, pieces, shapes):
                    result[index] = tf.reshape(piece, shape)
    return result
