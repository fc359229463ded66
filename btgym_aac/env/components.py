"""The parts of a BTgymEnv built from its keyword arguments: the dataset, the backtrader engine, the traded assets
with their actions, and the observation and action spaces."""
import numbers

import backtrader as bt

from btgym_aac.data import BTgymDataset, make_sine_data
from btgym_aac.env.costs import COST_DEFAULTS, cost_broker
from btgym_aac.env.data_lines import price_bars
from btgym_aac.env.observations import observation_space, space_dtypes
from btgym_aac.spaces import ActionDictSpace
from btgym_aac.strategy.base import BTgymBaseStrategy
from btgym_aac.validation import check_number

DATASET_KWARGS = (
    'filename', 'dataframe', 'episode_duration', 'time_gap', 'start_00', 'start_weekdays', 'parsing_params',
    'target_period', 'data_names', 'episode_len_days', 'episode_len_hours', 'episode_len_minutes',
    'time_gap_days', 'time_gap_hours',
)
ENGINE_DEFAULTS = dict(start_cash=100.0, broker_commission=0.001, fixed_stake=10, **COST_DEFAULTS)


def new_engine(strategy, strategy_kwargs, settings):
    """A Cerebro with the strategy and its kwargs, a `costs.CostBroker` with the cash and costs, and a fixed-size
    sizer.

    Args:
        strategy: the strategy class.
        strategy_kwargs: its kwargs (copied).
        settings: dict of ENGINE_DEFAULTS' keys (start_cash, broker_commission, fixed_stake, and the costs:
            spread, slippage, slippage_fixed, commission_scheme); a missing key takes its default.

    Returns:
        bt.Cerebro.

    Raises:
        ValueError: a start cash <= 0, a commission that is no number >= 0 or a cost setting no broker takes.
    """
    settings = dict(ENGINE_DEFAULTS, **settings)
    check_number('start_cash', settings['start_cash'], 0, low_open=True)
    check_number('broker_commission', settings['broker_commission'])
    engine = bt.Cerebro()
    engine.setbroker(cost_broker(settings))
    engine.addstrategy(strategy, **dict(strategy_kwargs))
    engine.broker.setcash(settings['start_cash'])
    engine.broker.apply_commission(settings['broker_commission'])
    engine.addsizer(bt.sizers.SizerFix, stake=settings['fixed_stake'])
    return engine


class EnvComponents:
    """Mixin of `BTgymEnv` building its dataset, engine, actions and spaces; each step is a method that a
    subclass may extend (MultiDiscreteEnv and PortfolioEnv do).

    It reads the env's `log`, `task`, `random_seed`, `_data_master`, `dataset`, `strategy_class`,
    `strategy_params` and `render_modes`.
    """

    def _make_dataset(self, kwargs):
        """Pops the dataset kwargs and returns the env's dataset, ready to sample.

        Args:
            kwargs: the env's remaining keyword arguments.

        Returns:
            `dataset=` if given, else a `BTgymDataset` of the dataset kwargs (the synthetic sine series without
            `filename` and `dataframe`); the data master's dataset for a data master client.
        """
        dataset = kwargs.pop('dataset', None)
        dataset_kwargs = {key: kwargs.pop(key) for key in DATASET_KWARGS if key in kwargs}
        if self._data_master.is_client:
            given = sorted(dataset_kwargs) + (['dataset'] if dataset is not None else [])
            return self._data_master.client_dataset(given, self.random_seed)
        if dataset is None:
            if dataset_kwargs.get('filename') is None and dataset_kwargs.get('dataframe') is None:
                dataset_kwargs.pop('filename', None)
                dataset_kwargs['dataframe'] = make_sine_data()
            dataset = BTgymDataset(task=self.task, log_level=self.log.level, **dataset_kwargs)
        else:
            for key in sorted(dataset_kwargs):
                self.log.warning('`{}` is ignored: `dataset=` is given, which samples with its own settings'.format(
                    key))
        if self.random_seed is not None:
            dataset.seed(self.random_seed)
        if not dataset.is_ready:
            dataset.reset()
        return dataset

    def _make_engine(self, kwargs):
        """Pops the engine, strategy, broker and strategy-param kwargs and returns the env's engine.

        Args:
            kwargs: the env's remaining keyword arguments; emptied.

        Returns:
            `engine=` if given, else a `bt.Cerebro` with the strategy, its params, the broker settings and a
            fixed sizer.

        Raises:
            ValueError: the given engine has not exactly one strategy.
            TypeError: a kwarg that is no param of the strategy.
        """
        engine = kwargs.pop('engine', None)
        strategy = kwargs.pop('strategy', None)
        engine_kwargs = {key: kwargs.pop(key) for key in ENGINE_DEFAULTS if key in kwargs}
        if engine is not None:
            ignored = sorted(set(engine_kwargs) | set(kwargs) | ({'strategy'} if strategy is not None else set()))
            for key in ignored:
                self.log.warning('`{}` is ignored: `engine=` is given, configured by itself (strategy, params, '
                                 'broker and sizer)'.format(key))
            kwargs.clear()
            if len(engine.strats) != 1:
                raise ValueError('the engine must have exactly one strategy, has {}'.format(len(engine.strats)))
            return engine
        strategy = strategy or BTgymBaseStrategy
        known = set(strategy.params._getkeys())
        unknown = set(kwargs) - known
        if unknown:
            raise TypeError('unknown BTgymEnv arguments (not env, dataset, engine or {} params): {}'.format(
                strategy.__name__, sorted(unknown)))
        engine = new_engine(strategy, kwargs, dict(ENGINE_DEFAULTS, **engine_kwargs))
        kwargs.clear()
        return engine

    def _set_line_state_shape(self, strategy_kwargs):
        """Gives the strategy the `state_shape` of its `state_shape_for(data_names, asset_names)` hook (one made for
        the dataset's data lines) unless `state_shape` is set explicitly."""
        if 'state_shape' in strategy_kwargs:
            return
        asset_names = strategy_kwargs.get('asset_names', self.strategy_class.params.asset_names)
        data_names = getattr(self.dataset, 'data_names', None) or tuple(asset_names)
        state_shape = self.strategy_class.state_shape_for(tuple(data_names), tuple(asset_names))
        if state_shape is not None:
            strategy_kwargs['state_shape'] = state_shape

    def _check_asset_count(self):
        """Raises ValueError unless exactly one asset is traded (MultiDiscreteEnv and PortfolioEnv trade several)."""
        if len(self.asset_names) != 1:
            raise ValueError('BTgymEnv trades exactly one asset, got asset_names={}: use MultiDiscreteEnv or '
                             'PortfolioEnv for several'.format(list(self.asset_names)))

    def _set_actions(self, strategy_kwargs):
        """Sets the traded assets, the action names, `skip_frame` and the 'hold' actions, which the strategy gets
        through `strategy_kwargs`.

        Raises:
            ValueError: a wrong number of assets, an asset that is no data line, or a skip_frame that is no whole
                number >= 1.
        """
        self.asset_names = tuple(self.strategy_params['asset_names'])
        self._check_asset_count()
        data_names = getattr(self.dataset, 'data_names', None)
        missing = sorted(set(self.asset_names) - set(data_names or self.asset_names))
        if missing:
            raise ValueError('asset_names {} are not among the data line names {}: pass the same names as '
                             'data_names'.format(missing, list(data_names)))
        self.portfolio_actions = self.strategy_params['portfolio_actions']
        self.skip_frame = self.strategy_params['skip_frame']
        if isinstance(self.skip_frame, bool) or not isinstance(self.skip_frame, numbers.Integral) or \
                self.skip_frame < 1:
            raise ValueError('skip_frame must be a whole number of bars >= 1, got {!r}'.format(self.skip_frame))
        self.initial_action = {asset: 0 for asset in self.asset_names}
        if self.portfolio_actions:
            self.initial_portfolio_action = {asset: self.portfolio_actions[0] for asset in self.asset_names}
        else:
            self.initial_portfolio_action = {asset: 0.0 for asset in self.asset_names}
        strategy_kwargs.update(initial_action=self.initial_action,
                               initial_portfolio_action=self.initial_portfolio_action)

    def _set_spaces(self):
        """Sets the observation and action spaces; raises ValueError for a render mode that is neither 'human',
        'episode' nor an observation key."""
        self.observation_space = observation_space(self.strategy_params['state_shape'], price_bars(self.dataset))
        self.action_space = self._make_action_space()
        self._observation_dtypes = space_dtypes(self.observation_space)
        for mode in self.render_modes:
            if mode not in ('human', 'episode') and mode not in self.observation_space.spaces:
                raise ValueError('render mode {!r} is neither human, episode nor an observation key {}'.format(
                    mode, list(self.observation_space.spaces)))

    def _make_action_space(self):
        """One discrete action per asset, the strategy's `portfolio_actions`."""
        return ActionDictSpace(assets=self.asset_names, base_actions=self.portfolio_actions)
