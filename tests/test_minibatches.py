"""A train step's updates: epochs of shuffled minibatches of a time_flat batch's frames (`learner.update_batches`,
`batches.batch_rows`) and advantage normalisation, against plain numpy."""
import collections

import numpy as np
import pytest

from btgym_aac.algorithms.common.batches import batch_rows
from btgym_aac.algorithms.learner import TrainBatches, normalized_advantages, update_batches

LSTMState = collections.namedtuple('LSTMState', ['c', 'h'])


def time_flat_batch(rows):
    """A stacked time_flat batch whose every leaf encodes its row index (row i holds i, 10 i, 100 i, ...)."""
    index = np.arange(rows)
    return {
        'state': {'external': np.stack([index, index], axis=1)[:, None, :] * 1.0,
                  'metadata': {'type': np.zeros(rows, dtype=np.int32), 'name': np.array(['r%d' % i for i in index])}},
        'context': (LSTMState(c=index[:, None] * 10.0, h=index[:, None] * 100.0),),
        'action': np.eye(3)[index % 3], 'advantage': index * 0.5, 'r': index * 2.0,
        'mask': np.ones(rows, dtype=np.float32), 'time_steps': np.ones(rows, dtype=np.int32), 'batch_size': rows,
    }


def assert_rows_of(sliced, rows):
    """Every leaf of `sliced` holds the rows `rows` of `time_flat_batch`, in that order."""
    rows = np.asarray(rows)
    assert sliced['batch_size'] == rows.size
    np.testing.assert_array_equal(sliced['state']['external'][:, 0, 0], rows)
    np.testing.assert_array_equal(sliced['state']['metadata']['name'], ['r%d' % i for i in rows])
    assert isinstance(sliced['context'][0], LSTMState)
    np.testing.assert_array_equal(sliced['context'][0].c[:, 0], rows * 10.0)
    np.testing.assert_array_equal(sliced['context'][0].h[:, 0], rows * 100.0)
    np.testing.assert_array_equal(sliced['action'].argmax(axis=1), rows % 3)
    np.testing.assert_array_equal(sliced['advantage'], rows * 0.5)
    np.testing.assert_array_equal(sliced['r'], rows * 2.0)
    assert sliced['time_steps'].shape == sliced['mask'].shape == (rows.size,)


def test_batch_rows_takes_the_same_rows_of_every_leaf():
    assert_rows_of(batch_rows(time_flat_batch(9), [4, 0, 7]), [4, 0, 7])


@pytest.mark.parametrize('rows, num_minibatches', [(20, 3), (8, 8), (3, 5)])
def test_every_epoch_trains_on_every_frame_once_in_nearly_equal_shuffled_minibatches(rows, num_minibatches):
    batches = TrainBatches(time_flat_batch(rows), off_policy=None, reward_prediction=None)
    updates = update_batches(batches, num_epochs=2, num_minibatches=num_minibatches, rng=np.random.default_rng(0))
    per_epoch = min(num_minibatches, rows)
    assert len(updates) == 2 * per_epoch
    orders = []
    for epoch in range(2):
        minibatches = updates[epoch * per_epoch:(epoch + 1) * per_epoch]
        sizes = [update.on_policy['batch_size'] for update in minibatches]
        assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1
        order = np.concatenate([update.on_policy['state']['external'][:, 0, 0] for update in minibatches]).astype(int)
        np.testing.assert_array_equal(np.sort(order), np.arange(rows))
        for update in minibatches:
            assert_rows_of(update.on_policy, update.on_policy['state']['external'][:, 0, 0].astype(int))
            assert update.off_policy is None and update.reward_prediction is None
        orders.append(order)
    assert not np.array_equal(orders[0], orders[1]) or rows < 4  # each epoch draws its own shuffle
    if rows >= 4:
        assert not np.array_equal(orders[0], np.arange(rows))


def test_one_minibatch_repeats_the_whole_batch_unshuffled():
    batches = TrainBatches(time_flat_batch(6), off_policy=None, reward_prediction=None)
    updates = update_batches(batches, num_epochs=3, num_minibatches=1, rng=np.random.default_rng(0))
    assert len(updates) == 3 and all(update is batches for update in updates)


def test_normalized_advantages_use_the_real_rows_only():
    advantage = np.array([1.0, 3.0, -2.0, 50.0, 7.0])
    mask = np.array([1, 1, 1, 0, 1], dtype=np.float32)
    real = advantage[[0, 1, 2, 4]]
    expected = (real - real.mean()) / (real.std() + 1e-8)
    normalized = normalized_advantages(advantage, mask)
    np.testing.assert_allclose(normalized[[0, 1, 2, 4]], expected)
    assert normalized[3] == 0.0
    assert normalized[[0, 1, 2, 4]].mean() == pytest.approx(0.0, abs=1e-12)
    assert normalized[[0, 1, 2, 4]].std() == pytest.approx(1.0, rel=1e-6)


def test_normalized_advantages_of_equal_values_are_zero_not_nan():
    np.testing.assert_array_equal(normalized_advantages(np.full(4, 2.5), np.ones(4)), np.zeros(4))
    np.testing.assert_array_equal(normalized_advantages(np.ones(3), np.zeros(3)), np.zeros(3))
