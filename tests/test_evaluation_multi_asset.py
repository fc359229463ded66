"""Evaluation of multi-asset runs (MultiDiscreteEnv and PortfolioEnv): the restored policy's env actions, the
equal-weight baselines, per-asset report sections consistent with the trade log, plots and the CLI."""
import json
import os
from datetime import timedelta

import matplotlib
import numpy as np
import pytest
from test_env import colour_pixels
from saved_runs import write_saved_run
from test_evaluation import png_pixels

from btgym_aac.algorithms import A3C
from btgym_aac.algorithms.policy import StackedLstmPolicy
from btgym_aac.cli import main as cli_main
from btgym_aac.data import BTgymDataset, BTgymMultiData, make_correlated_walks, write_histdata_csv
from btgym_aac.env import MultiDiscreteEnv, PortfolioEnv
from btgym_aac.evaluation import evaluate, load_policy
from btgym_aac.evaluation.plots import marginal_probabilities
from btgym_aac.evaluation.baselines import KEEP_POSITIONS, REBALANCED, baseline_agents
from btgym_aac.evaluation.episodes import make_evaluation_env, play_episode, reset_options
from btgym_aac.spaces import probability_names as action_names
from btgym_aac.evaluation.loading import read_run_config
from btgym_aac.evaluation.metrics import ASSET_METRIC_NAMES
from btgym_aac.spaces import ActionDictSpace
from btgym_aac.strategy import MultiAssetStrategy

pytestmark = pytest.mark.xdist_group('evaluation_multi_asset')  # one xdist worker builds the module's fixtures

ASSETS = ('A', 'B')
CASH = 'default_cash'
START_CASH, COMMISSION, ORDER_SIZE = 10000.0, 0.0001, 1000
EPISODES, SEED = 2, 3
BAR = timedelta(minutes=1)
AGENTS = ('policy', 'buy_and_hold', 'random')
ENV_CLASSES = {'discrete': MultiDiscreteEnv, 'portfolio': PortfolioEnv}
KINDS = tuple(ENV_CLASSES)


def env_config(kind):
    """Two correlated walks of four days, the last one the test interval; 5-hour episodes of about 27 steps."""
    frames = make_correlated_walks(num_bars=4 * 1440, names=ASSETS, correlation=0.3, seed=0)
    data_config = {name: {'filename': None, 'dataframe': frame} for name, frame in frames.items()}
    dataset = BTgymMultiData(data_class_ref=BTgymDataset, data_config=data_config,
                             episode_duration={'days': 0, 'hours': 5, 'minutes': 0}, time_gap={'hours': 1},
                             target_period={'days': 1})
    kwargs = dict(dataset=dataset, strategy=MultiAssetStrategy, asset_names=list(ASSETS), start_cash=START_CASH,
                  broker_commission=COMMISSION, drawdown_call=50, target_call=50)
    if kind == 'discrete':
        kwargs['order_size'] = {name: ORDER_SIZE for name in ASSETS}
    return {'class_ref': ENV_CLASSES[kind], 'kwargs': kwargs}


class _PerKind:
    """Module-wide cache of one value per env kind, made on first use."""

    def __init__(self, make):
        self.make, self.values = make, {}

    def __call__(self, kind):
        if kind not in self.values:
            self.values[kind] = self.make(kind)
        return self.values[kind]


POLICY_CONFIG = {'class_ref': StackedLstmPolicy,
                 'kwargs': {'lstm_layers': (16, 16), 'conv_2d_num_filters': (8, 8, 8, 8)}}
TRAINER_CONFIG = {'class_ref': A3C, 'kwargs': {'rollout_length': 20, 'time_flat': True}}
RUN_STEP = 40


def untrained_run(kind, log_dir):
    """A log dir as a Launcher run leaves it (`run_config.pkl`, a checkpoint at step RUN_STEP) holding a freshly
    initialised global policy: evaluation does not depend on what was learned, and no cluster is started (the
    slow CLI test of test_multi_asset_training evaluates a trained run)."""
    return write_saved_run(log_dir, env_config(kind), POLICY_CONFIG, TRAINER_CONFIG, step=RUN_STEP)


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    """kind -> log dir of an untrained run of a small StackedLstmPolicy."""
    return _PerKind(lambda kind: untrained_run(kind, str(tmp_path_factory.mktemp(kind) / 'run')))


@pytest.fixture(scope='module')
def report(run, tmp_path_factory):
    """kind -> `evaluate` report of the run."""
    return _PerKind(lambda kind: evaluate(run(kind), episodes=EPISODES, out=str(tmp_path_factory.mktemp('report')),
                                          seed=SEED))


def play_agents(log_dir, agents_for):
    """{agent name: [EpisodeRecord]} of the agents `agents_for(env, policy)` on the evaluation's episodes."""
    env = make_evaluation_env(read_run_config(log_dir))
    try:
        with load_policy(log_dir, env=env) as policy:
            agents = agents_for(env, policy)
            return {name: [play_episode(env, agent, SEED + index, reset_options(1)) for index in range(EPISODES)]
                    for name, agent in agents.items()}
    finally:
        env.close()


@pytest.fixture(scope='module')
def played(run):
    """kind -> records of the policy and the baselines, played as `evaluate` plays them."""
    def agents_for(env, policy):
        buy_and_hold, random_agent = (baseline_agents(env, SEED)[name] for name in ('buy_and_hold', 'random'))
        return {'policy': policy, 'buy_and_hold': buy_and_hold, 'random': random_agent}
    return _PerKind(lambda kind: play_agents(run(kind), agents_for))


def fills_of(record, asset):
    return [fill for fill in record.trade_log['fills'] if fill['asset'] == asset]


def expected_asset_metrics(record, asset):
    """The per-asset metrics recomputed from the record's trade log and recorded positions."""
    trades = [trade for trade in record.trade_log['trades'] if trade['asset'] == asset]
    positions = np.array(record.bar_positions[asset])
    return {'fills': len(fills_of(record, asset)), 'trades': len(trades),
            'realized_pnl': sum(trade['pnlcomm'] for trade in trades),
            'time_in_market': np.count_nonzero(positions) / len(positions),
            'mean_abs_position': np.abs(positions).sum() / len(positions)}


# -------------------------------------------------------------------------------------------------- the policy

@pytest.mark.parametrize('kind', KINDS)
def test_loaded_policy_returns_env_actions(run, kind):
    env = make_evaluation_env(read_run_config(run(kind)))
    try:
        with load_policy(run(kind), env=env) as agent:
            space = env.action_space
            observation, _ = env.reset(seed=0, options=reset_options(1))
            agent.reset(observation)
            initial = {'discrete': [0.0] * 4, 'portfolio': [0.0, 0.0, 1.0]}[kind]  # PortfolioEnv: all cash
            np.testing.assert_array_equal(agent.last_action, initial)
            for _ in range(5):
                probabilities = agent.action_probabilities(observation)
                action = agent.act(observation)
                np.testing.assert_allclose(agent.last_probabilities, probabilities, rtol=1e-6)
                assert probabilities.sum() == pytest.approx(1.0)
                if kind == 'discrete':
                    assert agent.action_names == action_names(space) and len(probabilities) == 4 ** 2
                    best = space.lookup_table[int(np.argmax(probabilities))]
                    assert action == dict(zip(ASSETS, best))
                    assert all(isinstance(index, int) for index in action.values())
                else:
                    assert agent.action_names == ASSETS + (CASH,) and len(probabilities) == 3
                    assert set(action) == set(agent.action_names)
                    np.testing.assert_allclose([action[key][0] for key in agent.action_names], probabilities,
                                               rtol=1e-6)
                observation, reward, terminated, _, info = env.step(action)
                agent.observe(reward)
                assert not terminated and set(info['positions']) == set(ASSETS)
    finally:
        env.close()


def test_action_names_and_marginals_follow_the_lookup_table():
    space = ActionDictSpace(assets=('B', 'A'), base_actions=('hold', 'buy', 'sell'))
    names = action_names(space)
    assert names[0] == 'A=hold B=hold' and names[1] == 'A=hold B=buy' and names[3] == 'A=buy B=hold'
    probabilities = np.random.default_rng(0).dirichlet(np.ones(9), size=4)
    marginals = marginal_probabilities(probabilities, space)
    joint = probabilities.reshape(4, 3, 3)  # [step, action of A, action of B]: B varies fastest
    np.testing.assert_allclose(marginals['A'], joint.sum(axis=2))
    np.testing.assert_allclose(marginals['B'], joint.sum(axis=1))


def test_per_asset_heads_name_and_split_each_assets_probabilities():
    space = ActionDictSpace(assets=('B', 'A'), base_actions=('hold', 'buy', 'sell'), encoding='per_asset')
    assert action_names(space) == ('A=hold', 'A=buy', 'A=sell', 'B=hold', 'B=buy', 'B=sell')
    probabilities = np.random.default_rng(1).dirichlet(np.ones(3), size=(4, 2)).reshape(4, 6)
    marginals = marginal_probabilities(probabilities, space)
    np.testing.assert_array_equal(marginals['A'], probabilities[:, :3])
    np.testing.assert_array_equal(marginals['B'], probabilities[:, 3:])


# ------------------------------------------------------------------------------------------------ the report

@pytest.mark.parametrize('kind', KINDS)
def test_report_has_per_asset_sections_consistent_with_the_trade_log(report, played, kind):
    result, records = report(kind), played(kind)
    assert result['assets'] == list(ASSETS) and set(result['asset_definitions']) == set(ASSET_METRIC_NAMES)
    assert result['episode_type'] == 'test' and result['global_step'] == RUN_STEP
    for name in AGENTS:
        summary = result['agents'][name]
        assert set(summary['assets']) == set(ASSETS)
        assert [len(record.trade_log['fills']) for record in records[name]] == summary['per_episode']['orders']
        for asset in ASSETS:
            section = summary['assets'][asset]
            expected = [expected_asset_metrics(record, asset) for record in records[name]]
            for metric in ASSET_METRIC_NAMES:
                values = [episode[metric] for episode in expected]
                np.testing.assert_allclose(section['per_episode'][metric], values, rtol=1e-9, atol=1e-12,
                                           err_msg='{} {} {}'.format(name, asset, metric))
                assert section['mean'][metric] == pytest.approx(np.mean(values))
        assert sum(summary['assets'][asset]['per_episode']['fills'][0] for asset in ASSETS) == \
            summary['per_episode']['orders'][0]
    random_fills = [result['agents']['random']['assets'][asset]['per_episode']['fills'] for asset in ASSETS]
    assert all(fills > 2 for counts in random_fills for fills in counts), 'the random agent trades every asset'
    with open(os.path.join(result['out'], 'report.json')) as f:
        assert json.load(f) == result


@pytest.mark.parametrize('kind', KINDS)
def test_recorded_positions_are_the_running_sums_of_the_fills(played, kind):
    for name, records in played(kind).items():
        for record in records:
            assert set(record.bar_positions) == set(record.bar_prices) == set(ASSETS)
            for asset in ASSETS:
                fills = fills_of(record, asset)
                sums = [sum(fill['size'] for fill in fills if fill['time'] <= time) for time in record.bar_times]
                assert record.bar_positions[asset] == sums, (name, asset)
                assert fills or name == 'policy', 'both baselines trade every asset'
                assert record.bar_positions[asset][-1] == 0 and (not fills or fills[-1]['position'] == 0)
                assert len(record.bar_prices[asset]) == len(record.bar_times)


@pytest.mark.parametrize('kind', KINDS)
def test_all_agents_played_the_same_windows(report, kind):
    per_episode = {name: report(kind)['agents'][name]['per_episode'] for name in AGENTS}
    for key in ('first_bar_time', 'last_bar_time', 'end_reason'):
        assert per_episode['policy'][key] == per_episode['buy_and_hold'][key] == per_episode['random'][key], key
    assert per_episode['policy']['end_reason'] == ['END OF DATA'] * EPISODES
    assert len(set(per_episode['policy']['first_bar_time'])) == EPISODES


# --------------------------------------------------------------------------------------------- the baselines

def check_held_until_the_end(record, asset, held):
    """`asset` bought once at the first step and held (position `held`) until the end rule's closing fill."""
    opening, closing = fills_of(record, asset)
    assert opening['time'] == record.step_times[0] + 2 * BAR and opening['size'] == held > 0
    assert closing['time'] == record.bar_times[-1] - BAR and closing['size'] == -held
    positions = dict(zip(record.bar_times, record.bar_positions[asset]))
    assert {positions[time] for time in record.bar_times if opening['time'] <= time < closing['time']} == {held}
    assert [trade['asset'] for trade in record.trade_log['trades']].count(asset) == 1


def test_discrete_buy_and_hold_holds_every_asset_until_the_end(played):
    for record in played('discrete')['buy_and_hold']:
        assert record.actions[0] == {asset: 1 for asset in ASSETS}
        assert all(action == {asset: 0 for asset in ASSETS} for action in record.actions[1:])
        for asset in ASSETS:
            check_held_until_the_end(record, asset, ORDER_SIZE)
        assert record.trade_log['end_reason'] == 'END OF DATA'


def test_portfolio_buy_and_hold_invests_equal_weights_and_never_rebalances(played):
    target = round(0.9 / len(ASSETS), 2) * START_CASH
    for record in played('portfolio')['buy_and_hold']:
        assert set(record.actions[0]) == set(ASSETS + (CASH,)) and record.actions[1:] == \
            [KEEP_POSITIONS] * (len(record.actions) - 1)
        assert len(record.trade_log['fills']) == 2 * len(ASSETS)
        for asset in ASSETS:
            opening = fills_of(record, asset)[0]
            check_held_until_the_end(record, asset, opening['size'])
            assert 0 <= target - opening['size'] * opening['price'] < opening['price']  # whole units of the target


def test_the_rebalanced_portfolio_orders_the_drift_back_to_equal_weights(run):
    """Why buy-and-hold keeps its positions: the same equal weights sent through `env.step` at every step, as the
    `rebalanced` baseline sends them, order the drift back to the target again and again."""
    records = play_agents(run('portfolio'), lambda env, policy: {REBALANCED: baseline_agents(env, SEED)[REBALANCED]})
    for record in records[REBALANCED]:
        assert all(set(action) == set(ASSETS + (CASH,)) and action['A'][0] == action['B'][0] == 0.5
                   for action in record.actions)
        for asset in ASSETS:
            assert len(fills_of(record, asset)) > 5


@pytest.mark.parametrize('kind', KINDS)
def test_each_asset_has_its_own_buy_and_hold(run, kind):
    def agents_for(env, policy):
        agents = baseline_agents(env, SEED)
        expected = ['buy_and_hold', 'random'] + ['buy_and_hold_' + asset for asset in ASSETS] + \
            ([REBALANCED] if kind == 'portfolio' else [])
        assert list(agents) == expected
        return {name: agents[name] for name in expected if name.startswith('buy_and_hold_')}

    records = play_agents(run(kind), agents_for)
    for asset in ASSETS:
        other = [name for name in ASSETS if name != asset][0]
        for record in records['buy_and_hold_' + asset]:
            assert fills_of(record, asset) and not fills_of(record, other)
            check_held_until_the_end(record, asset, fills_of(record, asset)[0]['size'])


@pytest.mark.parametrize('kind', KINDS)
def test_random_baseline_is_reproducible_with_its_seed(run, kind):
    def agents_for(env, policy):
        return {'first': baseline_agents(env, 5)['random'], 'again': baseline_agents(env, 5)['random'],
                'other': baseline_agents(env, 6)['random']}

    records = play_agents(run(kind), agents_for)
    for first, again, other in zip(records['first'], records['again'], records['other']):
        assert repr(first.actions) == repr(again.actions) and first.trade_log == again.trade_log
        assert first.bar_values == again.bar_values
        assert repr(first.actions) != repr(other.actions) and first.bar_values != other.bar_values
        if kind == 'portfolio':
            weights = np.array([[action[key][0] for key in ASSETS + (CASH,)] for action in first.actions])
            assert np.all((weights >= 0) & (weights <= 1)) and np.allclose(weights.sum(axis=1), 1.0, atol=1e-6)
        else:
            indices = np.array([[action[asset] for asset in ASSETS] for action in first.actions])
            assert set(indices.ravel()) == {0, 1, 2, 3} and np.any(indices[:, 0] != indices[:, 1])


# ------------------------------------------------------------------------------------------- plots and the CLI

@pytest.mark.parametrize('kind', KINDS)
def test_plots_are_pngs_per_episode_and_asset(report, kind):
    """PNGs 11 in wide at 100 dpi, another for each episode: the equity plots (4.5 in) draw the three agents' lines in
    matplotlib's first three cycle colours; the action plots stack (alpha 0.85 on white) the four base actions of each
    asset in two 2.6 in panels (discrete) or the weights of both assets and cash in one (portfolio); the asset plots
    draw the close price (tab:blue) above the position (tab:purple)."""
    result = report(kind)
    kinds = ['equity', 'actions'] + ['asset_{}'.format(asset) for asset in ASSETS]
    assert sorted(result['plots']) == sorted('{}_episode_{}.png'.format(name, index) for name in kinds
                                             for index in range(EPISODES))
    assert 'asset_<asset>_episode_<i>.png' in result['plot_contents']
    assert ('weights' in result['plot_contents']['actions_episode_<i>.png']) == (kind == 'portfolio')
    colours = matplotlib.rcParams['axes.prop_cycle'].by_key()['color']
    bands, actions_height = (4, 620) if kind == 'discrete' else (len(ASSETS) + 1, 360)
    pictures = {name: png_pixels(os.path.join(result['out'], name)) for name in result['plots']}
    for name, image in pictures.items():
        if name.startswith('equity'):
            assert image.shape == (450, 1100, 4)
            assert min(colour_pixels(image, colour) for colour in colours[:len(AGENTS)]) > 100, name
        elif name.startswith('actions'):
            assert image.shape == (actions_height, 1100, 4)
            assert min(colour_pixels(image, colour, alpha=0.85) for colour in colours[:bands]) > 1000, name
        else:
            assert image.shape == (620, 1100, 4)
            assert min(colour_pixels(image, colour) for colour in ('tab:blue', 'tab:purple')) > 100, name
    for name in kinds:
        assert not np.array_equal(pictures[f'{name}_episode_0.png'], pictures[f'{name}_episode_1.png']), name


@pytest.mark.parametrize('kind', KINDS)
def test_cli_prints_the_per_asset_table_and_reproduces_the_report(run, report, tmp_path, capsys, kind):
    out = tmp_path / 'cli'
    assert cli_main(['evaluate', run(kind), '--episodes', str(EPISODES), '--seed', str(SEED), '--out',
                     str(out)]) == 0
    printed = capsys.readouterr().out
    assert 'realized pnl' in printed and 'in market' in printed
    rows = {tuple(line.split()[:2]) for line in printed.splitlines()}
    assert all((name, asset) in rows for name in AGENTS for asset in ASSETS)
    with open(out / 'report.json') as f:
        written = json.load(f)
    for name in AGENTS:
        assert written['agents'][name]['per_episode'] == report(kind)['agents'][name]['per_episode']
        assert written['agents'][name]['assets'] == report(kind)['agents'][name]['assets']


def test_other_data_files_are_refused_for_a_multi_asset_run(run, tmp_path):
    with pytest.raises(ValueError, match='trades several assets'):
        evaluate(run('discrete'), data=[str(tmp_path / 'bars.csv')], episodes=1, out=str(tmp_path / 'out'))


# ----------------------------------------------------------------------------------------- other data: --assets

@pytest.fixture(scope='module')
def held_out_files(tmp_path_factory):
    """{asset: [CSV of days 1-2, CSV of days 3-4]} of two walks of another seed, from 2019-01-01 (no bar of the
    run's data)."""
    folder = tmp_path_factory.mktemp('held_out')
    frames = make_correlated_walks(num_bars=4 * 1440, names=ASSETS, correlation=0.3, seed=7,
                                   start='2019-01-01')
    return {name: [write_histdata_csv(frame[:2 * 1440], str(folder / '{}_1.csv'.format(name))),
                   write_histdata_csv(frame[2 * 1440:], str(folder / '{}_2.csv'.format(name)))]
            for name, frame in frames.items()}


@pytest.mark.parametrize('kind', KINDS)
def test_a_multi_asset_run_is_evaluated_on_other_files_per_asset(run, held_out_files, tmp_path, kind):
    result = evaluate(run(kind), data=held_out_files, episodes=1, out=str(tmp_path / 'out'), seed=SEED, plots=False)
    assert result['data'] == held_out_files and result['episode_type'] == 'test'
    assert set(result['agents']) >= {'policy', 'buy_and_hold', 'random', 'buy_and_hold_A', 'buy_and_hold_B'}
    assert result['windows'][0]['window_first_bar_time'] >= '2019-01-04'  # the test interval: the files' last day


def test_assets_must_be_the_runs_in_its_order_and_only_for_multi_asset_runs(run, held_out_files, tmp_path,
                                                                            capsys):
    swapped = {'B': held_out_files['B'], 'A': held_out_files['A']}
    with pytest.raises(ValueError, match=r"must name the run's assets in its order: A B \(given: B A\)"):
        evaluate(run('discrete'), data=swapped, episodes=1, out=str(tmp_path / 'out'))
    with pytest.raises(ValueError, match='trades several assets .*--assets'):
        evaluate(run('discrete'), data=held_out_files['A'], episodes=1, out=str(tmp_path / 'out'))
    entries = ['{}={}'.format(name, ','.join(files)) for name, files in held_out_files.items()]
    assert cli_main(['evaluate', run('portfolio'), '--assets', entries[0], '--episodes', '1', '--out',
                     str(tmp_path / 'cli'), '--no-episode-plots', '--no-tearsheet']) == 2
    assert "must name the run's assets in its order: A B (given: A)" in capsys.readouterr().err
    assert cli_main(['evaluate', run('portfolio'), '--assets'] + entries + ['--episodes', '1', '--out',
                     str(tmp_path / 'cli'), '--no-episode-plots', '--no-tearsheet']) == 0
    with open(tmp_path / 'cli' / 'report.json') as f:
        assert json.load(f)['data'] == held_out_files
