"""Graph pieces that keep non-finite values out of the weights: a train step whose loss or gradients are not finite
changes no weight (its gradients are replaced by zeros), and probes that name the first non-finite tensor.
"""
from btgym_aac.compat import tf
from btgym_aac.nonfinite import first_non_finite_feed


def zeroed_unless(condition, tensors):
    """`tensors` when the scalar bool `condition` holds, else zeros of their shapes (None entries stay None).

    One `cond` routes the tensors, so the kept branch costs no copy.
    """
    present = [index for index, tensor in enumerate(tensors) if tensor is not None]
    dense = [tf.convert_to_tensor(tensors[index]) for index in present]
    if not dense:
        return list(tensors)
    routed = tf.cond(condition, lambda: [tf.identity(tensor) for tensor in dense],
                     lambda: [tf.zeros_like(tensor) for tensor in dense])
    result = list(tensors)
    for index, tensor in zip(present, routed if isinstance(routed, (list, tuple)) else [routed]):
        result[index] = tensor
    return result


def finiteness_probes(named_tensors):
    """[(name, scalar bool tensor: all of it finite)] for `named_tensors` [(name, tensor or None)]."""
    return [(name, tf.reduce_all(tf.is_finite(tf.convert_to_tensor(tensor)))) for name, tensor in named_tensors
            if tensor is not None]


def variables_finite(variables):
    """Scalar bool tensor: every float variable of `variables` holds only finite values. Each device's variables
    are checked there, so only one bool per device travels."""
    by_device = {}
    for variable in variables:
        if variable.dtype.base_dtype.is_floating:
            by_device.setdefault(variable.device, []).append(variable)
    checks = []
    for device, group in sorted(by_device.items()):
        with tf.device(device):
            checks.append(tf.reduce_all(tf.stack([tf.reduce_all(tf.is_finite(v)) for v in group])))
    return tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)


def first_non_finite(sess, probes, feed_dict=None):
    """Name of the first non-finite input of `feed_dict`, else of the first probe that fails, or None.

    Args:
        sess: session.
        probes: from `finiteness_probes`.
        feed_dict: what the failing run was fed (its inputs are checked first, in numpy).
    """
    bad_input = first_non_finite_feed(feed_dict or {})
    if bad_input:
        return bad_input
    if not probes:
        return None
    values = sess.run([probe for _, probe in probes], feed_dict)
    return next((name for (name, _), finite in zip(probes, values) if not finite), None)
