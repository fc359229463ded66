"""The parts of a BTgymEnv built from its keyword arguments, and what passes through them on every step: the dataset
and its bars (one data line's DataFrame, or the aligned lines of a `BTgymMultiData` sharing one index), the
backtrader engine, the traded assets with their actions (an agent's action turned into the strategy's action names
or target weights), and the observation and action spaces (a strategy state checked against the observation space
and copied into fresh arrays of its dtypes)."""
import numbers
import os

import backtrader as bt
import numpy as np
import pandas as pd
from gymnasium import spaces

from btgym_aac.data import BTgymDataset, make_sine_data
from btgym_aac.data.columns import PRICE_COLUMNS
from btgym_aac.env.costs import COST_DEFAULTS, SPREAD_FROM_DATA, CostBroker, check_cost_sizes, cost_broker
from btgym_aac.spaces import ActionDictSpace, DictSpace
from btgym_aac.strategy.base import BTgymBaseStrategy
from btgym_aac.validation import check_number

DATASET_KWARGS = (
    'filename', 'dataframe', 'episode_duration', 'time_gap', 'start_00', 'start_weekdays', 'parsing_params',
    'target_period', 'data_names', 'episode_len_days', 'episode_len_hours', 'episode_len_minutes',
    'time_gap_days', 'time_gap_hours',
)
ENGINE_DEFAULTS = dict(start_cash=100.0, broker_commission=0.001, fixed_stake=10, **COST_DEFAULTS)


def bars(data):
    """The bars that set an episode's length and timestamps: the data's DataFrame, or the master line's of a
    multi-line dataset.

    Args:
        data: a dataset, trial or episode.

    Returns:
        DataFrame of OHLCV bars.
    """
    frame = getattr(data, 'frame', None)
    return data.data if frame is None else frame


def price_bars(data):
    """The prices of every data line (all lines of a multi-line dataset, one under another).

    Args:
        data: a dataset, trial or episode.

    Returns:
        DataFrame of the open, high, low and close columns.
    """
    frames = getattr(data, 'frames', None)
    if frames is None:
        return data.data[list(PRICE_COLUMNS)]
    return pd.concat([frame[list(PRICE_COLUMNS)] for frame in frames.values()])


def data_words(filename):
    """A data source in words: its file name(s), or 'a DataFrame' (`filename` None)."""
    if filename is None:
        return 'a DataFrame'
    return os.fspath(filename) if isinstance(filename, (str, os.PathLike)) else ', '.join(map(os.fspath, filename))


def lowest_median_close(data):
    """(median close, the data line in words) of the data line of `data` (a dataset) whose closes have the lowest
    median: the one a cost in price units weighs most on; None where `data` holds no bars yet (it loads them
    later)."""
    frames = getattr(data, 'frames', None)
    lines = {None: getattr(data, 'data', None)} if frames is None else frames
    if not all(isinstance(frame, pd.DataFrame) for frame in lines.values()):
        return None
    medians = {name: float(frame['close'].median()) for name, frame in lines.items()}
    name = min(medians, key=medians.get)
    if frames is None:
        return medians[name], data_words(data.filename)
    return medians[name], 'data line {!r} ({})'.format(name, data_words(data.filename[name]))


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


def observation_space(state_shape, data):
    """The observation space of `state_shape` (dict key -> space); its `raw` Box, if any, takes the range of the
    prices in `data` (DataFrame of bars) as its bounds."""
    shapes = dict(state_shape)
    if 'raw' in shapes:
        prices = data[list(PRICE_COLUMNS)]
        raw = shapes['raw']
        shapes['raw'] = spaces.Box(low=float(prices.min().min()), high=float(prices.max().max()),
                                   shape=raw.shape, dtype=raw.dtype)
    return DictSpace(shapes)


def space_dtypes(space):
    """Dict key -> dtype of a Dict space, nested like it."""
    return {key: (space_dtypes(sub) if isinstance(sub, spaces.Dict) else sub.dtype)
            for key, sub in space.spaces.items()}


def check_state(state, space, path='observation'):
    """Raises ValueError naming the first key of `space` whose state is missing or not of its space's shape."""
    for key, subspace in space.spaces.items():
        where = '{}[{!r}]'.format(path, key)
        if key not in state:
            raise ValueError('the strategy gives no {} (its state keys: {}); state_shape must name what '
                             'the strategy returns'.format(where, sorted(state)))
        if isinstance(subspace, spaces.Dict):
            check_state(state[key], subspace, where)
        elif np.shape(state[key]) != subspace.shape:
            raise ValueError('{} has shape {} but the state_shape space says {}'.format(
                where, np.shape(state[key]), subspace.shape))


def state_arrays(state, dtypes):
    """Copies a strategy state into fresh arrays of `dtypes` (see `space_dtypes`), one per key of `dtypes`."""
    return {key: ({k: np.array(v, dtype=dtype[k]) for k, v in state[key].items()}
                  if isinstance(dtype, dict) else np.array(state[key], dtype=dtype))
            for key, dtype in dtypes.items()}


def strategy_action(action, action_space, asset_names, portfolio_actions):
    """The strategy's per-asset action for an agent's action.

    Args:
        action: dict asset -> action index (in `action_space`), or an integer index applied to every asset.
        action_space: the env's `ActionDictSpace`.
        asset_names: the traded assets.
        portfolio_actions: the strategy's action names (empty: continuous actions, passed as floats).

    Returns:
        dict asset -> action name (or float).

    Raises:
        ValueError: the action is outside the action space.
    """
    if isinstance(action, dict):
        if action not in action_space:
            raise ValueError('action {!r} is not in the action space {}'.format(action, action_space))
        values = action
    else:
        try:
            index = int(action)
        except (TypeError, ValueError):
            raise ValueError('action {!r} is neither a dict in {} nor an integer'.format(action, action_space)) \
                from None
        values = {asset: index for asset in asset_names}
        if np.ndim(action) != 0 or values not in action_space:
            raise ValueError('action {!r} is outside the action space {}'.format(action, action_space))
    if portfolio_actions:
        return {asset: portfolio_actions[int(values[asset])] for asset in asset_names}
    return {asset: float(np.asarray(values[asset]).reshape(-1)[0]) for asset in asset_names}


def normalized_weights(action, keys, cash_name):
    """The target weights of a continuous (PortfolioEnv) action, checked and normalised to sum 1.

    Args:
        action: dict key -> weight in [0, 1] (a number or a 1-element array), for exactly `keys`.
        keys: the action space's keys (the assets and `cash_name`).
        cash_name: the cash key, which takes the whole weight when every weight is 0.

    Returns:
        dict key -> float weight.

    Raises:
        ValueError: a key missing or unknown, or a weight that is not one finite number in [0, 1].
    """
    if not isinstance(action, dict) or set(action) != set(keys):
        raise ValueError('a PortfolioEnv action is a dict of weights for exactly {}, got {!r}'.format(
            sorted(keys), action))
    weights = {}
    for key, value in action.items():
        array = np.asarray(value, dtype=np.float64).reshape(-1)
        if array.size != 1 or not np.isfinite(array[0]) or not 0.0 <= array[0] <= 1.0:
            raise ValueError('the weight of {!r} must be one finite number in [0, 1], got {!r}'.format(key, value))
        weights[key] = float(array[0])
    total = sum(weights.values())
    if total == 0:
        return {key: float(key == cash_name) for key in weights}
    return {key: weight / total for key, weight in weights.items()}


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

    def cost_settings(self):
        """The costs the env's broker charges.

        Returns:
            dict of `spread` (price units, or 'data': each bar's own), `slippage` (a fraction of the price),
            `slippage_fixed` (price units), `commission` (per fill: the strategy's `commission` param where set,
            which the strategy applies to the broker, else the broker's own) and `commission_scheme`.
        """
        broker = self.engine.broker
        commission = self.strategy_params.get('commission')
        if commission is None:
            info = broker.comminfo.get(None)
            commission = info.p.commission if info is not None else 0.0
        spread = getattr(broker.p, 'spread', 0.0)
        return {'spread': spread if spread == SPREAD_FROM_DATA else float(spread),
                'slippage': float(broker.p.slip_perc), 'slippage_fixed': float(broker.p.slip_fixed),
                'commission': float(commission),
                'commission_scheme': getattr(broker.p, 'commission_scheme', 'percent')}

    def _check_cost_sizes(self):
        """Refuses (ValueError) the costs of the env's `CostBroker` that are out of all proportion to the dataset's
        prices (`costs.check_cost_sizes`, against the lowest-priced data line), and logs a warning of each large one
        in the env of task 0 (a lone env, or the first env of a run's chief: a run warns once). A broker of a given
        `engine` that is no CostBroker is the user's own and left alone."""
        prices = lowest_median_close(self.dataset)
        if not isinstance(self.engine.broker, CostBroker) or prices is None:  # (None: bars loaded later)
            return
        for warning in check_cost_sizes(self.cost_settings(), *prices):
            if self.task == 0:
                self.log.warning(warning)

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
