"""Walk-forward: blocks, evaluation windows, the bootstrap verdict, and whole runs through the API and the CLI."""
import json
import os
import signal
import subprocess
import sys
import time

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.cli import main as cli_main
from btgym_aac.data import BTgymDataset, make_random_walk_data, write_histdata_csv
from btgym_aac.data.markets import make_mean_reversion_data, write_market_csv
from btgym_aac.data.sampling import missing_time
from btgym_aac.evaluation.episodes import tile_windows
from btgym_aac.walk_forward import walk_forward
from btgym_aac.walk_forward.blocks import block_windows, parse_embargo, split_blocks, train_frames
from btgym_aac.walk_forward.summary import (bootstrap_mean_interval, fraction_of_oracle, oracle_words, summarize,
                                            verdict)
from small_runs import CONFIG_FILE, SIX_HOURS, small_configs, three_days_csv

class WindowRecordingEnv(BTgymEnv):
    """BTgymEnv appending (data file, first and last bar of the episode window) of every reset to
    `<record_dir>/<pid>.jsonl`."""

    def __init__(self, record_dir, **kwargs):
        super().__init__(**kwargs)
        self.record_path = os.path.join(record_dir, '{}.jsonl'.format(os.getpid()))

    def reset(self, *args, **kwargs):
        result = super().reset(*args, **kwargs)
        window = self._trial.data.index
        with open(self.record_path, 'a') as f:
            f.write(json.dumps([os.path.basename(os.path.dirname(self.dataset.filename)),
                                os.path.basename(self.dataset.filename), str(window[0]), str(window[-1])]) + '\n')
        return result


def recorded_windows(record_dir):
    return [json.loads(line) for path in record_dir.iterdir() for line in path.read_text().splitlines()]


# ---------------------------------------------------------------------------------------------------- blocks

def test_blocks_have_equal_durations_and_partition_the_bars():
    frame = make_random_walk_data(num_bars=4000, seed=0)
    blocks = split_blocks(frame, 3)
    assert [block.number for block in blocks] == [0, 1, 2, 3]
    durations = {block.stop - block.start for block in blocks}
    assert max(durations) - min(durations) <= pd.Timedelta(seconds=1)
    assert blocks[0].start == frame.index[0] and blocks[-1].stop == frame.index[-1] + pd.Timedelta(minutes=1)
    pd.testing.assert_frame_equal(pd.concat([block.frame for block in blocks]), frame)
    for block in blocks:
        assert (block.frame.index >= block.start).all() and (block.frame.index < block.stop).all()
    assert [len(block.frame) for block in blocks] == [1000, 1000, 1000, 1000]


@pytest.mark.parametrize('folds', [0, -1, 1.5, True])
def test_folds_must_be_a_whole_number_of_at_least_one(folds):
    with pytest.raises(ValueError, match='folds'):
        split_blocks(make_random_walk_data(num_bars=500, seed=0), folds)


def test_a_gap_longer_than_a_block_is_refused_naming_it():
    frame = make_random_walk_data(num_bars=3000, seed=0)
    gapped = pd.concat([frame.iloc[:1000], frame.iloc[1300:]])  # no bars for 301 minutes; 3000 minutes in all
    with pytest.raises(ValueError, match=r'no bars from 2017-01-01 16:39:00 to 2017-01-01 21:40:00 .* --folds 9'):
        split_blocks(gapped, 9)  # blocks of 300 minutes
    assert len(split_blocks(gapped, 2)) == 3


def test_the_embargo_leaves_out_the_training_bars_just_before_each_test_block():
    blocks = split_blocks(make_random_walk_data(num_bars=3 * 1440, seed=1), 2)
    for number in (0, 1):
        plain = pd.concat(train_frames(blocks, number))
        cut = pd.concat(train_frames(blocks, number, pd.Timedelta(hours=2)))
        assert plain.index[-1] == blocks[number + 1].start - pd.Timedelta(minutes=1)
        assert cut.index[-1] == blocks[number + 1].start - pd.Timedelta(hours=2, minutes=1)
        assert len(plain) - len(cut) == 120 and cut.equals(plain.iloc[:len(cut)])
    assert parse_embargo(None, blocks) == pd.Timedelta(0) and parse_embargo('90min', blocks) == pd.Timedelta(90, 'min')
    for bad, message in (('soon', 'is not a duration'), ('-1h', 'must be >= 0'), ('1D', 'shorter than a block')):
        with pytest.raises(ValueError, match=message):
            parse_embargo(bad, blocks)


def test_tiles_are_consecutive_valid_windows_that_skip_gaps():
    frame = make_random_walk_data(num_bars=2000, seed=0)
    gapped = pd.concat([frame.iloc[:700], frame.iloc[900:]])  # a 200-minute hole
    dataset = BTgymDataset(dataframe=gapped, episode_duration={'hours': 5}, time_gap={'minutes': 30})
    dataset.reset()
    tiles = tile_windows(dataset)
    index = dataset.data.index
    assert tiles and all(stop - first == 300 for first, stop in tiles)
    assert all(a[1] <= b[0] for a, b in zip(tiles, tiles[1:]))
    for first, stop in tiles:
        assert missing_time(index, first, stop, 300, pd.Timedelta(minutes=1)) <= pd.Timedelta(minutes=30)
    assert [first for first, _ in tiles][:3] == [0, 300, 700]  # the window over the hole is skipped
    spread = tile_windows(dataset, max_windows=3)
    assert spread == [tiles[0], tiles[len(tiles) // 2], tiles[-1]] or len(tiles) == 5 and spread == \
        [tiles[0], tiles[2], tiles[4]]


def test_a_block_without_an_episode_window_is_refused_naming_the_block():
    blocks = split_blocks(make_random_walk_data(num_bars=1000, seed=0), 3)
    with pytest.raises(ValueError, match=r"block 1 .*250 bars\) holds no episode window of episode_duration "
                                         r"\{'days': 0, 'hours': 6"):
        block_windows(blocks[1], {'episode_duration': SIX_HOURS})


# ---------------------------------------------------------------------------------------------------- summary

def test_bootstrap_interval_matches_a_plain_resampling_loop():
    values = np.array([0.3, -0.1, 0.25, 0.05, -0.4, 0.6, 0.1])
    mean, low, high = bootstrap_mean_interval(values, resamples=2000, seed=7)
    rng = np.random.default_rng(7)
    draws = rng.integers(0, len(values), size=(2000, len(values)))
    means = [np.mean([values[i] for i in row]) for row in draws]
    assert mean == pytest.approx(values.mean())
    assert (low, high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert low < mean < high


def test_verdict_says_plainly_where_the_interval_lies():
    assert 'includes zero' in verdict(-0.1, 0.2)
    assert 'did better' in verdict(0.05, 0.2)
    assert 'did worse' in verdict(-0.3, -0.01)


def test_summary_of_hand_made_folds():
    def fold(number, policy, hold):
        agents = {'policy': {'return_pct': policy}, 'buy_and_hold': {'return_pct': hold},
                  'random': {'return_pct': [0.0] * len(policy)}}
        return {'fold': number, 'agents': agents}

    summary = summarize([fold(0, [1.0, 2.0], [0.5, 0.5]), fold(1, [1.5], [0.0])], seed=0)
    assert summary['episodes'] == 3
    assert summary['mean_return_pct'] == pytest.approx({'policy': 1.5, 'buy_and_hold': 1 / 3, 'random': 0.0})
    excess = summary['excess_return_pct']
    assert excess['mean'] == pytest.approx(np.mean([0.5, 1.5, 1.5]))
    assert excess['ci_low'] > 0 and excess['includes_zero'] is False
    assert summary['lines'][0] == 'out of sample: 3 test episodes over 2 folds'
    assert 'lies above zero' in summary['lines'][-1]
    assert 'fraction_of_oracle' not in summary


def test_fraction_of_the_oracle_matches_a_plain_paired_resampling_loop():
    policy, oracle = [0.2, -0.1, 0.4, 0.0, 0.3], [0.5, 0.4, 0.6, 0.3, 0.5]
    result = fraction_of_oracle(policy, oracle, resamples=2000, seed=3)
    rng = np.random.default_rng(3)
    draws = rng.integers(0, len(policy), size=(2000, len(policy)))
    ratios = [np.mean([policy[i] for i in row]) / np.mean([oracle[i] for i in row]) for row in draws]
    assert result['fraction'] == pytest.approx(np.mean(policy) / np.mean(oracle))
    assert (result['ci_low'], result['ci_high']) == pytest.approx(tuple(np.percentile(ratios, [2.5, 97.5])))
    assert fraction_of_oracle([0.1, 0.2], [-0.1, 0.05]) == {'fraction': None, 'ci_low': None, 'ci_high': None}
    assert 'did not gain' in oracle_words(fraction_of_oracle([0.1], [0.0]))
    assert oracle_words(result).startswith('policy = 34.8 % of the oracle, 95 % bootstrap interval [')


# ----------------------------------------------------------------------------------------------- whole runs

def _png_is_drawn(path):
    image = matplotlib.image.imread(path)
    return image.ndim == 3 and float(image[..., :3].std()) > 0.01


def test_walk_forward_of_two_folds_writes_a_complete_report_without_look_ahead(tmp_path):
    # a known-edge market: its oracle plays the test windows beside the baselines
    data = write_market_csv(make_mean_reversion_data(num_bars=3 * 1440, start='2017-01-01 00:00', seed=1),
                            str(tmp_path / 'bars.csv'))
    out = tmp_path / 'wf'
    records = tmp_path / 'windows'
    records.mkdir()
    configs = small_configs()
    configs['env_config'] = dict(configs['env_config'], class_ref=WindowRecordingEnv)
    configs['env_config']['kwargs'] = dict(configs['env_config']['kwargs'], record_dir=str(records))
    report = walk_forward(configs, data, folds=2, train_steps=200, test_episodes=3, out=str(out), seed=0,
                          embargo='2h')
    assert json.loads((out / 'walk_forward.json').read_text()) == json.loads(json.dumps(report))
    assert report['settings']['embargo'] == '0 days 02:00:00'
    blocks = split_blocks(make_random_walk_data(num_bars=3 * 1440, seed=1), 2)
    assert [fold['fold'] for fold in report['folds']] == [0, 1]
    for fold in report['folds']:
        number = fold['fold']
        test_block = blocks[number + 1]
        train = pd.read_csv(out / 'fold_{}'.format(number) / 'train.csv', sep=';', header=None)
        last_train_bar = pd.Timestamp(pd.to_datetime(train[0], format='%Y%m%d %H%M%S').max())
        assert last_train_bar < test_block.start - pd.Timedelta(hours=2)  # the embargo before the test block
        assert last_train_bar >= test_block.start - pd.Timedelta(hours=2, minutes=1)  # and no more left out
        assert pd.Timestamp(fold['train_window']['last_bar']) == last_train_bar
        assert fold['global_step'] >= 200 and fold['episodes'] == 3
        assert fold['costs'] == {'spread': 0.0, 'slippage': 0.0, 'slippage_fixed': 0.0, 'commission': 0.0001,
                                 'commission_scheme': 'percent', 'from': dict.fromkeys(
                                     ['spread', 'slippage', 'slippage_fixed', 'commission', 'commission_scheme'],
                                     'run settings')}
        assert list(fold['agents']) == ['policy', 'buy_and_hold', 'random', 'oracle']
        for agent in ('policy', 'buy_and_hold', 'random', 'oracle'):
            record = fold['agents'][agent]
            assert len(record['return_pct']) == 3
            for first, last in zip(record['first_bar_time'], record['last_bar_time']):
                assert test_block.start <= pd.Timestamp(first) <= pd.Timestamp(last) < test_block.stop
        run_config = (out / 'fold_{}'.format(number) / 'evaluation' / 'report.json')
        assert json.loads(run_config.read_text())['episode_type'] == 'test'
    windows = recorded_windows(records)
    for number in (0, 1):
        block = blocks[number + 1]
        trained = [w for w in windows if w[:2] == ['fold_{}'.format(number), 'train.csv']]
        tested = [w for w in windows if w[:2] == ['fold_{}'.format(number), 'test.csv']]
        assert len(trained) >= 5 and len(tested) >= 12  # every training episode; 3 windows x 4 agents
        assert all(pd.Timestamp(last) < block.start - pd.Timedelta(hours=2) for _, _, _, last in trained)
        assert all(block.start <= pd.Timestamp(first) <= pd.Timestamp(last) < block.stop
                   for _, _, first, last in tested)
    assert report['costs'] == report['folds'][-1]['costs']
    summary = report['summary']
    assert summary['episodes'] == 6 and len(summary['lines']) == 5
    assert ('includes zero' in summary['lines'][3]) == summary['excess_return_pct']['includes_zero']
    returns = {name: [value for fold in report['folds'] for value in fold['agents'][name]['return_pct']]
               for name in ('policy', 'oracle')}
    assert summary['fraction_of_oracle'] == fraction_of_oracle(returns['policy'], returns['oracle'], seed=0)
    assert summary['lines'][-1] == oracle_words(summary['fraction_of_oracle'])
    assert sorted(report['plots']) == ['equity_out_of_sample.png', 'fold_metrics.png']
    assert all(_png_is_drawn(out / name) for name in report['plots'])

    again = walk_forward(configs, data, folds=2, train_steps=200, test_episodes=3, out=str(out), seed=0,
                         embargo='120min')
    assert again['folds'] == report['folds']  # finished folds are read back, not redone
    with pytest.raises(ValueError, match=r"other settings \(folds 2, not 3\)"):
        walk_forward(configs, data, folds=3, train_steps=200, test_episodes=3, out=str(out), embargo='2h')
    with pytest.raises(ValueError, match=r"other settings \(embargo '0 days 02:00:00', not None\)"):
        walk_forward(configs, data, folds=2, train_steps=200, test_episodes=3, out=str(out))
    with pytest.raises(ValueError, match=r"other settings \(configs '\w{16}', not '\w{16}'\)"):
        walk_forward(small_configs(), data, folds=2, train_steps=200, test_episodes=3, out=str(out), embargo='2h')


@pytest.mark.parametrize('arguments, message', [
    (['--folds', '0'], 'folds must be'),
    (['--folds', '20'], 'block 0 (2017-01-01 00:00:00 to 2017-01-01 03:25:42.857142857, 206 bars) is too short'),
    (['--folds', '2', '--test-episodes', '0'], 'test_episodes must be'),
])
def test_bad_walk_forward_settings_exit_2_and_write_nothing(tmp_path, capsys, arguments, message):
    config = tmp_path / 'config.py'
    config.write_text(CONFIG_FILE)
    out = tmp_path / 'wf'
    code = cli_main(['walk-forward', str(config), '--data', three_days_csv(tmp_path), '--out', str(out)] + arguments)
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_data_with_a_gap_longer_than_a_block_exit_2_naming_the_gap(tmp_path, capsys):
    config = tmp_path / 'config.py'
    config.write_text(CONFIG_FILE)
    frame = make_random_walk_data(num_bars=3 * 1440, seed=1)
    data = write_histdata_csv(pd.concat([frame.iloc[:1440], frame.iloc[2 * 1440 + 60:]]), str(tmp_path / 'gap.csv'))
    out = tmp_path / 'wf'
    assert cli_main(['walk-forward', str(config), '--data', data, '--folds', '2', '--out', str(out)]) == 2
    assert 'the data have no bars from 2017-01-01 23:59:00 to 2017-01-03 01:00:00' in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_a_walk_forward_stopped_mid_fold_continues_at_that_fold(tmp_path):
    config = tmp_path / 'config.py'
    config.write_text(CONFIG_FILE)
    out = tmp_path / 'wf'
    command = [sys.executable, '-m', 'btgym_aac.cli', 'walk-forward', str(config), '--data', three_days_csv(tmp_path),
               '--folds', '2', '--train-steps', '3000', '--test-episodes', '2', '--out', str(out)]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    checkpoint_dir = out / 'fold_1' / 'run' / 'current_train_checkpoint'
    deadline = time.time() + 400
    while time.time() < deadline and not (checkpoint_dir / 'checkpoint').exists():
        time.sleep(0.5)
    assert (checkpoint_dir / 'checkpoint').exists(), 'fold 1 never saved a checkpoint'
    fold_0 = (out / 'fold_0' / 'fold.json').read_text()
    first.send_signal(signal.SIGTERM)
    output = first.communicate(timeout=120)[0]
    assert first.returncode == 143, output
    assert 'run the same command again to continue it' in output
    assert not (out / 'walk_forward.json').exists()

    second = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    report = json.loads((out / 'walk_forward.json').read_text())
    assert (out / 'fold_0' / 'fold.json').read_text() == fold_0  # not redone
    assert [fold['fold'] for fold in report['folds']] == [0, 1]
    assert report['folds'][1]['global_step'] >= 3000
    blocks = split_blocks(make_random_walk_data(num_bars=3 * 1440, seed=1), 2)
    for fold in report['folds']:
        assert fold['test_window'] == blocks[fold['fold'] + 1].describe()
    assert os.path.exists(out / report['plots'][0])
