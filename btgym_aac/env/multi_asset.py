"""Environments trading several assets at once: `MultiDiscreteEnv` (one discrete action per asset) and
`PortfolioEnv` (target weights over cash and the assets)."""
import numpy as np

from btgym_aac.env.base import BTgymEnv
from btgym_aac.env.components import normalized_weights
from btgym_aac.spaces import ActionDictSpace
from btgym_aac.strategy.base import SKIP_ACTION_KEY, BTgymBaseStrategy

PORTFOLIO_SKIP_FRAME = 10
"""PortfolioEnv's `skip_frame` when neither the call nor the strategy's default sets one above 1 (the original's
portfolio notebook's)."""


def _strategy_default(kwargs, name):
    """The default of strategy param `name` of the strategy that `kwargs` (BTgymEnv's) will build."""
    return getattr((kwargs.get('strategy') or BTgymBaseStrategy).params, name)


class MultiDiscreteEnv(BTgymEnv):
    """BTgymEnv trading every asset of `asset_names`, each with one of the strategy's `portfolio_actions` per step.

    The dataset (`dataset=`, required) holds one data line per asset and may hold information-only lines, usually a
    `BTgymMultiData`; every asset must be one of its data lines. `asset_names` defaults to the strategy's, or to
    every data line when the strategy's names a line the dataset lacks (`BTgymBaseStrategy`'s 'default_asset'),
    so that `MultiDiscreteEnv(dataset=...)` trades every line. The action space is an `ActionDictSpace` of
    `{asset: Discrete(len(portfolio_actions))}`; `step()` takes such a dict, or one index applied to every asset.
    `action_encoding` sets how policies see it: 'joint' (default, the original's: one categorical over every
    combination of the assets' actions, N**K of them) or 'per_asset' (one categorical per asset: K * N logits,
    for many assets). All other arguments are BTgymEnv's. The strategy's statistics and reward cover the whole
    portfolio (see `strategy.broker_statistics`).
    """
    logger_name = 'BTgymMultiDataShell'

    def __init__(self, action_encoding='joint', **kwargs):
        self.action_encoding = action_encoding
        super().__init__(**kwargs)

    def _make_dataset(self, kwargs):
        """The `dataset=` given (or the data master's).

        Raises:
            ValueError: no dataset given.
        """
        if kwargs.get('dataset') is None and not self._data_master.is_client:
            raise ValueError('{} needs dataset=: a BTgymMultiData with one data line per asset (information-only '
                             'lines may be added)'.format(type(self).__name__))
        return super()._make_dataset(kwargs)

    def _make_engine(self, kwargs):
        """BTgymEnv's engine; without `asset_names` and `engine`, the assets are every data line unless the
        strategy's default names are all data lines."""
        data_names = list(getattr(self.dataset, 'data_names', None) or ())
        if kwargs.get('engine') is None and 'asset_names' not in kwargs and data_names and \
                not set(_strategy_default(kwargs, 'asset_names')) <= set(data_names):
            kwargs['asset_names'] = data_names
        return super()._make_engine(kwargs)

    def _check_asset_count(self):
        """Any number of assets (at least one: `ActionDictSpace` refuses none)."""

    def _make_action_space(self):
        """One discrete action per asset, encoded by `action_encoding`."""
        return ActionDictSpace(assets=self.asset_names, base_actions=self.portfolio_actions,
                               encoding=self.action_encoding)


class PortfolioEnv(MultiDiscreteEnv):
    """Continuous portfolio allocation: an action is the target weight of cash and of every asset.

    The action space is an `ActionDictSpace` of `{key: Box(0, 1, (1,))}` over the sorted assets plus `cash_name`.
    `step()` normalises the weights of an action to sum 1 (all zero: all cash); the strategy then orders every asset
    to `0.9 * weight` of the portfolio value (no short positions; 10 % stays in reserve), on the bar after the
    decision and again on the next two. The strategy runs with `portfolio_actions=None` (continuous orders), which
    needs `skip_frame > 1`: without `skip_frame` (and `engine`) it is the strategy's default, or
    `PORTFOLIO_SKIP_FRAME` (10) when that is 1 (`BTgymBaseStrategy`'s), so that `PortfolioEnv(dataset=...)` runs.
    Arguments as `MultiDiscreteEnv`; every asset must be a data line.
    """
    logger_name = 'BTgymPortfolioShell'

    def __init__(self, **kwargs):
        if 'action_encoding' in kwargs:
            raise TypeError('PortfolioEnv takes no action_encoding: its actions are continuous weights')
        super().__init__(**kwargs)

    def _make_engine(self, kwargs):
        """MultiDiscreteEnv's engine; without `skip_frame` and `engine`, a strategy whose default `skip_frame` is 1
        runs with `PORTFOLIO_SKIP_FRAME`."""
        if kwargs.get('engine') is None and 'skip_frame' not in kwargs and _strategy_default(kwargs, 'skip_frame') <= 1:
            kwargs['skip_frame'] = PORTFOLIO_SKIP_FRAME
        return super()._make_engine(kwargs)

    def _set_actions(self, strategy_kwargs):
        """Sets continuous actions (`portfolio_actions=None`) and the all-cash initial action.

        Raises:
            ValueError: skip_frame <= 1, or a cash name that is also an asset.
        """
        given = strategy_kwargs.get('portfolio_actions')
        if given:
            self.log.warning('portfolio_actions={!r} is ignored: PortfolioEnv trades target weights '
                             '(portfolio_actions=None)'.format(given))
        strategy_kwargs['portfolio_actions'] = self.strategy_params['portfolio_actions'] = None
        super()._set_actions(strategy_kwargs)
        if self.skip_frame <= 1:
            raise ValueError('PortfolioEnv needs skip_frame > 1 (target orders are sent again on the bars after a '
                             'decision), got {}'.format(self.skip_frame))
        self.cash_name = self.strategy_params['cash_name']
        if self.cash_name in self.asset_names:
            raise ValueError('cash_name {!r} is also an asset name'.format(self.cash_name))
        self.initial_action = {asset: np.zeros(1, dtype=np.float32) for asset in self.asset_names}
        self.initial_action[self.cash_name] = np.ones(1, dtype=np.float32)

    def _make_action_space(self):
        """A weight in [0, 1] for every asset and for cash."""
        return ActionDictSpace(assets=self.asset_names + (self.cash_name,), base_actions=None)

    def get_initial_action(self):
        """Returns the all-cash action (weight 1 for cash, 0 for every asset)."""
        return {key: value.copy() for key, value in self.initial_action.items()}

    def step(self, action):
        """Sends target weights; returns the observation `skip_frame` bars later.

        Args:
            action: dict key -> weight in [0, 1] (a number or a 1-element array) for every key of `action_space`.

        Returns:
            (observation, reward, terminated, truncated, info) as `BTgymEnv.step`.

        Raises:
            ValueError: a key missing or unknown, or a weight that is not one finite number in [0, 1].
            RuntimeError: no episode is running (call reset()).
        """
        weights = self.normalized_weights(action)
        if self._handoff is None or self._episode_done:
            raise RuntimeError('step() needs a running episode: call reset()')
        return self._exchange({asset: weights[asset] for asset in self.asset_names})

    def keep_positions(self):
        """One agent step that sends no new target weights, so no order is placed: `step()` always sends a target
        for every asset, which rebalances a portfolio whose weights drifted with the prices (buy-and-hold must not).
        The strategy still re-sends the last target on the two bars after that target's decision, as for every
        action.

        Returns:
            (observation, reward, terminated, truncated, info) as `step`.

        Raises:
            RuntimeError: no episode is running (call reset()).
        """
        if self._handoff is None or self._episode_done:
            raise RuntimeError('keep_positions() needs a running episode: call reset()')
        return self._exchange(dict(self.initial_portfolio_action, **{SKIP_ACTION_KEY: True}))

    def normalized_weights(self, action):
        """The weights of `action`, checked and normalised to sum 1 (see `components.normalized_weights`).

        Args:
            action: see `step`.

        Returns:
            dict key -> float weight (all cash when every weight is 0).
        """
        return normalized_weights(action, self.action_space.spaces, self.cash_name)
