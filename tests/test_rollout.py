import queue

import numpy as np
import pytest

from btgym_aac.algorithms.common.rollout import Rollout, make_data_getter
from btgym_aac.algorithms.utils import LSTMStateTuple, batch_stack

UNITS = 2
ACTIONS = 3


def plain_pair(c, h):
    return (c, h)


def make_frame(step, reward, value, r=(0.0,), terminal=False, context_type=LSTMStateTuple):
    context_leaf = np.full((1, UNITS), float(step))
    return {
        'position': {'episode': 0, 'step': step},
        'state': {'external': np.full((4, 1), float(step)), 'metadata': {'type': 0}},
        'action': np.eye(ACTIONS)[step % ACTIONS],
        'reward': reward,
        'value': value,
        'terminal': terminal,
        'r': list(r),
        'context': (context_type(context_leaf, -context_leaf), context_type(2 * context_leaf, 3 * context_leaf)),
        'last_action': np.array([1.0, 0.0]),
        'last_reward': np.float32(reward),
        'info': 'step{}'.format(step),
    }


def make_rollout(rewards, values, bootstrap, **kwargs):
    rollout = Rollout()
    for step, (reward, value) in enumerate(zip(rewards, values)):
        is_last = step == len(rewards) - 1
        rollout.add(make_frame(step, reward, value, r=(bootstrap if is_last else value,), **kwargs))
    return rollout


def plain_returns_and_gae(rewards, values, bootstrap, gamma, lam):
    size = len(rewards)
    returns, advantages = [0.0] * size, [0.0] * size
    next_return, next_advantage = bootstrap, 0.0
    for t in reversed(range(size)):
        next_value = values[t + 1] if t + 1 < size else bootstrap
        delta = rewards[t] + gamma * next_value - values[t]
        next_advantage = delta + gamma * lam * next_advantage
        next_return = rewards[t] + gamma * next_return
        returns[t], advantages[t] = next_return, next_advantage
    return returns, advantages


def test_hand_computed_three_steps():
    # gamma=0.9, lambda=0.8, rewards 1, 0, 2, values .5, .4, .3, bootstrap V_3 = .6
    # R_2 = 2 + .9*.6 = 2.54;  R_1 = 0 + .9*2.54 = 2.286;  R_0 = 1 + .9*2.286 = 3.0574
    # delta = [1 + .9*.4 - .5, 0 + .9*.3 - .4, 2 + .9*.6 - .3] = [.86, -.13, 2.24]
    # A_2 = 2.24;  A_1 = -.13 + .72*2.24 = 1.4828;  A_0 = .86 + .72*1.4828 = 1.927616
    batch = make_rollout([1.0, 0.0, 2.0], [0.5, 0.4, 0.3], 0.6).process(gamma=0.9, gae_lambda=0.8)
    np.testing.assert_allclose(batch['r'], [3.0574, 2.286, 2.54])
    np.testing.assert_allclose(batch['advantage'], [1.927616, 1.4828, 2.24])


def test_terminal_gives_zero_bootstrap():
    batch = make_rollout([1.0, 0.0, 2.0], [0.5, 0.4, 0.3], 0.0).process(gamma=0.9, gae_lambda=1.0)
    np.testing.assert_allclose(batch['r'], [1 + 0.9 * 0 + 0.81 * 2, 0.9 * 2, 2.0])
    # with lambda = 1 the advantage is the return minus the value
    np.testing.assert_allclose(batch['advantage'], batch['r'] - np.array([0.5, 0.4, 0.3]))


def test_returns_and_gae_match_plain_loop():
    rng = np.random.default_rng(7)
    rewards, values, bootstrap = list(rng.normal(size=12)), list(rng.normal(size=12)), 0.37
    rollout = make_rollout(rewards, [np.array([v]) for v in values], bootstrap)
    batch = rollout.process(gamma=0.97, gae_lambda=0.9)
    returns, advantages = plain_returns_and_gae(rewards, values, bootstrap, 0.97, 0.9)
    np.testing.assert_allclose(batch['r'], returns, rtol=1e-12)
    np.testing.assert_allclose(batch['advantage'], advantages, rtol=1e-12)


def test_time_flat_and_unrolled_layouts_carry_same_numbers():
    rollout = make_rollout([0.1, -0.2, 0.3, 0.0], [1.0, 2.0, 3.0, 4.0], 5.0)
    flat = rollout.process(gamma=0.99, gae_lambda=0.95, time_flat=True)
    unrolled = rollout.process(gamma=0.99, gae_lambda=0.95)
    for key in ('r', 'advantage', 'action', 'terminal', 'last_action', 'mask'):
        np.testing.assert_array_equal(flat[key], unrolled[key])
    np.testing.assert_array_equal(flat['state']['external'], unrolled['state']['external'])
    assert flat['state']['external'].shape == (4, 4, 1)
    assert flat['batch_size'] == 4 and np.array_equal(flat['time_steps'], np.ones(4))
    assert unrolled['batch_size'] == 1 and unrolled['time_steps'] == 4

    assert isinstance(flat['context'][0], LSTMStateTuple)
    np.testing.assert_array_equal(flat['context'][0].c, np.repeat(np.arange(4.0)[:, None], UNITS, axis=1))
    np.testing.assert_array_equal(flat['context'][1].h, 3 * flat['context'][0].c)
    assert isinstance(unrolled['context'][1], LSTMStateTuple)
    np.testing.assert_array_equal(unrolled['context'][1].c, np.zeros((1, UNITS)))


def test_plain_tuple_contexts_stay_plain_and_stack():
    rollout = make_rollout([1.0, 2.0], [0.0, 0.0], 0.0, context_type=plain_pair)
    batch = rollout.process(gamma=0.9, time_flat=True)
    assert type(batch['context'][0]) is tuple
    stacked = batch_stack([batch, batch])
    assert type(stacked['context'][0]) is tuple and stacked['context'][0][0].shape == (4, UNITS)
    assert stacked['batch_size'] == 4


def test_padding_rows_are_masked():
    batch = make_rollout([1.0, 0.0, 2.0], [0.5, 0.4, 0.3], 0.6).process(gamma=0.9, size=5)
    np.testing.assert_array_equal(batch['mask'], [1, 1, 1, 0, 0])
    np.testing.assert_allclose(batch['r'][3:], 0.0)
    np.testing.assert_allclose(batch['r'][:3], [3.0574, 2.286, 2.54])
    np.testing.assert_array_equal(batch['action'][3:], [[1, 0, 0], [1, 0, 0]])
    assert batch['state']['external'].shape == (5, 4, 1)
    assert list(batch['info']) == ['step0', 'step1', 'step2', '', '']
    assert batch['time_steps'] == 3 and batch['batch_size'] == 1
    assert batch['context'][0].c.shape == (1, UNITS)
    with pytest.raises(ValueError, match='more than to_size'):
        make_rollout([1.0, 0.0, 2.0], [0.5, 0.4, 0.3], 0.6).process(gamma=0.9, size=2)


def test_unpadded_batches_carry_mask_of_ones():
    batch = make_rollout([1.0, 0.0], [0.5, 0.4], 0.6).process(gamma=0.9, size=2)
    np.testing.assert_array_equal(batch['mask'], [1, 1])


@pytest.mark.parametrize('last_reward, target', [(0.5, [0, 1, 0]), (-0.5, [0, 0, 1]), (0.05, [1, 0, 0])])
def test_process_rp_targets(last_reward, target):
    rollout = make_rollout([1.0, 0.0, last_reward], [0.5, 0.4, 0.3], 0.6)
    batch = rollout.process_rp(reward_threshold=0.1)
    np.testing.assert_array_equal(batch['rp_target'], [target])
    assert batch['time_steps'] == 2 and batch['state']['external'].shape == (2, 4, 1)
    # gamma = 1, bootstrap from the 'r' of the remaining last frame (its value 0.4): [1 + 0 + .4, 0 + .4]
    np.testing.assert_allclose(batch['r'], [1.4, 0.4])
    assert rollout.size == 3 and len(rollout['reward']) == 3


def test_get_and_pop_frame_round_trip():
    frames = [make_frame(step, float(step), 0.0) for step in range(3)]
    rollout = Rollout()
    rollout.add_memory_sample(frames)
    middle = rollout.get_frame(1)
    assert middle['position'] == {'episode': 0, 'step': 1}
    assert isinstance(middle['context'][0], LSTMStateTuple)
    np.testing.assert_array_equal(middle['context'][1].h, frames[1]['context'][1].h)
    popped = rollout.pop_frame(-1)
    assert popped['reward'] == 2.0 and rollout.size == 2 and rollout['reward'] == [0.0, 1.0]
    with pytest.raises(IndexError):
        rollout.get_frame(2)


def test_add_rejects_frames_with_other_keys():
    rollout = make_rollout([1.0], [0.0], 0.0)
    frame = make_frame(1, 0.0, 0.0)
    del frame['info']
    with pytest.raises(ValueError, match='keys'):
        rollout.add(frame)
    assert rollout.size == 1 and len(rollout['reward']) == 1


def test_process_rejects_missing_bootstrap():
    rollout = make_rollout([1.0], [0.0], 0.0)
    rollout['r'][-1] = None
    with pytest.raises(ValueError, match="'r'"):
        rollout.process(gamma=0.9)


def test_data_getter_reads_queue_and_times_out():
    source = queue.Queue()
    source.put('rollout')
    get = make_data_getter(source, timeout=0.01)
    assert get(anything=1) == 'rollout'
    with pytest.raises(queue.Empty):
        get()
