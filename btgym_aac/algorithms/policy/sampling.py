"""What acting needs besides the graph: the session a policy runs in, and an action category drawn from logits."""
import numpy as np

from btgym_aac.algorithms.common.math_utils import softmax
from btgym_aac.compat import tf


def resolve_session(sess=None):
    """Returns `sess`, or the default session when `sess` is None.

    Raises:
        RuntimeError: no session given and no default session set.
    """
    session = sess if sess is not None else tf.get_default_session()
    if session is None:
        raise RuntimeError('policy: no TensorFlow session; pass sess=... or call inside `with sess.as_default():`')
    return session


def sample_categories(logits, deterministic=False):
    """Draws one category per row of `logits` from its softmax, or takes each row's argmax.

    Probabilities are computed in float64 and sampled by inverse CDF (one uniform draw per row against the row's
    cumulative sum), so very peaked logits never raise. Uses the global numpy random state (seeded by the
    trainer): the rows draw in order, exactly as one call per row would.

    Args:
        logits: array-like of finite logits [K, A].
        deterministic: return the argmaxes instead of random draws.

    Returns:
        int64 array [K].
    """
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.size == 0 or not np.all(np.isfinite(logits)):
        raise ValueError('sample_categories: logits must be a non-empty [K, A] array of finite values, got shape {}: '
                         '{}'.format(logits.shape, logits))
    if deterministic:
        return np.argmax(logits, axis=1)
    cdf = np.cumsum(softmax(logits, axis=1), axis=1)
    draws = np.random.random(len(logits)) * cdf[:, -1]
    index = np.sum(cdf <= draws[:, None], axis=1)
    return np.minimum(index, logits.shape[1] - 1)
