"""Keeping non-finite values out of the weights: a train step whose loss or gradients are not finite changes no
weight (its gradients are replaced by zeros in the graph), and the first non-finite tensor is named (in numpy).
"""
from btgym_aac.compat import tf
from btgym_aac.nonfinite import first_non_finite_feed, holds_non_finite


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


def first_non_finite(sess, named_tensors, feed_dict=None):
    """Name of the first non-finite input of `feed_dict`, else of the first of `named_tensors` whose value holds
    NaN or inf (all fetched in one run and checked in numpy: no graph ops are needed), or None.

    Args:
        sess: session.
        named_tensors: [(name, tensor or variable or None)].
        feed_dict: what the run to explain was fed (its inputs are checked first).
    """
    bad_input = first_non_finite_feed(feed_dict or {})
    if bad_input:
        return bad_input
    named = [(name, tensor) for name, tensor in named_tensors if tensor is not None]
    values = sess.run([tensor for _, tensor in named], feed_dict) if named else []
    return next((name for (name, _), value in zip(named, values) if holds_non_finite(value)), None)
