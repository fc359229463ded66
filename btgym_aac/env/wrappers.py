"""A BTgymEnv wrapper with the spaces that Stable-Baselines3 and similar libraries accept.

Such libraries take a Box, or a Dict of Boxes, as observations, and a Discrete action; `BTgymEnv` observes a Dict
that nests dicts (`metadata`, DevStrat_4_11_1's `external`) and acts through an `ActionDictSpace` of one
Discrete per asset. Example with SB3::

    from stable_baselines3 import PPO
    from btgym_aac.env.wrappers import SimpleSpaces

    env = SimpleSpaces(gymnasium.make('btgym_aac/BTgymDevStrat_4_11-v0'))
    PPO('MultiInputPolicy', env).learn(20000)
"""
import gymnasium
import numpy as np
from gymnasium import spaces


def _as_vector(space):
    """A Box as a 1-D Box of its values (SB3 takes 3-D float Boxes for images and warns of 2-D ones)."""
    return spaces.Box(space.low.reshape(-1), space.high.reshape(-1), dtype=space.dtype)


class SimpleSpaces(gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """The env with a Dict of its Box observations, each as a vector (or all in one float32 vector), and a Discrete
    action.

    Args:
        env: a single-asset `BTgymEnv` (or a wrapper of one).
        keys: observation keys to keep, each a Box (default: every top-level Box; nested dicts are left out).
        flatten: observe one float32 vector, the kept keys' values concatenated in key order.

    The wrapper records its arguments, so that `env.spec` names it and `gymnasium.make(env.spec)` makes it again.

    Raises:
        ValueError: a key is missing or not a Box, no Box is left, or the env trades several assets.
    """

    def __init__(self, env, keys=None, flatten=False):
        keys = None if keys is None else list(keys)
        gymnasium.utils.RecordConstructorArgs.__init__(self, keys=keys, flatten=flatten)
        gymnasium.Wrapper.__init__(self, env)
        observed = env.observation_space.spaces
        keys = sorted(key for key, space in observed.items() if isinstance(space, spaces.Box)) \
            if keys is None else keys
        bad = [key for key in keys if not isinstance(observed.get(key), spaces.Box)]
        if bad or not keys:
            raise ValueError('keys must name Box observations of {}; got {} (not Boxes or missing: {})'.format(
                sorted(observed), keys, bad))
        base = env.unwrapped
        if len(base.asset_names) != 1 or not base.portfolio_actions:
            raise ValueError('SimpleSpaces needs one asset with discrete actions, got assets {} and actions {}'
                             .format(list(base.asset_names), base.portfolio_actions))
        self.keys = list(keys)
        self.flatten = bool(flatten)
        self._boxes = spaces.Dict({key: _as_vector(observed[key]) for key in keys})
        if self.flatten:
            flat = spaces.flatten_space(self._boxes)
            self.observation_space = spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32),
                                                dtype=np.float32)
        else:
            self.observation_space = self._boxes
        self.action_space = spaces.Discrete(len(base.portfolio_actions))

    def observation(self, observation):
        """The wrapped env's observation as this wrapper observes it (for acting on the unwrapped env's
        observations, e.g. with a model trained on the wrapper).

        Args:
            observation: an observation of the wrapped env.

        Returns:
            dict key -> vector, or one float32 vector with `flatten`.
        """
        kept = {key: np.reshape(observation[key], -1) for key in self.keys}
        if self.flatten:
            return spaces.flatten(self._boxes, kept).astype(np.float32)
        return kept

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        return self.observation(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(int(action))
        return self.observation(observation), reward, terminated, truncated, info
