"""A BTgymEnv wrapper with the spaces that Stable-Baselines3 and similar libraries accept.

Such libraries take a Box, or a Dict of Boxes, as observations, and a Discrete, MultiDiscrete or Box action;
`BTgymEnv` observes a Dict that nests dicts (`metadata`, a multi-asset env's `external` of one Box per asset) and
acts through an `ActionDictSpace` of one Discrete per asset (a Box weight per asset and cash for PortfolioEnv).
Example with SB3::

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


def _boxes_of(space):
    """{key: Box} of a Dict observation space: its Boxes, and those of its nested Dicts but `metadata` as
    'outer/inner'."""
    boxes = {}
    for key, inner in space.spaces.items():
        if isinstance(inner, spaces.Box):
            boxes[key] = inner
        elif isinstance(inner, spaces.Dict) and key != 'metadata':
            boxes.update(('{}/{}'.format(key, name), leaf) for name, leaf in inner.spaces.items()
                         if isinstance(leaf, spaces.Box))
    return boxes


class SimpleSpaces(gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """The env with a Dict of its Box observations, each as a vector (or all in one float32 vector), and an action
    of a plain space: Discrete for one asset, MultiDiscrete (one entry per asset, in the env's order) for several,
    and for a PortfolioEnv a Box in [-1, 1] (the range SB3 recommends) per asset and cash, in the env's order, whose
    value a is the target weight (a + 1) / 2 before the env normalises the weights to sum 1.

    Args:
        env: a `BTgymEnv`, `MultiDiscreteEnv` or `PortfolioEnv` (or a wrapper of one).
        keys: observation keys to keep, each a Box, those of nested dicts as 'outer/inner' (default: every Box,
            and every Box of a nested dict but `metadata`: a multi-asset env's `external/<asset>`).
        flatten: observe one float32 vector, the kept keys' values concatenated in key order.

    The wrapper records its arguments, so that `env.spec` names it and `gymnasium.make(env.spec)` makes it again.

    Raises:
        ValueError: a key is missing or not a Box, or no Box is left.
    """

    def __init__(self, env, keys=None, flatten=False):
        keys = None if keys is None else list(keys)
        gymnasium.utils.RecordConstructorArgs.__init__(self, keys=keys, flatten=flatten)
        gymnasium.Wrapper.__init__(self, env)
        observed = _boxes_of(env.observation_space)
        keys = sorted(observed) if keys is None else keys
        bad = [key for key in keys if key not in observed]
        if bad or not keys:
            raise ValueError('keys must name Box observations of {}; got {} (not Boxes or missing: {})'.format(
                sorted(env.observation_space.spaces), keys, bad))
        self.keys = list(keys)
        self.flatten = bool(flatten)
        self._boxes = spaces.Dict({key: _as_vector(observed[key]) for key in keys})
        if self.flatten:
            flat = spaces.flatten_space(self._boxes)
            self.observation_space = spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32),
                                                dtype=np.float32)
        else:
            self.observation_space = self._boxes
        self.action_keys = list(env.unwrapped.action_space.assets)
        self.discrete = env.unwrapped.action_space.is_discrete
        if not self.discrete:
            self.action_space = spaces.Box(-1.0, 1.0, (len(self.action_keys),), dtype=np.float32)
        elif len(self.action_keys) == 1:
            self.action_space = spaces.Discrete(len(env.unwrapped.portfolio_actions))
        else:
            self.action_space = spaces.MultiDiscrete([len(env.unwrapped.portfolio_actions)] * len(self.action_keys))

    def observation(self, observation):
        """The wrapped env's observation as this wrapper observes it (for acting on the unwrapped env's
        observations, e.g. with a model trained on the wrapper).

        Args:
            observation: an observation of the wrapped env.

        Returns:
            dict key -> vector, or one float32 vector with `flatten`.
        """
        kept = {key: np.reshape(_leaf(observation, key), -1) for key in self.keys}
        if self.flatten:
            return spaces.flatten(self._boxes, kept).astype(np.float32)
        return kept

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        return self.observation(observation), info

    def env_action(self, action):
        """The wrapped env's action for an action of this wrapper's space: an index, a dict asset -> index, or a
        dict asset or cash -> 1-element weight ((a + 1) / 2 of the action's a)."""
        if not self.discrete:
            weights = (np.clip(np.asarray(action, dtype=np.float32).reshape(-1), -1.0, 1.0) + 1.0) / 2.0
            return {key: weights[index:index + 1] for index, key in enumerate(self.action_keys)}
        if len(self.action_keys) == 1:
            return int(action)
        return {key: int(index) for key, index in zip(self.action_keys, np.asarray(action).reshape(-1))}

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(self.env_action(action))
        return self.observation(observation), reward, terminated, truncated, info


def _leaf(observation, key):
    """The value of `key` ('outer/inner' for a nested one) in an observation dict."""
    outer, _, inner = key.partition('/')
    return observation[outer][inner] if inner else observation[outer]
