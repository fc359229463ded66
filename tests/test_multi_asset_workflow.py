"""Several assets through the workflow after `train --assets`: walk-forward and sweep data cut at the same times for
every asset, one file per asset and fold, the folds' configs, the refusals; and (slow) a run trained on one period
and evaluated, walked forward and swept on another from the command line."""
import json
import os

import numpy as np
import pandas as pd
import pytest
from saved_runs import reference_configs, write_saved_run

from btgym_aac.cli import main as cli_main
from btgym_aac.data import make_correlated_walks, write_histdata_csv
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.distributed.run_config import multi_asset_env_config
from btgym_aac.evaluation import evaluate
from btgym_aac.evaluation.episodes import tile_windows
from btgym_aac.sweep.settings import changed_settings, file_checksums
from btgym_aac.walk_forward.blocks import (asset_frames, block_windows, fold_env_kwargs, read_data, split_blocks,
                                           train_frames, write_block_file)

ASSETS = ('A', 'B')
SIX_HOURS = {'days': 0, 'hours': 6, 'minutes': 0}


def asset_csvs(folder, days, seed, start='2017-01-02', drop=None):
    """{asset: CSV} of two correlated walks of `days` days of minute bars; `drop`: bar positions B lacks."""
    frames = make_correlated_walks(num_bars=days * 1440, names=ASSETS, correlation=0.5, seed=seed, start=start)
    if drop is not None:
        frames['B'] = frames['B'].drop(frames['B'].index[drop])
    os.makedirs(folder, exist_ok=True)
    return {name: write_histdata_csv(frame, os.path.join(str(folder), '{}.csv'.format(name)))
            for name, frame in frames.items()}


def env_kwargs(files, portfolio=False):
    return multi_asset_env_config(files, portfolio=portfolio, episode_duration=SIX_HOURS,
                                  time_gap={'hours': 1})['kwargs']


def test_the_assets_are_read_aligned_on_their_common_bar_times(tmp_path):
    files = asset_csvs(tmp_path, days=2, seed=0, drop=[10, 11, 500])
    frame = read_data(env_kwargs(files), files)
    assert list(frame.columns.unique(0)) == list(ASSETS)
    assert len(frame) == 2 * 1440 - 3 and not frame.isna().any().any()
    lines = asset_frames(frame)
    pd.testing.assert_frame_equal(lines['B'], read_ohlcv(files['B'])[['open', 'high', 'low', 'close', 'volume']],
                                  check_freq=False, check_names=False)
    with pytest.raises(ValueError, match=r"must name the env's assets in its order: A B \(given: B A\)"):
        read_data(env_kwargs(files), {'B': files['B'], 'A': files['A']})
    with pytest.raises(ValueError, match='needs a multi-asset env'):
        read_data({}, files)


def test_every_asset_is_cut_at_the_same_times_into_files_of_its_own(tmp_path):
    files = asset_csvs(tmp_path / 'data', days=3, seed=1)
    frame = read_data(env_kwargs(files), files)
    blocks = split_blocks(frame, 2)
    assert sum(len(block.frame) for block in blocks) == len(frame)
    (tmp_path / 'fold').mkdir()
    written = write_block_file(train_frames(blocks, 1, pd.Timedelta('1h')), str(tmp_path / 'fold' / 'train.csv'))
    assert set(written) == set(ASSETS) and written['A'].endswith('train_A.csv')
    times = {asset: read_ohlcv(path).index for asset, path in written.items()}
    assert times['A'].equals(times['B']) and times['A'][-1] < blocks[2].start - pd.Timedelta('1h')
    for asset in ASSETS:
        np.testing.assert_array_equal(read_ohlcv(written[asset])['close'].to_numpy(),
                                      frame[asset]['close'][times[asset]].to_numpy())


def test_the_test_windows_of_several_assets_are_those_of_their_dataset(tmp_path):
    files = asset_csvs(tmp_path, days=3, seed=2)
    kwargs = env_kwargs(files)
    block = split_blocks(read_data(kwargs, files), 2)[1]
    windows = block_windows(block, kwargs, max_windows=3)
    dataset = kwargs['dataset'].with_data(asset_frames(block.frame))
    dataset.reset()
    assert windows == tile_windows(dataset, 3) and len(windows) == 3


def test_a_folds_config_reads_its_files_per_asset_unloaded(tmp_path):
    files = asset_csvs(tmp_path, days=2, seed=3)
    kwargs = env_kwargs(files)
    folds = {'A': str(tmp_path / 'train_A.csv'), 'B': str(tmp_path / 'train_B.csv')}
    fold = fold_env_kwargs(kwargs, folds)
    assert fold['dataset'].filename == folds and fold['dataset'] is not kwargs['dataset']
    assert all(stream.data is None for stream in fold['dataset'].data.values())
    assert kwargs['dataset'].filename == files and fold['asset_names'] == list(ASSETS)


def test_a_sweep_continued_on_other_asset_files_names_them(tmp_path):
    files = asset_csvs(tmp_path / 'one', days=1, seed=4)
    others = asset_csvs(tmp_path / 'two', days=1, seed=5)
    then = {'data': file_checksums({name: [path] for name, path in files.items()})}
    now = {'data': file_checksums({'A': [files['A']], 'B': [others['B']]})}
    [(setting, before, after)] = changed_settings(then, now)
    assert setting == '--assets B' and before != after and after.startswith('B.csv (SHA-256 ')
    [row] = changed_settings({'data': file_checksums([files['A']])}, now)
    assert row == ('--data / --assets', 'one asset', 'assets A B')


def test_assets_are_refused_for_a_single_asset_run_and_with_data(tmp_path, capsys):
    configs = reference_configs()
    log_dir = write_saved_run(tmp_path / 'run', configs['env_config'], configs['policy_config'],
                              configs['trainer_config'], step=40)
    files = asset_csvs(tmp_path / 'data', days=1, seed=6)
    with pytest.raises(ValueError, match='this run trades one asset: give its files with --data, not --assets'):
        evaluate(log_dir, data=files, episodes=1, out=str(tmp_path / 'out'))
    entries = ['{}={}'.format(name, path) for name, path in files.items()]
    for command in (['walk-forward', '--folds', '2'], ['sweep', '--trials', '1']):
        with pytest.raises(SystemExit) as exit_status:
            cli_main(command + ['--assets'] + entries + ['--data', files['A'], '--out', str(tmp_path / 'x')])
        assert exit_status.value.code == 2
        assert 'not allowed with argument' in capsys.readouterr().err
    assert not (tmp_path / 'x').exists()


# ---------------------------------------------------------------------------------- from the command line (slow)

SMALL_RUN = '''
from btgym_aac.distributed.run_config import default_configs

_configs = default_configs()
policy_config = {'class_ref': _configs['policy_config']['class_ref'],
                 'kwargs': dict(_configs['policy_config']['kwargs'], dense_layers=(16, 16), lstm_layers=(16,))}
cluster_config = {'num_workers': 1, 'num_ps': 1, 'num_envs': 1}
launcher_config = {'save_secs': 5, 'show_progress': False}
'''


@pytest.mark.slow
@pytest.mark.parametrize('portfolio', [False, True], ids=['multi_discrete', 'portfolio'])
def test_a_multi_asset_run_is_tested_walked_forward_and_swept_on_another_period(tmp_path, capsys, portfolio):
    """Trained on 4 days from 2017-01-02; evaluated on 4 others, walked forward over 12 (2 folds) and swept over
    them (2 trials, 2 folds, a quarter in the lockbox) from 2017-02-06, all from the command line."""
    config = tmp_path / 'small.py'
    config.write_text(SMALL_RUN)
    flag = ['--portfolio'] if portfolio else []

    def entries(files):
        return ['--assets'] + ['{}={}'.format(name, path) for name, path in files.items()]

    trained = asset_csvs(tmp_path / 'train', days=4, seed=10)
    assert cli_main(['train', str(config), '--max-steps', '200', '--log-dir', str(tmp_path / 'run')]
                    + entries(trained) + flag) == 0
    held_out = asset_csvs(tmp_path / 'held_out', days=4, seed=11, start='2017-01-16')
    assert cli_main(['evaluate', str(tmp_path / 'run'), '--episodes', '1', '--out', str(tmp_path / 'evaluation'),
                     '--no-episode-plots', '--no-tearsheet'] + entries(held_out)) == 0
    report = json.loads((tmp_path / 'evaluation' / 'report.json').read_text())
    assert report['data'] == {name: [path] for name, path in held_out.items()}
    assert report['windows'][0]['window_first_bar_time'] >= '2017-01-16'
    later = asset_csvs(tmp_path / 'later', days=12, seed=12, start='2017-02-06')
    assert cli_main(['walk-forward', str(config), '--folds', '2', '--train-steps', '200', '--test-episodes', '1',
                     '--out', str(tmp_path / 'wf'), '--no-episode-plots', '--no-tearsheet']
                    + entries(later) + flag) == 0
    walked = json.loads((tmp_path / 'wf' / 'walk_forward.json').read_text())
    assert set(walked['settings']['data']) == set(ASSETS) and len(walked['folds']) == 2
    for fold in walked['folds']:
        folder = tmp_path / 'wf' / 'fold_{}'.format(fold['fold'])
        tested = {name: read_ohlcv(str(folder / 'test_{}.csv'.format(name))).index for name in ASSETS}
        assert tested['A'].equals(tested['B']) and tested['A'][0] > read_ohlcv(str(folder / 'train_A.csv')).index[-1]
        assert {'buy_and_hold_A', 'buy_and_hold_B'} <= set(fold['agents'])
        assert ('rebalanced' in fold['agents']) == portfolio
    assert cli_main(['sweep', str(config), '--trials', '2', '--folds', '2', '--train-steps', '200',
                     '--test-episodes', '1', '--lockbox', '0.25', '--out', str(tmp_path / 'sweep'),
                     '--no-episode-plots'] + entries(later) + flag) == 0
    swept = json.loads((tmp_path / 'sweep' / 'sweep.json').read_text())
    assert len(swept['trials']) == 2 and swept['lockbox'] is not None
    assert set(swept['settings']['data']) == set(ASSETS)
    lockbox = read_ohlcv(str(tmp_path / 'sweep' / 'data' / 'lockbox_B.csv')).index
    assert lockbox.equals(read_ohlcv(str(tmp_path / 'sweep' / 'data' / 'lockbox_A.csv')).index)
    assert lockbox[0] >= pd.Timestamp('2017-02-15')
    capsys.readouterr()


def test_a_pairs_recipe_goes_with_every_fold_file_of_its_asset(tmp_path):
    from btgym_aac.data.markets import make_pair_market, read_market_spec, write_market_csv
    from btgym_aac.walk_forward.blocks import data_market

    frames = make_pair_market(num_bars=2 * 1440, seed=8, names=ASSETS)
    files = {name: write_market_csv(frame, str(tmp_path / '{}.csv'.format(name))) for name, frame in frames.items()}
    market = data_market({name: [path] for name, path in files.items()})
    assert {name: spec.asset for name, spec in market.items()} == {'A': 'A', 'B': 'B'}
    block = split_blocks(read_data(env_kwargs(files), files), 1)[1]
    written = write_block_file([block.frame], str(tmp_path / 'test.csv'), market)
    assert {name: read_market_spec(path) for name, path in written.items()} == market
