"""Baseline agents with the acting interface of `LoadedPolicy` (`reset`, `act`, `observe`), and `baseline_agents`
choosing them for an env.

Single-asset and MultiDiscreteEnv runs: buy-and-hold buys every traded asset at the first step (one 'buy' order
of the env's order size each) and holds; random picks every asset's action uniformly and independently.
PortfolioEnv runs: buy-and-hold sends equal weights 1/K on the K assets (no cash) at the first step and then
`KEEP_POSITIONS`, which `episodes.play_episode` turns into a step without a new target, so the portfolio is never
rebalanced; random sends weights drawn from a flat Dirichlet over the assets and cash at every step.
"""
import numpy as np

KEEP_POSITIONS = 'keep_positions'
"""An action meaning 'no new target weights' (see `episodes.keep_positions`)."""


class BaselineAgent:
    """No preparation per episode, no learning from rewards."""

    def reset(self, observation=None):
        """Episodes need no preparation."""

    def observe(self, reward):
        """Rewards do not change the baseline."""


class BuyAndHoldAgent(BaselineAgent):
    """Buys at the first step of every episode and holds afterwards (the env's end rules close the positions).

    Args:
        action_names: the env's discrete action names (`portfolio_actions`); needs 'hold' and 'buy'.
        assets: None (one asset: actions are indices) or the traded assets (actions are dicts asset -> index,
            every asset bought at the first step).
    """

    def __init__(self, action_names, assets=None):
        names = list(action_names or ())
        missing = [name for name in ('hold', 'buy') if name not in names]
        if missing:
            raise ValueError('buy-and-hold needs the actions {}; the env has {}'.format(missing, names))
        self.hold, self.buy = names.index('hold'), names.index('buy')
        self.assets = None if assets is None else tuple(assets)
        self.bought = False

    def reset(self, observation=None):
        """Starts an episode (the next action buys)."""
        self.bought = False

    def act(self, observation):
        """'buy' at the first step of the episode, 'hold' after (for every asset when `assets` is given)."""
        index = self.hold if self.bought else self.buy
        self.bought = True
        return index if self.assets is None else {asset: index for asset in self.assets}


class RandomAgent(BaselineAgent):
    """Picks actions uniformly at random from its own seeded generator.

    Args:
        num_actions: number of discrete actions (per asset when `assets` is given).
        seed: generator seed; the same seed and call sequence give the same actions.
        assets: None (actions are indices) or the traded assets (actions are dicts asset -> index, drawn
            independently for every asset, in the order of `assets`).
    """

    def __init__(self, num_actions, seed, assets=None):
        if num_actions < 1:
            raise ValueError('RandomAgent needs at least one action, got {}'.format(num_actions))
        self.num_actions = int(num_actions)
        self.assets = None if assets is None else tuple(assets)
        self.rng = np.random.default_rng(seed)

    def act(self, observation):
        """A uniformly drawn action index (a dict of them when `assets` is given)."""
        if self.assets is None:
            return int(self.rng.integers(self.num_actions))
        indices = self.rng.integers(self.num_actions, size=len(self.assets))
        return {asset: int(index) for asset, index in zip(self.assets, indices)}


class EqualWeightHoldAgent(BaselineAgent):
    """PortfolioEnv buy-and-hold: equal weights on the assets at the first step, then `KEEP_POSITIONS`.

    Args:
        assets: the traded assets.
        cash_name: the env's cash key (weight 0).
    """

    def __init__(self, assets, cash_name):
        self.weights = {asset: np.full(1, 1.0 / len(assets), dtype=np.float32) for asset in assets}
        self.weights[cash_name] = np.zeros(1, dtype=np.float32)
        self.invested = False

    def reset(self, observation=None):
        """Starts an episode (the next action invests)."""
        self.invested = False

    def act(self, observation):
        """The equal weights at the first step of the episode, `KEEP_POSITIONS` after."""
        if self.invested:
            return KEEP_POSITIONS
        self.invested = True
        return {key: value.copy() for key, value in self.weights.items()}


class DirichletAgent(BaselineAgent):
    """PortfolioEnv random agent: weights drawn from Dirichlet(1, ..., 1) over `keys` at every step.

    Args:
        keys: the action keys (assets and cash), in draw order.
        seed: generator seed; the same seed and call sequence give the same weights.
    """

    def __init__(self, keys, seed):
        self.keys = tuple(keys)
        self.rng = np.random.default_rng(seed)

    def act(self, observation):
        """dict key -> 1-element float32 weight; the weights sum to 1 (up to float32 rounding)."""
        weights = self.rng.dirichlet(np.ones(len(self.keys)))
        return {key: np.array([weight], dtype=np.float32) for key, weight in zip(self.keys, weights)}


def baseline_agents(env, seed):
    """The buy-and-hold and random baselines for `env`.

    Args:
        env: evaluation env (BTgymEnv, MultiDiscreteEnv or PortfolioEnv).
        seed: seed of the random baseline.

    Returns:
        (buy-and-hold agent, random agent).
    """
    space = env.action_space
    if not space.is_discrete:
        return EqualWeightHoldAgent(env.asset_names, env.cash_name), DirichletAgent(space.assets, seed)
    if len(space.assets) == 1:
        return BuyAndHoldAgent(env.portfolio_actions), RandomAgent(space.one_hot_depth, seed)
    return (BuyAndHoldAgent(env.portfolio_actions, assets=space.assets),
            RandomAgent(len(space.base_actions), seed, assets=space.assets))
