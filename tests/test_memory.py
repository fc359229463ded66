import numpy as np
import pytest

from btgym_aac.algorithms.common.memory import DummyMemory, Memory, _DummyMemory
from btgym_aac.algorithms.common.rollout import Rollout


def make_frame(episode, step, reward=0.0, terminal=False, test=False):
    return {
        'position': {'episode': episode, 'step': step},
        'state': {'external': np.full(2, float(step)), 'metadata': {'type': int(test)}},
        'action': np.eye(3)[step % 3],
        'reward': reward,
        'value': 0.0,
        'terminal': terminal,
        'r': [0.0],
        'context': (np.zeros((1, 2)), np.zeros((1, 2))),
    }


def add_episodes(memory, lengths, reward_fn=lambda episode, step: 0.0):
    for episode, length in enumerate(lengths):
        for step in range(length):
            memory.add(make_frame(episode, step, reward_fn(episode, step), terminal=step == length - 1))


def positions(rollout):
    return list(zip(rollout['position']['episode'], rollout['position']['step']))


def assert_contiguous(rollout):
    episodes, steps = rollout['position']['episode'], rollout['position']['step']
    assert len(set(episodes)) == 1
    assert steps == list(range(steps[0], steps[0] + rollout.size))
    assert not any(rollout['terminal'][:-1])


def test_sizes_and_fullness():
    memory = Memory(history_size=10, max_sample_size=3, priority_sample_size=2)
    add_episodes(memory, [6])
    assert len(memory) == 6 and not memory.is_full()
    add_episodes(memory, [0, 8])
    assert len(memory) == 10 and memory.is_full()


def test_wrap_around_keeps_absolute_indices():
    memory = Memory(history_size=10, max_sample_size=3, priority_sample_size=2, use_priority_sampling=True)
    rewards = {step: (1.0 if step % 4 == 0 else 0.0) for step in range(15)}
    for step in range(15):
        memory.add(make_frame(0, step, rewards[step]))
    assert memory._top_frame_index == 5
    assert memory._frames[0]['position']['step'] == 5
    # sample ends must leave room for max_sample_size frames inside the memory: indices 5 + 3 - 1 .. 14
    assert list(memory._non_zero_reward_indices) == [8, 12]
    assert list(memory._zero_reward_indices) == [7, 9, 10, 11, 13, 14]
    for _ in range(50):
        sample = memory.sample_priority(size=3)
        steps = sample['position']['step']
        assert sample.size == 3 and steps[0] >= 5 and steps[-1] >= 7


def test_early_indices_are_not_sample_ends():
    memory = Memory(history_size=10, max_sample_size=4, priority_sample_size=2)
    for step in range(5):
        memory.add(make_frame(0, step, reward=1.0))
    assert list(memory._non_zero_reward_indices) == [3, 4] and not memory._zero_reward_indices


def test_terminal_handling():
    memory = Memory(history_size=10, max_sample_size=2, priority_sample_size=2)
    memory.add(make_frame(0, 0))
    memory.add(make_frame(0, 1, terminal=True))
    memory.add(make_frame(0, 2, terminal=True))
    assert len(memory) == 2

    memory.add(make_frame(1, 0))
    gap_frame = memory._frames[-1]
    memory.add(make_frame(1, 5))
    assert memory._frames[-2]['terminal'] and not gap_frame['terminal']
    assert memory._frames[-2]['position'] == {'episode': 1, 'step': 0}

    memory.add(make_frame(2, 0, test=True))
    assert len(memory) == 4


def test_add_rollout_stores_frames_in_order():
    memory = Memory(history_size=10, max_sample_size=2, priority_sample_size=2)
    rollout = Rollout()
    for step in range(4):
        rollout.add(make_frame(3, step, terminal=step == 3))
    memory.add_rollout(rollout)
    assert [frame['position']['step'] for frame in memory._frames] == [0, 1, 2, 3]
    assert memory._frames[2]['context'][0].shape == (1, 2)


def test_uniform_sample_on_partly_filled_memory():
    memory = Memory(history_size=100, max_sample_size=5, priority_sample_size=2, seed=1)
    with pytest.raises(ValueError, match='empty'):
        memory.sample_uniform(4)
    for step in range(3):
        memory.add(make_frame(0, step))
    sample = memory.sample_uniform(10)
    assert positions(sample) == [(0, 0), (0, 1), (0, 2)]
    processed = sample.process(gamma=0.9, size=10)
    np.testing.assert_array_equal(processed['mask'], [1, 1, 1] + [0] * 7)


def test_uniform_samples_are_contiguous_and_stop_at_terminal():
    memory = Memory(history_size=40, max_sample_size=5, priority_sample_size=2, seed=2)
    add_episodes(memory, [3, 7, 2, 9, 4, 6, 9])
    sizes = set()
    for _ in range(300):
        sample = memory.sample_uniform(5)
        assert_contiguous(sample)
        assert 1 <= sample.size <= 5
        sizes.add(sample.size)
    assert 5 in sizes and min(sizes) < 5


def test_uniform_samples_never_exceed_max_sample_size():
    memory = Memory(history_size=40, max_sample_size=3, priority_sample_size=2, seed=4)
    add_episodes(memory, [40])
    sizes = {memory.sample_uniform(20).size for _ in range(50)}
    assert sizes == {3}


def test_priority_samples_are_contiguous():
    memory = Memory(history_size=60, max_sample_size=6, priority_sample_size=4, use_priority_sampling=True, seed=3)
    add_episodes(memory, [3, 5, 2, 8, 4, 7, 3, 9, 5, 6, 4, 4], reward_fn=lambda e, s: float(s % 3 == 0))
    for _ in range(300):
        assert_contiguous(memory.sample_priority(size=6))
    for _ in range(300):
        exact = memory.sample_priority(size=4, exact_size=True)
        assert exact.size == 4
        assert_contiguous(exact)


def test_exact_priority_sample_fails_clearly_on_short_episodes():
    memory = Memory(history_size=20, max_sample_size=5, priority_sample_size=5, use_priority_sampling=True, seed=4)
    add_episodes(memory, [2] * 10)
    with pytest.raises(RuntimeError, match='too short'):
        memory.sample_priority(exact_size=True)
    assert_contiguous(memory.sample_priority())


def test_fill_uses_rollout_provider():
    def provide():
        rollout = Rollout()
        for step in range(3):
            rollout.add(make_frame(len(provided), step, terminal=step == 2))
        provided.append(rollout)
        return rollout

    provided = []
    memory = Memory(history_size=7, max_sample_size=2, priority_sample_size=2, rollout_provider=provide)
    memory.fill()
    assert memory.is_full() and len(provided) == 3
    assert [frame['position']['episode'] for frame in memory._frames] == [0, 1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize('skewness', [2, 4])
def test_share_of_non_zero_reward_ends_follows_skewness(skewness):
    memory = Memory(history_size=200, max_sample_size=4, priority_sample_size=3, use_priority_sampling=True,
                    seed=5 + skewness)
    add_episodes(memory, [50] * 4, reward_fn=lambda e, s: 1.0 if s % 10 == 9 else 0.0)
    draws = 2000
    non_zero_ends = sum(
        abs(memory.sample_priority(skewness=skewness)['reward'][-1]) > memory.reward_threshold for _ in range(draws)
    )
    assert abs(non_zero_ends / draws - 1.0 / skewness) < 0.05


def test_priority_sampling_switched_off_and_seeded_reproducibility():
    assert Memory(10, 2, 2).sample_priority() is None
    samples = []
    for _ in range(2):
        memory = Memory(history_size=30, max_sample_size=4, priority_sample_size=3, use_priority_sampling=True,
                        seed=11)
        add_episodes(memory, [10, 10, 10], reward_fn=lambda e, s: float(s == 5))
        samples.append([positions(memory.sample_priority()) + positions(memory.sample_uniform(3))
                        for _ in range(20)])
    assert samples[0] == samples[1]


def test_dummy_memory():
    assert _DummyMemory is DummyMemory
    memory = DummyMemory(history_size=5, anything=True)
    memory.add(make_frame(0, 0))
    assert memory.is_full() and len(memory) == 0
    assert memory.sample_uniform(3) is None and memory.sample_priority(exact_size=True) is None


def test_bad_configuration_is_rejected():
    with pytest.raises(ValueError, match='max_sample_size'):
        Memory(history_size=3, max_sample_size=5, priority_sample_size=2)
    with pytest.raises(RuntimeError, match='rollout_provider'):
        Memory(10, 2, 2).fill()


def test_uniform_sample_starts_are_uniform_over_every_window_of_a_wrapped_memory():
    """A full memory that has dropped its 45 oldest frames (one episode, no terminal): 5200 draws of 5 frames start
    at each of the 26 positions where a whole window fits (chi-square below the 0.1% critical value 52.62, every
    position drawn, the last one included), and every sample is the 5 successive stored frames from its start:
    absolute indices 45..74, never running past the newest frame back to the oldest ones."""
    history, size, added, draws = 30, 5, 75, 5200
    memory = Memory(history_size=history, max_sample_size=size, priority_sample_size=2, seed=21)
    for step in range(added):
        memory.add(make_frame(0, step))
    oldest = added - history
    assert memory.is_full() and memory._top_frame_index == oldest
    counts = np.zeros(history - size + 1)
    for _ in range(draws):
        steps = memory.sample_uniform(size)['position']['step']
        assert steps == list(range(steps[0], steps[0] + size))
        assert oldest <= steps[0] and steps[-1] <= added - 1
        counts[steps[0] - oldest] += 1
    expected = draws / len(counts)
    assert np.all(counts > 0)
    assert np.sum((counts - expected) ** 2 / expected) < 52.62, counts  # 25 degrees of freedom, p = 0.001


def test_uniform_sample_skips_a_terminal_start_to_the_next_episode():
    """Episodes of 4 frames filling a memory of 40 (positions 0..39, terminals at 3, 7, ..., 39): starts are drawn
    uniformly over 0..37 and one drawn on a terminal frame moves to the next frame, so no sample starts on a
    terminal frame, an episode's first frame (but the oldest) starts about 2/38 of the samples, other frames 1/38,
    the newest two none; every sample stays within one episode and ends on its terminal frame or after 3 frames."""
    history, size, length, draws = 40, 3, 4, 7600
    memory = Memory(history_size=history, max_sample_size=size, priority_sample_size=2, seed=22)
    add_episodes(memory, [length] * 12)
    assert memory.is_full() and memory._frames[0]['position'] == {'episode': 2, 'step': 0}
    counts = np.zeros(history)
    for _ in range(draws):
        sample = memory.sample_uniform(size)
        assert_contiguous(sample)
        assert sample.size == size or sample['terminal'][-1]
        counts[(sample['position']['episode'][0] - 2) * length + sample['position']['step'][0]] += 1
    drawn = history - size + 1
    terminal = {position for position, frame in enumerate(memory._frames) if frame['terminal']}
    assert terminal == set(range(length - 1, history, length))
    for position in range(history):
        share = (position < drawn and position not in terminal) + (position - 1 in terminal and position <= drawn)
        expected = draws * share / drawn
        assert abs(counts[position] - expected) <= 4 * np.sqrt(expected), (position, counts[position], expected)
