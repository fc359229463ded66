"""The session a policy runs in."""
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
