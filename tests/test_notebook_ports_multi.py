"""The original btgym's two multi-asset notebooks, cell by cell: `multi_discrete_setup_intro` (MultiDiscreteEnv
trading USD and CHF, GBP and JPY as information-only lines) and `portfolio_setup_BETA` (PortfolioEnv, target
weights over EUR cash and all four lines). Both build CasualConvStrategyMulti in a bt.Cerebro, a BTgymMultiData of
four HistData files over BTgymCasualDataDomain, StackedLstmPolicy with the causal-convolution attention encoder
and A3C; the portfolio notebook also plays one step by hand before training.

Changes from the notebooks: btgym -> btgym_aac, gym -> gymnasium (`reset()` returns `(obs, info)`, `step()` five
values), assertions instead of prints, and:
* data: the notebooks' 2017 HistData files of EURUSD, EURGBP, EURJPY and EURCHF (`./data/DAT_ASCII_EUR<X>_M1_2017
  .csv`) are generated into pytest's temp dir under the same names and in the same format: correlated random walks
  (`make_correlated_walks`, JPY scaled to a level of 120 as the real cross), 7 days of 1-minute bars from
  2017-02-24 instead of a year, so that the notebooks' frozen time split (2017-03-01, unchanged) lies 5 days in;
* the casual domain's durations are shrunk, keeping their structure (expanding source trials before the frozen
  split, every weekday, start_00 False, a trial test period, episodes shorter than the trial's train part):
  trials of 4 days instead of 30 (trial test period 1 day instead of 7, time gap 2 days instead of 15), episodes
  of 10 hours instead of 2 days 23h55m (time gap 8 hours instead of 2 days 15h). CasualConvStrategyMulti warms up
  on 384 bars and steps every 10 bars: 21 steps an episode;
* free cluster ports and per-test data ports instead of the notebooks' 12230 and 4999, temp log dirs, and (slow
  tests) 2 workers and a few hundred env steps instead of 4 workers and 100 million.
The policy is built once from each notebook's policy_config on the env's spaces, as the trainer builds it, to check
the widths the reference gives (LSTM 1 input 3329; LSTM 2 input 4100 discrete, 4101 continuous).
"""
import datetime
import os
import re
from collections import OrderedDict

import backtrader as bt
import numpy as np
import pytest
from gymnasium import spaces

from btgym_aac import MultiDiscreteEnv, PortfolioEnv
from btgym_aac.algorithms.aac import A3C
from btgym_aac.algorithms.launcher.base import Launcher
from btgym_aac.algorithms.policy import StackedLstmPolicy
from btgym_aac.compat import tf
from btgym_aac.data import make_correlated_walks, write_histdata_csv
from btgym_aac.datafeed.casual import BTgymCasualDataDomain
from btgym_aac.datafeed.multi import BTgymMultiData
from btgym_aac.distributed.checkpoints import latest_checkpoint
from btgym_aac.research.casual_conv.networks import conv_1d_casual_attention_encoder
from btgym_aac.research.casual_conv.strategy import CasualConvStrategyMulti
from test_notebook_ports import unique_data_port

pytestmark = pytest.mark.xdist_group('notebook_ports_multi')  # one xdist worker builds the module's fixtures

LINES = ('USD', 'GBP', 'JPY', 'CHF')
FROZEN_SPLIT = datetime.datetime(2017, 3, 1)
EPISODE_BARS = 10 * 60
STEPS_AN_EPISODE = (EPISODE_BARS - 384) // 10
ACTIONS = ('hold', 'buy', 'sell', 'close')
INFO_KEYS = {'step', 'time', 'action', 'broker_message', 'broker_cash', 'broker_value', 'drawdown', 'max_drawdown',
             'positions'}


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
    """The notebooks' ./data folder: four HistData files of correlated walks, 2017-02-24 .. 2017-03-02."""
    folder = tmp_path_factory.mktemp('data')
    frames = make_correlated_walks(num_bars=7 * 24 * 60, names=LINES, correlation=0.5, volatility=1e-4,
                                   start='2017-02-24 00:00', seed=3)
    for line, frame in frames.items():
        if line == 'JPY':
            frame = frame.copy()
            frame[['open', 'high', 'low', 'close']] *= 120 / 1.1
        write_histdata_csv(frame, str(folder / 'DAT_ASCII_EUR{}_M1_2017.csv'.format(line)))
    return str(folder)


def shrunk_domain_params():
    """The notebooks' trial_params / episode_params, durations shrunk (module docstring)."""
    trial_params = dict(
        start_weekdays={0, 1, 2, 3, 4, 5, 6},
        sample_duration={'days': 4, 'hours': 0, 'minutes': 0},  # the notebooks' 30 days
        start_00=False,
        time_gap={'days': 2, 'hours': 0},  # 15 days
        test_period={'days': 1, 'hours': 0, 'minutes': 0},  # 7 days
        expanding=True,
    )
    episode_params = dict(
        start_weekdays={0, 1, 2, 3, 4, 5, 6},
        sample_duration={'days': 0, 'hours': 10, 'minutes': 0},  # 2 days 23h55m
        start_00=False,
        time_gap={'days': 0, 'hours': 8},  # 2 days 15h
    )
    return trial_params, episode_params


def multi_discrete_cell(data_dir, log_dir):
    """multi_discrete_setup_intro, the configuration cell."""
    engine = bt.Cerebro()

    num_features = 16

    engine.addstrategy(
        CasualConvStrategyMulti,
        cash_name='EUR',
        start_cash=2000,
        commission=0.0001,
        leverage=10.0,
        asset_names={'USD', 'CHF'},  # traded; GBP and JPY only inform the decisions
        drawdown_call=10,
        target_call=10,
        skip_frame=10,
        gamma=0.99,
        state_ext_scale={
            'USD': np.linspace(1, 2, num=num_features),
            'GBP': np.linspace(1, 2, num=num_features),
            'CHF': np.linspace(1, 2, num=num_features),
            'JPY': np.linspace(5e-3, 1e-2, num=num_features),
        },
        cwt_signal_scale=4e3,
        cwt_lower_bound=4.0,
        cwt_upper_bound=90.0,
        reward_scale=7,
        order_size={
            'CHF': 1000,
            'USD': 1000,
        },
    )

    data_config = [
        ('USD', {'filename': os.path.join(data_dir, 'DAT_ASCII_EURUSD_M1_2017.csv')}, ),
        ('GBP', {'filename': os.path.join(data_dir, 'DAT_ASCII_EURGBP_M1_2017.csv')}, ),
        ('JPY', {'filename': os.path.join(data_dir, 'DAT_ASCII_EURJPY_M1_2017.csv')}, ),
        ('CHF', {'filename': os.path.join(data_dir, 'DAT_ASCII_EURCHF_M1_2017.csv')}, ),
    ]

    data_config = OrderedDict(data_config)

    trial_params, episode_params = shrunk_domain_params()
    dataset = BTgymMultiData(
        data_class_ref=BTgymCasualDataDomain,
        data_config=data_config,
        trial_params=trial_params,
        episode_params=episode_params,
        frozen_time_split={'year': 2017, 'month': 3, 'day': 1},
    )

    env_config = dict(
        class_ref=MultiDiscreteEnv,
        kwargs=dict(
            dataset=dataset,
            engine=engine,
            render_modes=['episode'],
            render_state_as_image=True,
            render_size_episode=(12, 16),
            render_size_human=(9, 4),
            render_size_state=(11, 3),
            render_dpi=75,
            port=5000,
            data_port=unique_data_port(),  # the notebook's 4999
            connect_timeout=90,
            verbose=0,
        )
    )

    cluster_config = dict(
        host='127.0.0.1',
        port=None,  # the notebook's 12230: free ports instead
        num_workers=2,  # the notebook's 4
        num_ps=1,
        num_envs=1,
        log_dir=log_dir,  # the notebook's ~/tmp/multi_discrete
    )
    policy_config = dict(
        class_ref=StackedLstmPolicy,
        kwargs={
            'lstm_layers': (256, 256),
            'dropout_keep_prob': 1.0,
            'encode_internal_state': False,
            'conv_1d_num_filters': 64,
            'state_encoder_class_ref': conv_1d_casual_attention_encoder,
        }
    )

    trainer_config = dict(
        class_ref=A3C,
        kwargs=dict(
            opt_learn_rate=1e-4,
            opt_end_learn_rate=1e-5,
            opt_decay_steps=50 * 10 ** 6,
            model_gamma=0.99,
            model_gae_lambda=1.0,
            model_beta=0.001,
            rollout_length=20,
            time_flat=True,
            model_summary_freq=10,
            episode_summary_freq=1,
            env_render_freq=5,
        )
    )
    return env_config, cluster_config, policy_config, trainer_config


def portfolio_cell(data_dir, log_dir):
    """portfolio_setup_BETA, the configuration cell."""
    engine = bt.Cerebro()

    num_features = 16

    engine.addstrategy(
        CasualConvStrategyMulti,
        cash_name='EUR',
        start_cash=2000,
        commission=0.0001,
        leverage=10.0,
        asset_names={'USD', 'CHF', 'GBP', 'JPY'},
        drawdown_call=10,
        target_call=10,
        skip_frame=10,
        gamma=0.99,
        state_ext_scale={
            'USD': np.linspace(1, 2, num=num_features),
            'GBP': np.linspace(1, 2, num=num_features),
            'CHF': np.linspace(1, 2, num=num_features),
            'JPY': np.linspace(5e-3, 1e-2, num=num_features),
        },
        cwt_signal_scale=4e3,
        cwt_lower_bound=4.0,
        cwt_upper_bound=90.0,
        reward_scale=7,
    )

    data_config = {
        'USD': {'filename': os.path.join(data_dir, 'DAT_ASCII_EURUSD_M1_2017.csv')},
        'GBP': {'filename': os.path.join(data_dir, 'DAT_ASCII_EURGBP_M1_2017.csv')},
        'JPY': {'filename': os.path.join(data_dir, 'DAT_ASCII_EURJPY_M1_2017.csv')},
        'CHF': {'filename': os.path.join(data_dir, 'DAT_ASCII_EURCHF_M1_2017.csv')},
    }

    trial_params, episode_params = shrunk_domain_params()
    dataset = BTgymMultiData(
        data_class_ref=BTgymCasualDataDomain,
        data_config=data_config,
        trial_params=trial_params,
        episode_params=episode_params,
        frozen_time_split={'year': 2017, 'month': 3, 'day': 1},
    )

    env_config = dict(
        class_ref=PortfolioEnv,
        kwargs=dict(
            dataset=dataset,
            engine=engine,
            render_modes=['episode'],
            render_state_as_image=True,
            render_size_episode=(12, 16),
            render_size_human=(9, 4),
            render_size_state=(11, 3),
            render_dpi=75,
            port=5000,
            data_port=unique_data_port(),  # the notebook's 4999
            connect_timeout=90,
            verbose=0,
        )
    )

    cluster_config = dict(
        host='127.0.0.1',
        port=None,  # the notebook's 12230: free ports instead
        num_workers=2,  # the notebook's 4
        num_ps=1,
        num_envs=1,
        log_dir=log_dir,  # the notebook's ~/tmp/multi_continiuous
    )
    policy_config = dict(
        class_ref=StackedLstmPolicy,
        kwargs={
            'action_dp_alpha': 200,
            'lstm_layers': (256, 256),
            'dropout_keep_prob': 1.0,
            'encode_internal_state': False,
            'conv_1d_num_filters': 64,
            'share_encoder_params': False,
            'state_encoder_class_ref': conv_1d_casual_attention_encoder,
        }
    )

    trainer_config = dict(
        class_ref=A3C,
        kwargs=dict(
            opt_learn_rate=1e-4,
            opt_end_learn_rate=1e-5,
            opt_decay_steps=50 * 10 ** 6,
            model_gamma=0.99,
            model_gae_lambda=1.0,
            model_beta=0.001,
            rollout_length=20,
            time_flat=True,
            model_summary_freq=10,
            episode_summary_freq=1,
            env_render_freq=5,
        )
    )
    return env_config, cluster_config, policy_config, trainer_config


# ------------------------------------------------------------------------------------------------ helpers

def assert_notebook_observation(observation, space):
    """The observation of the reference (§8.1): raw [128,4], one [128,1,16] wavelet stream per line, internal
    [20,1,5], datetime [1,5], metadata; inside the space."""
    assert set(observation) == {'raw', 'external', 'internal', 'datetime', 'metadata'}
    assert {key: np.shape(observation[key]) for key in ('raw', 'internal', 'datetime')} == {
        'raw': (128, 4), 'internal': (20, 1, 5), 'datetime': (1, 5)}
    assert {line: np.shape(stream) for line, stream in observation['external'].items()} == {
        line: (128, 1, 16) for line in ('CHF', 'GBP', 'JPY', 'USD')}
    assert space.contains(observation)
    assert all(np.isfinite(stream).all() and np.abs(stream).max() <= 1 for stream in observation['external'].values())
    assert np.std(observation['external']['JPY']) > 0.05  # the notebook's JPY scale fits a line at 120


def assert_before_the_frozen_split(observation, info):
    """A3C's episodes are train episodes of source trials: they lie before the frozen split."""
    assert int(observation['metadata']['type']) == 0 and int(observation['metadata']['trial_type']) == 0
    assert info['time'] < FROZEN_SPLIT
    assert float(observation['metadata']['timestamp']) < FROZEN_SPLIT.replace(tzinfo=datetime.timezone.utc).timestamp()


def policy_on(env, policy_config):
    """The notebook's policy built on the env's spaces as the trainer builds it (scope `local`, A3C's
    `rp_sequence_size` 3, static single-step RNNs for `time_flat`); returns (graph, policy, {variable: shape})."""
    graph = tf.Graph()
    with graph.as_default(), tf.variable_scope('local'):
        policy = policy_config['class_ref'](ob_space=env.observation_space, ac_space=env.action_space,
                                            rp_sequence_size=3, static_rnn=True, task=0,
                                            **policy_config['kwargs'])
    shapes = {variable.op.name: variable.get_shape().as_list() for variable in policy.var_list}
    return graph, policy, shapes


def lstm_kernels(shapes):
    """{'lstm_1': [input width + units, 4 units], 'lstm_2': ...}."""
    return {name.split('/')[1]: shape for name, shape in shapes.items() if name.endswith('/kernel')
            and name.split('/')[1].startswith('lstm_')}


def act_on(graph, policy, env, observation, steps=2):
    """Acts `steps` times on `observation`; returns the action packs."""
    packs = []
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        context = sess.run(policy.on_lstm_init_state)
        last_action = env.action_space.encode(env.get_initial_action())
        for _ in range(steps):
            with sess.as_default():
                pack, logits, value, context = policy.act(observation, context, last_action[None], np.array([0.0]))
            assert logits.shape == (env.action_space.one_hot_depth,) and np.isfinite(value).all()
            packs.append(pack)
            last_action = pack['encoded']
    return packs


def assert_encoders(shapes, scopes):
    """Every data line has its own encoder (no shared one), and so has `internal`; 64 filters each."""
    for scope, channels in scopes.items():
        assert shapes['local/{}/conv1d_layer_0/W'.format(scope)] == [2, channels, 64], scope
        assert shapes['local/{}/attention_layer_0/W'.format(scope)] == [64, 64], scope
    assert not any('encoded_external_shared' in name for name in shapes)


ENCODERS = {'encoded_external_CHF': 16, 'encoded_external_GBP': 16, 'encoded_external_JPY': 16,
            'encoded_external_USD': 16, 'encoded_internal': 5}


# -------------------------------------------------------------------------------------- multi_discrete_setup_intro

def test_multi_discrete_env_of_the_notebook_trades_usd_and_chf(data_dir, tmp_path):
    env_config, _, _, _ = multi_discrete_cell(data_dir, str(tmp_path / 'multi_discrete'))
    env = env_config['class_ref'](**env_config['kwargs'])
    try:
        space = env.action_space
        assert space.assets == ('CHF', 'USD')
        assert space.spaces == {'CHF': spaces.Discrete(4), 'USD': spaces.Discrete(4)}
        assert (space.one_hot_depth, space.encoded_depth) == (16, 4)
        # {CHF: buy, USD: close} is category 1 * 4 + 3 = 7 of the joint categorical, binary 0111
        np.testing.assert_array_equal(space.encode({'CHF': 1, 'USD': 3}), [0, 1, 1, 1])
        assert list(env.dataset.data) == list(LINES)  # data_config order: datas[0] is USD

        observation, info = env.reset(seed=0)
        assert_notebook_observation(observation, env.observation_space)
        assert_before_the_frozen_split(observation, info)

        space.seed(0)
        expected = {'CHF': 0, 'USD': 0}
        for _ in range(6):
            action = space.sample()
            assert space.contains(action)
            observation, reward, terminated, truncated, info = env.step(action)
            assert_notebook_observation(observation, env.observation_space)
            assert np.isfinite(reward) and not terminated and not truncated
            assert INFO_KEYS <= set(info) and len(info['bars']) == 10
            assert info[0]['action'] == {asset: ACTIONS[index] for asset, index in action.items()}
            for asset, index in action.items():  # fixed 1000-unit orders, executed on the next bar
                expected[asset] = {'hold': expected[asset], 'buy': expected[asset] + 1000,
                                   'sell': expected[asset] - 1000, 'close': 0}[ACTIONS[index]]
            assert info['positions'] == expected
            assert_before_the_frozen_split(observation, info)
        steps = 6
        while not terminated:
            observation, reward, terminated, truncated, info = env.step(0)
            steps += 1
        assert STEPS_AN_EPISODE - 2 <= steps <= STEPS_AN_EPISODE + 1
        assert info['positions'] == {'CHF': 0, 'USD': 0}  # every position closed at the episode end
        assert 2000 * 0.9 < info['broker_value'] < 2000 * 1.1
    finally:
        env.close()


def test_multi_discrete_policy_of_the_notebook_has_the_reference_widths(data_dir, tmp_path):
    env_config, _, policy_config, _ = multi_discrete_cell(data_dir, str(tmp_path / 'multi_discrete'))
    env = env_config['class_ref'](**env_config['kwargs'])
    try:
        observation, _ = env.reset(seed=1)
        graph, policy, shapes = policy_on(env, policy_config)
        assert_encoders(shapes, ENCODERS)
        # LSTM 1: 4 lines x 13 x 64 encoded + last reward = 3329; LSTM 2: + action code 4 + internal 8 x 64 + LSTM 1
        # output 256 - last reward = 4100. The kernels also take the 256 units of their own state.
        assert lstm_kernels(shapes) == {'lstm_1': [3329 + 256, 4 * 256], 'lstm_2': [4100 + 256, 4 * 256]}
        for pack in act_on(graph, policy, env, observation):
            assert env.action_space.contains(pack['environment'])
            assert pack['one_hot'].shape == (16,) and pack['one_hot'].sum() == 1
            assert pack['encoded'].shape == (4,)
    finally:
        env.close()


# -------------------------------------------------------------------------------------------- portfolio_setup_BETA

def test_portfolio_notebook_manual_play(data_dir, tmp_path):
    env_config, _, _, _ = portfolio_cell(data_dir, str(tmp_path / 'multi_continiuous'))

    env = PortfolioEnv(**env_config['kwargs'])

    try:
        o, info = env.reset()
        assert_notebook_observation(o, env.observation_space)
        assert env.action_space.assets == ('CHF', 'EUR', 'GBP', 'JPY', 'USD')
        assert all(space == spaces.Box(0, 1, (1,), np.float32) for space in env.action_space.spaces.values())
        assert env.action_space.one_hot_depth == env.action_space.encoded_depth == 5

        # the weights are shares of the portfolio: normalised by hand (the space does not ask for a sum of 1)
        a = env.action_space.sample()
        norm = np.asarray(list(a.values())).sum()
        a_norm = {k: v / norm for k, v in a.items()}

        assert sum(v[0] for v in a_norm.values()) == pytest.approx(1.0)
        assert env.normalized_weights(a_norm) == pytest.approx({k: float(v[0]) for k, v in a_norm.items()})

        o, r, d, t, i = env.step(a_norm)

        assert_notebook_observation(o, env.observation_space)
        assert np.isfinite(r) and not d and not t
        first = i[0]  # the bar the decision arrived on: orders submitted, none executed yet
        assert set(first) == INFO_KEYS
        assert first['action'] == pytest.approx({k: float(v[0]) for k, v in a_norm.items() if k != 'EUR'})
        asset, target = re.fullmatch(r'new (\w+) target percent order: ([\d.]+)', first['broker_message']).groups()
        assert float(target) == pytest.approx(round(0.9 * float(a_norm[asset][0]), 2))
        assert first['positions'] == {'CHF': 0, 'GBP': 0, 'JPY': 0, 'USD': 0}
        assert first['broker_cash'] == first['broker_value'] == pytest.approx(2000)
        assert first['drawdown'] == first['max_drawdown'] == 0
        assert first['time'] < FROZEN_SPLIT and first['step'] == i[-1]['step'] - 9
        assert any(any(size > 0 for size in bar['positions'].values()) for bar in i['bars'][1:])  # bought
        assert_before_the_frozen_split(o, i)
    finally:
        env.close()


def test_portfolio_policy_of_the_notebook_has_the_reference_widths(data_dir, tmp_path):
    env_config, _, policy_config, _ = portfolio_cell(data_dir, str(tmp_path / 'multi_continiuous'))
    env = env_config['class_ref'](**env_config['kwargs'])
    try:
        observation, _ = env.reset(seed=2)
        graph, policy, shapes = policy_on(env, policy_config)
        assert_encoders(shapes, ENCODERS)
        # as the discrete notebook, with the 5 weights as the action code: LSTM 2 input 4101
        assert lstm_kernels(shapes) == {'lstm_1': [3329 + 256, 4 * 256], 'lstm_2': [4101 + 256, 4 * 256]}
        packs = act_on(graph, policy, env, observation)
        for pack in packs:
            weights = pack['environment']
            assert list(weights) == ['CHF', 'EUR', 'GBP', 'JPY', 'USD']
            assert env.action_space.contains(weights)
            assert sum(float(w[0]) for w in weights.values()) == pytest.approx(1.0, abs=1e-5)
            np.testing.assert_allclose(pack['encoded'], [float(w[0]) for w in weights.values()], rtol=1e-6)
        assert not np.allclose(packs[0]['encoded'], packs[1]['encoded'])  # sampled (alpha 200), not greedy
    finally:
        env.close()


# ------------------------------------------------------------------------------------------------ launcher runs

def run_the_launcher_cell(configs, log_dir, max_env_steps):
    env_config, cluster_config, policy_config, trainer_config = configs
    launcher = Launcher(
        cluster_config=cluster_config,
        env_config=env_config,
        trainer_config=trainer_config,
        policy_config=policy_config,
        test_mode=False,
        max_env_steps=max_env_steps,  # the notebooks' 100 million
        root_random_seed=0,
        purge_previous=1,
        verbose=0,
        show_progress=False,
    )

    result = launcher.run()

    assert result['completed'] and result['global_step'] >= max_env_steps and result['restarts'] == {}
    assert result['episodes'] >= max_env_steps // (STEPS_AN_EPISODE + 1) - 2
    assert np.isfinite(result['mean_reward'])
    checkpoint = latest_checkpoint(str(log_dir / 'current_train_checkpoint'))
    assert checkpoint is not None and int(checkpoint.rsplit('-', 1)[1]) >= max_env_steps
    for worker in range(cluster_config['num_workers']):
        assert os.listdir(str(log_dir / 'worker_{}'.format(worker)))  # TensorBoard summaries
    return result


@pytest.mark.slow
def test_multi_discrete_notebook_launcher_run(data_dir, tmp_path):
    log_dir = tmp_path / 'multi_discrete'
    run_the_launcher_cell(multi_discrete_cell(data_dir, str(log_dir)), log_dir, max_env_steps=200)


@pytest.mark.slow
def test_portfolio_notebook_launcher_run(data_dir, tmp_path):
    log_dir = tmp_path / 'multi_continiuous'
    run_the_launcher_cell(portfolio_cell(data_dir, str(log_dir)), log_dir, max_env_steps=200)
