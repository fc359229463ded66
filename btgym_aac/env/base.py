"""BTgymEnv: a gymnasium environment over an in-process backtrader episode."""
import copy
import functools
import numbers
import weakref

import backtrader as bt
import gymnasium as gym

from btgym_aac.data import BTgymDataset, EnvResetConfig, make_sine_data
from btgym_aac.env.actions import strategy_action
from btgym_aac.env.data_lines import bars, price_bars
from btgym_aac.env.engine import Handoff, make_copyable, prepare_cerebro, run_episode
from btgym_aac.env.observations import check_state, observation_space, space_dtypes, state_arrays
from btgym_aac.env.original_api import DataMasterSettings, StepInfo, original_params
from btgym_aac.env.rendering import BTgymNullRendering, BTgymRendering
from btgym_aac.logs import get_logger
from btgym_aac.nonfinite import NonFiniteObservationError, data_explanation, first_non_finite_key
from btgym_aac.spaces import ActionDictSpace
from btgym_aac.strategy.base import BTgymBaseStrategy
from btgym_aac.strategy.observers import NormPnL, Position, Reward
from btgym_aac.validation import check_number

DATASET_KWARGS = (
    'filename', 'dataframe', 'episode_duration', 'time_gap', 'start_00', 'start_weekdays', 'parsing_params',
    'target_period', 'data_names', 'episode_len_days', 'episode_len_hours', 'episode_len_minutes',
    'time_gap_days', 'time_gap_hours',
)
ENGINE_DEFAULTS = dict(start_cash=100.0, broker_commission=0.001, fixed_stake=10)
SAMPLE_CONFIG_KEYS = frozenset(['get_new', 'sample_type', 'b_alpha', 'b_beta', 'timestamp', 'force_interval',
                                'interval'])
RENDER_OBSERVERS = (bt.observers.Broker, bt.observers.BuySell, bt.observers.Trades, Reward, Position, NormPnL)
GYM_RENDER_MODES = ('rgb_array', 'human')
UNPICKLED_STATE = ('_handoff', '_finalizer', '_finished_strategy')


class BTgymEnv(gym.Env):
    """Backtrader trading environment with the gymnasium API.

    Each episode is a window of the dataset run by backtrader in this process, in a greenlet (see
    `engine.Handoff`): `step()` hands the action to the strategy and gets the observation `skip_frame` bars
    later. Call `reset()` and `step()` of one env from one thread; several envs may run in several threads.

    Args (keyword only; all optional):
        filename, dataframe, episode_duration, time_gap, start_00, start_weekdays, parsing_params, target_period,
            data_names: build a `BTgymDataset` (used when `dataset` is not given; ignored with a warning when it
            is). With neither `filename` nor `dataframe`, the built-in synthetic sine series is used.
        dataset: a `BTgymDataset` (or any data domain with the same interface).
        engine: a configured `bt.Cerebro` with one strategy; used as is (strategy, broker and strategy-param
            kwargs are then ignored, each with a warning).
        strategy: strategy class (default `BTgymBaseStrategy`).
        start_cash, broker_commission, fixed_stake: broker settings of the default engine (start_cash > 0,
            broker_commission >= 0; fixed_stake > 0 when order_size is None).
        render_enabled: keep the data renderings need (default True).
        render_modes: the original's picture modes kept for `render(mode)`, e.g. ['human', 'episode', 'external'];
            render_* kwargs tune the pictures.
        render_mode: gymnasium's mode of `render()` without a mode: None (draws nothing), 'rgb_array' (the
            'human' picture of the last step) or 'human' (no window to draw in: returns None).
        verbose, log_level: logging (0 notice, 1 info, 2 debug).
        task: number used in logger names.
        random_seed: seed of episode sampling.
        any other kwarg: a param of the strategy (state_shape, skip_frame, drawdown_call, target_call, ...);
            checked here by the strategy's `check_params` and `order_sizes`.
        data_master, data_port: `data_master=False` takes the dataset of the data master env (an env given
            `data_master=True` or a `data_port`) serving the same `data_port` in a process of this host; see
            `original_api.DataMasterSettings`.
        port, network_address, data_network_address, connect_timeout: ignored (no servers are started).

    Attributes of the original kept for its notebooks: `strategy` (the strategy class), `params` (dict of
    'dataset', 'engine', 'strategy' and 'render' settings; `strategy_params` is its 'strategy' part),
    `metadata['render.modes']`, `network_address` (None: no server listens) and `_force_control_mode()`.

    `record_episode` (default True): whether an episode that `reset()` starts keeps the observers its 'episode'
    picture draws, which run on every bar (`benchmarks/env_throughput.py` measures rendering as shipped against
    rendering off). A trainer's runner sets it before every reset to
    whether it will draw that episode; the picture of an episode not recorded is a message saying so.
    """
    metadata = {'render_modes': list(GYM_RENDER_MODES), 'render.modes': ['human', 'episode'], 'render_fps': 4}
    network_address = None
    data_network_address = None
    logger_name = 'BTgymEnv'

    def __init__(self, **kwargs):
        self.task = kwargs.pop('task', 0)
        self.verbose = kwargs.pop('verbose', 0)
        self.log_level = kwargs.pop('log_level', None)
        self.log = get_logger(self.logger_name, self.task, self.verbose, self.log_level)
        self.random_seed = kwargs.pop('random_seed', None)
        self._data_master = DataMasterSettings(kwargs, self.log)
        self._set_rendering(kwargs)
        self.dataset = self._make_dataset(kwargs)
        self.engine = make_copyable(self._make_engine(kwargs))
        self.strategy_class, strategy_kwargs = self.engine.strats[0][0][0], self.engine.strats[0][0][2]
        self.strategy = self.strategy_class
        self._set_line_state_shape(strategy_kwargs)
        self.strategy_params = dict(self.strategy_class.params._getitems(), **strategy_kwargs)
        self.strategy_class.check_params(self.strategy_params)
        self.strategy_class.order_sizes(self.strategy_params, self.engine.sizers)
        self._set_actions(strategy_kwargs)
        self._set_spaces()
        self.params = original_params(self)
        self._init_episodes()
        self._data_master.publish(self.dataset)

    # ------------------------------------------------------------------------------------------ construction

    def _set_rendering(self, kwargs):
        """Pops the render kwargs (`render_enabled`, `render_modes`, `render_mode`, `BTgymRendering` settings) and
        sets up the renderer."""
        self.render_enabled = kwargs.pop('render_enabled', True)
        self.record_episode = True
        self.render_modes = list(kwargs.pop('render_modes', ['human', 'episode']))
        self.render_mode = kwargs.pop('render_mode', None)
        if self.render_mode not in (None,) + GYM_RENDER_MODES:
            raise ValueError("render_mode must be None, 'rgb_array' or 'human' (gymnasium's), got {!r}; the original's "
                             "picture modes go in render_modes, drawn by render(mode)".format(self.render_mode))
        render_kwargs = {key: kwargs.pop(key) for key in list(kwargs) if key in BTgymRendering.defaults}
        self.renderer = BTgymRendering(self.render_modes, **render_kwargs) if self.render_enabled \
            else BTgymNullRendering()
        self.metadata = dict(self.metadata, **{'render.modes': list(self.render_modes)})

    def _make_dataset(self, kwargs):
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
        settings = dict(ENGINE_DEFAULTS, **engine_kwargs)
        check_number('start_cash', settings['start_cash'], 0, low_open=True)
        check_number('broker_commission', settings['broker_commission'])
        engine = bt.Cerebro()
        engine.addstrategy(strategy, **kwargs)
        kwargs.clear()
        engine.broker.setcash(settings['start_cash'])
        engine.broker.setcommission(commission=settings['broker_commission'])
        engine.addsizer(bt.sizers.SizerFix, stake=settings['fixed_stake'])
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

    def _init_episodes(self):
        """The dataset's statistics, and no trial, episode or episode result yet."""
        self._dataset_stat = self.dataset.describe()
        self._trial = None
        self._trial_stat = None
        self._handoff = None
        self._episode_number = -1
        self._episode_done = True
        self._episode_result = None
        self._finished_strategy = None
        self._recording = self._finished_recorded = True
        self._last_step = None
        self._finalizer = None
        self.closed = False

    # ----------------------------------------------------------------------------------------------- episodes

    def _sample_config(self, options, kwargs):
        config = copy.deepcopy(EnvResetConfig)
        for source in (options or {}, kwargs):
            unknown = set(source) - set(config)
            if unknown:
                raise ValueError('unknown reset options {}; expected {}'.format(sorted(unknown), sorted(config)))
            for key, value in source.items():
                unknown = set(value or {}) - SAMPLE_CONFIG_KEYS
                if unknown:
                    raise ValueError('unknown {} key(s) {}; expected some of {}'.format(
                        key, sorted(unknown), sorted(SAMPLE_CONFIG_KEYS)))
                config[key].update(value or {})
        return config

    def _next_episode(self, trial_config, episode_config):
        if trial_config.get('get_new', True) or self._trial is None:
            self._trial = self.dataset.sample(**trial_config)
            self._trial.reset()
            self._trial_stat = self._trial.describe()
        return self._trial.sample(**episode_config)

    def _new_cerebro(self, episode, decide):
        feeds = episode.to_btfeed()
        for feed in feeds.values():
            feed.numrecords = len(bars(episode))
        strategy_params = dict(
            metadata=episode.metadata,
            trial_metadata=self._trial.metadata,
            dataset_stat=self._dataset_stat,
            trial_stat=self._trial_stat,
            episode_stat=self._episode_stat(episode),
        )
        observers = RENDER_OBSERVERS if self.render_enabled and self.record_episode else ()
        return prepare_cerebro(copy.deepcopy(self.engine), feeds, strategy_params, decide,
                               render_observers=observers, capture_raw_state=self.render_enabled)

    def _episode_stat(self, episode):
        """Statistics of the episode's bars; those of its trial when the episode spans the whole trial."""
        trial_data, data = bars(self._trial), bars(episode)
        if len(data) == len(trial_data) and data.index[0] == trial_data.index[0]:
            return self._trial_stat
        return episode.describe()

    def _finish_episode(self):
        """Stops the running episode (if any) and keeps its result."""
        if self._handoff is not None:
            self._handoff.stop()
            self._finalizer.detach()
            if self._handoff.result is not None:
                self._finished_strategy, self._episode_result = self._handoff.result
                self._finished_recorded = self._recording
            self._handoff = None
        self._episode_done = True

    def reset(self, seed=None, options=None, **kwargs):
        """Starts a new episode.

        Args:
            seed: reseeds episode sampling and restarts the sample sequence (same seed, same episodes).
            options: dict with optional 'episode_config' and 'trial_config' sample configs (`get_new`,
                `sample_type` 0 train / 1 test, `b_alpha`, `b_beta`, `timestamp`).
            **kwargs: 'episode_config' / 'trial_config' as keyword arguments (original call sites).

        Returns:
            (observation, info).
        """
        super().reset(seed=seed)
        config = self._sample_config(options, kwargs)
        self._finish_episode()
        if seed is not None:
            self.dataset.seed(seed)
            self._reset_dataset()
        episode = self._next_episode(config['trial_config'], config['episode_config'])
        self._episode_number += 1
        self._episode_result = None
        self.closed = False

        handoff = Handoff()
        self._recording = self.record_episode
        cerebro = self._new_cerebro(episode, handoff.decide)
        handoff.start(functools.partial(run_episode, cerebro, self._episode_number))
        self._handoff = handoff
        self._finalizer = weakref.finalize(self, handoff.stop)
        self._episode_done = False
        self._env_step = 0
        observation, _, _, _, info = self._exchange(self.initial_portfolio_action)
        return observation, info

    def reset_data(self, **kwargs):
        """Reloads and re-splits the dataset (the original's data-server reset); the next `reset()` samples a new
        trial from it. A running episode is stopped.

        Args:
            **kwargs: passed to the dataset's `reset()` (e.g. `data_filename` to switch to other data files).
        """
        self._finish_episode()
        self._reset_dataset(**kwargs)
        self._dataset_stat = self.dataset.describe()

    def _reset_dataset(self, **kwargs):
        self.dataset.reset(**kwargs)
        self._trial = None
        self._trial_stat = None
        self._episode_number = -1

    def _exchange(self, action):
        response = self._handoff.exchange(action)
        if response is None:
            raise RuntimeError('the episode ended without an observation (the data window is too short for '
                               'the strategy warm-up of {} bars?)'.format(self.strategy_class.warmup_period))
        if self._env_step == 0:
            check_state(response.state, self.observation_space)
        self._env_step += 1
        self._episode_done = response.done
        self._last_step = dict(state=response.state, reward=response.reward, done=response.done,
                               infos=response.infos, raw_state=response.raw_state, number=self._env_step)
        info = StepInfo(response.infos[-1])
        info['bars'] = response.infos
        return self._observation(response.state), float(response.reward), bool(response.done), False, info

    def _observation(self, state):
        """Copies the strategy state into fresh arrays of the observation space dtypes.

        Raises:
            NonFiniteObservationError: a value is NaN or inf (named, with what the data checks find in the data).
        """
        observation = state_arrays(state, self._observation_dtypes)
        bad = first_non_finite_key(observation)
        if bad is not None:
            raise NonFiniteObservationError('{} holds NaN or inf at step {} of episode {} (the strategy {} computed it '
                                            'from the episode\'s bars){}'.format(
                                                bad, self._env_step, self._episode_number,
                                                self.strategy_class.__name__, data_explanation(self.dataset)))
        return observation

    def step(self, action):
        """Sends an action; returns the observation `skip_frame` bars later.

        Args:
            action: dict asset -> action index (in `action_space`), or an integer index applied to every asset.

        Returns:
            (observation, reward, terminated, truncated, info); info is the latest bar's info dict plus 'bars',
            the list of the info dicts of every bar since the previous step.

        Raises:
            ValueError: the action is outside the action space.
            RuntimeError: no episode is running (call reset()).
        """
        server_action = strategy_action(action, self.action_space, self.asset_names, self.portfolio_actions)
        if self._handoff is None or self._episode_done:
            raise RuntimeError('step() needs a running episode: the last one {}; call reset()'.format(
                'has terminated' if self._handoff is not None else 'is not started or was closed'))
        return self._exchange(server_action)

    # -------------------------------------------------------------------------------------------- reporting

    def get_stat(self):
        """Statistics of the last episode; finishes the running one first.

        Returns:
            dict with 'episode', 'runtime' (timedelta), 'length' (bars) and every user analyzer's analysis.
        """
        self._finish_episode()
        return self._episode_result

    def get_initial_action(self):
        """Returns the 'hold everything' action as action-space indices."""
        return dict(self.initial_action)

    def get_initial_portfolio_action(self):
        """Returns the 'hold everything' action as the strategy's action names."""
        return dict(self.initial_portfolio_action)

    def render(self, mode=None):
        """Picture of the last step ('human' or an observation key) or of the last finished episode ('episode').

        Args:
            mode: one of `render_modes` (the original's call); None: gymnasium's, by `render_mode` (None and
                'human' draw nothing, 'rgb_array' the 'human' picture).

        Returns:
            uint8 RGB array [height, width, 3], or None.

        Raises:
            ValueError: unknown mode. RuntimeError: rendering disabled.
        """
        if mode is None:
            if self.render_mode != 'rgb_array':
                return None
            mode = 'human'
        if mode not in self.render_modes:
            raise ValueError('render mode {!r} is not one of render_modes {}'.format(mode, self.render_modes))
        if not self.renderer.enabled:
            raise RuntimeError('rendering is disabled: create the env with render_enabled=True')
        if mode == 'episode':
            if self._episode_done:
                self._finish_episode()
            if self._finished_strategy is None:
                return self.renderer.render_message('no finished episode to render yet')
            if not self._finished_recorded:
                return self.renderer.render_message('episode {} was not recorded (record_episode was False at its '
                                                    'reset)'.format(self._episode_number))
            return self.renderer.render_episode(self._finished_strategy)
        if self._last_step is None:
            return self.renderer.render_message('nothing to render before the first reset()')
        if mode == 'human':
            return self.renderer.render_human(self._last_step)
        return self.renderer.render_state(mode, self._last_step)

    def _force_control_mode(self):
        """The original's way to end an episode: stops the running one, for `get_stat()` and the 'episode' picture.

        Returns:
            False before the first reset() (the original had no server to put in control mode yet), else True.
        """
        self._finish_episode()
        return self._episode_number >= 0

    def __getstate__(self):
        """State for pickle and deepcopy: only between episodes (the last finished episode's picture is dropped)."""
        if self._handoff is not None and not self._episode_done:
            raise TypeError('a BTgymEnv cannot be pickled or copied during an episode: let it end, or call close()')
        state = {key: value for key, value in self.__dict__.items() if key not in UNPICKLED_STATE}
        state['_data_master'] = self._data_master.copy_without_serving()
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._handoff = self._finalizer = self._finished_strategy = None

    def close(self):
        """Stops the running episode and, for a data master env, serving its dataset; the env can be reset again
        afterwards."""
        self._finish_episode()
        self._data_master.close()
        self.closed = True
