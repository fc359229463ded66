"""Per-runner experience replay with reward-rebalanced sampling (UNREAL style)."""
from collections import deque

import numpy as np

from btgym_aac.algorithms.common.rollout import Rollout
from btgym_aac.logs import WARNING, get_logger


def _reward_magnitude(frame):
    return abs(float(np.asarray(frame['reward'], dtype=np.float64).reshape(-1)[0]))


def _is_test_frame(frame):
    """Whether the frame's ``state['metadata']['type']`` is truthy (a test-episode frame)."""
    try:
        return bool(np.any(frame['state']['metadata']['type']))
    except (KeyError, TypeError):
        return False


def _continues(previous, frame):
    """False when both frames carry positions and ``frame`` is not the next step of ``previous``'s episode."""
    try:
        before, after = previous['position'], frame['position']
        return before['episode'] == after['episode'] and before['step'] + 1 == after['step']
    except (KeyError, TypeError):
        return True


def _last_terminal_before_end(frames):
    """Index of the last terminal frame among ``frames[:-1]``, or -1."""
    for index in range(len(frames) - 2, -1, -1):
        if frames[index]['terminal']:
            return index
    return -1


class Memory:
    """Replay memory of experience frames with uniform and reward-rebalanced sequence sampling.

    Frames are dicts such as ``{'position': {'episode': e, 'step': s}, 'state': {...}, 'action': one_hot,
    'reward': float, 'value': float, 'terminal': bool, 'r': ..., 'context': ..., 'last_action': ...,
    'last_reward': ...}``; ``reward`` and ``terminal`` are required. Frame ``i`` added (and kept) has the absolute
    index ``i``; the oldest stored frame has index ``_top_frame_index``. Frames with index
    ``>= max_sample_size - 1`` are registered as possible sample ends in ``_zero_reward_indices``
    (``|reward| <= reward_threshold``) or ``_non_zero_reward_indices``.

    Every sample is a contiguous run of one episode: it may end on a terminal frame but never contains one before
    its last frame.
    """

    def __init__(self, history_size, max_sample_size, priority_sample_size, log_level=WARNING,
                 rollout_provider=None, task=-1, reward_threshold=0.1, use_priority_sampling=False, seed=None):
        """
        Args:
            history_size: number of frames kept (oldest dropped first).
            max_sample_size: longest sequence any sampler returns, 1..history_size.
            priority_sample_size: default `sample_priority` size (capped by ``max_sample_size``).
            log_level: logbook level.
            rollout_provider: callable returning a `Rollout`; used by `fill`.
            task: task number, used in the logger name.
            reward_threshold: rewards with ``|r| > reward_threshold`` count as non-zero.
            use_priority_sampling: `sample_priority` returns None unless True.
            seed: seed of the memory's own np.random.Generator (None: fresh entropy).
        """
        if int(history_size) < 1:
            raise ValueError('Memory: history_size must be >= 1, got {}'.format(history_size))
        if not 1 <= int(max_sample_size) <= int(history_size):
            raise ValueError('Memory: max_sample_size must be in [1, history_size={}], got {}'.format(
                history_size, max_sample_size))
        if int(priority_sample_size) < 1:
            raise ValueError('Memory: priority_sample_size must be >= 1, got {}'.format(priority_sample_size))
        self.history_size = int(history_size)
        self.max_sample_size = int(max_sample_size)
        self.priority_sample_size = int(priority_sample_size)
        self.reward_threshold = reward_threshold
        self.rollout_provider = rollout_provider
        self.use_priority_sampling = use_priority_sampling
        self.task = task
        self.log = get_logger('Memory', task, log_level=log_level)
        self._rng = np.random.default_rng(seed)
        self._frames = deque(maxlen=self.history_size)
        self._top_frame_index = 0
        self._zero_reward_indices = deque()
        self._non_zero_reward_indices = deque()

    def __len__(self):
        return len(self._frames)

    def is_full(self):
        return len(self._frames) >= self.history_size

    def add(self, frame):
        """Stores one frame.

        Test-episode frames (truthy ``state['metadata']['type']``) are not stored, nor is a terminal frame that
        directly follows a terminal one. When the last stored frame is non-terminal and the new frame does not
        continue its episode (``position`` episode equal, step + 1), the stored frame is replaced by a copy marked
        terminal, so that no sample spans the gap.

        Args:
            frame: experience dict.
        """
        if _is_test_frame(frame):
            self.log.debug('Test-episode frame {} not stored.'.format(frame.get('position')))
            return
        if self._frames:
            previous = self._frames[-1]
            if frame['terminal'] and previous['terminal']:
                self.log.warning('Sequential terminal frame discarded: {} -> {}'.format(
                    previous.get('position'), frame.get('position')))
                return
            if not previous['terminal'] and not _continues(previous, frame):
                self._frames[-1] = dict(previous, terminal=True)
                self.log.warning('{} marked terminal: next frame {} does not continue it.'.format(
                    previous.get('position'), frame.get('position')))

        frame_index = self._top_frame_index + len(self._frames)
        was_full = self.is_full()
        self._frames.append(frame)
        if frame_index >= self.max_sample_size - 1:
            if _reward_magnitude(frame) <= self.reward_threshold:
                self._zero_reward_indices.append(frame_index)
            else:
                self._non_zero_reward_indices.append(frame_index)

        if was_full:
            self._top_frame_index += 1
            lowest_end_index = self._top_frame_index + self.max_sample_size - 1
            for indices in (self._zero_reward_indices, self._non_zero_reward_indices):
                while indices and indices[0] < lowest_end_index:
                    indices.popleft()

    def add_rollout(self, rollout):
        """Stores every frame of a `Rollout` in order (see `add` for episode-continuation handling)."""
        for index in range(rollout.size):
            self.add(rollout.get_frame(index))

    def fill(self):
        """Adds rollouts from ``rollout_provider`` until the memory is full."""
        if self.rollout_provider is None:
            raise RuntimeError('Memory.fill: no rollout_provider was given')
        while not self.is_full():
            self.add_rollout(self.rollout_provider())

    def _rollout_of(self, first, last):
        """`Rollout` of stored frames at positions first..last (inclusive)."""
        rollout = Rollout()
        rollout.add_memory_sample(self._frames[position] for position in range(first, last + 1))
        return rollout

    def sample_uniform(self, sequence_size):
        """Samples a run of up to ``sequence_size`` successive frames (at most ``max_sample_size``) from a uniformly
        chosen start.

        Works on a partly filled memory: the start is uniform over the positions where a whole window fits; a
        memory holding fewer frames than ``sequence_size`` starts at its oldest frame and returns the shorter run.
        A terminal start frame is skipped (the sample starts the next episode); the run stops after the first
        terminal frame, so it may be shorter than ``sequence_size``.

        Args:
            sequence_size: maximum number of frames, >= 1.

        Returns:
            `Rollout` of 1..min(sequence_size, max_sample_size) frames.
        """
        if sequence_size < 1:
            raise ValueError('Memory.sample_uniform: sequence_size must be >= 1, got {}'.format(sequence_size))
        stored = len(self._frames)
        if stored == 0:
            raise ValueError('Memory.sample_uniform: the memory is empty')
        sequence_size = min(int(sequence_size), self.max_sample_size)
        start = int(self._rng.integers(0, max(stored - sequence_size, 0) + 1))
        if self._frames[start]['terminal'] and start + 1 < stored:
            start += 1
        last = min(start + sequence_size, stored) - 1
        for position in range(start, last):
            if self._frames[position]['terminal']:
                last = position
                break
        return self._rollout_of(start, last)

    def sample_priority(self, size=None, exact_size=False, skewness=2, sample_attempts=100):
        """Samples frames ending on a non-zero-reward frame with probability ``1 / skewness`` (rebalanced replay).

        The window of ``size`` frames ending at a random registered end frame of the chosen pool (the other pool
        if it is empty) is checked for a terminal frame before its end. With ``exact_size=False`` the part after
        that terminal is returned (shorter, but contiguous and still ending on the chosen frame); with
        ``exact_size=True`` another end frame of the same pool is drawn, up to ``sample_attempts`` times, after
        which RuntimeError is raised.

        Args:
            size: number of frames; default ``priority_sample_size``; capped by ``max_sample_size``.
            exact_size: require exactly ``size`` frames (reward prediction).
            skewness: >= 1; probability of ending on a non-zero reward is ``1 / skewness``.
            sample_attempts: draws allowed when ``exact_size``.

        Returns:
            `Rollout`, or None when the memory was made with ``use_priority_sampling=False``.
        """
        if not self.use_priority_sampling:
            return None
        if skewness < 1:
            raise ValueError('Memory.sample_priority: skewness must be >= 1, got {}'.format(skewness))
        size = min(int(size or self.priority_sample_size), self.max_sample_size)
        pool = self._choose_pool(skewness)
        for _ in range(max(int(sample_attempts), 1)):
            end = pool[int(self._rng.integers(len(pool)))] - self._top_frame_index
            start = end - size + 1
            cut = _last_terminal_before_end([self._frames[position] for position in range(start, end + 1)])
            if cut < 0:
                return self._rollout_of(start, end)
            if not exact_size:
                return self._rollout_of(start + cut + 1, end)
        raise RuntimeError('Memory.sample_priority: no run of {} successive frames without an inner terminal '
                           'found in {} attempts; episodes are too short for this size'.format(size, sample_attempts))

    def _choose_pool(self, skewness):
        """Non-zero-reward end indices with probability 1/skewness, else zero-reward ones; an empty pool is avoided."""
        zero, non_zero = self._zero_reward_indices, self._non_zero_reward_indices
        if not zero and not non_zero:
            raise ValueError('Memory.sample_priority: needs at least {} stored frames, has {}'.format(
                self.max_sample_size, len(self._frames)))
        if not zero:
            return non_zero
        if not non_zero:
            return zero
        return non_zero if self._rng.random() < 1.0 / skewness else zero


class DummyMemory:
    """Stand-in used when no auxiliary task needs replay: stores nothing, samples None, always full."""

    def __init__(self, *args, **kwargs):
        pass

    def __len__(self):
        return 0

    def is_full(self):
        return True

    def add(self, frame):
        pass

    def add_rollout(self, rollout):
        pass

    def fill(self):
        pass

    def sample_uniform(self, sequence_size):
        return None

    def sample_priority(self, size=None, exact_size=False, skewness=2, sample_attempts=100):
        return None


_DummyMemory = DummyMemory
