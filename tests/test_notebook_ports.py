"""The original btgym's example notebooks, cell by cell, run against btgym_aac.

Each test is a port of some cells of one notebook (`examples/<name>.ipynb` of Kismuz/btgym), changed only where
this package's stack forces it: `btgym` -> `btgym_aac`, `gym` -> `gymnasium` (5-value `step()`, `(obs, info)`
from `reset()`, `.unwrapped` behind `gymnasium.make()`), shorter runs, assertions on the returned arrays instead of
IPython / PIL displays, and data generated into pytest's temp dirs instead of the original's data files. Ports and
data ports are per-test where the notebook's fixed numbers could collide with a parallel run.
"""
import datetime
import itertools
import multiprocessing
import os
import queue

import backtrader as bt
import gymnasium as gym
import logbook
import numpy as np
import pytest
from gymnasium import spaces
from logbook import INFO
from test_env import assert_episode_picture, assert_heat_map, assert_line_picture

from btgym_aac import BTgymBaseStrategy, BTgymDataset, BTgymEnv, BTgymRandomDataDomain
from btgym_aac.data import make_random_walk_data, write_histdata_csv
from btgym_aac.research import DevStrat_4_11, DevStrat_4_12

pytestmark = pytest.mark.xdist_group('notebook_ports')  # one xdist worker builds the module's fixtures

MINUTES_PER_DAY = 24 * 60
_next_port = itertools.count()


def unique_data_port():
    """A data port no other test of this run, nor (in practice) of a parallel run, uses: it names the data master
    env's file on this host."""
    return 20000 + (os.getpid() % 4000) * 10 + next(_next_port) % 10


@pytest.fixture(scope='module')
def walk_frame():
    """Two weeks of continuous 1-minute random-walk bars (no weekend gaps), from Sunday 2017-01-01."""
    return make_random_walk_data(num_bars=20000, seed=0)


@pytest.fixture(scope='module')
def walk_csv(walk_frame, tmp_path_factory):
    """`walk_frame` as a HistData.com CSV file, standing in for the notebooks' DAT_ASCII_EURUSD_M1_2016.csv."""
    return write_histdata_csv(walk_frame, str(tmp_path_factory.mktemp('data') / 'DAT_ASCII_RANDOM_WALK_M1.csv'))


def assert_message_picture(image, env, text):
    """The renderer's picture of message `text` (what an env shows where it has nothing to draw yet)."""
    np.testing.assert_array_equal(image, env.renderer.render_message(text))


def assert_observation_fits(observation, space):
    """Every key of the observation space, each of its shape, and the whole observation inside the space."""
    assert set(observation) == set(space.spaces)
    for key, value in observation.items():
        if isinstance(space[key], spaces.Box):
            assert value.shape == space[key].shape, key
    assert space.contains(observation)


def under_the_hood(env):
    """The notebooks' `under_the_hood()`: the env's internals, returned instead of printed."""
    attributes = {attr: getattr(env, attr) for attr in ['dataset', 'strategy', 'engine', 'renderer',
                                                        'network_address']}
    return attributes, {name: dict(params) for name, params in env.params.items()}


# ---------------------------------------------------------------------------------------- very_basic_env_setup

def test_very_basic_env_setup(walk_csv):
    env = BTgymEnv(filename=walk_csv)
    env.action_space.seed(0)

    done = False
    o, _ = env.reset()
    assert_observation_fits(o, env.observation_space)
    steps = 0
    while not done:
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        steps += 1
        assert np.isfinite(reward)
        assert info[-1]['action'] == {'default_asset': env.portfolio_actions[int(action['default_asset'])]}
        assert {'step', 'time', 'action', 'broker_message', 'broker_cash', 'broker_value', 'drawdown'} <= set(info[-1])
    assert_observation_fits(obs, env.observation_space)
    assert 0 < steps < 1435  # the default episode is 23h55m of 1-minute bars
    assert env.get_stat()['episode'] == 0
    env.close()

    env.close()  # the notebook's second cell closes it again
    assert env.closed


# ------------------------------------------------------------------------------- setting_up_environment_basic

def test_basic_simplest_environment_under_the_hood(walk_csv):
    MyEnvironment = BTgymEnv(filename=walk_csv,)

    attributes, params = under_the_hood(MyEnvironment)
    assert isinstance(attributes['dataset'], BTgymDataset)
    assert attributes['strategy'] is BTgymBaseStrategy
    assert isinstance(attributes['engine'], bt.Cerebro)
    assert attributes['renderer'] is MyEnvironment.renderer and attributes['network_address'] is None
    assert set(params) == {'dataset', 'engine', 'strategy', 'render'}
    assert params['dataset']['filename'] == walk_csv
    assert params['dataset']['sample_duration'] == {'days': 0, 'hours': 23, 'minutes': 55}
    assert params['engine'] == {'start_cash': 100.0, 'broker_commission': 0.001, 'fixed_stake': 10}
    assert params['strategy']['skip_frame'] == 1 and params['strategy']['drawdown_call'] == 10
    assert params['render']['render_size_human'] == (6, 3.5)

    MyEnvironment.close()


def test_basic_environment_configured_by_kwargs(walk_csv):
    MyEnvironment = BTgymEnv(filename=walk_csv,
                             start_weekdays=[0, 1, 2],
                             episode_duration={'days': 1, 'hours': 23, 'minutes': 55},
                             start_00=True,
                             start_cash=100,
                             broker_commission=0.002,
                             fixed_stake=10,
                             drawdown_call=30,
                             state_shape=dict(raw=spaces.Box(low=0, high=1, shape=(30, 4))),
                             port=5555,
                             verbose=1,)

    attributes, params = under_the_hood(MyEnvironment)
    assert params['dataset']['start_weekdays'] == [0, 1, 2] and params['dataset']['start_00'] is True
    assert params['dataset']['sample_duration'] == {'days': 1, 'hours': 23, 'minutes': 55}
    assert params['engine'] == {'start_cash': 100, 'broker_commission': 0.002, 'fixed_stake': 10}
    assert params['strategy']['drawdown_call'] == 30
    assert params['strategy']['state_shape']['raw'].shape == (30, 4)
    assert attributes['network_address'] is None  # no server listens on port 5555
    # The notebook's dummy [0, 1] bounds of 'raw' give way to the data's own range:
    raw_space = MyEnvironment.observation_space['raw']
    assert raw_space.shape == (30, 4)
    data = MyEnvironment.dataset.data
    assert raw_space.low.min() == pytest.approx(data['low'].min(), rel=1e-6)
    assert raw_space.high.max() == pytest.approx(data['high'].max(), rel=1e-6)

    MyEnvironment.close()


def to_string(dictionary):
    text = ''
    for k, v in dictionary.items():
        if type(v) in [float]:
            v = '{:.4f}'.format(v)
        text += '{}: {}\n'.format(k, v)
    return text


def test_basic_environment_registered_with_gymnasium_runs_rendered_episodes(walk_csv):
    env_params = dict(filename=walk_csv,
                      start_weekdays=[0, 1, 2],
                      episode_duration={'days': 1, 'hours': 23, 'minutes': 55},
                      start_00=True,
                      start_cash=100,
                      broker_commission=0.002,
                      fixed_stake=10,
                      drawdown_call=30,
                      state_shape=dict(raw=spaces.Box(low=0, high=1, shape=(30, 4))),
                      port=5002,
                      data_port=unique_data_port(),
                      verbose=1,)

    gym.envs.register(id='backtrader-v46',
                      entry_point='btgym_aac:BTgymEnv',
                      kwargs=env_params)
    try:
        MyEnvironment = gym.make('backtrader-v46')
    finally:
        gym.envs.registry.pop('backtrader-v46', None)
    assert isinstance(MyEnvironment.unwrapped, BTgymEnv)
    MyEnvironment.action_space.seed(0)

    num_episodes = 2
    state_render = 500
    human_shape = (int(3.5 * 75), 6 * 75)  # default render_size_human (6, 3.5) inches at 75 dpi
    starts = []
    for episode in range(num_episodes):
        init_state, _ = MyEnvironment.reset()
        assert_observation_fits(init_state, MyEnvironment.observation_space)
        assert_line_picture(MyEnvironment.unwrapped.render('human'), human_shape)
        window = MyEnvironment.unwrapped.dataset.sample_instance.data
        starts.append(window.index[0])

        renders = 0
        for _ in itertools.count():
            rnd_action = MyEnvironment.action_space.sample()
            obs, reward, terminated, truncated, info = MyEnvironment.step(rnd_action)
            done = terminated or truncated
            if info[-1]['step'] % state_render == 0 or done:
                assert_line_picture(MyEnvironment.unwrapped.render('human'), human_shape)
                renders += 1
            if done:
                break
        assert renders == info[-1]['step'] // state_render + (info[-1]['step'] % state_render != 0)

        stat = MyEnvironment.unwrapped.get_stat()
        assert stat['episode'] == episode and stat['length'] > 0
        assert 'episode: {}'.format(episode) in to_string(stat)
        assert 'broker_value' in to_string(info[-1])
        # the episode ends at the 30% drawdown the env was given, or at the end of its 2-day window:
        assert info[-1]['drawdown'] >= 30 or stat['length'] >= len(window) - 2
        assert_episode_picture(MyEnvironment.unwrapped.render('episode'), (8 * 75, 12 * 75))
    for start in starts:
        assert start.weekday() in (0, 1, 2) and (start.hour, start.minute) == (0, 0)  # start_00, Mon..Wed

    MyEnvironment.close()


# -------------------------------------------------------------------------------- setting_up_environment_full

def render_all_modes(env):
    """Every render mode's picture, by mode (the notebooks showed them)."""
    return {mode: env.render(mode) for mode in env.metadata['render.modes']}


def take_some_steps(env, some_steps):
    """Random actions for `some_steps` steps or to the episode's end; returns (steps made, episode finished)."""
    for step in range(some_steps):
        rnd_action = env.action_space.sample()
        o, r, terminated, truncated, i = env.step(rnd_action)
        if terminated or truncated:
            return step + 1, True
    return step + 1, False


class MyStrategy(BTgymBaseStrategy):

    def get_price_gradients_state(self):
        sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731 (the notebook's own lambda)
        T = 1.2e+4
        X = self.raw_state
        dX = np.gradient(X)[0]
        return sigmoid(dX * T)

    def get_reward(self):
        return float(np.log(self.stats.broker.value[0] / self.env.broker.startingcash))


def expected_price_gradients(raw):
    return 1 / (1 + np.exp(-np.gradient(np.asarray(raw, dtype=np.float64))[0] * 1.2e4))


def test_full_custom_strategy_with_default_engine(walk_csv):
    MyDataset = BTgymDataset(
        filename=walk_csv,
        start_weekdays=[0, 1, ],
    )

    env = BTgymEnv(
        dataset=MyDataset,
        strategy=MyStrategy,
        state_shape={
            'raw': spaces.Box(low=-10, high=10, shape=(4, 4)),
            'price_gradients': spaces.Box(low=0, high=1, shape=(4, 4))
        },
        drawdown_call=30,
        skip_frame=5,
        start_cash=100.0,
        render_modes=['episode', 'human', 'price_gradients'],
        render_state_as_image=False,
        render_ylabel='Price Gradient',
        verbose=1,
    )
    env.action_space.seed(0)

    attributes, params = under_the_hood(env)
    assert attributes['strategy'] is MyStrategy and attributes['dataset'] is MyDataset
    assert params['strategy']['skip_frame'] == 5 and params['strategy']['drawdown_call'] == 30
    assert params['engine']['start_cash'] == 100.0
    assert params['dataset']['start_weekdays'] == [0, 1]
    assert params['render']['render_state_as_image'] is False
    assert params['render']['render_ylabel'] == 'Price Gradient'
    assert env.metadata['render.modes'] == ['episode', 'human', 'price_gradients']

    obs, _ = env.reset()
    assert MyDataset.sample_instance.data.index[0].weekday() in (0, 1)
    assert_observation_fits(obs, env.observation_space)
    assert env.observation_space['price_gradients'].shape == (4, 4)
    np.testing.assert_allclose(obs['price_gradients'], expected_price_gradients(obs['raw']), atol=1e-3)
    made, finished = take_some_steps(env, 100)
    assert (made, finished) == (100, False)  # 100 * 5 bars fit in a 23h55m window with a 4-bar warm-up
    images = render_all_modes(env)
    assert set(images) == {'episode', 'human', 'price_gradients'}
    assert_message_picture(images['episode'], env, 'no finished episode to render yet')
    assert_line_picture(images['human'], (int(3.5 * 75), 6 * 75))
    assert_line_picture(images['price_gradients'], (int(3.5 * 75), 7 * 75))  # render_size_state default (7, 3.5)

    env.close()


def test_full_custom_engine_ignores_the_env_kwargs_it_overrides(walk_csv):
    MyDataset = BTgymDataset(
        filename=walk_csv,
        start_weekdays=[0, 1, ],
        episode_duration={'days': 2, 'hours': 23, 'minutes': 55},
    )

    MyCerebro = bt.Cerebro()
    MyCerebro.addstrategy(
        MyStrategy,
        state_shape={
            'raw': spaces.Box(low=-10, high=10, shape=(4, 4)),
            'price_gradients': spaces.Box(low=0, high=1, shape=(4, 4))
        },
        drawdown_call=99,
        skip_frame=5,
    )
    MyCerebro.broker.setcash(100.0)
    MyCerebro.broker.setcommission(commission=0.002)
    MyCerebro.addsizer(bt.sizers.SizerFix, stake=20)
    MyCerebro.addanalyzer(bt.analyzers.DrawDown)

    with logbook.TestHandler() as handler:
        env = BTgymEnv(
            dataset=MyDataset,
            episode_duration={'days': 0, 'hours': 5, 'minutes': 55},
            engine=MyCerebro,
            strategy='NotUsed',
            state_shape=(9, 99),
            start_cash=1.0,
            render_modes=['episode', 'human', 'price_gradients'],
            render_state_as_image=True,
            render_ylabel='Price Gradient',
            render_size_human=(10, 4),
            render_size_state=(10, 4),
            render_plotstyle='ggplot',
            verbose=0,
        )
    env.action_space.seed(0)
    warnings = [record.message for record in handler.records if record.level == logbook.WARNING]
    for ignored in ('episode_duration', 'strategy', 'state_shape', 'start_cash'):
        assert any(message.startswith('`{}` is ignored'.format(ignored)) for message in warnings), (ignored, warnings)

    attributes, params = under_the_hood(env)
    assert attributes['engine'] is MyCerebro and attributes['strategy'] is MyStrategy
    assert params['engine'] == {'start_cash': 100.0, 'broker_commission': 0.002, 'fixed_stake': 20}
    assert params['strategy']['drawdown_call'] == 99 and params['strategy']['skip_frame'] == 5
    assert params['dataset']['sample_duration'] == {'days': 2, 'hours': 23, 'minutes': 55}
    assert env.observation_space['raw'].shape == (4, 4)  # the engine's state_shape, not (9, 99)

    obs, _ = env.reset()
    assert len(MyDataset.sample_instance.data) == 2 * MINUTES_PER_DAY + 23 * 60 + 55
    made, finished = take_some_steps(env, 100)
    assert (made, finished) == (100, False)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    np.testing.assert_allclose(obs['price_gradients'], expected_price_gradients(obs['raw']), atol=1e-3)
    assert 90.0 < info[-1]['broker_value'] < 110.0  # the engine's 100.0 start cash, not the ignored 1.0
    assert reward == pytest.approx(np.log(info[-1]['broker_value'] / 100.0), abs=1e-3)  # MyStrategy.get_reward
    images = render_all_modes(env)
    assert_line_picture(images['human'], (4 * 75, 10 * 75), style='ggplot')
    assert_heat_map(images['price_gradients'], (4 * 75, 10 * 75))
    assert_message_picture(images['episode'], env, 'no finished episode to render yet')
    stat = env.get_stat()
    assert 'drawdown' in stat  # the engine's DrawDown analyzer

    env.close()


# ------------------------------------------------------------------------------------------- rendering_howto

def test_rendering_howto_modes_before_during_and_after_episodes(walk_csv):
    env = BTgymEnv(
        filename=walk_csv,
        state_shape={'raw': spaces.Box(low=-100, high=100, shape=(30, 4), dtype=np.float32)},
        skip_frame=5,
        start_cash=100,
        render_ylabel='Price Lines',
        render_size_episode=(12, 8),
        render_size_human=(8, 3.5),
        render_size_state=(10, 3.5),
        render_dpi=75,
        verbose=0,
    )
    env.action_space.seed(0)
    human, episode = (int(3.5 * 75), 8 * 75), (8 * 75, 12 * 75)

    images = render_all_modes(env)  # before any reset: placeholder pictures
    assert set(images) == {'human', 'episode'}
    assert_message_picture(images['human'], env, 'nothing to render before the first reset()')
    assert_message_picture(images['episode'], env, 'no finished episode to render yet')

    o, _ = env.reset()
    assert_observation_fits(o, env.observation_space)
    images = render_all_modes(env)
    assert_line_picture(images['human'], human)
    assert_message_picture(images['episode'], env, 'no finished episode to render yet')

    assert take_some_steps(env, 100) == (100, False)
    assert_line_picture(render_all_modes(env)['human'], human)

    # The notebook's run: 'Episode finished, 179 steps made' after the first 100, as here: a 23h55m window of 1435
    # bars, a 30-bar warm-up and 5 bars a step leave 279 steps.
    assert take_some_steps(env, 10000) == (179, True)
    images = render_all_modes(env)
    assert_line_picture(images['human'], human)
    assert_episode_picture(images['episode'], episode)
    finished = images['episode']

    env.reset()
    assert take_some_steps(env, 50) == (50, False)
    np.testing.assert_array_equal(render_all_modes(env)['episode'], finished)  # still the finished episode

    assert env._force_control_mode() is True
    images = render_all_modes(env)
    assert_line_picture(images['human'], human)
    assert_episode_picture(images['episode'], episode)
    assert not np.array_equal(images['episode'], finished)  # the interrupted second episode's
    stat = env.get_stat()
    assert stat['episode'] == 1 and stat['length'] < 1435  # the interrupted second episode

    env.close()


def test_rendering_howto_styled_modes_with_an_observation_mode(walk_csv):
    env = BTgymEnv(
        filename=walk_csv,
        state_shape={'raw': spaces.Box(low=-100, high=100, shape=(30, 4), dtype=np.float32)},
        skip_frame=5,
        start_cash=100,
        render_modes=['human', 'episode', 'raw'],
        render_ylabel='SOMETHING IN COLOR',
        render_xlabel='BACKWARD TIME',
        render_size_episode=(14, 10),
        render_size_human=(11, 5),
        render_size_state=(14, 5),
        render_cmap='inferno',
        render_plotstyle='ggplot',
        render_dpi=75,
        verbose=0,
        render_boxtext=dict(
            fontsize=14,
            fontweight='regular',
            color='k',
            bbox={'facecolor': 'w', 'alpha': 0.4, 'pad': 3},
        )
    )
    env.action_space.seed(0)

    env.reset()
    assert take_some_steps(env, 1000) == (279, True)  # the notebook's 'Episode finished, 279 steps made'
    images = render_all_modes(env)
    assert set(images) == {'human', 'episode', 'raw'}
    assert_line_picture(images['human'], (5 * 75, 11 * 75), style='ggplot')  # the notebook's 825x375 picture
    assert_episode_picture(images['episode'], (10 * 75, 14 * 75))  # 1050x750
    assert_heat_map(images['raw'], (5 * 75, 14 * 75), cmap='inferno')  # 1050x375, what the notebook gave plt.imshow()

    env.close()


# -------------------------------------------------------------------------------------- data_domain_api_intro
# The notebook imports BTgymSequentialDataDomain, DataSampleConfig and EnvResetConfig too, but uses only
# BTgymRandomDataDomain (the time-ordered domains have tests of their own in test_time_domains.py).

def test_data_domain_notebook_imports():
    """The notebook's names are the package's own classes and sample configs, its reset config holding copies of
    the sample config that change independently."""
    from btgym_aac import (
        BTgymDataset,
        BTgymEnv,
        BTgymRandomDataDomain,
        BTgymSequentialDataDomain,
        DataSampleConfig,
        EnvResetConfig,
    )
    from btgym_aac.data import dataset, sampling, sequential
    from btgym_aac.env import base

    assert BTgymDataset is dataset.BTgymDataset and BTgymRandomDataDomain is dataset.BTgymRandomDataDomain
    assert BTgymSequentialDataDomain is sequential.BTgymSequentialDataDomain and BTgymEnv is base.BTgymEnv
    assert BTgymDataset.__mro__[1] is BTgymSequentialDataDomain.__mro__[1] is BTgymRandomDataDomain
    assert DataSampleConfig is sampling.DataSampleConfig and EnvResetConfig is sampling.EnvResetConfig
    sample_config = {'get_new': True, 'sample_type': 0, 'timestamp': None, 'b_alpha': 1.0, 'b_beta': 1.0}
    assert DataSampleConfig == sample_config
    assert EnvResetConfig == {'episode_config': sample_config, 'trial_config': sample_config}
    assert len({id(DataSampleConfig), id(EnvResetConfig['episode_config']), id(EnvResetConfig['trial_config'])}) == 3


@pytest.fixture(scope='module')
def domain_csv(tmp_path_factory):
    """100 days of continuous 1-minute bars: room for the notebook's 50-day target period and 30-day trials."""
    frame = make_random_walk_data(num_bars=100 * MINUTES_PER_DAY, seed=2, start='2016-01-01')
    return write_histdata_csv(frame, str(tmp_path_factory.mktemp('domain') / 'DAT_ASCII_RANDOM_WALK_M1_2016.csv'))


def make_domain(filename):
    return BTgymRandomDataDomain(
        filename=filename,
        target_period={'days': 50, 'hours': 0, 'minutes': 0},
        trial_params=dict(
            start_weekdays={0, 1, 2, 3, 4, 5, 6},
            sample_duration={'days': 30, 'hours': 0, 'minutes': 0},
            start_00=True,
            time_gap={'days': 15, 'hours': 0},
            test_period={'days': 6, 'hours': 0, 'minutes': 0},
        ),
        episode_params=dict(
            start_weekdays={0, 1, 2, 3, 4, 5, 6},
            sample_duration={'days': 0, 'hours': 23, 'minutes': 55},
            start_00=False,
            time_gap={'days': 0, 'hours': 10},
        ),
        log_level=INFO,
    )


def test_data_domain_trial_episode_hierarchy(domain_csv):
    domain = make_domain(domain_csv)

    with logbook.TestHandler(level=INFO) as handler:
        domain.reset()
    assert any('{} bars'.format(100 * MINUTES_PER_DAY) in record.message and domain_csv in record.message
               for record in handler.records), [record.message for record in handler.records]
    num_rows = 100 * MINUTES_PER_DAY
    assert len(domain.data) == num_rows
    assert domain.train_interval == [0, num_rows - 50 * MINUTES_PER_DAY]  # the last 50 days are the target domain

    trial = domain.sample(
        get_new=True,
        sample_type=0,
        b_alpha=1,
        b_beta=1
    )

    trial.reset()

    episode = trial.sample(
        get_new=True,
        sample_type=1,
        b_alpha=1,
        b_beta=1
    )

    data_feed = episode.to_btfeed()

    assert type(domain) is BTgymRandomDataDomain
    assert domain.filename == domain_csv
    assert domain.metadata == {'sample_num': 0, 'type': None}

    assert type(trial).__name__ == 'BTgymDataTrial'
    assert trial.filename.startswith('train_trial_w_0_num_0_at_')
    assert set(trial.metadata) == {'sample_num', 'type', 'first_row', 'last_row', 'parent_sample_num',
                                   'parent_sample_type'}
    assert trial.metadata['type'] == 0 and trial.metadata['parent_sample_num'] == 0
    assert trial.metadata['parent_sample_type'] is None
    assert trial.metadata['last_row'] - trial.metadata['first_row'] == 30 * MINUTES_PER_DAY
    assert trial.metadata['last_row'] <= domain.train_interval[1]  # a train trial, out of the target domain
    assert trial.data.index[0] == domain.data.index[trial.metadata['first_row']]
    assert (trial.data.index[0].hour, trial.data.index[0].minute) == (0, 0)  # start_00
    assert trial.test_interval == [24 * MINUTES_PER_DAY, 30 * MINUTES_PER_DAY]  # its last 6 days

    assert type(episode).__name__ == 'BTgymEpisode'
    assert episode.filename.startswith('test_episode_w_0_num_0_at_')
    assert episode.metadata['type'] == 1 and episode.metadata['sample_num'] == 0
    assert episode.metadata['parent_sample_num'] == 0 and episode.metadata['parent_sample_type'] == 0
    assert episode.metadata['last_row'] - episode.metadata['first_row'] == 23 * 60 + 55
    assert trial.test_interval[0] <= episode.metadata['first_row'] < episode.metadata['last_row'] \
        <= trial.test_interval[1]
    assert episode.data.index[0] == trial.data.index[episode.metadata['first_row']]

    assert isinstance(data_feed, dict) and list(data_feed) == ['default_asset']
    assert isinstance(data_feed['default_asset'], bt.feeds.PandasDirectData)
    assert data_feed['default_asset'].p.dataname is episode.data or \
        data_feed['default_asset'].p.dataname.equals(episode.data)


def ks_distance(samples, cdf):
    """The Kolmogorov-Smirnov distance between the empirical distribution of `samples` and the CDF `cdf`."""
    x = np.sort(samples)
    below, above = np.arange(len(x)) / len(x), np.arange(1, len(x) + 1) / len(x)
    return max(np.max(cdf(x) - below), np.max(above - cdf(x)))


def test_data_domain_beta_skewed_episode_starts(domain_csv):
    domain = make_domain(domain_csv)
    domain.seed(0)
    domain.reset()
    trial = domain.sample(get_new=True, sample_type=0, b_alpha=1, b_beta=1)
    trial.reset()

    trial.set_logger(level=13)

    train_num_samples = 600
    test_num_samples = 300
    alpha = 3
    beta = 1

    train_start = np.zeros(train_num_samples)
    test_start = np.zeros(test_num_samples)
    for i in range(train_num_samples):
        train_start[i] = trial.sample(True, 0, alpha, beta).data[0:1].index[0].value / 1e18
    for i in range(test_num_samples):
        test_start[i] = trial.sample(True, 1, alpha, beta).data[0:1].index[0].value / 1e18

    def relative(starts, interval):
        """Starts as fractions of the span of starts a 23h55m window can take in `interval`."""
        first = trial.data.index[interval[0]].value / 1e18
        last = trial.data.index[interval[1] - (23 * 60 + 55)].value / 1e18
        return (starts - first) / (last - first)

    train = relative(train_start, trial.train_interval)
    test = relative(test_start, trial.test_interval)
    assert train.min() >= 0 and train.max() <= 1 and test.min() >= 0 and test.max() <= 1
    # Beta(3, 1) favours recent train episodes: mean 3/4, median 2 ** (-1/3) ~ 0.79, a quarter below 0.63:
    assert train.mean() == pytest.approx(0.75, abs=0.04)
    assert np.median(train) == pytest.approx(2 ** (-1 / 3), abs=0.05)
    assert np.mean(train < 0.5) == pytest.approx(0.125, abs=0.05)
    # Test episodes ignore alpha and beta: uniform over the test interval:
    assert test.mean() == pytest.approx(0.5, abs=0.07)
    assert np.mean(test < 0.5) == pytest.approx(0.5, abs=0.1)
    assert train_start.max() < test_start.min() or trial.test_interval[0] >= trial.train_interval[1]
    # The whole distributions: Kolmogorov-Smirnov distances to the Beta(3, 1) CDF x ** 3 and to the uniform one,
    # under their 0.1 % critical values. (The notebook's picture of numpy's own Beta(2, 1) draws is left out.)
    assert ks_distance(train, lambda x: x ** 3) < 1.95 / np.sqrt(train_num_samples)
    assert ks_distance(test, lambda x: x) < 1.95 / np.sqrt(test_num_samples)


# ---------------------------------------------------------------------------------------- async_btgym_workers

class Worker:
    """The notebook's `Worker(multiprocessing.Process)`, on the Process class of a chosen start method (see
    `ForkWorker`, `SpawnWorker`); instead of printing its progress it puts it in `reports`."""
    env = None

    def __init__(self, env_class, worker_id, num_episodes, env_config, reports):
        super().__init__()
        self.env_class = env_class
        self.num_episodes = num_episodes
        self.env_config = env_config
        self.worker_id = worker_id
        self.reports = reports

    def run(self):
        try:
            self.env = self.env_class(**self.env_config)
            report = dict(worker_id=self.worker_id, data_rows=len(self.env.dataset.data),
                          data_close=self.env.dataset.data['close'].to_numpy(), episodes=[])
            for episode in range(self.num_episodes):
                obs, _ = self.env.reset()
                window = self.env.dataset.sample_instance
                done = False
                steps = 0
                while not done:
                    obs, reward, terminated, truncated, info = self.env.step(0)
                    done = terminated or truncated
                    steps += 1
                stat = self.env.get_stat()
                report['episodes'].append(dict(
                    first_row=window.metadata['first_row'], first_time=window.data.index[0],
                    first_bar=window.data.iloc[0].to_numpy(), rows=len(window.data), steps=steps,
                    episode=stat['episode'], length=stat['length'], runtime=stat['runtime']))
            self.env.close()
            self.reports.put(report)
        except Exception as error:  # reported to the test, which would otherwise only see an exit code
            self.reports.put(dict(worker_id=self.worker_id, error=repr(error)))
            raise


class ForkWorker(Worker, multiprocessing.get_context('fork').Process):
    pass


class SpawnWorker(Worker, multiprocessing.get_context('spawn').Process):
    pass


def async_dataset(filename):
    return BTgymDataset(
        filename=filename,
        start_weekdays=[0, 1, 2, 3, 4],
        episode_duration={'days': 0, 'hours': 3, 'minutes': 55},  # the notebook's 1 day 23h55m, shortened
        start_00=False,
        time_gap={'hours': 12},
    )


@pytest.mark.parametrize('worker_class', [ForkWorker, SpawnWorker], ids=['fork', 'spawn'])
def test_async_workers_sample_the_data_master_dataset(worker_class, walk_csv, walk_frame):
    context = multiprocessing.get_context(worker_class._start_method)
    MyDataset = async_dataset(walk_csv)

    num_workers = 2
    num_episodes = 2
    base_port = 5000
    data_port = unique_data_port()
    reports = context.Queue()
    workers = []

    data_master = BTgymEnv(
        dataset=MyDataset,
        port=5050,
        data_port=data_port,
        data_master=True,
        connect_timeout=10,
        verbose=0,
    )
    o, _ = data_master.reset()
    assert_observation_fits(o, data_master.observation_space)

    try:
        for i in range(num_workers):
            env_config = dict(
                port=base_port + i,
                data_port=data_port,
                data_master=False,
                connect_timeout=10,
                verbose=0,
            )
            worker = worker_class(
                env_class=BTgymEnv,
                worker_id=i,
                num_episodes=num_episodes,
                env_config=env_config,
                reports=reports,
            )
            worker.daemon = False
            worker.start()
            workers.append(worker)

        results = {}
        for _ in workers:
            try:
                report = reports.get(timeout=60)
            except queue.Empty:
                pytest.fail('a worker reported nothing within 60 s; exit codes {}'.format(
                    [worker.exitcode for worker in workers]))
            results[report['worker_id']] = report
        for worker in workers:
            worker.join(timeout=30)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
                worker.join()
        data_master.close()

    assert [worker.exitcode for worker in workers] == [0] * num_workers
    assert sorted(results) == list(range(num_workers))
    master_data = MyDataset.data
    # the master's data are the random walk written to the file, not the built-in sine series:
    np.testing.assert_allclose(master_data['close'].to_numpy(), walk_frame['close'].to_numpy(), rtol=1e-12)
    window_rows = 3 * 60 + 55
    first_rows = []
    for worker_id, report in results.items():
        assert 'error' not in report, report
        assert report['data_rows'] == len(master_data)
        np.testing.assert_array_equal(report['data_close'], master_data['close'].to_numpy())
        assert [episode['episode'] for episode in report['episodes']] == list(range(num_episodes))
        for episode in report['episodes']:
            first = episode['first_row']
            assert 0 <= first and first + window_rows <= len(master_data)
            assert episode['rows'] == window_rows
            assert episode['first_time'] == master_data.index[first]
            assert episode['first_time'].weekday() in (0, 1, 2, 3, 4)
            np.testing.assert_array_equal(episode['first_bar'], master_data.iloc[first].to_numpy())
            assert episode['steps'] > 0 and episode['length'] > 0
            assert isinstance(episode['runtime'], datetime.timedelta)
            first_rows.append(first)
    # each worker samples with a random generator of its own: the copies do not draw the same windows
    assert len(set(first_rows)) > 1


def test_async_data_master_and_client_envs_in_one_process(walk_csv):
    data_port = unique_data_port()
    MyDataset = async_dataset(walk_csv)

    env1 = BTgymEnv(
        dataset=MyDataset,
        port=5050,
        data_port=data_port,
        data_master=True,
        connect_timeout=5,
        verbose=2,
    )

    env2 = BTgymEnv(
        port=5052,
        data_port=data_port,
        data_master=False,
        connect_timeout=5,
        verbose=2,
    )

    _1, _ = env1.reset()
    _2, _ = env2.reset()
    assert_observation_fits(_1, env1.observation_space)
    assert_observation_fits(_2, env2.observation_space)
    assert env2.dataset is not env1.dataset
    assert env2.dataset.data.equals(env1.dataset.data)
    window = env2.dataset.sample_instance
    assert window.data.index[0] == env1.dataset.data.index[window.metadata['first_row']]

    env2.close()
    env1.close()

    with pytest.raises(LookupError, match='no data master env serves data_port {}'.format(data_port)):
        BTgymEnv(data_port=data_port, data_master=False)


# ------------------------------------------------------------------------------------- state_signal_scaling

class SignalProvider():

    def __init__(self, env):
        self.env = env
        self.done = True

    def get_batch(self, batch_size):
        batch_ext = []
        batch_int = []
        batch_r = []
        while len(batch_r) < batch_size:
            if not self.done:
                o, r, terminated, truncated, i = self.env.step(self.env.action_space.sample())
                self.done = terminated or truncated
            else:
                o, _ = self.env.reset()
                r = 0
                self.done = False
            batch_ext.append(o['external'])
            batch_int.append(o['internal'])
            batch_r.append(r)
        return batch_ext, batch_int, batch_r

    def close(self):
        self.env.close()
        self.done = True


def signal_scaling_engine():
    state_ext_scale = np.linspace(3e3, 1e3, num=6)
    reward_scale = 10.0

    engine = bt.Cerebro()
    engine.addstrategy(
        DevStrat_4_12,
        drawdown_call=10,
        target_call=10,
        skip_frame=10,
        gamma=0.99,
        reward_scale=reward_scale,
        state_ext_scale=state_ext_scale,
    )
    return engine


def test_state_signal_scaling_engine_as_written_has_no_order_size(walk_csv):
    """The notebook's engine has neither a sizer nor an `order_size`: refused at construction, as the original's
    strategy refused it when its server started the episode ('Order stake is not set ...')."""
    with pytest.raises(ValueError, match='order_size is not set and the engine has 0 sizers'):
        BTgymEnv(filename=walk_csv, engine=signal_scaling_engine(), skip_frame=10, port=5050,
                 data_port=unique_data_port(), verbose=0)


def test_state_signal_scaling_external_state_distribution(walk_csv):
    engine = signal_scaling_engine()
    engine.addsizer(bt.sizers.SizerFix, stake=10)  # not in the notebook (see the test above)
    env = BTgymEnv(
        filename=walk_csv,
        engine=engine,
        skip_frame=10,
        port=5050,
        data_port=unique_data_port(),
        verbose=0
    )
    env.action_space.seed(0)
    assert env.strategy is DevStrat_4_12 and issubclass(DevStrat_4_12, DevStrat_4_11)
    signal_provider = SignalProvider(env)

    batch_size = 256
    batch_ext, batch_int, batch_r = signal_provider.get_batch(batch_size)
    signal_provider.close()

    assert len(batch_ext) == len(batch_int) == len(batch_r) == batch_size
    assert all(np.isfinite(batch_r))
    distr_ext = np.asarray(batch_ext)
    assert distr_ext.shape == (batch_size,) + env.observation_space['external'].shape == (batch_size, 30, 1, 6)
    num_channels = distr_ext.shape[-1]
    distr_ext = np.reshape(distr_ext[..., 0, :], [-1, num_channels])
    assert distr_ext.shape == (batch_size * 30, 6)
    assert np.asarray(batch_int).shape[1:] == env.observation_space['internal'].shape

    # tanh-squashed, per-channel weighted features: inside (-1, 1), spread out, and hardly ever saturated
    assert np.all(np.abs(distr_ext) < 1)
    spread = distr_ext.std(axis=0)
    assert np.all(spread > 0.1) and np.all(spread < 0.8)
    assert np.mean(np.abs(distr_ext) > 0.99) < 0.02
