"""The envs of a training run: built from `{'class_ref', 'kwargs'}` configs with per-env seeds, none of them a data
master, and wrapped in `EpisodeRecorder`, which keeps a record of every finished episode for the training reports."""
import threading
import time

import numpy as np

DATA_MASTER_KWARGS = ('port', 'data_port', 'data_master')


def build_from_config(config, **overrides):
    """Instantiates `config['class_ref'](**config['kwargs'], **overrides)`."""
    if not isinstance(config, dict) or 'class_ref' not in config:
        raise ValueError('a config must be a dict with `class_ref` and optional `kwargs`, got {!r}'.format(config))
    return config['class_ref'](**dict(config.get('kwargs', {}), **overrides))


def env_seed_kwargs(env_config, seed):
    """The seed argument of the env class (`random_seed` of BTgymEnv, `seed` of TestModeEnv), unless the config
    sets it already."""
    from btgym_aac.class_refs import resolved
    from btgym_aac.env import BTgymEnv
    from btgym_aac.env.gym_wrappers import TestModeEnv

    names = [name for cls, name in ((BTgymEnv, 'random_seed'), (TestModeEnv, 'seed'))
             if issubclass(resolved(env_config['class_ref']), cls)]
    if seed is None or not names or names[0] in env_config.get('kwargs', {}):
        return {}
    return {names[0]: seed}


def training_env_config(env_config):
    """`env_config` for the envs of a training run, none of them a data master.

    Every env of a run gets the config's own data (the original made the run's first env a data master serving
    the others), so `port`, `data_port` and `data_master` are dropped; an env config with `data_master=False`
    keeps them, its envs taking their data from a data master env outside the run.
    """
    kwargs = dict(env_config.get('kwargs', {}))
    if kwargs.get('data_master', True) is False:
        return env_config
    for key in DATA_MASTER_KWARGS:
        kwargs.pop(key, None)
    return dict(env_config, kwargs=kwargs)


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
