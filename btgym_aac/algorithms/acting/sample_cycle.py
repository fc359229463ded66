"""The train/test episode cycle and data-trial schedule behind a trainer's `get_sample_config`."""
import threading


class SampleCycle:
    """Sample configs of one env's episodes: `train_episodes` train then `test_episodes` test episodes, repeatedly,
    and a new data trial when the sample type changes and every `episodes_per_trial` episodes.

    Args:
        train_episodes, test_episodes: the `episode_train_test_cycle` (not both zero).
        episodes_per_trial: episodes per data trial (>= 1).
    """

    def __init__(self, train_episodes, test_episodes, episodes_per_trial):
        self.cycle = (train_episodes, test_episodes)
        self.episodes_per_trial = episodes_per_trial
        self.train_count = self.test_count = 0
        self.trial_episode = 0
        self.last_sample_type = None

    def _next_sample_type(self):
        num_train, num_test = self.cycle
        if self.train_count == num_train and self.test_count == num_test:
            self.train_count = self.test_count = 0
        if self.train_count < num_train:
            self.train_count += 1
            return 0
        self.test_count += 1
        return 1

    def next_config(self, new_trial=None):
        """Config of the next episode.

        Args:
            new_trial: force (True) or forbid (False) a new trial; None follows the schedule.

        Returns:
            {'episode_config': {...}, 'trial_config': {...}} for `env.reset(**config)`.
        """
        sample_type = self._next_sample_type()
        if new_trial is None:
            new_trial = sample_type != self.last_sample_type or self.trial_episode % self.episodes_per_trial == 0
        self.trial_episode = 1 if new_trial else self.trial_episode + 1
        self.last_sample_type = sample_type
        return {
            'episode_config': dict(get_new=True, sample_type=sample_type, b_alpha=1.0, b_beta=1.0),
            'trial_config': dict(get_new=bool(new_trial), sample_type=sample_type, b_alpha=1.0, b_beta=1.0),
        }


class SampleCycles:
    """One `SampleCycle` per env, made on the env's first request; thread-safe (a worker's runner threads share
    it).

    Args:
        train_test_cycle: the `episode_train_test_cycle`.
        episodes_per_trial: episodes per data trial (>= 1).
    """

    def __init__(self, train_test_cycle, episodes_per_trial):
        self.train_test_cycle = tuple(train_test_cycle)
        self.episodes_per_trial = episodes_per_trial
        self._cycles = {}
        self._lock = threading.Lock()

    def next_config(self, env, new_trial=None):
        """Config of `env`'s next episode (see `SampleCycle.next_config`); `env` None has a cycle of its own."""
        with self._lock:
            cycle = self._cycles.get(id(env))
            if cycle is None:
                cycle = self._cycles[id(env)] = SampleCycle(*self.train_test_cycle,
                                                            episodes_per_trial=self.episodes_per_trial)
            return cycle.next_config(new_trial)
