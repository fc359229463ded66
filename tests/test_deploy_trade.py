"""`btgym-aac trade`: a policy artifact on bars that arrive one by one. A replayed episode takes the decisions,
fills and final value `evaluate` gets on the same bars; a run stopped and started again takes the decisions of an
uninterrupted one; shadow mode places no order; the guards close positions and stop; bad input is refused."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from saved_runs import reference_configs, write_saved_run
from test_evaluation_multi_asset import POLICY_CONFIG as MULTI_ASSET_POLICY_CONFIG
from test_evaluation_multi_asset import TRAINER_CONFIG as MULTI_ASSET_TRAINER_CONFIG
from test_evaluation_multi_asset import env_config as multi_asset_env_config

from btgym_aac.cli import main as cli_main
from btgym_aac.cli.trade_command import feed_arguments
from btgym_aac.data import make_correlated_walks, write_histdata_csv
from btgym_aac.deploy import trading
from btgym_aac.deploy.live_feeds import FEED_ENDED, Bar, ReplayFeed
from btgym_aac.deploy.manifest import ArtifactError, read_manifest
from btgym_aac.deploy.runtime import load_artifact
from btgym_aac.deploy.trading import live_settings, trade
from btgym_aac.env.components import bars
from btgym_aac.env.episode_setup import EpisodeSetup
from btgym_aac.evaluation import evaluate
from btgym_aac.evaluation.episodes import make_evaluation_env, play_episode, reset_options
from btgym_aac.evaluation.loading import load_policy, read_run_config

pytestmark = pytest.mark.xdist_group('deploy')  # one xdist worker builds the reference artifact (conftest)

TRAIN_SAMPLE = 0
TOLERANCE = 1e-5
TIMING_FIELDS = ('received_at', 'latency_ms')


def evaluated_episode(log_dir, seed, monkeypatch):
    """(EpisodeRecord, {data line: DataFrame of the episode's bars}) of `evaluate`'s deterministic policy on the
    episode of `seed`."""
    episodes = []
    new_cerebro = EpisodeSetup._new_cerebro

    def keeping_the_episode(env, episode, decide):
        episodes.append(episode)
        return new_cerebro(env, episode, decide)

    monkeypatch.setattr(EpisodeSetup, '_new_cerebro', keeping_the_episode)
    env = make_evaluation_env(read_run_config(log_dir))
    try:
        with load_policy(log_dir, env=env) as agent:
            record = play_episode(env, agent, seed, reset_options(TRAIN_SAMPLE))
    finally:
        env.close()
    episode = episodes[-1]
    frames = dict(episode.frames) if hasattr(episode, 'frames') else {'data': bars(episode)}
    return record, frames


def replay_specs(frames, folder):
    """{data line: 'replay:<csv>:max'} of the frames written as HistData files (in `folder`, made if missing)."""
    os.makedirs(str(folder), exist_ok=True)
    specs = {}
    for line, frame in frames.items():
        path = os.path.join(str(folder), '{}.csv'.format(line))
        write_histdata_csv(frame, path)
        specs[line] = 'replay:{}:max'.format(path)
    return specs


def read_lines(folder):
    with open(os.path.join(str(folder), 'journal.jsonl')) as f:
        return [json.loads(line) for line in f]


def read_journal(folder):
    """The decisions of a trade folder's journal."""
    return [entry for entry in read_lines(folder) if 'record' not in entry]


def end_records(folder):
    return [entry for entry in read_lines(folder) if entry.get('record') == 'end']


def read_state(folder):
    with open(os.path.join(str(folder), 'state.json')) as f:
        return json.load(f)


def assert_as_evaluated(result, folder, record):
    """The trade run in `folder` took `evaluate`'s decisions, and its journal holds every fill of the episode and
    its final value, as state.json does."""
    journal = read_journal(folder)
    assert [entry['bar_time'] for entry in journal] == [time.isoformat() for time in record.step_times[:-1]]
    assert [entry['action'] for entry in journal] == [
        {asset: int(index) for asset, index in action.items()} if isinstance(action, dict) else int(action)
        for action in record.actions]
    np.testing.assert_allclose([list(entry['probabilities'].values()) for entry in journal],
                               np.array(record.probabilities), atol=TOLERANCE)
    assert result['fills'] == record.trade_log['fills'] and result['fills']
    assert result['broker_value'] == record.step_values[-1]
    assert result['end_message'] == record.trade_log['end_reason'] == 'END OF DATA'
    [end] = end_records(folder)
    journaled_fills = [fill for entry in journal + [end] for fill in entry['fills']]
    assert journaled_fills == [dict(fill, time=fill['time'].isoformat()) for fill in record.trade_log['fills']]
    assert end['broker_value'] == read_state(folder)['broker_value'] == record.step_values[-1]
    assert end['positions'] == read_state(folder)['positions'] and not any(end['positions'].values())
    assert (end['stop'], end['exit_code'], end['episode_ended']) == ('end of data', 0, True)


def test_a_replayed_episode_trades_as_evaluate_on_the_same_bars(reference_artifact, tmp_path, monkeypatch):
    log_dir, artifact = reference_artifact
    record, frames = evaluated_episode(log_dir, seed=3, monkeypatch=monkeypatch)
    result = trade(artifact, replay_specs(frames, tmp_path)['data'], str(tmp_path / 'paper'), close_at_end=True)
    journal = read_journal(tmp_path / 'paper')
    assert_as_evaluated(result, tmp_path / 'paper', record)
    assert len(journal) == result['decisions'] == result['journaled'] == len(record.actions) > 10
    fills_journaled = [fill for entry in journal for fill in entry['fills']]
    assert fills_journaled == [dict(fill, time=fill['time'].isoformat()) for fill in result['fills']
                               if fill['time'].isoformat() <= journal[-1]['bar_time']]
    assert all(entry['latency_ms'] > 0 and entry['received_at'] for entry in journal)


def multi_asset_artifact(folder, kind, **env_kwargs):
    """(log dir, artifact folder) of an untrained two-asset run of `kind` ('discrete' or 'portfolio'), its env
    taking `env_kwargs` too."""
    env_config = multi_asset_env_config(kind)
    env_config['kwargs'].update(env_kwargs)
    log_dir = write_saved_run(folder / 'run', env_config, MULTI_ASSET_POLICY_CONFIG, MULTI_ASSET_TRAINER_CONFIG,
                              step=40)
    assert cli_main(['export', log_dir, str(folder / 'artifact')]) == 0
    return log_dir, str(folder / 'artifact')


@pytest.fixture(scope='module')
def discrete_artifact(tmp_path_factory):
    """(log dir, artifact folder) of an untrained two-asset MultiDiscreteEnv run."""
    return multi_asset_artifact(tmp_path_factory.mktemp('discrete'), 'discrete')


@pytest.fixture(scope='module')
def portfolio_artifact(tmp_path_factory):
    """(log dir, artifact folder) of an untrained two-asset PortfolioEnv run."""
    return multi_asset_artifact(tmp_path_factory.mktemp('portfolio'), 'portfolio')


@pytest.fixture(scope='module')
def per_asset_artifact(tmp_path_factory):
    """(log dir, artifact folder) of an untrained two-asset MultiDiscreteEnv run with one head per asset."""
    return multi_asset_artifact(tmp_path_factory.mktemp('per_asset'), 'discrete', action_encoding='per_asset')


@pytest.mark.parametrize('artifact_fixture', ['discrete_artifact', 'per_asset_artifact'])
def test_a_multi_asset_episode_trades_as_evaluate_on_the_same_bars(artifact_fixture, request, tmp_path, monkeypatch):
    log_dir, artifact = request.getfixturevalue(artifact_fixture)
    record, frames = evaluated_episode(log_dir, seed=3, monkeypatch=monkeypatch)
    assert list(frames) == ['A', 'B']
    result = trade(artifact, replay_specs(frames, tmp_path), str(tmp_path / 'paper'), close_at_end=True)
    assert_as_evaluated(result, tmp_path / 'paper', record)


@pytest.mark.parametrize('kind', ['discrete', 'portfolio'])
def test_parity_of_a_multi_asset_artifact_on_other_files(discrete_artifact, portfolio_artifact, tmp_path, capsys,
                                                         kind):
    """`btgym-aac parity --assets`: the artifact's replayed trade and `evaluate` on held-out files of every asset."""
    log_dir, artifact = discrete_artifact if kind == 'discrete' else portfolio_artifact
    frames = make_correlated_walks(num_bars=2 * 1440, names=('A', 'B'), correlation=0.3, seed=9, start='2019-01-07')
    files = replay_specs(frames, tmp_path / 'bars')
    entries = ['{}={}'.format(name, spec.split(':')[1]) for name, spec in files.items()]
    out = tmp_path / 'parity'
    assert cli_main(['parity', log_dir, artifact, '--assets'] + entries + ['--out', str(out), '--window', '3']) == 0
    assert 'parity: yes' in capsys.readouterr().out
    report = json.loads((out / 'parity.json').read_text())
    assert report['parity'] and report['data'] == {name: [spec.split(':')[1]] for name, spec in files.items()}
    assert report['evaluate'] == report['trade'] and report['trade']['decisions'] > 10 and report['trade']['fills']
    assert report['window']['window_first_bar_time'] > '2019-01-07T00:00:00'


def test_a_bar_missing_on_one_asset_drops_that_time_for_every_asset(discrete_artifact, tmp_path):
    """As training aligns its data (a time missing in any line is dropped from all), a live group of bars is traded
    only whole: the other lines' bars of a time one line lacks are dropped (warned), never shifted onto the next."""
    frames = make_correlated_walks(num_bars=600, names=('A', 'B'), correlation=0.3, seed=4, start='2019-01-07')
    missing = frames['B'].index[[300, 301, 450]]
    lacking = dict(frames, B=frames['B'].drop(missing))
    aligned = {name: frame.drop(missing) for name, frame in frames.items()}
    artifact = discrete_artifact[1]
    gapped = trade(artifact, replay_specs(lacking, tmp_path / 'lacking'), str(tmp_path / 'gapped'))
    clean = trade(artifact, replay_specs(aligned, tmp_path / 'aligned'), str(tmp_path / 'clean'))
    assert gapped['bars'] == clean['bars'] == 597
    assert without_timing(read_journal(tmp_path / 'gapped')) == without_timing(read_journal(tmp_path / 'clean'))
    assert gapped['fills'] == clean['fills'] and gapped['broker_value'] == clean['broker_value']
    with open(tmp_path / 'gapped' / 'bars.jsonl') as f:
        times = [json.loads(line)['A'][0] for line in f]
    assert not {time.isoformat() for time in missing} & set(times)


def test_a_portfolio_episode_trades_target_weights_as_evaluate_on_the_same_bars(portfolio_artifact, tmp_path,
                                                                                monkeypatch):
    """PortfolioEnv's continuous actions: the same weights journaled, the same target orders (sent again on the
    bars after a decision), fills and final value."""
    log_dir, artifact = portfolio_artifact
    record, frames = evaluated_episode(log_dir, seed=3, monkeypatch=monkeypatch)
    result = trade(artifact, replay_specs(frames, tmp_path), str(tmp_path / 'paper'), close_at_end=True)
    journal = read_journal(tmp_path / 'paper')
    assert [entry['bar_time'] for entry in journal] == [time.isoformat() for time in record.step_times[:-1]]
    assert len(journal) == len(record.actions) > 10
    for entry, action in zip(journal, record.actions):
        assert entry['action'].keys() == action.keys() == {'A', 'B', 'default_cash'}
        np.testing.assert_allclose([entry['action'][key] for key in sorted(action)],
                                   [np.asarray(action[key]).tolist() for key in sorted(action)], atol=TOLERANCE)
        assert entry['order'] == {'A': pytest.approx(entry['action']['A'][0] / sum(
            value[0] for value in entry['action'].values()), abs=1e-12), 'B': pytest.approx(
            entry['action']['B'][0] / sum(value[0] for value in entry['action'].values()), abs=1e-12)}
    assert result['fills'] == record.trade_log['fills'] and result['fills']
    assert result['broker_value'] == record.step_values[-1]
    assert result['end_message'] == record.trade_log['end_reason'] == 'END OF DATA'


def test_a_portfolio_in_shadow_mode_journals_its_target_weights_and_orders_nothing(portfolio_artifact, tmp_path,
                                                                                    monkeypatch):
    log_dir, artifact = portfolio_artifact
    _, frames = evaluated_episode(log_dir, seed=3, monkeypatch=monkeypatch)
    result = trade(artifact, replay_specs(frames, tmp_path), str(tmp_path / 'shadow'), mode='shadow')
    journal = read_journal(tmp_path / 'shadow')
    assert result['fills'] == [] and result['positions'] == {'A': 0.0, 'B': 0.0} and len(journal) > 10
    for entry in journal:
        weights = {key: value[0] for key, value in entry['action'].items()}
        assert 'order' not in entry and entry['intended_order'] == {
            asset: pytest.approx(weights[asset] / sum(weights.values()), abs=1e-12) for asset in ('A', 'B')}


def test_bracket_orders_trade_as_evaluate_on_the_same_bars(tmp_path, monkeypatch):
    configs = reference_configs()
    configs['env_config']['kwargs'].update(stop_loss=2, take_profit=3, distance_unit='pips')
    log_dir = write_saved_run(tmp_path / 'run', configs['env_config'], configs['policy_config'],
                              configs['trainer_config'], step=40)
    assert cli_main(['export', log_dir, str(tmp_path / 'artifact')]) == 0
    record, frames = evaluated_episode(log_dir, seed=3, monkeypatch=monkeypatch)
    result = trade(str(tmp_path / 'artifact'), replay_specs(frames, tmp_path)['data'], str(tmp_path / 'paper'),
                   close_at_end=True)
    assert_as_evaluated(result, tmp_path / 'paper', record)
    assert {'stop_loss', 'take_profit'} & {fill['order'] for fill in result['fills']}  # children filled live too


class StopAtBar:
    """A replay (of `path`, or the given feed) that sends this process SIGTERM when it hands out its bar `index`
    (from the thread trading)."""

    def __init__(self, path, index, replay=None):
        self.replay, self.index, self.handed = replay or ReplayFeed(path), index, 0
        self.bar_count = self.replay.bar_count

    def next_bar(self, timeout=None):
        if self.handed == self.index:
            signal.raise_signal(signal.SIGTERM)
        bar = self.replay.next_bar(timeout)
        self.handed += bar is not None  # (a feed answering nothing yet, in a silence, hands out no bar)
        return bar

    def close(self):
        self.replay.close()


def without_timing(journal):
    return [{key: value for key, value in entry.items() if key not in TIMING_FIELDS} for entry in journal]


def decisions_and_fills(folder):
    """A trade folder's decisions without their timing and fills, and every fill of the journal in order: a fill
    after a stopped run's last decision is on the run's end record, where an uninterrupted run has it on its next
    decision."""
    decisions = [{key: value for key, value in entry.items() if key != 'fills'}
                 for entry in without_timing(read_journal(folder))]
    return decisions, [fill for entry in read_lines(folder) for fill in entry.get('fills', [])]


def test_a_run_stopped_and_started_again_takes_the_decisions_of_an_uninterrupted_run(reference_artifact, tmp_path,
                                                                                    monkeypatch):
    log_dir, artifact = reference_artifact
    _, frames = evaluated_episode(log_dir, seed=5, monkeypatch=monkeypatch)
    spec = replay_specs(frames, tmp_path)['data']
    uninterrupted = trade(artifact, spec, str(tmp_path / 'straight'))
    path = spec.split(':')[1]
    stopped = trade(artifact, StopAtBar(path, index=len(frames['data']) - 120), str(tmp_path / 'resumed'))
    assert stopped['ended'] == 'signal SIGTERM' and 0 < stopped['decisions'] < uninterrupted['decisions']
    with open(tmp_path / 'resumed' / 'state.json') as f:
        assert json.load(f)['decisions'] == stopped['decisions']
    resumed = trade(artifact, spec, str(tmp_path / 'resumed'))
    assert resumed['decisions'] == uninterrupted['decisions']
    assert resumed['journaled'] == uninterrupted['decisions'] - stopped['decisions']
    assert decisions_and_fills(tmp_path / 'resumed') == decisions_and_fills(tmp_path / 'straight')
    assert resumed['fills'] == uninterrupted['fills'] and resumed['broker_value'] == uninterrupted['broker_value']


def test_shadow_mode_places_no_order_and_journals_the_intended_ones(reference_artifact, tmp_path, monkeypatch):
    log_dir, artifact = reference_artifact
    _, frames = evaluated_episode(log_dir, seed=3, monkeypatch=monkeypatch)
    result = trade(artifact, replay_specs(frames, tmp_path)['data'], str(tmp_path / 'shadow'), mode='shadow')
    journal = read_journal(tmp_path / 'shadow')
    assert result['fills'] == [] and result['positions'] == {'default_asset': 0.0}
    assert all('order' not in entry and entry['mode'] == 'shadow' for entry in journal)
    intended = {entry['intended_order']['default_asset'] for entry in journal}
    assert intended - {'hold'}, 'the policy intends orders'
    with pytest.raises(ValueError, match='another mode'):
        trade(artifact, replay_specs(frames, tmp_path)['data'], str(tmp_path / 'shadow'), mode='paper')


class ScriptedPolicy:
    """The artifact's policy, its actions replaced by `script` (then 'hold'), to put the guards to work."""

    def __init__(self, policy, script):
        self.policy, self.script = policy, list(script)

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def act(self, observation, deterministic=True):
        _, probabilities, value = self.policy.act(observation, deterministic)
        return (self.script.pop(0) if self.script else 0), probabilities, value


def scripted(monkeypatch, script):
    monkeypatch.setattr(trading, 'load_artifact', lambda path, backend: ScriptedPolicy(load_artifact(path, backend),
                                                                                        script))


def price_path(closes, start=datetime(2018, 1, 1)):
    """Minute bars whose opens are the previous closes."""
    closes = np.asarray(closes, dtype=np.float64)
    opens = np.concatenate([[closes[0]], closes[:-1]])
    index = pd.date_range(start, periods=len(closes), freq='1min')
    return pd.DataFrame({'open': opens, 'high': np.maximum(opens, closes) + 1e-5,
                         'low': np.minimum(opens, closes) - 1e-5, 'close': closes, 'volume': 0.0}, index=index)


BUY = 1


def test_max_drawdown_closes_the_position_and_stops_the_run(reference_artifact, tmp_path, monkeypatch):
    scripted(monkeypatch, [BUY])
    falling = price_path(np.linspace(1.10, 1.00, 900))
    result = trade(reference_artifact[1], replay_specs({'data': falling}, tmp_path)['data'], str(tmp_path / 'run'),
                   max_drawdown=1.0)
    assert result['ended'].startswith('max drawdown') and result['positions'] == {'default_asset': 0.0}
    buy, close = result['fills']
    assert buy['side'] == 'buy' and close['side'] == 'sell' and close['size'] == -buy['size']
    assert 1.0 <= (2000.0 - result['broker_value']) / 2000.0 * 100 < 10.0  # before the strategy's own 10 % call
    assert result['bars'] < len(falling) - 10


class SilentAfter:
    """A replay that hands out nothing for `silence` seconds after its bar `index`."""

    def __init__(self, path, index, silence):
        self.replay, self.index, self.silence = ReplayFeed(path), index, silence
        self.handed, self.silent_until = 0, None
        self.bar_count = self.replay.bar_count

    def next_bar(self, timeout=None):
        if self.handed == self.index and self.silent_until is None:
            self.silent_until = time.monotonic() + self.silence
        if self.silent_until is not None and time.monotonic() < self.silent_until:
            time.sleep(min(timeout or 0.01, 0.01))
            return None
        self.handed += 1
        return self.replay.next_bar(timeout)

    def close(self):
        self.replay.close()


def test_a_silent_feed_closes_the_position_in_paper_mode(reference_artifact, tmp_path, monkeypatch):
    scripted(monkeypatch, [BUY])
    flat = price_path(1.1 + 1e-4 * np.sin(np.arange(700) / 20.0))
    path = replay_specs({'data': flat}, tmp_path)['data'].split(':')[1]
    result = trade(reference_artifact[1], SilentAfter(path, index=400, silence=2.5), str(tmp_path / 'run'),
                   max_bar_delay=1.0)  # a replay at full speed hands a bar every few ms, however busy the machine
    buy, close = result['fills'][:2]
    assert buy['side'] == 'buy' and close['side'] == 'sell' and close['size'] == -buy['size']
    assert close['time'] == flat.index[401].to_pydatetime()  # sent at the bar after the silence, filled at the next
    assert result['positions'] == {'default_asset': 0.0}


def test_a_stop_after_a_silence_closes_the_positions_opened_since_and_ends_the_run(reference_artifact, tmp_path,
                                                                                   monkeypatch):
    """The close after a silence does not keep a later stop from closing what the policy opened again."""
    scripted(monkeypatch, [BUY] * 1000)
    flat = price_path(1.1 + 1e-4 * np.sin(np.arange(700) / 20.0))
    path = replay_specs({'data': flat}, tmp_path)['data'].split(':')[1]
    feed = StopAtBar(None, 600, replay=SilentAfter(path, index=400, silence=2.5))
    result = trade(reference_artifact[1], feed, str(tmp_path / 'run'), max_bar_delay=1.0, flatten_on_exit=True)
    after_silence = [fill for fill in result['fills'] if fill['time'] > flat.index[401].to_pydatetime()]
    assert after_silence[0]['side'] == 'buy'  # opened again by the policy
    assert result['ended'] == 'signal SIGTERM' and result['positions'] == {'default_asset': 0.0}
    assert after_silence[-1]['side'] == 'sell' and after_silence[-1]['time'] == flat.index[601].to_pydatetime()
    assert result['bars'] == 602


class ListFeed:
    """A feed of the given items, then FEED_ENDED."""

    def __init__(self, items):
        self.items = list(items)

    def next_bar(self, timeout=None):
        return self.items.pop(0) if self.items else FEED_ENDED

    def close(self):
        self.items = []


def test_unsound_duplicate_and_late_bars_never_reach_the_strategy(reference_artifact, tmp_path):
    frame = price_path(1.1 + 1e-4 * np.sin(np.arange(400) / 20.0))
    good = [Bar(time.to_pydatetime(), *row) for time, row in zip(frame.index, frame.to_numpy().tolist())]
    items = [good[0], good[1]._replace(close=float('nan')), good[1], good[1], good[2]._replace(high=-1.0), good[0]]
    items += good[2:]
    result = trade(reference_artifact[1], ListFeed(items), str(tmp_path / 'run'))
    with open(tmp_path / 'run' / 'bars.jsonl') as f:
        times = [bar[0] for line in f for bar in json.loads(line).values()]
    assert times == [bar.time.isoformat() for bar in good[:len(times)]] and result['bars'] == len(times) > 300


def test_feeds_must_name_the_artifacts_data_lines(reference_artifact, tmp_path):
    with pytest.raises(ValueError, match='no such line B'):
        trade(reference_artifact[1], {'data': 'replay:x.csv', 'B': 'replay:y.csv'}, str(tmp_path / 'run'))
    assert feed_arguments(['replay:a.csv:max']) == 'replay:a.csv:max'
    assert feed_arguments(['A=replay:a.csv', 'B=ccxt:binance:BTC/USDT:1m']) == {
        'A': 'replay:a.csv', 'B': 'ccxt:binance:BTC/USDT:1m'}
    with pytest.raises(ValueError, match='each names its data line'):
        feed_arguments(['replay:a.csv', 'B=replay:b.csv'])


def test_the_runs_preset_reaches_its_evaluation_report_and_its_artifact(reference_artifact, tmp_path):
    log_dir, artifact = reference_artifact
    assert read_manifest(artifact)['preset'] == 'fast'  # the saved run's
    report = evaluate(log_dir, episodes=1, out=str(tmp_path / 'evaluation'), plots=False)
    assert report['preset'] == 'fast'


def test_an_artifact_charging_the_spread_of_its_data_is_refused(reference_artifact):
    manifest = read_manifest(reference_artifact[1])
    assert live_settings(manifest)[3]['spread'] == 0.0
    manifest['broker']['spread'] = 'data'
    with pytest.raises(ArtifactError, match="spread from bid/ask data .*live feeds do not deliver"):
        live_settings(manifest)


MARKED_FEED = '''
import math
import os
import time
from datetime import datetime, timedelta


def bars():
    open(os.environ['FEED_MARKER'], 'w').close()
    for minute in range(10 ** 6):
        close = 1.1 + 1e-4 * math.sin(minute / 20.0)
        yield datetime(2018, 1, 1) + timedelta(minutes=minute), close, close + 2e-5, close - 2e-5, close, 0.0
        if minute == int(os.environ.get('FAIL_AT', -1)):
            raise ConnectionError('the exchange went away')
        if minute > 320:
            time.sleep(0.002)
'''


def feed_module_env(tmp_path, **extra):
    """The environment of a command that can import `marked_feed` (written to `tmp_path`): its `bars()` marks
    that it was opened, then yields bars, slowly after the strategy's warm-up, failing at bar FAIL_AT if set."""
    (tmp_path / 'marked_feed.py').write_text(textwrap.dedent(MARKED_FEED))
    return dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get('PYTHONPATH', ''),
                FEED_MARKER=str(tmp_path / 'feed_opened'), **extra)


def run_cli(args, env):
    return subprocess.Popen([sys.executable, '-m', 'btgym_aac.cli'] + args, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_damaged_artifact_is_refused_before_any_feed_opens(reference_artifact, tmp_path, capsys):
    damaged = str(tmp_path / 'artifact')
    shutil.copytree(reference_artifact[1], damaged)
    os.remove(os.path.join(damaged, 'policy.onnx'))
    process = run_cli(['trade', damaged, '--feed', 'python:marked_feed:bars', '--out', str(tmp_path / 'run')],
                      feed_module_env(tmp_path))
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2 and 'misses policy.onnx' in err
    assert not (tmp_path / 'feed_opened').exists()
    with pytest.raises(ArtifactError, match='misses policy.onnx'):
        trade(damaged, 'python:marked_feed:bars', str(tmp_path / 'run'))


def test_a_failing_feed_exits_1_naming_it_with_the_run_saved(reference_artifact, tmp_path):
    process = run_cli(['trade', reference_artifact[1], '--feed', 'python:marked_feed:bars', '--out',
                       str(tmp_path / 'run')], feed_module_env(tmp_path, FAIL_AT='400'))
    out, err = process.communicate(timeout=300)
    assert process.returncode == 1
    assert 'the feed failed' in err and 'marked_feed:bars' in err and 'the exchange went away' in err
    [end] = end_records(tmp_path / 'run')
    assert (end['stop'], end['exit_code']) == ('feed failed', 1) and 'the exchange went away' in end['ended']
    assert read_state(tmp_path / 'run')['decisions'] == end['decisions'] >= 1


def test_sigterm_finishes_the_decision_saves_and_exits_3_without_tensorflow(reference_artifact, tmp_path):
    code = ('import sys; from btgym_aac.cli import main; status = main(sys.argv[1:]); '
            'print("tensorflow imported:", "tensorflow" in sys.modules); sys.exit(status)')
    (tmp_path / 'run_trade.py').write_text(code)
    process = subprocess.Popen([sys.executable, str(tmp_path / 'run_trade.py'), 'trade', reference_artifact[1],
                                '--feed', 'python:marked_feed:bars', '--out', str(tmp_path / 'run')],
                               env=feed_module_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    journal = tmp_path / 'run' / 'journal.jsonl'
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (journal.exists() and journal.read_text().count('\n') >= 2):
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 3, err
    assert 'ended: signal SIGTERM' in out and 'tensorflow imported: False' in out
    state = read_state(tmp_path / 'run')
    [end] = end_records(tmp_path / 'run')
    assert (end['stop'], end['exit_code'], end['ended']) == ('signal', 3, 'signal SIGTERM')
    assert (state['exit_code'], state['ended'], state['broker_value']) == (3, 'signal SIGTERM', end['broker_value'])
    assert state['decisions'] == end['decisions'] == len(read_journal(tmp_path / 'run')) >= 2
    assert datetime.fromisoformat(state['last_bar_time']) >= datetime(2018, 1, 1) + timedelta(minutes=300)


def test_the_readme_quick_start_replay_trades_every_bar_of_its_file(reference_artifact, tmp_path):
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'examples', 'data',
                        'sine_replay.csv')
    result = trade(reference_artifact[1], 'replay:{}:max'.format(path), str(tmp_path / 'paper'))
    assert result['end_message'] is None and result['decisions'] == len(read_journal(tmp_path / 'paper'))
    assert (result['stop'], result['exit_code']) == ('end of data', 0)
    assert result['bars'] == len(pd.read_csv(path, sep=';', header=None))
    assert result['decisions'] > 100 and result['fills']


def test_flatten_on_exit_closes_the_position_before_a_signal_ends_the_run(reference_artifact, tmp_path, monkeypatch):
    scripted(monkeypatch, [BUY])
    flat = price_path(1.1 + 1e-4 * np.sin(np.arange(700) / 20.0))
    path = replay_specs({'data': flat}, tmp_path)['data'].split(':')[1]
    result = trade(reference_artifact[1], StopAtBar(path, index=450), str(tmp_path / 'run'), flatten_on_exit=True)
    assert result['ended'] == 'signal SIGTERM' and result['positions'] == {'default_asset': 0.0}
    buy, close = result['fills']
    assert buy['side'] == 'buy' and close['side'] == 'sell' and close['size'] == -buy['size']
    assert close['time'] == flat.index[451].to_pydatetime() and result['bars'] == 452


def test_flatten_on_exit_closes_a_portfolio_without_its_target_sent_again(portfolio_artifact, tmp_path, monkeypatch):
    """Stopped on the bar after a decision (whose target orders go out on that bar, and again on the next two), a
    PortfolioEnv artifact's positions are closed, and the target the strategy would send again opens none."""
    artifact = portfolio_artifact[1]
    all_in_a = {'A': np.ones(1), 'B': np.zeros(1), 'default_cash': np.zeros(1)}
    scripted(monkeypatch, [all_in_a] * 1000)
    flat = price_path(1.1 + 1e-4 * np.sin(np.arange(700) / 20.0))
    specs = replay_specs({'A': flat, 'B': flat}, tmp_path)
    whole = trade(artifact, specs, str(tmp_path / 'whole'))
    decision = flat.index.get_loc(pd.Timestamp(read_journal(tmp_path / 'whole')[20]['bar_time']))
    assert {fill['asset'] for fill in whole['fills']} == {'A'}
    stopped = dict(specs, A=StopAtBar(specs['A'].split(':')[1], index=decision + 1))
    result = trade(artifact, stopped, str(tmp_path / 'run'), flatten_on_exit=True)
    assert result['ended'] == 'signal SIGTERM' and result['positions'] == {'A': 0.0, 'B': 0.0}
    last = result['fills'][-1]
    assert last['side'] == 'sell' and last['position'] == 0 and last['time'] == flat.index[decision + 2]
    assert result['bars'] == decision + 3


def test_a_portfolio_closed_after_a_silence_stays_flat_until_the_next_decision(portfolio_artifact, tmp_path,
                                                                               monkeypatch):
    """The target the strategy would send again on the bars after a decision is not sent after the close."""
    artifact = portfolio_artifact[1]
    scripted(monkeypatch, [{'A': np.ones(1), 'B': np.zeros(1), 'default_cash': np.zeros(1)}] * 1000)
    flat = price_path(1.1 + 1e-4 * np.sin(np.arange(700) / 20.0))
    specs = replay_specs({'A': flat, 'B': flat}, tmp_path)
    trade(artifact, specs, str(tmp_path / 'whole'))
    decisions = [flat.index.get_loc(pd.Timestamp(entry['bar_time'])) for entry in read_journal(tmp_path / 'whole')]
    silent = dict(specs, A=SilentAfter(specs['A'].split(':')[1], index=decisions[20] + 1, silence=2.5))
    result = trade(artifact, silent, str(tmp_path / 'run'), max_bar_delay=1.0)
    fills = [(flat.index.get_loc(pd.Timestamp(fill['time'])), fill['side'], fill['position'])
             for fill in result['fills']]
    closing = fills.index((decisions[20] + 2, 'sell', 0.0))  # sent at the first bar after the silence
    assert fills[closing + 1][:2] == (decisions[21] + 2, 'buy')  # for the next decision (sent at its next bar)

