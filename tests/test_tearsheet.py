"""Tearsheets: one self-contained HTML page of an evaluation, a walk-forward or a `trade` journal, rendered in headless
Chromium (Debian's `chromium`, as .ci/run installs) and checked by its screenshot and its text."""
import dataclasses
import html.parser
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from test_env import colour_pixels

from btgym_aac.algorithms import A3C
from btgym_aac.algorithms.policy import AacStackedRL2Policy
from btgym_aac.cli import main as cli_main
from btgym_aac.data import make_sine_data
from btgym_aac.deploy.manifest import read_manifest
from btgym_aac.deploy.trading import trade
from btgym_aac.env import BTgymEnv
from btgym_aac.evaluation.baselines import baseline_agents
from btgym_aac.evaluation.episodes import EpisodeRecord, make_evaluation_env, play_episode, reset_options
from btgym_aac.evaluation.metrics import bootstrap_mean_interval
from btgym_aac.evaluation.report import build_report
from btgym_aac.evaluation.tearsheet import chained_step_returns, write_evaluation_tearsheet
from btgym_aac.strategy import DevStrat_4_11
from btgym_aac.walk_forward.tearsheet import episode_returns, write_walk_forward_tearsheet

pytestmark = pytest.mark.xdist_group('deploy')  # the trade journal's test uses the reference artifact (conftest)

HOLD, BUY, SELL, CLOSE = range(4)
EPISODES, SEED = 2, 3
POLICY_COLOUR, BENCHMARK_COLOUR = '#348DC1', '#FEDD78'
"""QuantStats' colours of the first strategy column and of the benchmark."""
RUN_CONFIG_POLICY = {'class_ref': AacStackedRL2Policy, 'kwargs': {'lstm_layers': (16,)}}
SCREEN = (1200, 2000)
COSTS = {'spread': 0.0001, 'slippage': 0.0, 'slippage_fixed': 0.0, 'commission': 0.0001, 'commission_scheme': 'percent',
         'from': {'spread': 'evaluate flags', 'slippage': 'run settings', 'slippage_fixed': 'run settings',
                  'commission': 'run settings', 'commission_scheme': 'run settings'}}
"""A report's `costs` (`evaluation.report.cost_record`)."""
COST_ROWS = {name: [str(value), COSTS['from'][name]] for name, value in COSTS.items() if name != 'from'}


def chromium():
    """The path of Chromium; the test fails without it (.ci/run installs Debian's `chromium`)."""
    path = shutil.which('chromium')
    if path is None:
        pytest.fail('Chromium is not installed (no `chromium` on PATH): these tests render the tearsheets in it, e.g. '
                    "Debian's `chromium` package, as .ci/run installs", pytrace=False)
    return path


def screenshot(page, folder):
    """The uint8 RGBA pixels of headless Chromium's `SCREEN`-sized screenshot of the HTML file `page` (the flags
    keep it off the network)."""
    png = os.path.join(str(folder), 'screenshot.png')
    subprocess.run([chromium(), '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                    '--disable-background-networking', '--disable-component-update', '--disable-sync',
                    '--hide-scrollbars', '--user-data-dir={}'.format(os.path.join(str(folder), 'chromium')),
                    '--window-size={},{}'.format(*SCREEN), '--screenshot={}'.format(png), 'file://' + str(page)],
                   check=True, capture_output=True, timeout=120)
    return np.round(matplotlib.image.imread(png) * 255).astype(np.uint8)


def assert_rendered_page(pixels):
    """A screenshot that is not blank: ink over much of it, dark text in the heading's band at the top, and the
    cumulative-return chart's policy and benchmark lines in QuantStats' colours."""
    assert pixels.shape[:2] == SCREEN[::-1]
    grey = pixels[..., :3].mean(axis=-1)
    assert grey.std() > 20 and (grey < 200).mean() > 0.02
    assert (grey[:60] < 80).sum() > 500
    assert colour_pixels(pixels, POLICY_COLOUR) > 100 and colour_pixels(pixels, BENCHMARK_COLOUR) > 100


class Page(html.parser.HTMLParser):
    """A tearsheet's parts: `title`, `h1`, `h2` (list), `tables` (lists of rows of cell texts), `images` (their
    src), `external` (src or href values that are not data: URLs) and `text` (every text)."""

    def __init__(self, path):
        super().__init__()
        self.title = self.h1 = ''
        self.h2, self.tables, self.images, self.external, self.text = [], [], [], [], []
        self._in, self._cell = None, None
        with open(path, encoding='utf-8') as f:
            self.feed(f.read())

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ('src', 'href'):
            if name in attrs and not attrs[name].startswith('data:'):
                self.external.append(attrs[name])
        if tag in ('title', 'h1', 'h2'):
            self._in = tag
            if tag == 'h2':
                self.h2.append('')
        elif tag == 'table':
            self.tables.append([])
        elif tag == 'tr':
            self.tables[-1].append([])
        elif tag in ('td', 'th'):
            self._cell = ''
        elif tag == 'img':
            self.images.append(attrs['src'])

    def handle_endtag(self, tag):
        if tag in ('td', 'th'):
            self.tables[-1][-1].append(self._cell)
            self._cell = None
        elif tag == self._in:
            self._in = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell += data
        if self._in == 'h2':
            self.h2[-1] += data
        elif self._in:
            setattr(self, self._in, getattr(self, self._in) + data)

    def table_after(self, header):
        """The table whose first row starts with `header`."""
        return next(rows for rows in self.tables if rows[0][0] == header)


def assert_self_contained(page):
    """Nothing loaded from elsewhere; the two charts are PNGs in the page."""
    assert page.external == []
    assert len(page.images) == 2 and all(src.startswith('data:image/png;base64,iVBORw0KGgo') for src in page.images)


class ScriptedAgent:
    """Acts by `script`, then holds."""

    def __init__(self, script):
        self.script, self.step = script, 0

    def reset(self, observation):
        self.step = 0

    def act(self, observation):
        self.step += 1
        return self.script[self.step - 1] if self.step <= len(self.script) else HOLD

    def observe(self, reward):
        pass


@pytest.fixture(scope='module')
def evaluation(tmp_path_factory):
    """(report, records, run config) of a scripted policy and the baselines on the same two test windows, played
    without a trained run."""
    kwargs = dict(dataframe=make_sine_data(num_bars=6000, noise=2e-5, seed=1), strategy=DevStrat_4_11,
                  start_cash=2000.0, commission=0.0001, leverage=10.0, order_size=2000, drawdown_call=50, target_call=50,
                  episode_duration={'days': 0, 'hours': 8, 'minutes': 0}, target_period={'days': 1})
    run_config = {'env_config': {'class_ref': BTgymEnv, 'kwargs': kwargs}, 'policy_config': RUN_CONFIG_POLICY,
                  'trainer_config': {'class_ref': A3C, 'kwargs': {'rollout_length': 20}}, 'test_mode': False}
    env = make_evaluation_env(run_config)
    try:
        buy_and_hold, random_agent = (baseline_agents(env, SEED)[name] for name in ('buy_and_hold', 'random'))
        agents = {'policy': ScriptedAgent([BUY, HOLD, HOLD, CLOSE, SELL, HOLD, CLOSE]), 'buy_and_hold': buy_and_hold,
                  'random': random_agent}
        records = {name: [play_episode(env, agent, SEED + index, reset_options(1)) for index in range(EPISODES)]
                   for name, agent in agents.items()}
    finally:
        env.close()
    report = build_report(records, {'log_dir': str(tmp_path_factory.mktemp('run')), 'checkpoint': '/run/ckpt-300',
                                    'global_step': 300, 'data': 'run data', 'episode_type': 'test', 'seed': SEED,
                                    'costs': COSTS})
    return report, records, run_config


def test_an_evaluation_tearsheet_renders_in_chromium_naming_the_policy(evaluation, tmp_path):
    report, records, run_config = evaluation
    path = write_evaluation_tearsheet(str(tmp_path / 'tearsheet.html'), report, records, run_config)
    page = Page(path)
    assert 'AacStackedRL2Policy' in page.title and page.h1 == 'AacStackedRL2Policy: evaluation against its baselines'
    assert page.h2 == ['Cumulative return', 'Drawdown', 'Returns per episode', 'Costs', 'Trades', 'Settings']
    assert_self_contained(page)
    assert_rendered_page(screenshot(path, tmp_path))


def test_the_evaluation_page_holds_the_reports_returns_intervals_costs_and_trades(evaluation, tmp_path):
    report, records, run_config = evaluation
    page = Page(write_evaluation_tearsheet(str(tmp_path / 'tearsheet.html'), report, records, run_config))
    agents = report['agents']
    episodes = page.table_after('episode')
    assert episodes[0] == ['episode', 'seed', 'first bar', 'last bar', 'policy end', 'policy', 'buy-and-hold', 'random']
    for number, row in enumerate(episodes[1:]):
        assert row[1] == str(SEED + number) and row[2] == agents['policy']['per_episode']['first_bar_time'][number]
        assert row[5:] == ['{:+.3f} %'.format(agents[name]['per_episode']['return_pct'][number])
                           for name in ('policy', 'buy_and_hold', 'random')]
    intervals = {row[0]: row[1:] for row in page.table_after('mean return per episode')[1:]}
    excess = np.subtract(agents['policy']['per_episode']['return_pct'],
                         agents['buy_and_hold']['per_episode']['return_pct'])
    for name, values in (('policy', agents['policy']['per_episode']['return_pct']),
                         ('policy minus buy-and-hold', excess)):
        assert intervals[name] == ['{:+.3f} %'.format(value) for value in bootstrap_mean_interval(values, seed=SEED)]
    assert {row[0]: row[1:] for row in page.table_after('cost setting')[1:]} == COST_ROWS
    paid = {row[0]: row[1] for row in page.table_after('paid over all episodes')[1:]}
    assert paid['policy'] == '{:.2f}'.format(sum(fill['commission'] for record in records['policy']
                                                 for fill in record.trade_log['fills'])) != '0.00'
    trades = {row[0]: row[1:3] for row in page.table_after('over all episodes')[1:]}
    assert trades['policy'] == [str(sum(len(record.trade_log[key]) for record in records['policy']))
                                for key in ('fills', 'trades')]
    settings = dict(row for row in page.table_after('setting')[1:])
    assert settings['global_step'] == '300' and settings['episode_type'] == 'test'
    assert 'The policy placed no order' not in ''.join(page.text)


def test_a_policy_that_never_trades_is_named_in_a_warning(evaluation, tmp_path):
    report, records, run_config = evaluation
    idle = dict(records, policy=[dataclasses.replace(record, trade_log=dict(record.trade_log, fills=[], trades=[]))
                                 for record in records['policy']])
    page = Page(write_evaluation_tearsheet(str(tmp_path / 'tearsheet.html'), report, idle, run_config))
    assert 'The policy placed no order in any episode: its return is that of holding the start cash.' in page.text


def record(start, values, step=timedelta(minutes=10)):
    """An EpisodeRecord of broker values at steps `step` apart from `start` (only what the chaining reads)."""
    times = [start + index * step for index in range(len(values))]
    return EpisodeRecord(seed=0, bar_times=times, bar_values=list(values), step_times=times, step_values=list(values),
                         actions=[HOLD] * (len(values) - 1), rewards=[0.0] * (len(values) - 1), probabilities=[],
                         trade_log={'fills': [], 'trades': [], 'end_reason': ''})


def test_episodes_are_chained_in_time_order_each_from_its_start_cash():
    """Episodes given out of time order are chained in time order; each one's reset has return 0, so a curve
    compounds the episode returns; an agent whose episode ends earlier stays flat; an episode overlapping the one
    before it is moved after it, and named."""
    day = datetime(2020, 1, 6)
    records = {
        'policy': [record(day + timedelta(days=1), [100, 110, 99]), record(day, [100, 90]),
                   record(day + timedelta(days=1, minutes=10), [100, 105])],
        'buy_and_hold': [record(day + timedelta(days=1), [100, 101, 102]), record(day, [100, 100, 100]),
                         record(day + timedelta(days=1, minutes=10), [100, 95])],
    }
    returns, moved = chained_step_returns(records)
    assert returns.index.is_monotonic_increasing and returns.index.is_unique
    np.testing.assert_allclose((1 + returns).prod(), [0.9 * 0.99 * 1.05, 1.0 * 1.02 * 0.95])
    np.testing.assert_allclose(returns['policy'][:3], [0.0, -0.1, 0.0])  # flat after its episode ended
    assert returns.index[3] == day + timedelta(days=1) and returns['policy'].iloc[3] == 0.0
    assert returns.index[-2] == day + timedelta(days=1, minutes=30)  # the third episode, moved after the second
    assert moved == ['episode 2 (from 2020-01-07 00:10:00) overlaps the one before it in time: drawn 0:20:00 later']


def walk_forward_report():
    """A walk-forward report of two folds of two test episodes (what `walk_forward` returns, less its plots)."""
    start = datetime(2020, 1, 6)
    folds = []
    for number, (policy, hold) in enumerate((([0.2, -0.1], [0.1, 0.05]), ([0.3, 0.0], [-0.2, 0.1]))):
        test_start = start + timedelta(days=2 * (number + 1))
        firsts = [test_start + timedelta(hours=9 * episode) for episode in range(2)]
        lasts = [time + timedelta(hours=8) for time in firsts]
        times = {'first_bar_time': [time.isoformat() for time in firsts],
                 'last_bar_time': [time.isoformat() for time in lasts]}
        mean = {'orders': 2.0, 'trades': 1.0, 'win_rate': 0.5, 'commission': 0.4, 'spread_cost': 0.1,
                'slippage_cost': 0.0}
        folds.append({
            'fold': number, 'global_step': 1000 * (number + 1), 'episodes': 2, 'checkpoint': 'ckpt',
            'train_window': {'first_bar': start.isoformat(), 'last_bar': test_start.isoformat(), 'bars': 100},
            'test_window': {'first_bar': test_start.isoformat(),
                            'last_bar': (test_start + timedelta(days=1)).isoformat(), 'bars': 100},
            'costs': COSTS,
            'agents': {name: dict({key: list(value) for key, value in times.items()}, return_pct=values,
                                  mean=dict(mean, return_pct=float(np.mean(values))))
                       for name, values in (('policy', policy), ('buy_and_hold', hold), ('random', [-0.1, -0.1]))}})
    ended = folds[1]['agents']['random']['last_bar_time']  # the random policy's first episode of fold 1 ends early
    ended[0] = (datetime.fromisoformat(ended[0]) - timedelta(hours=1)).isoformat()
    from btgym_aac.walk_forward.summary import summarize

    return {'settings': {'data': [['bars.csv', 1, 2.0]], 'folds': 2, 'train_steps': 1000, 'test_episodes': 2,
                         'continue_training': False, 'seed': 0, 'configs': '0123456789abcdef'},
            'folds': folds, 'costs': folds[-1]['costs'], 'summary': summarize(folds, 0)}


def test_a_walk_forward_tearsheet_chains_the_test_episodes_and_renders_in_chromium(tmp_path):
    from btgym_aac.distributed.run_config import default_configs

    report = walk_forward_report()
    returns = episode_returns(report['folds'])
    ends = {name: [pd.Timestamp(time) for fold in report['folds'] for time in fold['agents'][name]['last_bar_time']]
            for name in ('policy', 'random')}
    assert list(returns.index) == [pd.Timestamp(report['folds'][0]['test_window']['first_bar'])] + sorted(
        set(ends['policy'] + ends['random']))
    np.testing.assert_allclose(returns.loc[ends['policy'], 'policy'], [0.002, -0.001, 0.003, 0.0])
    np.testing.assert_allclose((1 + returns).prod(), [1.002 * 0.999 * 1.003, 1.001 * 1.0005 * 0.998 * 1.001,
                                                      0.999 ** 4])
    path = write_walk_forward_tearsheet(str(tmp_path / 'tearsheet.html'), report, default_configs('a3c'))
    page = Page(path)
    assert page.h1 == 'AacDensePolicy: walk-forward, out of sample'
    assert 'Walk-forward of 2 folds, 4 test episodes from 2020-01-08T00:00:00 to 2020-01-11T00:00:00' in ''.join(
        page.text)
    assert_self_contained(page)
    assert [row[:2] for row in page.table_after('fold')[1:]] == [['0', '0'], ['0', '1'], ['1', '0'], ['1', '1']]
    assert all(line in page.text for line in report['summary']['lines'])
    assert {row[0]: row[1:] for row in page.table_after('cost setting')[1:]} == COST_ROWS
    assert_rendered_page(screenshot(path, tmp_path))


def test_a_fold_written_before_costs_were_recorded_is_named(tmp_path):
    from btgym_aac.distributed.run_config import default_configs

    report = walk_forward_report()
    del report['folds'][0]['costs']
    page = Page(write_walk_forward_tearsheet(str(tmp_path / 'tearsheet.html'), report, default_configs('a3c')))
    assert ['Fold 0:', 'The costs charged are not recorded (a fold written by an earlier version).', 'Fold 1:'] == [
        line for line in page.text if line.startswith(('Fold ', 'The costs'))]
    assert {row[0]: row[1:] for row in page.table_after('cost setting')[1:]} == COST_ROWS


def test_quantstats_leaves_the_plots_of_the_process_in_their_style(tmp_path):
    """Importing QuantStats sets seaborn's style for the whole process (other colours, a grid, fonts) and seaborn's
    colours for matplotlib's one-letter colour codes; the tearsheet's charts have the style, the process's other
    plots (the evaluation's, the env's renderings) keep matplotlib's settings and colours."""
    script = '''
import matplotlib
from matplotlib.colors import to_rgba
before = dict(matplotlib.rcParams)
codes = [to_rgba(code) for code in 'bgrcmyk']
from btgym_aac.evaluation.tearsheet import _quantstats
quantstats, style = _quantstats()
assert 'quantstats' in __import__('sys').modules and 'seaborn' in __import__('sys').modules
assert dict(matplotlib.rcParams) == before, sorted(key for key in before if matplotlib.rcParams[key] != before[key])
assert [to_rgba(code) for code in 'bgrcmyk'] == codes == [
    (0, 0, 1, 1), (0, 0.5, 0, 1), (1, 0, 0, 1), (0, 0.75, 0.75, 1), (0.75, 0, 0.75, 1), (0.75, 0.75, 0, 1),
    (0, 0, 0, 1)]
assert style['axes.grid'] is True and style['axes.prop_cycle'] != before['axes.prop_cycle']
'''
    subprocess.run([sys.executable, '-c', script], check=True, timeout=120)


def test_walk_forward_writes_its_tearsheet_unless_told_not_to(tmp_path, monkeypatch, capsys):
    import btgym_aac.walk_forward

    data = tmp_path / 'bars.csv'
    data.write_text('')

    def walked(*args, out, **kwargs):
        os.makedirs(out)
        return walk_forward_report()

    monkeypatch.setattr(btgym_aac.walk_forward, 'walk_forward', walked)
    for flags, written in (([], True), (['--no-tearsheet'], False)):
        out = tmp_path / 'out{}'.format(len(flags))
        assert cli_main(['walk-forward', '--data', str(data), '--folds', '2', '--out', str(out)] + flags) == 0
        assert (out / 'tearsheet.html').is_file() == written
        assert ('tearsheet: {}'.format(out / 'tearsheet.html') in capsys.readouterr().out) == written


def test_evaluate_writes_its_tearsheet_beside_the_report(reference_artifact, tmp_path, capsys):
    log_dir, _ = reference_artifact
    out = tmp_path / 'evaluation'
    assert cli_main(['evaluate', log_dir, '--episodes', '1', '--no-episode-plots', '--out', str(out)]) == 0
    assert (out / 'report.json').is_file() and (out / 'tearsheet.html').is_file()
    assert 'tearsheet: {}'.format(out / 'tearsheet.html') in capsys.readouterr().out
    page = Page(str(out / 'tearsheet.html'))
    assert page.h1 == 'AacStackedRL2Policy: evaluation against its baselines'
    with open(out / 'report.json') as f:
        report = json.load(f)
    assert page.table_after('episode')[1][5] == '{:+.3f} %'.format(report['agents']['policy']['per_episode'][
        'return_pct'][0])


def test_the_tearsheet_command_pages_a_trade_journal(reference_artifact, tmp_path, capsys):
    _, artifact = reference_artifact
    source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'examples', 'data',
                          'sine_replay.csv')
    with open(source) as f:
        lines = f.readlines()[:500]
    replay = tmp_path / 'bars.csv'
    replay.write_text(''.join(lines))
    run = tmp_path / 'paper'
    result = trade(artifact, 'replay:{}:max'.format(replay), str(run))
    assert cli_main(['tearsheet', artifact, str(run)]) == 0
    assert capsys.readouterr().out == 'tearsheet: {}\n'.format(run / 'tearsheet.html')
    page = Page(str(run / 'tearsheet.html'))
    assert page.h1 == 'AacStackedRL2Policy: paper trading'
    assert_self_contained(page)
    with open(run / 'journal.jsonl') as f:
        lines = [json.loads(line) for line in f]
    journal, end = lines[:-1], lines[-1]
    fills = [fill for entry in lines for fill in entry['fills']]
    assert len(fills) == len(result['fills']) > 0 and result['decisions'] == len(journal)
    assert '{} fills; at the end (feed ended (default_asset), exit status 0): positions default_asset {:g}, cash {:.2f}, value ' \
        '{:.2f}.'.format(len(fills), end['positions']['default_asset'], end['cash'], end['broker_value']) in page.text
    assert [row[0] for row in page.table_after('time')[1:]] == [fill['time'] for fill in fills]
    days = page.table_after('day')
    assert days[1][1:] == [str(len(journal)), '{:.2f}'.format(journal[0]['broker_value']),
                           '{:.2f}'.format(journal[-1]['broker_value']),
                           '{:+.3f} %'.format(100 * (journal[-1]['broker_value'] / journal[0]['broker_value'] - 1))]
    assert_rendered_page(screenshot(str(run / 'tearsheet.html'), tmp_path))
    shadow = tmp_path / 'shadow'
    trade(artifact, 'replay:{}:max'.format(replay), str(shadow), mode='shadow')
    assert cli_main(['tearsheet', artifact, str(shadow), '--out', str(tmp_path / 'shadow.html')]) == 0
    page = Page(str(tmp_path / 'shadow.html'))
    assert page.h1 == 'AacStackedRL2Policy: shadow trading'
    assert "Shadow mode: no order was placed; the journal holds each decision's intended order." in page.text


def test_the_tearsheet_command_refuses_another_artifact_and_a_folder_without_a_journal(reference_artifact, tmp_path,
                                                                                      capsys):
    _, artifact = reference_artifact
    run = tmp_path / 'paper'
    run.mkdir()
    assert cli_main(['tearsheet', artifact, str(run)]) == 2
    assert 'holds no journal.jsonl' in capsys.readouterr().err
    (run / 'journal.jsonl').write_text(json.dumps({'decision': 0, 'bar_time': '2020-01-01T00:00:00', 'mode': 'paper',
                                                   'broker_value': 2000.0, 'fills': []}) + '\n')
    (run / 'state.json').write_text(json.dumps({'artifact_files': {'policy.onnx': 'another'}}))
    assert cli_main(['tearsheet', artifact, str(run)]) == 2
    assert 'holds a trade run of another artifact than {}'.format(artifact) in capsys.readouterr().err
    (run / 'state.json').write_text(json.dumps({'artifact_files': read_manifest(artifact)['files']}))
    assert cli_main(['tearsheet', artifact, str(run)]) == 2
    assert 'holds no bars.jsonl' in capsys.readouterr().err
    assert cli_main(['tearsheet', str(tmp_path), str(run)]) == 2
    assert 'holds no manifest.json' in capsys.readouterr().err
