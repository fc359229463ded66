"""What acting needs besides the graph: the session a policy runs in, and an action category drawn from logits."""
import numpy as np

from btgym_aac.algorithms.math_utils import softmax
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


def sample_category(logits, deterministic=False):
    """Draws a category from `softmax(logits)` or takes the argmax.

    Probabilities are computed in float64 and sampled by inverse CDF (one uniform draw against their cumulative
    sum), so very peaked logits never raise. Uses the global numpy random state (seeded by the trainer).

    Args:
        logits: 1-D array-like of finite logits [A].
        deterministic: return the argmax instead of a random draw.

    Returns:
        int category index.
    """
    logits = np.asarray(logits, dtype=np.float64).reshape(-1)
    if logits.size == 0 or not np.all(np.isfinite(logits)):
        raise ValueError('sample_category: logits must be a non-empty finite vector, got {}'.format(logits))
    if deterministic:
        return int(np.argmax(logits))
    cdf = np.cumsum(softmax(logits))
    index = np.searchsorted(cdf, np.random.random() * cdf[-1], side='right')
    return int(min(index, logits.size - 1))
