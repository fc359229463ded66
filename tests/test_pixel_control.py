"""Pixel-control n-step Q targets: the numpy parts against a plain loop and hand-computed values, and the trainer's
graph target (bootstrap from the Q head's own output at the last frame) against numpy."""
import numpy as np
import pytest

from btgym_aac.algorithms import Unreal
from btgym_aac.algorithms.common.rollout import pixel_control_targets
from btgym_aac.algorithms.policy import Aac1dPolicy
from btgym_aac.algorithms.utils import batch_pad
from btgym_aac.compat import tf
from btgym_aac.env import BTgymEnv
from btgym_aac.strategy import DevStrat_4_11


def sequence(pixel_change, terminal_last, pad_to=None):
    length = len(pixel_change)
    batch = {'pixel_change': np.asarray(pixel_change, dtype=np.float32),
             'terminal': np.array([False] * (length - 1) + [terminal_last]),
             'mask': np.ones(length, dtype=np.float32)}
    return batch_pad(batch, pad_to) if pad_to else batch


def loop_targets(pixel_change, terminal_last, q_max_last, gamma):
    """Plain-loop targets of one sequence's trained frames, the bootstrap Q given."""
    length = len(pixel_change)
    trained = length if terminal_last else length - 1
    targets = []
    for t in range(trained):
        value = sum(gamma ** (k - t) * pixel_change[k] for k in range(t, trained))
        if not terminal_last:
            value = value + gamma ** (trained - t) * q_max_last
        targets.append(value)
    return targets


def test_hand_computed_targets_of_a_bootstrapped_and_a_terminal_sequence():
    first = sequence(np.array([1.0, 2.0, 4.0]).reshape(3, 1, 1), terminal_last=False, pad_to=4)
    second = sequence(np.array([3.0, 5.0]).reshape(2, 1, 1), terminal_last=True)
    parts = pixel_control_targets([first, second], gamma_pc=0.5)
    np.testing.assert_allclose(parts['pc_return'][:, 0, 0], [1 + 0.5 * 2, 2, 0, 0, 3 + 0.5 * 5, 5])
    np.testing.assert_allclose(parts['pc_bootstrap_weight'], [0.25, 0.5, 0, 0, 0, 0])
    np.testing.assert_array_equal(parts['pc_bootstrap_row'], [2, 2, 2, 2, 5, 5])
    np.testing.assert_array_equal(parts['pc_mask'], [1, 1, 0, 0, 1, 1])


@pytest.mark.parametrize('terminal_last', [False, True])
def test_targets_match_a_plain_loop(terminal_last):
    rng = np.random.default_rng(0)
    pixel_change = rng.uniform(size=(6, 3, 2))
    q_max_last = rng.uniform(size=(3, 2))
    parts = pixel_control_targets([sequence(pixel_change, terminal_last, pad_to=8)], gamma_pc=0.9)
    completed = parts['pc_return'] + parts['pc_bootstrap_weight'][:, None, None] * q_max_last
    expected = loop_targets(pixel_change, terminal_last, q_max_last, 0.9)
    np.testing.assert_allclose(completed[:len(expected)], expected, rtol=1e-5)
    assert parts['pc_mask'].tolist() == [1.0] * len(expected) + [0.0] * (8 - len(expected))


def test_the_trainer_bootstraps_from_the_q_heads_own_last_frame():
    env = BTgymEnv(strategy=DevStrat_4_11, render_enabled=False, random_seed=0,
                   episode_duration={'days': 0, 'hours': 8, 'minutes': 0})
    try:
        with tf.Graph().as_default() as graph:
            trainer = Unreal(env=env, task=0, random_seed=0, rollout_length=6, replay_memory_size=30,
                             use_pixel_control=True, gamma_pc=0.8,
                             policy_config={'class_ref': Aac1dPolicy, 'kwargs': {
                                 'lstm_layers': (8,), 'conv_2d_num_filters': (4, 4, 4, 4)}})
            init = tf.global_variables_initializer()
        with tf.Session(graph=graph) as sess:
            sess.run(init)
            trainer.start(sess, None)
            data = trainer.get_data()
            trainer.stop()
            pi, pc = trainer.local_network, trainer.targets.pixel_control
            feed = trainer.process_data(sess, data, [True] * len(data['on_policy']), pi)
            feed[pi.train_phase] = False
            target, q, returns, weight, rows, mask = sess.run(
                [trainer.pc_q_target, pi.pc_q, pc.returns, pc.bootstrap_weight, pc.bootstrap_row, pc.mask],
                feed)
    finally:
        env.close()
    assert mask.sum() >= 1 and weight.max() > 0 and target.shape == returns.shape
    np.testing.assert_allclose(target, returns + weight[:, None, None] * q.max(axis=-1)[rows], rtol=1e-4, atol=1e-6)
