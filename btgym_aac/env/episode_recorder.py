"""`EpisodeRecorder`: an env wrapper keeping a record of every finished episode (for training reports)."""
import threading
import time

import numpy as np


class EpisodeRecorder:
    """Wraps an environment and records every finished episode: total reward, length, test flag, final broker
    value (None outside BTgymEnv), the bar time of its first observation (`start_time`, which tells its data
    window; None outside BTgymEnv), this env's cumulative steps and seconds since wrapping.

    All other attributes are the wrapped environment's; `record_episode` is also set on it.

    Args:
        env: environment with the gymnasium `reset` / `step` API.
    """

    def __init__(self, env):
        self.env = env
        self.episodes = []
        self._lock = threading.Lock()
        self._reward = 0.0
        self._length = 0
        self._is_test = False
        self._start_time = None
        self._total_steps = 0
        self._start = time.perf_counter()

    def __getattr__(self, name):
        return getattr(self.env, name)

    @property
    def record_episode(self):
        """The wrapped env's `record_episode` (BTgymEnv: keep what the 'episode' picture draws); set on it too."""
        return self.env.record_episode

    @record_episode.setter
    def record_episode(self, value):
        self.env.record_episode = value

    def reset(self, *args, **kwargs):
        observation, info = self.env.reset(*args, **kwargs)
        self._reward, self._length = 0.0, 0
        metadata = observation.get('metadata', {}) if isinstance(observation, dict) else {}
        self._is_test = bool(np.any(metadata.get('type', 0)))
        self._start_time = info.get('time') if isinstance(info, dict) else None
        return observation, info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._reward += float(reward)
        self._length += 1
        self._total_steps += 1
        if terminated or truncated:
            with self._lock:
                self.episodes.append({'total_reward': self._reward, 'steps': self._length,
                                      'test': self._is_test, 'final_value': info.get('broker_value'),
                                      'start_time': self._start_time,
                                      'env_steps': self._total_steps,
                                      'seconds': time.perf_counter() - self._start})
        return observation, reward, terminated, truncated, info
