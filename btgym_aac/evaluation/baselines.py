"""Baseline agents with the acting interface of `LoadedPolicy` (`reset`, `act`, `observe`), and `baseline_agents`
choosing them for an env.

Single-asset and MultiDiscreteEnv runs: buy-and-hold buys every traded asset at the first step (one 'buy' order
of the env's order size each) and holds; random picks every asset's action uniformly and independently.
PortfolioEnv runs: buy-and-hold sends equal weights 1/K on the K assets (no cash) at the first step and then
`KEEP_POSITIONS`, which `episodes.play_episode` turns into a step without a new target, so the portfolio is never
rebalanced; random sends weights drawn from a flat Dirichlet over the assets and cash at every step.

With several assets there are more: buy-and-hold of each asset alone (`buy_and_hold_<asset>`: its 'buy' order, or
all the weight on it), and for PortfolioEnv the equal-weight portfolio rebalanced at every decision (`rebalanced`).
"""
import numpy as np

KEEP_POSITIONS = 'keep_positions'
"""An action meaning 'no new target weights' (see `episodes.keep_positions`)."""
BUY_AND_HOLD, RANDOM, REBALANCED = 'buy_and_hold', 'random', 'rebalanced'


def asset_buy_and_hold(asset):
    """The name of the baseline buying and holding `asset` alone."""
    return '{}_{}'.format(BUY_AND_HOLD, asset)


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
            every asset of `bought` bought at the first step, the others held).
        bought: the assets bought (None: every one of `assets`).
    """

    def __init__(self, action_names, assets=None, bought=None):
        names = list(action_names or ())
        missing = [name for name in ('hold', 'buy') if name not in names]
        if missing:
            raise ValueError('buy-and-hold needs the actions {}; the env has {}'.format(missing, names))
        self.hold, self.buy = names.index('hold'), names.index('buy')
        self.assets = None if assets is None else tuple(assets)
        self.buying = frozenset(self.assets if bought is None else bought) if self.assets is not None else None
        self.bought = False

    def reset(self, observation=None):
        """Starts an episode (the next action buys)."""
        self.bought = False

    def act(self, observation):
        """'buy' at the first step of the episode, 'hold' after (per asset when `assets` is given)."""
        index = self.hold if self.bought else self.buy
        self.bought = True
        if self.assets is None:
            return index
        return {asset: index if asset in self.buying else self.hold for asset in self.assets}


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


class TargetWeightsAgent(BaselineAgent):
    """PortfolioEnv: fixed target weights at the first step, then `KEEP_POSITIONS` (held), or the same targets at
    every step (rebalanced).

    Args:
        weights: dict asset -> weight of the assets invested in (the others get 0).
        assets: the traded assets.
        cash_name: the env's cash key (weight 0).
        rebalance: send the targets again at every step.
    """

    def __init__(self, weights, assets, cash_name, rebalance=False):
        self.weights = {asset: np.full(1, weights.get(asset, 0.0), dtype=np.float32) for asset in assets}
        self.weights[cash_name] = np.zeros(1, dtype=np.float32)
        self.rebalance = rebalance
        self.invested = False

    def reset(self, observation=None):
        """Starts an episode (the next action invests)."""
        self.invested = False

    def act(self, observation):
        """The target weights at the first step of the episode (at every step when rebalancing), else
        `KEEP_POSITIONS`."""
        if self.invested and not self.rebalance:
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
    """The baselines for `env`: buy-and-hold and random; with several assets also each asset's buy-and-hold, and
    for a PortfolioEnv the equal-weight portfolio rebalanced at every decision.

    Args:
        env: evaluation env (BTgymEnv, MultiDiscreteEnv or PortfolioEnv).
        seed: seed of the random baseline.

    Returns:
        dict baseline name -> agent: `BUY_AND_HOLD`, `RANDOM`, then `asset_buy_and_hold(asset)` per asset and
        `REBALANCED` where they apply.
    """
    space = env.action_space
    if not space.is_discrete:
        assets, cash = env.asset_names, env.cash_name
        equal = {asset: 1.0 / len(assets) for asset in assets}
        agents = {BUY_AND_HOLD: TargetWeightsAgent(equal, assets, cash), RANDOM: DirichletAgent(space.assets, seed)}
        agents.update((asset_buy_and_hold(asset), TargetWeightsAgent({asset: 1.0}, assets, cash)) for asset in assets)
        agents[REBALANCED] = TargetWeightsAgent(equal, assets, cash, rebalance=True)
        return agents
    if len(space.assets) == 1:
        return {BUY_AND_HOLD: BuyAndHoldAgent(env.portfolio_actions), RANDOM: RandomAgent(space.one_hot_depth, seed)}
    agents = {BUY_AND_HOLD: BuyAndHoldAgent(env.portfolio_actions, assets=space.assets),
              RANDOM: RandomAgent(len(space.base_actions), seed, assets=space.assets)}
    agents.update((asset_buy_and_hold(asset), BuyAndHoldAgent(env.portfolio_actions, assets=space.assets,
                                                             bought=[asset])) for asset in space.assets)
    return agents
