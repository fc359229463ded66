"""BTgymEnv: a gymnasium environment over an in-process backtrader episode."""
import functools
import weakref

import gymnasium as gym

from btgym_aac.env.components import DATASET_KWARGS, EnvComponents, check_state, state_arrays, strategy_action
from btgym_aac.env.engine import Handoff, make_copyable, run_episode
from btgym_aac.env.episode_setup import EpisodeSetup
from btgym_aac.legacy.env_api import DataMasterSettings, StepInfo, original_params
from btgym_aac.env.rendering import GYM_RENDER_MODES, RenderModes
from btgym_aac.logs import get_logger
from btgym_aac.nonfinite import NonFiniteObservationError, data_explanation, first_non_finite_key

__all__ = ['BTgymEnv', 'DATASET_KWARGS']

UNPICKLED_STATE = ('_handoff', '_finalizer', '_finished_strategy')


class BTgymEnv(EnvComponents, EpisodeSetup, RenderModes, gym.Env):
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
        spread, slippage, slippage_fixed, commission_scheme: its costs (`costs.CostBroker`): the bid/ask spread in
            price units, paid half on each side of a fill (default 0); backtrader's slippage as a fraction of the
            price or in price units (default 0; not both); 'percent' (default: broker_commission and the strategy's
            `commission` are fractions of the traded value) or 'per_unit' (money per unit traded).
        render_enabled: keep the data renderings need (default True).
        trade_history: keep backtrader's history of every trade, `trade.history` (default False: nothing in this
            package reads it, and it costs about 6 % of an env step; the original kept it).
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
            `legacy.env_api.DataMasterSettings`.
        port, network_address, data_network_address, connect_timeout: ignored (no servers are started).

    Attributes of the original kept for its notebooks: `strategy` (the strategy class), `params` (dict of
    'dataset', 'engine', 'strategy' and 'render' settings; `strategy_params` is its 'strategy' part),
    `metadata['render.modes']`, `network_address` (None: no server listens) and `_force_control_mode()`.

    `record_episode` (default True): whether an episode that `reset()` starts keeps the observers its 'episode'
    picture draws, which run on every bar (`benchmarks/env_throughput.py` measures rendering as shipped against
    rendering off). A trainer's runner sets it before every reset to
    whether it will draw that episode; the picture of an episode not recorded is a message saying so.

    Its parts built from the kwargs come from `components.EnvComponents`, the trials, episodes and Cerebros that
    `reset()` prepares from `episode_setup.EpisodeSetup`, and `render()` from `rendering.RenderModes`.
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
        self.trade_history = bool(kwargs.pop('trade_history', False))
        self._data_master = DataMasterSettings(kwargs, self.log)
        self._set_rendering(kwargs)
        self.dataset = self._make_dataset(kwargs)
        self.engine = make_copyable(self._make_engine(kwargs))
        self.strategy_class, strategy_kwargs = self.engine.strats[0][0][0], self.engine.strats[0][0][2]
        self.strategy = self.strategy_class
        self._set_line_state_shape(strategy_kwargs)
        self.strategy_params = dict(self.strategy_class.params._getitems(), **strategy_kwargs)
        self.strategy_class.check_params(self.strategy_params)
        self._check_cost_sizes()
        self.strategy_class.order_sizes(self.strategy_params, self.engine.sizers)
        self._set_actions(strategy_kwargs)
        self._set_spaces()
        self.params = original_params(self)
        self._init_episodes()
        self._data_master.publish(self.dataset)

    # ----------------------------------------------------------------------------------------------- episodes

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
        handoff.start(functools.partial(run_episode, cerebro, self._episode_number, self.trade_history))
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
