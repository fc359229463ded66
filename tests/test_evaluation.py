"""Evaluation of a short Launcher run: restored policy, report, baselines on the same windows, plots and the CLI."""
import contextlib
import dataclasses
import json
import os
import re
import shutil
import statistics
from datetime import datetime, timedelta

import gymnasium
import matplotlib.image
import numpy as np
import pytest
from test_env import colour_pixels
from test_known_edge_summary import BENCHMARKS, benchmark_module

from btgym_aac.algorithms import A3C, Launcher
from btgym_aac.algorithms.policy import Aac1dPolicy
from btgym_aac.cli import main as cli_main
from btgym_aac.compat import tf
from btgym_aac.data import make_random_walk_data, make_sine_data, write_histdata_csv
from btgym_aac.data.markets import make_mean_reversion_data, make_regime_switching_data, write_market_csv
from btgym_aac.distributed.checkpoints import (KEPT_CHECKPOINT_DIR, checkpoint_step, checkpoints_on_disk,
                                               latest_checkpoint)
from btgym_aac.env import BTgymEnv
from btgym_aac.evaluation import evaluate, load_policy
from btgym_aac.evaluation.baselines import RandomAgent
from btgym_aac.evaluation.episodes import episode_sample_type, make_evaluation_env, play_episode, reset_options
from btgym_aac.evaluation.loading import read_run_config
from btgym_aac.evaluation.metrics import METRIC_NAMES, max_drawdown_pct, sharpe_ratio, win_rate
from btgym_aac.evaluation.oracle_agent import oracle_agent
from btgym_aac.evaluation.report import build_report
from btgym_aac.strategy import DevStrat_4_11

pytestmark = pytest.mark.xdist_group('evaluation')  # one xdist worker builds the module's fixtures

HOLD, BUY, SELL, CLOSE = range(4)
START_CASH, COMMISSION, ORDER_SIZE = 2000.0, 0.0001, 2000
EPISODES, SEED = 2, 3
KEEP_EVERY, ROLLOUT = 100, 20
BAR = timedelta(minutes=1)
SKIP_FRAME = DevStrat_4_11.skip_frame
AGENTS = ('policy', 'buy_and_hold', 'random')


def env_kwargs(data):
    return dict(dataframe=data, strategy=DevStrat_4_11, start_cash=START_CASH, commission=COMMISSION, leverage=10.0,
                order_size=ORDER_SIZE, drawdown_call=50, target_call=50,
                episode_duration={'days': 0, 'hours': 8, 'minutes': 0}, target_period={'days': 1})


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    """A 300-step A3C run on noisy sine data whose last day is the test interval, keeping a checkpoint every
    KEEP_EVERY env steps."""
    data = make_sine_data(num_bars=6000, noise=2e-5, seed=1)
    log_dir = tmp_path_factory.mktemp('evaluation') / 'run'
    Launcher(
        env_config={'class_ref': BTgymEnv, 'kwargs': env_kwargs(data)},
        cluster_config={'num_workers': 1, 'num_ps': 1, 'log_dir': str(log_dir)},
        policy_config={'class_ref': Aac1dPolicy,
                       'kwargs': {'lstm_layers': (16,), 'conv_2d_num_filters': (8, 8, 8, 8)}},
        trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': ROLLOUT, 'time_flat': True}},
        max_env_steps=300, save_secs=5, root_random_seed=0, show_progress=False,
        keep_checkpoint_every_steps=KEEP_EVERY,
    ).run()
    return {'log_dir': str(log_dir), 'data': data}


@pytest.fixture(scope='module')
def report(run, tmp_path_factory):
    return evaluate(run['log_dir'], episodes=EPISODES, out=str(tmp_path_factory.mktemp('report')), seed=SEED)


def test_load_policy_restores_the_checkpoint_without_noise(run):
    checkpoint = tf.train.load_checkpoint(latest_checkpoint(os.path.join(run['log_dir'], 'current_train_checkpoint')))
    for noisy in (False, True):
        with load_policy(run['log_dir'], noisy=noisy) as agent:
            variables = agent.session.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
            values = agent.session.run(variables)
        assert variables and all(variable.op.name.startswith('global/') for variable in variables)
        scales = 0
        for variable, value in zip(variables, values):
            saved = checkpoint.get_tensor(variable.op.name)
            if variable.op.name.endswith(('/w_sigma', '/b_sigma')):
                scales += 1
                assert np.any(saved != 0)
                np.testing.assert_array_equal(value, saved if noisy else np.zeros_like(saved))
            else:
                np.testing.assert_array_equal(value, saved, err_msg=variable.op.name)
        assert scales > 0


def kept_checkpoints(log_dir):
    """{global step: path prefix} of the run's kept checkpoints."""
    return checkpoints_on_disk(os.path.join(log_dir, KEPT_CHECKPOINT_DIR))


def test_the_chief_keeps_a_checkpoint_at_the_first_step_past_every_multiple(run):
    kept = kept_checkpoints(run['log_dir'])
    steps = sorted(kept)
    assert len(steps) == 3, steps  # 100, 200 and the last step (300 or more) of a 300-step run
    for multiple, step in zip((100, 200, 300), steps):
        assert multiple <= step < multiple + ROLLOUT, steps  # one train step takes at most a rollout's frames
    latest = latest_checkpoint(os.path.join(run['log_dir'], 'current_train_checkpoint'))
    assert checkpoint_step(latest) == steps[-1]
    first, last = (tf.train.load_checkpoint(kept[step]) for step in (steps[0], steps[-1]))
    name = 'global/dense_aac/action/w_mu'  # the policy head: trained between the two
    assert first.has_tensor(name)
    assert not np.array_equal(first.get_tensor(name), last.get_tensor(name))


def test_evaluate_takes_a_kept_checkpoint_from_the_api_and_the_cli(run, tmp_path, capsys):
    step = min(kept_checkpoints(run['log_dir']))
    path = kept_checkpoints(run['log_dir'])[step]
    report = evaluate(run['log_dir'], episodes=1, out=str(tmp_path / 'api'), seed=SEED, checkpoint=path, plots=False)
    assert report['checkpoint'] == path and report['global_step'] == step
    assert cli_main(['evaluate', run['log_dir'], '--checkpoint', path, '--episodes', '1', '--seed', str(SEED),
                     '--out', str(tmp_path / 'cli'), '--no-episode-plots', '--no-tearsheet']) == 0
    assert 'checkpoint {} (global step {})'.format(path, step) in capsys.readouterr().out
    with open(tmp_path / 'cli' / 'report.json') as f:
        assert json.load(f)['agents']['policy']['per_episode'] == report['agents']['policy']['per_episode']
    assert cli_main(['evaluate', run['log_dir'], '--checkpoint', path + '0', '--episodes', '1']) == 2
    assert 'does not exist' in capsys.readouterr().err


@contextlib.contextmanager
def agent_in_an_episode(run):
    """(loaded policy, its env, the first observation of an episode the policy was reset with)."""
    env = make_evaluation_env(read_run_config(run['log_dir']))
    try:
        with load_policy(run['log_dir'], env=env) as agent:
            observation, _ = env.reset(seed=0, options=reset_options(1))
            agent.reset(observation)
            yield agent, env, observation
    finally:
        env.close()


def test_loaded_policy_acts_greedily_with_valid_actions(run):
    with agent_in_an_episode(run) as (agent, env, observation):
        zero_context = agent.context
        for _ in range(6):
            probabilities = agent.action_probabilities(observation)
            assert probabilities.shape == (4,) and probabilities.sum() == pytest.approx(1.0)
            np.testing.assert_allclose(agent.action_probabilities(observation), probabilities)
            action = agent.act(observation)
            assert action in range(4) and action == int(np.argmax(probabilities))
            np.testing.assert_allclose(agent.last_probabilities, probabilities, rtol=1e-6)
            observation, reward, terminated, _, _ = env.step(action)
            agent.observe(reward)
            assert not terminated
        assert any(np.any(a != b) for a, b in zip(tf.nest.flatten(agent.context), tf.nest.flatten(zero_context)))
        assert agent.last_reward == reward


def test_load_policy_refuses_an_env_without_btgym_aac_spaces(run):
    env = gymnasium.make('CartPole-v1')
    try:
        with pytest.raises(ValueError, match='the env must have btgym_aac spaces .* got Box and Discrete'):
            load_policy(run['log_dir'], env=env)
    finally:
        env.close()


def test_loaded_policy_names_a_missing_observation_key(run):
    with agent_in_an_episode(run) as (agent, _, observation):
        partial = {key: value for key, value in observation.items() if key != 'internal'}
        with pytest.raises(ValueError, match="^observation does not match the policy inputs: missing key "
                                             "'internal'$"):
            agent.act(partial)


def test_load_policy_errors_name_what_is_missing(run, tmp_path):
    with pytest.raises(FileNotFoundError, match='does not exist'):
        load_policy(str(tmp_path / 'nowhere'))
    (tmp_path / 'a_file').write_text('x')
    with pytest.raises(FileNotFoundError, match="log dir '{}' is a file".format(tmp_path / 'a_file')):
        load_policy(str(tmp_path / 'a_file'))
    os.remove(str(tmp_path / 'a_file'))
    with pytest.raises(FileNotFoundError, match='run_config.pkl'):
        load_policy(str(tmp_path))
    shutil.copy(os.path.join(run['log_dir'], 'run_config.pkl'), str(tmp_path))
    with pytest.raises(FileNotFoundError, match='no checkpoint'):
        load_policy(str(tmp_path))


def test_metric_functions_against_hand_computed_values():
    assert max_drawdown_pct([100.0, 110.0, 99.0, 120.0, 90.0, 95.0]) == pytest.approx(25.0)
    assert max_drawdown_pct([100.0, 101.0, 102.0]) == 0.0
    values = [100.0, 101.0, 100.0, 102.0]
    returns = [0.01, 100.0 / 101.0 - 1.0, 0.02]
    assert sharpe_ratio(values) == pytest.approx(statistics.mean(returns) / statistics.stdev(returns))
    assert sharpe_ratio([100.0] * 5) == 0.0
    assert win_rate([{'pnlcomm': 1.0}, {'pnlcomm': -0.5}, {'pnlcomm': 0.0}]) == pytest.approx(1 / 3)
    assert win_rate([]) == 0.0


def test_report_is_complete_and_finite(run, report):
    assert report['episode_type'] == 'test' and report['episodes'] == EPISODES and report['seed'] == SEED
    assert report['global_step'] >= 300 and os.path.isfile(report['checkpoint'] + '.index')
    assert set(report['agents']) == set(AGENTS)
    split = run['data'].index[-1] - timedelta(days=1)
    for name in AGENTS:
        summary = report['agents'][name]
        for metric in METRIC_NAMES:
            values = summary['per_episode'][metric]
            assert len(values) == EPISODES and np.all(np.isfinite(values)), (name, metric)
            assert summary['mean'][metric] == pytest.approx(np.mean(values))
        per_episode = summary['per_episode']
        assert per_episode['start_value'] == [START_CASH] * EPISODES
        for start, final, pct in zip(per_episode['start_value'], per_episode['final_value'],
                                     per_episode['return_pct']):
            assert pct == pytest.approx(100 * (final - start) / start)
        assert all(0 <= rate <= 1 for rate in per_episode['win_rate'])
        assert all(time > split.isoformat() for time in per_episode['first_bar_time'])  # test interval
    with open(os.path.join(report['out'], 'report.json')) as f:
        assert json.load(f) == report


def test_baselines_play_the_same_windows_as_the_policy(report):
    per_episode = {name: report['agents'][name]['per_episode'] for name in AGENTS}
    for key in ('first_bar_time', 'last_bar_time', 'end_reason'):
        assert per_episode['policy'][key] == per_episode['buy_and_hold'][key] == per_episode['random'][key], key
    assert per_episode['policy']['end_reason'] == ['END OF DATA'] * EPISODES
    assert len(set(per_episode['policy']['first_bar_time'])) == EPISODES  # different seeds, different windows
    assert [window['first_bar_time'] for window in report['windows']] == per_episode['policy']['first_bar_time']


def test_buy_and_hold_final_value_equals_the_price_change_minus_commissions(run, report):
    prices = run['data']['open']
    per_episode = report['agents']['buy_and_hold']['per_episode']
    assert per_episode['orders'] == [2] * EPISODES and per_episode['trades'] == [1] * EPISODES
    for first, last, final in zip(per_episode['first_bar_time'], per_episode['last_bar_time'],
                                  per_episode['final_value']):
        decision = datetime.fromisoformat(first) + SKIP_FRAME * BAR
        bought = prices.loc[decision + 2 * BAR]  # submitted on the next bar, filled at the one after
        sold = prices.loc[datetime.fromisoformat(last) - BAR]  # end rule: closed one bar before the end
        expected = START_CASH + ORDER_SIZE * (sold - bought) - COMMISSION * ORDER_SIZE * (bought + sold)
        assert final == pytest.approx(expected, abs=1e-9)


class _ScriptedAgent:
    def __init__(self, script):
        self.script = list(script)

    def reset(self, observation=None):
        self.step = 0

    def act(self, observation):
        action = self.script[self.step] if self.step < len(self.script) else HOLD
        self.step += 1
        return action

    def observe(self, reward):
        pass


def test_trade_log_counts_fills_and_trades_of_scripted_orders(run):
    env = make_evaluation_env(read_run_config(run['log_dir']))
    try:
        record = play_episode(env, _ScriptedAgent([BUY, HOLD, CLOSE, SELL, SELL, HOLD, BUY, BUY]), 7,
                              reset_options(0))
    finally:
        env.close()
    prices = run['data']['open']
    fills = record.trade_log['fills']
    assert [(fill['side'], fill['size'], fill['position']) for fill in fills] == [
        ('buy', 2000, 2000), ('sell', -2000, 0), ('sell', -2000, -2000), ('sell', -2000, -4000),
        ('buy', 2000, -2000), ('buy', 2000, 0)]
    decisions = {0: 0, 2: 1, 3: 2, 4: 3, 6: 4, 7: 5}  # step -> fill index
    for step, index in decisions.items():
        fill_time = record.step_times[step] + 2 * BAR
        assert fills[index]['time'] == fill_time and fills[index]['price'] == prices.loc[fill_time]
    trades = record.trade_log['trades']
    assert len(trades) == 2
    long_pnl = ORDER_SIZE * (fills[1]['price'] - fills[0]['price'])
    assert trades[0]['pnlcomm'] == pytest.approx(
        long_pnl - COMMISSION * ORDER_SIZE * (fills[0]['price'] + fills[1]['price']), abs=1e-9)
    metrics = record.metrics()
    assert metrics['orders'] == 6 and metrics['trades'] == 2
    assert metrics['win_rate'] == sum(trade['pnlcomm'] > 0 for trade in trades) / 2


SCRIPT = [BUY, HOLD, HOLD, CLOSE, SELL, HOLD, SELL, CLOSE, BUY, HOLD, HOLD, HOLD, CLOSE, SELL, HOLD, CLOSE]


@pytest.fixture(scope='module')
def played():
    """Episodes of a scripted and a random agent on the same two test windows, played without a trained run."""
    run_config = {'env_config': {'class_ref': BTgymEnv, 'kwargs': env_kwargs(make_sine_data(
        num_bars=6000, noise=2e-5, seed=1))}, 'test_mode': False}
    env = make_evaluation_env(run_config)
    try:
        agents = {'scripted': _ScriptedAgent(SCRIPT), 'random': RandomAgent(4, seed=0)}
        return {name: [play_episode(env, agent, SEED + index, reset_options(1)) for index in range(EPISODES)]
                for name, agent in agents.items()}
    finally:
        env.close()


def plain_metrics(record):
    """Per-episode metrics recomputed with numpy from the record's rewards, values and trade log."""
    bar_values, step_values = np.array(record.bar_values), np.array(record.step_values)
    peaks = np.maximum.accumulate(bar_values)
    step_returns = np.diff(step_values) / step_values[:-1]
    trades = record.trade_log['trades']
    return {
        'total_reward': np.sum(record.rewards),
        'start_value': bar_values[0],
        'final_value': bar_values[-1],
        'return_pct': 100.0 * (bar_values[-1] / bar_values[0] - 1.0),
        'orders': len(record.trade_log['fills']),
        'trades': len(trades),
        'win_rate': np.mean([trade['pnlcomm'] > 0 for trade in trades]) if trades else 0.0,
        'max_drawdown_pct': 100.0 * np.max(1.0 - bar_values / peaks),
        'sharpe': np.mean(step_returns) / np.std(step_returns, ddof=1),
        'steps': len(record.actions),
        'commission': np.sum([fill['commission'] for fill in record.trade_log['fills']]),
        'spread_cost': np.sum([fill['spread_cost'] for fill in record.trade_log['fills']]),
        'slippage_cost': np.sum([fill['slippage_cost'] for fill in record.trade_log['fills']]),
    }


def test_played_records_are_consistent(played):
    """Step values are the bar values at the step times; fills add up to the closed trades' results."""
    for name, records in played.items():
        assert len(records) == EPISODES
        for record in records:
            bars = dict(zip(record.bar_times, record.bar_values))
            assert len(bars) == len(record.bar_times) == len(record.bar_values)
            assert [bars[time] for time in record.step_times] == record.step_values
            assert len(record.step_values) == len(record.actions) + 1 == len(record.rewards) + 1
            fills = record.trade_log['fills']
            flat = np.flatnonzero(np.cumsum([fill['size'] for fill in fills]) == 0)
            trades = record.trade_log['trades']
            assert len(trades) == len(flat) >= 1, name
            start = 0
            for trade, end in zip(trades, flat):
                segment = fills[start:end + 1]
                pnl = -sum(fill['size'] * fill['price'] for fill in segment)
                assert trade['pnlcomm'] == pytest.approx(pnl - sum(fill['commission'] for fill in segment), abs=1e-9)
                start = end + 1


def test_report_metrics_equal_a_numpy_recomputation_from_the_records(played):
    report = build_report(played, {'seed': SEED})
    assert report['episodes'] == EPISODES
    assert [window['seed'] for window in report['windows']] == [SEED + index for index in range(EPISODES)]
    for name, records in played.items():
        summary = report['agents'][name]
        expected = [plain_metrics(record) for record in records]
        for metric in METRIC_NAMES:
            values = [episode[metric] for episode in expected]
            np.testing.assert_allclose(summary['per_episode'][metric], values, rtol=1e-9, atol=1e-12,
                                       err_msg='{} {}'.format(name, metric))
            assert summary['mean'][metric] == pytest.approx(np.mean(values), rel=1e-9, abs=1e-12)
    # The records tell the metrics apart: summed and mean rewards differ, bars fall deeper than steps somewhere, a
    # Sharpe ratio over bars is not one over steps, and trades win and lose.
    records = played['scripted'] + played['random']
    step_drawdowns = [100.0 * np.max(1.0 - np.divide(record.step_values, np.maximum.accumulate(record.step_values)))
                      for record in records]
    assert any(step_dd < plain_metrics(record)['max_drawdown_pct'] for step_dd, record in zip(step_drawdowns, records))
    for record in records:
        assert len(record.rewards) > 1 and np.sum(record.rewards) != pytest.approx(np.mean(record.rewards))
        bar_returns = np.diff(record.bar_values) / np.array(record.bar_values[:-1])
        assert np.mean(bar_returns) / np.std(bar_returns, ddof=1) != pytest.approx(plain_metrics(record)['sharpe'])
    assert {trade['pnlcomm'] > 0 for record in records for trade in record.trade_log['trades']} == {True, False}


def test_building_a_report_refuses_baselines_on_other_windows(played):
    scripted, other = played['scripted'], list(played['random'])
    other[1] = dataclasses.replace(other[1], seed=other[1].seed + 5)
    message = "episode 1 was not replayed on the same window by all agents: {{'scripted': ({}, ".format(SEED + 1)
    with pytest.raises(RuntimeError, match=re.escape(message)):
        build_report({'scripted': scripted, 'random': other}, {})
    moved = dataclasses.replace(other[0], bar_times=[time + BAR for time in other[0].bar_times])
    with pytest.raises(RuntimeError, match='episode 0 was not replayed on the same window by all agents'):
        build_report({'scripted': scripted, 'random': [moved, played['random'][1]]}, {})


def png_pixels(path):
    """The uint8 RGBA pixels of PNG file `path`."""
    return np.round(matplotlib.image.imread(path) * 255).astype(np.uint8)


def test_plots_are_pngs_of_each_episodes_equity_and_actions(report):
    """11 x 4.5 in PNGs at 100 dpi, another for each episode: the equity plots draw the three agents' lines in
    matplotlib's first three cycle colours, the action plots the four actions' stacked bands (alpha 0.85 on white)
    in its first four."""
    assert sorted(report['plots']) == sorted(
        ['{}_episode_{}.png'.format(kind, index) for kind in ('equity', 'actions') for index in range(EPISODES)])
    colours = matplotlib.rcParams['axes.prop_cycle'].by_key()['color']
    pictures = {name: png_pixels(os.path.join(report['out'], name)) for name in report['plots']}
    for name, image in pictures.items():
        assert image.shape == (450, 1100, 4), name
        if name.startswith('equity'):
            assert min(colour_pixels(image, colour) for colour in colours[:len(AGENTS)]) > 100, name
        else:
            assert min(colour_pixels(image, colour, alpha=0.85) for colour in colours[:4]) > 1000, name
    for kind in ('equity', 'actions'):
        assert not np.array_equal(pictures[f'{kind}_episode_0.png'], pictures[f'{kind}_episode_1.png'])


def test_cli_writes_the_same_report_and_prints_a_table(run, report, tmp_path, capsys):
    out = tmp_path / 'cli'
    assert cli_main(['evaluate', run['log_dir'], '--episodes', str(EPISODES), '--seed', str(SEED),
                     '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    assert all(name in printed for name in AGENTS) and 'return %' in printed
    with open(out / 'report.json') as f:
        written = json.load(f)
    for name in AGENTS:
        assert written['agents'][name]['per_episode'] == report['agents'][name]['per_episode']


def test_without_episode_plots_the_report_is_the_same_and_alone(run, report, tmp_path, capsys):
    out = tmp_path / 'no_plots'
    assert cli_main(['evaluate', run['log_dir'], '--episodes', str(EPISODES), '--seed', str(SEED),
                     '--out', str(out), '--no-episode-plots', '--no-tearsheet']) == 0
    assert capsys.readouterr().out.endswith('report: {}\n'.format(out))
    assert os.listdir(out) == ['report.json']
    with open(out / 'report.json') as f:
        written = json.load(f)
    assert written['plots'] == [] and written['plot_contents'] == report['plot_contents']
    for name in AGENTS:
        assert written['agents'][name]['per_episode'] == report['agents'][name]['per_episode']


@pytest.mark.parametrize('damaged', ['.index', '.data-00000-of-00001'])
def test_damaged_checkpoint_files_are_reported_by_name(run, tmp_path, capsys, damaged):
    copy = tmp_path / 'run'
    shutil.copytree(run['log_dir'], str(copy))
    ckpt_dir = copy / 'current_train_checkpoint'
    target = [path for path in ckpt_dir.iterdir() if path.name.endswith(damaged)]
    assert len(target) >= 1
    for path in target:
        path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match='cannot be read.*truncated or damaged'):
        load_policy(str(copy))
    assert cli_main(['evaluate', str(copy)]) == 2
    assert 'cannot be read' in capsys.readouterr().err


def test_cli_bad_log_dir_exits_2_with_a_message(tmp_path, capsys):
    assert cli_main(['evaluate', str(tmp_path / 'missing')]) == 2
    assert 'does not exist' in capsys.readouterr().err


def test_evaluate_on_csv_files(run, tmp_path):
    path = str(tmp_path / 'DAT_ASCII_TEST_M1.csv')
    write_histdata_csv(make_random_walk_data(num_bars=6000, start='2018-03-01', seed=4), path)
    result = evaluate(run['log_dir'], data=[path], episodes=1, out=str(tmp_path / 'csv'), seed=0)
    assert result['data'] == [path] and result['episode_type'] == 'test'
    assert result['agents']['policy']['per_episode']['first_bar_time'][0] >= '2018-03-04'
    with pytest.raises(FileNotFoundError, match='not found'):
        evaluate(run['log_dir'], data=[str(tmp_path / 'nothing.csv')], episodes=1)


def test_evaluate_on_a_known_edge_market_adds_its_oracle_and_the_policys_fraction_of_it(run, tmp_path, capsys):
    path = write_market_csv(make_mean_reversion_data(num_bars=6000, start='2018-03-01', seed=4),
                            str(tmp_path / 'DAT_ASCII_MR_M1.csv'))
    assert cli_main(['evaluate', run['log_dir'], '--data', path, '--episodes', '2', '--out', str(tmp_path / 'mr'),
                     '--seed', '0']) == 0
    with open(tmp_path / 'mr' / 'report.json') as f:
        result = json.load(f)
    assert list(result['agents']) == list(AGENTS) + ['oracle']
    assert result['agents']['oracle']['per_episode']['first_bar_time'] == \
        result['agents']['policy']['per_episode']['first_bar_time']
    fraction = result['fraction_of_oracle']
    means = {name: result['agents'][name]['mean']['return_pct'] for name in ('policy', 'oracle')}
    assert (fraction['policy_return_pct'], fraction['oracle_return_pct']) == (means['policy'], means['oracle'])
    expected = means['policy'] / means['oracle'] if means['oracle'] > 0 else None
    assert fraction['fraction'] == pytest.approx(expected) if expected is not None else fraction['fraction'] is None
    assert 'of the oracle' in capsys.readouterr().out


def test_an_oracle_given_to_evaluate_plays_the_same_windows_on_bars_of_no_known_market(run, tmp_path):
    """A market this package did not make (`benchmarks/outside_markets.py`): its files carry no recipe, so no oracle
    unless one is given; given, it plays the policy's windows on the evaluation env and the fraction is reported."""
    runs = benchmark_module('known_edge_runs')
    _, test = runs.write_markets('drifting_trend', True, 0, str(tmp_path / 'data'), 3000, 6000)
    alone = evaluate(run['log_dir'], data=[test], episodes=2, out=str(tmp_path / 'alone'), seed=0, plots=False)
    assert list(alone['agents']) == list(AGENTS) and 'fraction_of_oracle' not in alone
    envs = []

    def oracle(env):
        envs.append(env)
        return runs.market_oracle('drifting_trend')(env)

    result = evaluate(run['log_dir'], data=[test], episodes=2, out=str(tmp_path / 'given'), seed=0, plots=False,
                      oracle=oracle)
    assert len(envs) == 1 and envs[0].dataset.filename == test
    assert list(result['agents']) == list(AGENTS) + ['oracle']
    played = {name: result['agents'][name]['per_episode'] for name in ('policy', 'oracle')}
    assert played['oracle']['first_bar_time'] == played['policy']['first_bar_time']
    assert result['agents']['policy'] == alone['agents']['policy']
    means = {name: result['agents'][name]['mean']['return_pct'] for name in ('policy', 'oracle')}
    expected = means['policy'] / means['oracle'] if means['oracle'] > 0 else None
    assert result['fraction_of_oracle']['fraction'] == (pytest.approx(expected) if expected is not None else None)


def test_policy_against_oracle_files_every_decision_and_caps_the_oracles_position(run, tmp_path, capsys):
    script = benchmark_module('policy_against_oracle')
    path = write_market_csv(make_mean_reversion_data(num_bars=6000, start='2018-03-01', seed=4),
                            str(tmp_path / 'DAT_ASCII_MR_M1.csv'))
    out = tmp_path / 'against.json'
    script.main(['--log-dir', run['log_dir'], '--data', path, '--episodes', '2', '--out', str(out)])
    with open(out) as f:
        result = json.load(f)
    report = evaluate(run['log_dir'], data=[path], episodes=2, out=str(tmp_path / 'report'), seed=0, plots=False)
    steps = sum(report['agents']['policy']['per_episode']['steps'])
    assert sum(row['decisions'] for row in result['decisions']) == steps
    assert all(sum(row['actions'].values()) == pytest.approx(1.0, abs=2e-3) for row in result['decisions'])
    assert result['mean_return_pct']['policy'] == pytest.approx(report['agents']['policy']['mean']['return_pct'])
    assert result['mean_return_pct']['oracle'] == pytest.approx(report['agents']['oracle']['mean']['return_pct'])
    assert set(result['fraction_of_oracle']) == {'oracle', 'no_close', 'cap_1', 'cap_2', 'cap_4', 'episode_mean',
                                                 'mean_of_256', 'policy'}
    assert 'of the oracle' in capsys.readouterr().out
    walk = write_histdata_csv(make_random_walk_data(num_bars=6000, start='2018-03-01', seed=4),
                              str(tmp_path / 'DAT_ASCII_WALK_M1.csv'))
    with pytest.raises(SystemExit, match='no oracle for this run on it'):
        script.main(['--log-dir', run['log_dir'], '--data', walk, '--out', str(tmp_path / 'none.json')])
    assert not (tmp_path / 'none.json').exists()

    env = make_evaluation_env(read_run_config(run['log_dir']), path)
    try:
        oracle = oracle_agent(env)
        capped = PositionSizes(script.CappedOracle(oracle.oracle, env.dataset.data, env.portfolio_actions, 1,
                                                   ORDER_SIZE))
        play_episode(env, capped, 0, reset_options(episode_sample_type(env)))
    finally:
        env.close()
    assert 0 < max(capped.sizes) <= ORDER_SIZE


@pytest.mark.parametrize('window', [None, 256])
def test_estimated_mean_oracle_takes_the_mean_from_the_episode_or_the_last_bars(run, tmp_path, window):
    """policy_against_oracle's `EstimatedMeanOracle`: at every decision its signal is mean reversion's pull times the
    mean log close of the episode's bars up to now (warm-up included), or of the last 256, less the log close now."""
    script = benchmark_module('policy_against_oracle')
    bars = make_mean_reversion_data(num_bars=6000, start='2018-03-01', seed=4)
    path = write_market_csv(bars, str(tmp_path / 'DAT_ASCII_MR_M1.csv'))
    env = make_evaluation_env(read_run_config(run['log_dir']), path)
    try:
        oracle = oracle_agent(env).oracle
        agent = script.EstimatedMeanOracle(oracle, env.dataset.data, env.portfolio_actions, env, window)
        signals = []
        act = agent.act
        agent.act = lambda observation: signals.append((agent.now(), agent.expected_now())) or act(observation)
        play_episode(env, agent, 0, reset_options(episode_sample_type(env)))
        first = env.dataset.data.index.searchsorted(env.episode_window[0])
    finally:
        env.close()
    log_closes = np.log(env.dataset.data['close'].to_numpy())
    pull = 1.0 - 0.5 ** (oracle.horizon / bars.attrs['market']['params']['half_life'])
    assert len(signals) > 5
    for now, signal in signals:
        start = first if window is None else now + 1 - window
        assert signal == pytest.approx((log_closes[start:now + 1].mean() - log_closes[now]) * pull, rel=1e-9)


def test_the_rule_within_reach_plays_the_windows_evaluate_plays_on_mean_reversion(run, tmp_path, monkeypatch):
    """known_edge_runs' `reachable_rule_returns`: on a mean-reversion file, the oracle taking its mean from the
    episode's bars (policy_against_oracle's `EstimatedMeanOracle`, as that script plays it) on the episodes
    `evaluate` plays (the same helper replays the report's oracle returns); None on a regime-switching file and on
    a basket's files, whose oracles need no rule (the pair's rule: test_known_edge_summary's rescoring test)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    runs, script = benchmark_module('known_edge_runs'), benchmark_module('policy_against_oracle')
    path = write_market_csv(make_mean_reversion_data(num_bars=6000, start='2018-03-01', seed=4),
                            str(tmp_path / 'DAT_ASCII_MR_M1.csv'))
    run_config = read_run_config(run['log_dir'])
    rule = runs.reachable_rule_returns(run_config, path, 2)
    report = evaluate(run['log_dir'], data=[path], episodes=2, out=str(tmp_path / 'report'), seed=runs.EVAL_SEED,
                      plots=False)
    env = make_evaluation_env(run_config, path)
    try:
        oracle = oracle_agent(env)
        assert runs.episode_returns(env, oracle, 2) == report['agents']['oracle']['per_episode']['return_pct']
        estimated = script.EstimatedMeanOracle(oracle.oracle, env.dataset.data, env.portfolio_actions, env)
        expected = script.mean_return(env, estimated, 2, reset_options(episode_sample_type(env)))
    finally:
        env.close()
    assert len(rule) == 2 and np.mean(rule) == pytest.approx(expected)
    regime = write_market_csv(make_regime_switching_data(num_bars=6000, start='2018-03-01', seed=4),
                              str(tmp_path / 'DAT_ASCII_REGIME_M1.csv'))
    assert runs.reachable_rule_returns(run_config, regime, 2) is None
    train, test = runs.write_markets('basket', True, 0, str(tmp_path / 'basket'), 3000, 3000)
    basket_configs = runs.reference_configs('ppo', train, dict(runs.ENV_OVERRIDES), preset='tuned')
    assert runs.reachable_rule_returns(basket_configs, test, 2) is None


class PositionSizes:
    """Plays `agent`, keeping the size of the position after every step."""

    def __init__(self, agent):
        self.agent, self.sizes = agent, []

    def reset(self, observation=None):
        self.agent.reset(observation)

    def observe_info(self, info):
        self.agent.observe_info(info)
        self.sizes.append(abs(info['position']))

    def act(self, observation):
        return self.agent.act(observation)

    def observe(self, reward):
        self.agent.observe(reward)


def test_known_edge_reevaluate_plays_every_kept_checkpoint_again_on_more_episodes(run, tmp_path, capsys, monkeypatch):
    """`benchmarks/known_edge_reevaluate.py` on a work dir laid out as `known_edge.py` lays it out: every stage is
    played from the kept checkpoint of its env steps on the asked number of episodes, its env steps and CPU and
    wall seconds kept; a Stable-Baselines3 run is left out and named; the policy sampling its actions draws the same
    actions when played again, and leaves numpy's global random state as it found it; a stage without its checkpoint
    stops the script naming the run and the steps kept."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the script's directory, where it runs (its imports by name)
    reevaluate = benchmark_module('known_edge_reevaluate')
    work = tmp_path / 'work'
    data = work / 'data' / 'mr_edge_seed_0'
    data.mkdir(parents=True)
    for part, seed in (('train', 4), ('test', 5)):
        write_market_csv(make_mean_reversion_data(num_bars=6000, start='2018-03-01', seed=seed),
                         str(data / (part + '.csv')))
    run_folder = work / 'runs' / 'mr_edge_a3c_seed_0'
    run_folder.mkdir(parents=True)
    os.symlink(run['log_dir'], run_folder / 'run')
    steps = sorted(kept_checkpoints(run['log_dir']))
    stages = [{'stage': index, 'env_steps': step, 'cpu_seconds': 1.5 * index, 'wall_seconds': 2.0 * index}
              for index, step in enumerate((steps[0], steps[-1]), start=1)]
    ours = {'market': 'mr', 'edge': True, 'trainer': 'a3c', 'seed': 0, 'stages': stages}
    sb3 = dict(ours, trainer='sb3_ppo')
    settings = {'budgets': [steps[-1]], 'eval_episodes': 1, 'train_bars': 6000, 'test_bars': 6000}
    results = tmp_path / 'known_edge.json'
    results.write_text(json.dumps({'settings': settings, 'runs': [ours, sb3], 'summary': []}))
    out = tmp_path / 'out'
    reevaluate.main(['--results', str(results), '--work-dir', str(work), '--eval-episodes', '2', '--out', str(out)])
    assert 'left out (Stable-Baselines3 keeps no model to play again): mr sb3_ppo seed 0' in capsys.readouterr().out
    with open(out / 'known_edge.json') as f:
        written = json.load(f)
    assert written['settings']['eval_episodes'] == 2
    assert written['settings']['reevaluated']['eval_episodes_before'] == 1
    assert [run['trainer'] for run in written['runs']] == ['a3c']
    assert (out / 'known_edge_steps.png').stat().st_size > 0 and (out / 'known_edge_cpu.png').stat().st_size > 0
    for before, after in zip(stages, written['runs'][0]['stages']):
        assert {key: after[key] for key in before} == before
        assert sorted(after['returns_pct']) == sorted(AGENTS + ('oracle', 'reachable_rule'))  # mean reversion's
        assert all(len(returns) == 2 for returns in after['returns_pct'].values())
        assert len(after['sampled_returns_pct']) == 2
        with open(run_folder / 'reevaluation_2' / 'evaluation_{}'.format(before['stage']) / 'report.json') as f:
            report = json.load(f)
        assert report['global_step'] == before['env_steps'] and report['seed'] == 0
        assert report['agents']['policy']['per_episode']['return_pct'] == after['returns_pct']['policy']
        oracle = statistics.mean(after['returns_pct']['oracle'])
        expected = statistics.mean(after['returns_pct']['policy']) / oracle if oracle > 0 else None
        assert after['fraction_of_oracle'] == (pytest.approx(expected) if expected is not None else None)

    runs = benchmark_module('known_edge_runs')
    np.random.seed(7)
    next_draw = np.random.random()
    np.random.seed(7)
    again = runs.evaluate_sampled(run['log_dir'], runs.kept_checkpoints(run['log_dir'])[-1][1], str(data / 'test.csv'),
                                  2)
    assert np.random.random() == next_draw
    assert again == written['runs'][0]['stages'][-1]['sampled_returns_pct']

    ours['stages'] = [dict(stages[0], env_steps=steps[0] + 1)]
    results.write_text(json.dumps({'settings': settings, 'runs': [ours], 'summary': []}))
    with pytest.raises(SystemExit, match=r'no kept checkpoint of step {} \(kept: \[{}\]\)'.format(
            steps[0] + 1, ', '.join(map(str, steps)))):
        reevaluate.main(['--results', str(results), '--work-dir', str(work), '--eval-episodes', '2',
                         '--out', str(tmp_path / 'refused')])
    assert not (tmp_path / 'refused').exists()


def test_evaluate_refuses_a_spread_out_of_all_proportion_to_the_data_before_any_episode(run, tmp_path, capsys):
    """`evaluate --spread 1` (one pip meant) stops with exit 2 naming the data's median price and the unit; nothing
    is written."""
    out = tmp_path / 'report'
    assert cli_main(['evaluate', run['log_dir'], '--episodes', '1', '--no-episode-plots', '--out', str(out),
                     '--spread', '1']) == 2
    assert re.search(r'btgym-aac evaluate: spread 1 is 9[\d.]+ % of the median close 1\.1 of a DataFrame: the spread '
                     r'is in price units \(one pip of EURUSD is 0\.0001\)', capsys.readouterr().err)
    assert not out.exists()


def test_cli_names_a_data_folder_and_an_output_path_that_is_a_file(run, tmp_path, capsys):
    """`--data DIR` is named as a folder and `--out FILE` (or a folder under a file) as a file, before any episode
    is played; the file is left as it was."""
    assert cli_main(['evaluate', run['log_dir'], '--data', str(tmp_path)]) == 2
    assert 'are folders, not CSV files: {}'.format(tmp_path) in capsys.readouterr().err
    taken = tmp_path / 'taken.txt'
    taken.write_text('notes')
    for out in (taken, taken / 'report'):
        assert cli_main(['evaluate', run['log_dir'], '--out', str(out)]) == 2
        assert '{} is a file, not a folder'.format(taken) in capsys.readouterr().err
        assert cli_main(['demo', '--out', str(out)]) == 2
        assert '{} is a file, not a folder'.format(taken) in capsys.readouterr().err
    assert taken.read_text() == 'notes'


def test_cost_flags_replace_the_runs_costs_for_the_evaluation(run, report, tmp_path, capsys):
    """`evaluate --spread` plays the same windows with a spread: every fill pays it, the baselines (whose actions do
    not depend on the observations) trade the same and end lower by what their fills paid, and the report and the
    printed table give the costs charged as numbers, each with where it came from, and the costs paid."""
    out = tmp_path / 'spread'
    assert cli_main(['evaluate', run['log_dir'], '--episodes', str(EPISODES), '--seed', str(SEED), '--out', str(out),
                     '--spread', '0.001']) == 0
    with open(out / 'report.json') as f:
        costly = json.load(f)
    charged = {'slippage': 0.0, 'slippage_fixed': 0.0, 'commission': COMMISSION, 'commission_scheme': 'percent'}
    run_settings = dict.fromkeys(['slippage', 'slippage_fixed', 'commission', 'commission_scheme'], 'run settings')
    assert costly['costs'] == dict(charged, spread=0.001, **{'from': dict(run_settings, spread='evaluate flags')})
    assert report['costs'] == dict(charged, spread=0.0, **{'from': dict(run_settings, spread='run settings')})
    printed = capsys.readouterr().out.splitlines()
    assert 'costs: spread 0.001 (evaluate flags); slippage 0, slippage_fixed 0, commission 0.0001, commission_scheme ' \
           'percent (run settings)' in printed
    header = next(line for line in printed if line.startswith('agent'))
    assert header.endswith('costs paid')
    for name in AGENTS:
        row = next(line for line in printed if line.startswith(name + ' '))
        mean = costly['agents'][name]['mean']
        assert float(row.split()[-1]) == pytest.approx(mean['commission'] + mean['spread_cost'] +
                                                       mean['slippage_cost'], abs=0.006)
    for name in AGENTS:
        plain, paid = report['agents'][name]['per_episode'], costly['agents'][name]['per_episode']
        assert all(cost == 0.0 for cost in plain['spread_cost'])
        assert all((cost > 0) == (orders > 0) for cost, orders in zip(paid['spread_cost'], paid['orders'])), name
        if name != 'policy':
            assert paid['orders'] == plain['orders'] and sum(plain['orders']) > 0
            lost = np.subtract(plain['final_value'], paid['final_value'])
            np.testing.assert_allclose(lost, paid['spread_cost'], rtol=1e-3, err_msg=name)


def test_a_tiled_evaluation_decides_on_every_bar_after_the_first_warm_up(run, tmp_path, capsys):
    """Consecutive test episodes whose warm-ups overlap the episode before: each first decision is on the bar after
    the previous window's last; the windows are given with their warm-ups; the policy's steps are in the report."""
    data = make_random_walk_data(num_bars=1700, start='2018-03-05', seed=4)  # Monday 00:00 to Tuesday 04:19
    path = str(tmp_path / 'DAT_ASCII_TILE_M1.csv')
    write_histdata_csv(data, path)
    assert cli_main(['evaluate', run['log_dir'], '--data', path, '--tile', '--out', str(tmp_path / 'tiled'),
                     '--no-episode-plots', '--no-tearsheet']) == 0
    assert 'consecutive windows' in capsys.readouterr().out
    with open(tmp_path / 'tiled' / 'report.json') as f:
        report = json.load(f)
    tiling, windows = report['tiling'], report['windows']
    times = [datetime.fromisoformat(window[key]) for window in windows
             for key in ('window_first_bar_time', 'first_bar_time', 'last_bar_time', 'window_last_bar_time')]
    window_firsts, firsts, lasts, window_lasts = (times[offset::4] for offset in range(4))
    assert report['episode_type'] == 'test' and report['episodes'] == tiling['windows'] == len(windows) == 7
    assert window_firsts[0] == data.index[0] and all(first > start for first, start in zip(firsts, window_firsts))
    assert all(first == last + BAR for last, first in zip(lasts, firsts[1:]))  # played bars follow on
    assert all(stop - start == (480 - 1) * BAR for start, stop in zip(window_firsts, window_lasts))
    assert tiling['bars'] == len(data) - data.index.get_loc(firsts[0])
    assert tiling['bars_skipped'] == len(data) - 1 - data.index.get_loc(lasts[-1])  # the tail, shorter than a window
    steps = report['policy_steps']
    assert [episode['window'] for episode in steps] == [
        dict(window, end_reason=steps[index]['end_reason']) for index, window in enumerate(windows)]
    for episode in steps:
        assert datetime.fromisoformat(episode['steps'][0]['time']) == \
            datetime.fromisoformat(episode['window']['first_bar_time']) + SKIP_FRAME * BAR  # its first decision
        assert all(step['action'] in range(4) and len(step['probabilities']) == 4 for step in episode['steps'])
    assert [step['value'] for step in steps[0]['steps']][-1] == pytest.approx(
        report['agents']['policy']['per_episode']['final_value'][0])


def test_tile_refuses_a_count_of_episodes(run, capsys):
    assert cli_main(['evaluate', run['log_dir'], '--tile', '--episodes', '2']) == 2
    assert '--tile plays every window of the data: drop --episodes' in capsys.readouterr().err


def test_a_policy_that_never_trades_is_warned_of(played):
    from btgym_aac.evaluation.evaluator import never_trades_warnings

    records = played['scripted']
    traded = [record for record in records if record.trade_log['fills']]
    assert traded and never_trades_warnings(traded) == []
    idle = [dataclasses.replace(record, trade_log=dict(record.trade_log, fills=[])) for record in records]
    assert never_trades_warnings(idle) == [
        'the policy placed no order in any of its {} episodes: its returns are the cash\'s, and its metrics say '
        'nothing of how it trades'.format(len(idle))]


def test_tile_needs_held_out_data(run, tmp_path, capsys):
    assert cli_main(['evaluate', run['log_dir'], '--tile', '--out', str(tmp_path / 'own')]) == 2
    assert '--tile plays every window of held-out data: give it with --data' in capsys.readouterr().err
    with pytest.raises(ValueError, match='tile plays consecutive windows of the data given as `data`'):
        evaluate(run['log_dir'], tile=True, out=str(tmp_path / 'api'))
