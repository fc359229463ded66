"""The TensorFlow sessions of the package: the options every session is made with, and callables that run a fixed
set of fetches with a fixed list of fed placeholders, for graphs run over and over (the acting graph on every env
step, the train step on every rollout).

`session_config` turns TensorFlow's graph optimiser (grappler) off in every session the package makes.

`Session.run` converts every fed value and rebuilds its fetch handling on each call, and `Session.make_callable`
hands every call that has feeds back to `Session.run`. For the acting graph (one small run per env step) that
Python work is a large part of an acting step (`benchmarks/act_cost.py` measures an acting call and its Python
part). `feed_callable` builds the callable from `CallableOptions` instead, through
`Session._make_callable_from_options`, the method behind `make_callable` in every TF1 / `tf.compat.v1` session.
`CallableCache` keeps such callables per session, name and fed placeholders.
"""
import numpy as np

from btgym_aac.compat import CallableOptions, tf


def session_config(**kwargs):
    """`tf.ConfigProto(**kwargs)` with TensorFlow's graph optimiser (grappler) turned off.

    Grappler rewrites the graph of every new set of fetches and feeds before its first run. On a worker this
    delays the first train step and again the second (fetched without the model summary), on the critical path of
    start-up (`benchmarks/startup.py` measures start-up), and training ran no faster with it. The graphs here are
    small ops on small tensors, which grappler's rewrites do not speed up.

    Returns:
        the ConfigProto.
    """
    config = tf.ConfigProto(**kwargs)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config


def feed_callable(session, fetches, placeholders, targets=()):
    """Makes `call(*values)`: runs `fetches` and `targets` with `values` fed to `placeholders`, in that order.

    Args:
        session: a `tf.Session` (a session-like object without `_make_callable_from_options`, such as a
            `MonitoredSession`, gets a callable that uses its `run`).
        fetches: nested structure of tensors, or None.
        placeholders: list of placeholders, one value each per call.
        targets: operations to run, with nothing fetched.

    Returns:
        callable returning `fetches`' structure of numpy values (None when `fetches` is None); like `Session.run`,
        it raises ValueError for a value whose shape the placeholder does not accept.
    """
    placeholders = list(placeholders)
    targets = list(targets)
    make = getattr(session, '_make_callable_from_options', None)
    if make is None:
        def run_call(*values):
            fetched = session.run([fetches if fetches is not None else [], targets], dict(zip(placeholders, values)))
            return fetched[0] if fetches is not None else None
        return run_call
    dtypes = [placeholder.dtype.as_numpy_dtype for placeholder in placeholders]
    shapes = [placeholder.get_shape() for placeholder in placeholders]
    dims = [shape.as_list() if shape.rank is not None else None for shape in shapes]
    flat_fetches = tf.nest.flatten(fetches) if fetches is not None else []
    options = CallableOptions()
    options.feed.extend(placeholder.name for placeholder in placeholders)
    options.fetch.extend(tensor.name for tensor in flat_fetches)
    options.target.extend(op.name for op in targets)
    raw_call = make(options)

    def call(*values):
        arrays = [np.asarray(value, dtype=dtype) for value, dtype in zip(values, dtypes)]
        for index, (array, placeholder_dims) in enumerate(zip(arrays, dims)):
            if placeholder_dims is not None and not _accepts(placeholder_dims, array.shape):
                raise ValueError('cannot feed a value of shape {} to {} of shape {}'.format(
                    array.shape, placeholders[index].name, shapes[index]))
        outputs = raw_call(*arrays)
        return tf.nest.pack_sequence_as(fetches, outputs) if fetches is not None else None
    return call


class CallableCache:
    """`feed_callable`s made on first use and kept per session, name and list of fed placeholders.

    The callables of sessions that have been closed are dropped when callables for a new session are made, so a
    cache that outlives its sessions (a trainer started again in a new session) does not keep them alive.
    """

    def __init__(self):
        self._by_session = {}

    def run(self, session, name, fetches, feed, targets=()):
        """Runs `fetches` and `targets` with `feed` through the cached callable of (`session`, `name`, feed keys).

        Args:
            session: session to run in.
            name: label of this set of fetches and targets (same name, same fetches and targets).
            fetches: nested structure of tensors, or None.
            feed: dict placeholder -> value.
            targets: operations to run, with nothing fetched.

        Returns:
            `fetches`' structure of numpy values (None when `fetches` is None).
        """
        placeholders = tuple(feed)
        callables = self._by_session.get(session)
        if callables is None:
            self._forget_closed_sessions()
            callables = self._by_session[session] = {}
        call = callables.get((name, placeholders))
        if call is None:
            call = callables[(name, placeholders)] = feed_callable(session, fetches, placeholders, targets)
        return call(*[feed[placeholder] for placeholder in placeholders])

    def _forget_closed_sessions(self):
        for session in [session for session in self._by_session if getattr(session, '_closed', False)]:
            del self._by_session[session]


def _accepts(placeholder_dims, shape):
    """True when `shape` fits dims where None is any size."""
    return len(placeholder_dims) == len(shape) and all(
        dim is None or dim == size for dim, size in zip(placeholder_dims, shape))
