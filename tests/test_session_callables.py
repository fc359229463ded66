"""feed_callable: same results as Session.run (nested fetches, dtype conversion, targets, shape errors), and a
run-based fallback for session-like objects."""
import gc
import re
import weakref

import numpy as np
import pytest

from btgym_aac.algorithms.common.sessions import CallableCache, feed_callable
from btgym_aac.compat import tf


class RunOnlySession:
    def __init__(self, session):
        self.run = session.run


@pytest.fixture
def graph_and_session():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name='x')
        scale = tf.placeholder(tf.int32, [], name='scale')
        negate = tf.placeholder(tf.bool, [], name='negate')
        y = x * tf.cast(scale, tf.float32)
        y = tf.where(negate, -y, y)
        state = tf.nn.rnn_cell.LSTMStateTuple(tf.reduce_sum(y, axis=1), tf.reduce_max(y, axis=1))
        counter = tf.Variable(0.0)
        bump = tf.assign_add(counter, tf.reduce_sum(x))
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph) as session:
        session.run(init)
        yield session, {'x': x, 'scale': scale, 'negate': negate, 'y': y, 'state': state, 'counter': counter,
                        'bump': bump}


@pytest.mark.parametrize('wrap', [lambda session: session, RunOnlySession], ids=['session', 'run-only'])
def test_results_equal_session_run_with_nested_fetches_and_converted_feeds(graph_and_session, wrap):
    session, t = graph_and_session
    fetches = [t['y'], {'state': t['state']}]
    call = feed_callable(wrap(session), fetches, [t['x'], t['scale'], t['negate']])
    values = np.arange(6, dtype=np.float64).reshape(2, 3)
    for scale, negate in [(2, False), (3, True)]:
        y, nested = call(values, scale, negate)
        expected_y = values * scale * (-1 if negate else 1)
        np.testing.assert_allclose(y, expected_y)
        assert y.dtype == np.float32
        assert isinstance(nested['state'], tf.nn.rnn_cell.LSTMStateTuple)
        np.testing.assert_allclose(nested['state'].c, expected_y.sum(axis=1))
        np.testing.assert_allclose(nested['state'].h, expected_y.max(axis=1))


@pytest.mark.parametrize('wrap', [lambda session: session, RunOnlySession], ids=['session', 'run-only'])
def test_targets_run_and_nothing_is_fetched(graph_and_session, wrap):
    session, t = graph_and_session
    call = feed_callable(wrap(session), None, [t['x']], targets=[t['bump'].op])
    assert call([[1.0, 2.0, 3.0]]) is None
    call([[0.5, 0.5, 0.0]])
    assert session.run(t['counter']) == pytest.approx(7.0)


@pytest.mark.parametrize('wrap', [lambda session: session, RunOnlySession], ids=['session', 'run-only'])
@pytest.mark.parametrize('bad_value', [np.zeros((2, 4)), np.zeros(3)], ids=['size', 'rank'])
def test_a_value_of_the_wrong_shape_raises_naming_the_placeholder(graph_and_session, wrap, bad_value):
    session, t = graph_and_session
    call = feed_callable(wrap(session), t['y'], [t['x'], t['scale'], t['negate']])
    with pytest.raises(ValueError, match=r'(?i)cannot feed.*shape {}.* x:0'.format(re.escape(str(bad_value.shape)))):
        call(bad_value, 1, False)
    np.testing.assert_allclose(call(np.ones((1, 3)), 2, False), [[2.0, 2.0, 2.0]])


def test_callable_cache_makes_one_callable_per_session_name_and_feed_keys(graph_and_session):
    session, t = graph_and_session
    cache = CallableCache()
    feed = {t['x']: [[1.0, 2.0, 3.0]], t['scale']: 2, t['negate']: False}
    for _ in range(3):
        np.testing.assert_allclose(cache.run(session, 'y', t['y'], feed), [[2.0, 4.0, 6.0]])
    reordered = {t['negate']: True, t['scale']: 1, t['x']: [[1.0, 0.0, 0.0]]}
    np.testing.assert_allclose(cache.run(session, 'y', t['y'], reordered), [[-1.0, 0.0, 0.0]])
    assert cache.run(session, 'bump', None, {t['x']: [[1.0, 1.0, 1.0]]}, targets=[t['bump'].op]) is None
    assert session.run(t['counter']) == pytest.approx(3.0)
    with tf.Session(graph=session.graph) as other:
        other.run(tf.variables_initializer([t['counter']]))
        np.testing.assert_allclose(cache.run(other, 'y', t['y'], feed), [[2.0, 4.0, 6.0]])
    assert len(cache._by_session[session]) == 3  # 'y' with two key orders, 'bump'
    assert len(cache._by_session[other]) == 1


def test_callable_cache_lets_closed_sessions_go_once_a_new_session_is_used(graph_and_session):
    session, t = graph_and_session
    cache = CallableCache()
    feed = {t['x']: [[1.0, 2.0, 3.0]], t['scale']: 1, t['negate']: False}
    first = tf.Session(graph=session.graph)
    cache.run(first, 'y', t['y'], feed)
    first_ref = weakref.ref(first)
    first.close()
    del first
    np.testing.assert_allclose(cache.run(session, 'y', t['y'], feed), [[1.0, 2.0, 3.0]])
    gc.collect()
    assert first_ref() is None
    np.testing.assert_allclose(cache.run(session, 'y', t['y'], feed), [[1.0, 2.0, 3.0]])
