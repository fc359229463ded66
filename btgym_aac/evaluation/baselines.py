"""Baseline agents with the acting interface of `LoadedPolicy` (`reset`, `act`, `observe`)."""
import numpy as np


class BuyAndHoldAgent:
    """Buys at the first step of every episode and holds afterwards (the env's end rules close the position).

    Args:
        action_names: the env's discrete action names (`portfolio_actions`); needs 'hold' and 'buy'.
    """

    def __init__(self, action_names):
        names = list(action_names or ())
        missing = [name for name in ('hold', 'buy') if name not in names]
        if missing:
            raise ValueError('buy-and-hold needs the actions {}; the env has {}'.format(missing, names))
        self.hold, self.buy = names.index('hold'), names.index('buy')
        self.bought = False

    def reset(self, observation=None):
        """Starts an episode (the next action buys)."""
        self.bought = False

    def act(self, observation):
        """'buy' at the first step of the episode, 'hold' after."""
        if self.bought:
            return self.hold
        self.bought = True
        return self.buy

    def observe(self, reward):
        """Rewards do not change the baseline."""


class RandomAgent:
    """Picks actions uniformly at random from its own seeded generator.

    Args:
        num_actions: number of discrete actions.
        seed: generator seed; the same seed and call sequence give the same actions.
    """

    def __init__(self, num_actions, seed):
        if num_actions < 1:
            raise ValueError('RandomAgent needs at least one action, got {}'.format(num_actions))
        self.num_actions = int(num_actions)
        self.rng = np.random.default_rng(seed)

    def reset(self, observation=None):
        """Episodes need no preparation; the generator continues."""

    def act(self, observation):
        """A uniformly drawn action index."""
        return int(self.rng.integers(self.num_actions))

    def observe(self, reward):
        """Rewards do not change the baseline."""
