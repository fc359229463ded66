from collections import OrderedDict

import numpy as np
import pytest

from btgym_aac.algorithms.common.batches import as_array, batch_pad, batch_stack, is_subdict
from btgym_aac.algorithms.common.placeholders import (LSTMStateTuple, check_variable_pairing, feed_dict_from_nested,
                                               feed_dict_rnn_context, nested_placeholders, rnn_placeholders)
from btgym_aac.compat import tf


def make_batch(rows, offset=0.0):
    values = np.arange(rows * 2, dtype=np.float64).reshape(rows, 2) + offset
    return {
        'state': {'external': values, 'metadata': {'type': np.zeros(rows)}},
        'action': np.eye(3)[np.arange(rows) % 3],
        'context': LSTMStateTuple(np.full((1, 4), offset), np.full((1, 4), -offset)),
        'time_steps': rows,
        'batch_size': 1,
    }


def test_batch_stack_concatenates_and_stacks_scalars():
    first, second = make_batch(2), make_batch(3, offset=100.0)
    stacked = batch_stack([first, second])
    np.testing.assert_array_equal(stacked['state']['external'],
                                  np.concatenate([first['state']['external'], second['state']['external']]))
    assert stacked['action'].shape == (5, 3)
    np.testing.assert_array_equal(stacked['time_steps'], [2, 3])
    assert isinstance(stacked['context'], LSTMStateTuple)
    np.testing.assert_array_equal(stacked['context'].c, [[0.0] * 4, [100.0] * 4])
    assert stacked['batch_size'] == 2


def test_batch_stack_needs_batch_size():
    batch = make_batch(2)
    del batch['batch_size']
    with pytest.raises(KeyError, match='batch_size'):
        batch_stack([batch])


def test_batch_pad_shapes_values_and_mask():
    batch = make_batch(2)
    batch['info'] = np.array(['a', 'bb'])
    batch['count'] = np.array([7, 8], dtype=np.int64)
    padded = batch_pad(batch, 4)
    np.testing.assert_array_equal(padded['state']['external'], [[0, 1], [2, 3], [0, 0], [0, 0]])
    np.testing.assert_array_equal(padded['action'], [[1, 0, 0], [0, 1, 0], [1, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(padded['mask'], [1, 1, 0, 0])
    assert padded['mask'].dtype == np.float32
    assert list(padded['info']) == ['a', 'bb', '', '']
    assert padded['count'].dtype == np.int64 and list(padded['count']) == [7, 8, 0, 0]
    assert padded['context'] is batch['context'] and padded['time_steps'] == 2
    assert 'mask' not in batch and batch['action'].shape == (2, 3)


def test_batch_pad_keeps_existing_mask_and_checks_sizes():
    batch = {'r': np.ones(2), 'mask': np.array([1.0, 0.0], dtype=np.float32)}
    np.testing.assert_array_equal(batch_pad(batch, 3)['mask'], [1, 0, 0])
    np.testing.assert_array_equal(batch_pad({'r': np.ones(3)}, 3)['mask'], [1, 1, 1])
    with pytest.raises(ValueError, match='more than to_size'):
        batch_pad({'r': np.ones(3)}, 2)
    with pytest.raises(ValueError, match='one axis-0 length'):
        batch_pad({'r': np.ones(3), 'v': np.ones(2)}, 5)


def test_as_array_recurses_squeezes_and_tolerates_ragged():
    converted = as_array({'a': [[1], [2]], 'b': ([np.zeros((1, 3))] * 2, [np.ones((1, 3))] * 2)}, squeeze_axis=None)
    assert converted['a'].shape == (2, 1) and converted['b'][1].shape == (2, 1, 3)
    squeezed = as_array(([np.zeros((1, 3))] * 2,), squeeze_axis=1)
    assert squeezed[0].shape == (2, 3)
    ragged = as_array([[1, 2], [3]])
    assert ragged.dtype == object and ragged[1] == [3]


def test_is_subdict():
    big = {'state': {'metadata': {'type': np.array([1]), 'trial_type': 0}, 'external': np.zeros(3)}}
    assert is_subdict({'state': {'metadata': {'type': 1}}}, big)
    assert not is_subdict({'state': {'metadata': {'type': 0}}}, big)
    assert not is_subdict({'state': {'missing': 1}}, big)
    assert not is_subdict({'state': {'external': np.zeros(2)}}, big)
    assert isinstance(is_subdict({}, big), np.bool_)


def test_nested_placeholders_and_feed():
    shapes = OrderedDict([('external', (5, 1, 3)), ('metadata', OrderedDict([('type', ()), ('step', ())]))])
    with tf.Graph().as_default():
        nested = nested_placeholders(shapes, batch_dim=None, name='on_state')
        assert nested['external'].shape.as_list() == [None, 5, 1, 3]
        assert nested['metadata']['type'].shape.as_list() == [None]
        assert nested['metadata']['step'].op.name == 'on_state_metadata_step_pl'
        assert nested['external'].dtype == tf.float32

        values = {'external': np.ones((5, 1, 3)), 'metadata': {'type': 1.0, 'step': 7.0}}
        feed = feed_dict_from_nested(nested, values, expand_batch=True)
        assert feed[nested['metadata']['step']] == [7.0] and len(feed) == 3
        with tf.Session() as sess:
            total = sess.run(tf.reduce_sum(nested['external']) + nested['metadata']['step'][0], feed)
        assert total == pytest.approx(22.0)
        with pytest.raises(ValueError, match="^observation does not match the policy inputs: missing key "
                                             "'metadata'$"):
            feed_dict_from_nested(nested, {'external': values['external']})
        with pytest.raises(ValueError, match="missing key 'metadata/step'; unexpected key 'metadata/steps'; "
                                             "unexpected key 'extra'$"):
            feed_dict_from_nested(nested, dict(values, metadata={'type': 1.0, 'steps': 7.0}, extra=1))
        with pytest.raises(ValueError, match="'metadata' should be a dict, got ndarray$"):
            feed_dict_from_nested(nested, dict(values, metadata=np.ones(2)))
        with pytest.raises(ValueError, match="'external' should be an array, got dict$"):
            feed_dict_from_nested(nested, dict(values, external={'a': 1.0}))
        with pytest.raises(ValueError, match="the observation should be a dict, got ndarray$"):
            feed_dict_from_nested(nested, np.ones(3))


def test_rnn_placeholders_and_context_feed():
    with tf.Graph().as_default():
        cell_state = LSTMStateTuple(tf.zeros([1, 4], name='c1'), tf.zeros([1, 4], name='h1'))
        state = (cell_state, (tf.zeros([1, 6], name='gru'),))
        placeholders = rnn_placeholders(state)
        assert isinstance(placeholders[0], LSTMStateTuple)
        assert placeholders[0].c.shape.as_list() == [None, 4] and placeholders[0].c.op.name == 'c1_c_pl'
        assert placeholders[1][0].op.name == 'gru_h_pl'
        flat = tf.nest.flatten(placeholders)
        values = (LSTMStateTuple(np.ones((1, 4)), 2 * np.ones((1, 4))), (3 * np.ones((1, 6)),))
        feed = feed_dict_rnn_context(flat, values)
        assert [feed[p][0, 0] for p in flat] == [1.0, 2.0, 3.0]
        with pytest.raises(ValueError, match='3 placeholders but 2'):
            feed_dict_rnn_context(flat, values[0])


def test_check_variable_pairing_names_counts_and_mismatched_shapes():
    with tf.Graph().as_default():
        first = [tf.Variable(tf.zeros([2, 3]), name='a'), tf.Variable(tf.zeros([4]), name='b')]
        same = [tf.Variable(tf.zeros([2, 3]), name='c'), tf.Variable(tf.zeros([4]), name='d')]
        reshaped = [tf.Variable(tf.zeros([2, 3]), name='e'), tf.Variable(tf.zeros([5]), name='f')]
        check_variable_pairing(first, same, 'lists')
        with pytest.raises(RuntimeError, match=r"lists: 2 variables against 2; .*'b:0', \[4\], 'f:0', \[5\]"):
            check_variable_pairing(first, reshaped, 'lists')
        with pytest.raises(RuntimeError, match='lists: 2 variables against 1'):
            check_variable_pairing(first, same[:1], 'lists')
